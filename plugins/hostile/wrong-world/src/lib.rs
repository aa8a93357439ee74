//! hostile/wrong-world: a component that implements `other:thing/thing` (see `wit/`), not
//! `wink:plugin/handler-plugin`, so the host's world check must refuse to load it.
//!
//! It uses wit-bindgen directly rather than the wink SDK. Build with
//! `cargo xtask build-plugins`.

/// The bindings of the `thing` world.
mod bindings {
    #![allow(missing_docs, reason = "generated")]
    wit_bindgen::generate!({
        world: "thing",
        path: "wit",
    });
}

/// Implements the foreign world.
struct Thing;

impl bindings::Guest for Thing {
    fn run() {}
}

bindings::export!(Thing with_types_in bindings);
