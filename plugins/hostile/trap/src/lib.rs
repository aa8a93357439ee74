//! hostile/trap: traps on objects labelled `wink.test/trap=true`, succeeds on the others.
//!
//! On-add and on-update (the new object) log `trap key=<key>` and abort, which a WebAssembly
//! guest does with an `unreachable` trap, when the object carries the label; every other call
//! succeeds. A test can so mix good and bad events. Build with `cargo xtask build-plugins`.

use wink_guest::{Action, Handler, HandlerError, Object, info};

/// The label that makes this plugin trap when its value is `true`.
const TRAP_LABEL: &str = "wink.test/trap";

/// Traps on request.
#[derive(Default)]
struct Trap;

impl Handler for Trap {
    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        trap_if_asked(obj);
        Ok(Action::AwaitChange)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) -> Result<Action, HandlerError> {
        trap_if_asked(new);
        Ok(Action::AwaitChange)
    }
}

fn trap_if_asked(obj: &Object) {
    if obj.label(TRAP_LABEL) == Some("true") {
        info!("trap key={}", obj.key());
        // On wasm32-unknown-unknown this is the `unreachable` instruction: a trap.
        std::process::abort();
    }
}

wink_guest::export_handler!(Trap);
