//! bench-noop-v02: `bench-noop` against `wink:plugin@0.2.0` — every call receives both
//! objects copied whole into its memory, reads the name and returns. For the benchmarks that
//! compare the two contracts. Built with wit-bindgen directly (the SDK implements 0.3.0).
//! Build with `cargo xtask build-plugins`.

use std::hint::black_box;

/// The bindings of the 0.2.0 world.
mod bindings {
    #![allow(missing_docs, reason = "generated")]
    wit_bindgen::generate!({
        world: "handler-plugin",
        path: "../../../wit/v0.2.0",
        generate_all,
    });
}

use bindings::exports::wink::plugin::handler::Guest;
use bindings::wink::plugin::types::{Action, HandlerError, Object};

/// Reads names.
struct BenchNoop;

fn touch(obj: &Object) -> Result<Action, HandlerError> {
    black_box(obj.meta.name.len());
    Ok(Action::AwaitChange)
}

impl Guest for BenchNoop {
    fn init(_config: String) -> Result<(), String> {
        Ok(())
    }

    fn on_add(obj: Object, _initial_list: bool) -> Result<Action, HandlerError> {
        touch(&obj)
    }

    fn on_update(_old: Object, new: Object) -> Result<Action, HandlerError> {
        touch(&new)
    }

    fn on_delete(obj: Object, _final_state_unknown: bool) -> Result<Action, HandlerError> {
        touch(&obj)
    }
}

bindings::export!(BenchNoop with_types_in bindings);
