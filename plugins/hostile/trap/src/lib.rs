//! hostile/trap: traps on objects labelled `wink.test/trap=true`, succeeds on the others.
//!
//! On-add and on-update (the new object) log `trap key=<key>` and abort, which a WebAssembly
//! guest does with an `unreachable` trap, when the object carries the label; every other call
//! succeeds. A test can so mix good and bad events.
//!
//! With `wink.test/forge=true` instead, the call logs `forge key=<key>` and reads the name of
//! an `event-object` handle it was not lent (a forged handle index), which the host must
//! refuse — the call traps — without the plugin reading anything. Build with
//! `cargo xtask build-plugins`.

use wink_guest::{Action, Handler, HandlerError, Object, info};

/// The label that makes this plugin trap when its value is `true`.
const TRAP_LABEL: &str = "wink.test/trap";

/// The label that makes this plugin use a handle it was not lent when its value is `true`.
const FORGE_LABEL: &str = "wink.test/forge";

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
    if obj.label(FORGE_LABEL) == Some("true") {
        info!("forge key={}", obj.key());
        #[allow(unsafe_code, reason = "forging a handle index is what this hostile plugin does")]
        // SAFETY: none, on purpose: the host must refuse the handle (the call traps).
        let forged = unsafe { wink_guest::bindings::wink::plugin::types::EventObject::from_handle(0x00ab_cdef) };
        info!("forged read {}", forged.name());
    }
}

wink_guest::export_handler!(Trap);
