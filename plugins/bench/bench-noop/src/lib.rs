//! bench-noop: the trivial work of wink's benchmarks — read the name from the metadata record.
//!
//! Every event reads `meta.name` (no JSON parsing) and returns. With `config: {stall: true}`
//! every call spins until the host's per-call deadline interrupts it: a stalled plugin.
//! Build with `cargo xtask build-plugins`.

use std::hint::black_box;

use serde::Deserialize;
use wink_guest::{Action, Handler, HandlerError, Object};

/// The manifest's `config`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Config {
    /// Spin in every call instead of returning.
    #[serde(default)]
    stall: bool,
}

/// Reads names.
#[derive(Default)]
struct BenchNoop {
    stall: bool,
}

impl BenchNoop {
    fn touch(&self, obj: &Object) -> Result<Action, HandlerError> {
        if self.stall {
            let mut counter = 0u64;
            loop {
                counter = black_box(counter.wrapping_add(1));
            }
        }
        black_box(obj.name().len());
        Ok(Action::AwaitChange)
    }
}

impl Handler for BenchNoop {
    fn init(&mut self, config: &str) -> Result<(), String> {
        let config: Config = wink_guest::parse_config(config)?;
        self.stall = config.stall;
        Ok(())
    }

    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        self.touch(obj)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) -> Result<Action, HandlerError> {
        self.touch(new)
    }

    fn on_delete(&mut self, obj: &Object, _final_state_unknown: bool) -> Result<Action, HandlerError> {
        self.touch(obj)
    }
}

wink_guest::export_handler!(BenchNoop);
