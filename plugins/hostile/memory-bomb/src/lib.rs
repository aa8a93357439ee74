//! hostile/memory-bomb: allocates in on-add until memory runs out.
//!
//! Every on-add logs `memory-bomb key=<key>`, then keeps pushing 1 MiB buffers into a static
//! hoard, never freeing them, until growing the linear memory fails and the guest traps (the
//! host's memory cap, or wasm32's 4 GiB). Other events succeed. Build with
//! `cargo xtask build-plugins`.

use std::hint::black_box;
use std::sync::Mutex;

use wink_guest::{Action, Handler, HandlerError, Object, info};

/// Everything allocated so far; kept so that nothing is freed.
static HOARD: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Size of one allocation.
const CHUNK: usize = 1 << 20;

/// Allocates without bound on-add.
#[derive(Default)]
struct MemoryBomb;

impl Handler for MemoryBomb {
    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        info!("memory-bomb key={}", obj.key());
        let mut hoard = HOARD.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        loop {
            // A failed allocation aborts, which traps.
            let mut chunk = vec![0u8; CHUNK];
            chunk[CHUNK - 1] = 1;
            hoard.push(black_box(chunk));
        }
    }
}

wink_guest::export_handler!(MemoryBomb);
