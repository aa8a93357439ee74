//! hostile/spin: loops forever in on-add.
//!
//! Every on-add logs `spin key=<key>` and then spins on a counter the optimizer cannot see
//! through, so only the host's per-call deadline (an epoch interruption) can stop it. Other
//! events succeed. Build with `cargo xtask build-plugins`.

use std::hint::black_box;

use wink_guest::{Action, Handler, HandlerError, Object, info};

/// Never returns from on-add.
#[derive(Default)]
struct Spin;

impl Handler for Spin {
    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        info!("spin key={}", obj.key());
        let mut counter = 0u64;
        loop {
            counter = black_box(counter.wrapping_add(1));
        }
    }
}

wink_guest::export_handler!(Spin);
