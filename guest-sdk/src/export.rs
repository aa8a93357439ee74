//! What [`export_handler!`](crate::export_handler) expands to, and the glue it calls.
//!
//! Events arrive as `event-object` handles the host lends for the call; the glue wraps each in
//! a lent [`Object`] that lives exactly as long as the call.
//!
//! The macro expands in the plugin's crate: it declares a thread-local slot for the plugin's
//! [`Handler`], a unit type implementing the generated `Guest` trait by calling the functions
//! below, and invokes wit-bindgen's export macro for that type. WebAssembly guests are
//! single-threaded, so the thread-local is the instance's one handler.

use std::cell::RefCell;
use std::thread::LocalKey;

use crate::bindings::wink::plugin::types;
use crate::handler::{Action, Handler, HandlerError};
use crate::object::Object;

/// Holds the plugin's handler once `init` succeeded.
pub type Slot<H> = RefCell<Option<H>>;

/// Exports one type implementing [`Handler`] and [`Default`] as the plugin's handler.
///
/// Use it once, at the top level of the plugin crate (a `cdylib` built for
/// `wasm32-unknown-unknown`):
///
/// ```no_run
/// #[derive(Default)]
/// struct MyHandler;
/// impl wink_guest::Handler for MyHandler {}
/// wink_guest::export_handler!(MyHandler);
/// ```
///
/// On `init` the handler is created with `Default::default()` and its
/// [`init`](Handler::init) is called with the manifest's config; a later `init` starts over
/// with a fresh handler. An event that arrives before a successful `init` fails with
/// [`HandlerError::Fatal`].
#[cfg(not(feature = "reconciler"))]
#[macro_export]
macro_rules! export_handler {
    ($handler:ty) => {
        const _: () = {
            $crate::__private::thread_local! {
                static WINK_HANDLER: $crate::__private::Slot<$handler> =
                    const { $crate::__private::RefCell::new(::core::option::Option::None) };
            }

            struct WinkHandlerExport;

            impl $crate::bindings::exports::wink::plugin::handler::Guest for WinkHandlerExport {
                fn init(config: ::std::string::String) -> ::core::result::Result<(), ::std::string::String> {
                    $crate::__private::init(&WINK_HANDLER, config)
                }

                fn on_add(
                    obj: &$crate::bindings::wink::plugin::types::EventObject,
                    initial_list: bool,
                ) -> ::core::result::Result<$crate::Action, $crate::HandlerError> {
                    $crate::__private::on_add(&WINK_HANDLER, obj, initial_list)
                }

                fn on_update(
                    old: &$crate::bindings::wink::plugin::types::EventObject,
                    new: &$crate::bindings::wink::plugin::types::EventObject,
                ) -> ::core::result::Result<$crate::Action, $crate::HandlerError> {
                    $crate::__private::on_update(&WINK_HANDLER, old, new)
                }

                fn on_delete(
                    obj: &$crate::bindings::wink::plugin::types::EventObject,
                    final_state_unknown: bool,
                ) -> ::core::result::Result<$crate::Action, $crate::HandlerError> {
                    $crate::__private::on_delete(&WINK_HANDLER, obj, final_state_unknown)
                }
            }

    $crate::bindings::export!(WinkHandlerExport with_types_in $crate::bindings);
        };
    };
}

/// Creates a fresh handler, runs its `init`, and keeps it if that succeeds.
pub fn init<H: Handler + Default>(slot: &'static LocalKey<Slot<H>>, config: String) -> Result<(), String> {
    slot.with(|s| *s.borrow_mut() = None);
    let mut handler = H::default();
    handler.init(&config)?;
    slot.with(|s| *s.borrow_mut() = Some(handler));
    Ok(())
}

/// Delivers an add.
pub fn on_add<H: Handler>(
    slot: &'static LocalKey<Slot<H>>,
    obj: &types::EventObject,
    initial_list: bool,
) -> Result<Action, HandlerError> {
    on_add_object(slot, &Object::lent(obj), initial_list)
}

/// Delivers an update.
pub fn on_update<H: Handler>(
    slot: &'static LocalKey<Slot<H>>,
    old: &types::EventObject,
    new: &types::EventObject,
) -> Result<Action, HandlerError> {
    on_update_object(slot, &Object::lent(old), &Object::lent(new))
}

/// Delivers a delete.
pub fn on_delete<H: Handler>(
    slot: &'static LocalKey<Slot<H>>,
    obj: &types::EventObject,
    final_state_unknown: bool,
) -> Result<Action, HandlerError> {
    on_delete_object(slot, &Object::lent(obj), final_state_unknown)
}

fn on_add_object<H: Handler>(
    slot: &'static LocalKey<Slot<H>>,
    obj: &Object,
    initial: bool,
) -> Result<Action, HandlerError> {
    with_handler(slot, "on-add", |h| h.on_add(obj, initial))
}

fn on_update_object<H: Handler>(
    slot: &'static LocalKey<Slot<H>>,
    old: &Object,
    new: &Object,
) -> Result<Action, HandlerError> {
    with_handler(slot, "on-update", |h| h.on_update(old, new))
}

fn on_delete_object<H: Handler>(
    slot: &'static LocalKey<Slot<H>>,
    obj: &Object,
    unknown: bool,
) -> Result<Action, HandlerError> {
    with_handler(slot, "on-delete", |h| h.on_delete(obj, unknown))
}

fn with_handler<H: Handler>(
    slot: &'static LocalKey<Slot<H>>,
    event: &str,
    f: impl FnOnce(&mut H) -> Result<Action, HandlerError>,
) -> Result<Action, HandlerError> {
    slot.with(|s| match s.borrow_mut().as_mut() {
        Some(handler) => f(handler),
        None => Err(HandlerError::fatal(format!("wink-guest: {event} called before a successful init"))),
    })
}

#[cfg(test)]
mod tests {
    //! The glue, called natively the way the generated export functions call it.

    use super::*;

    #[derive(Default)]
    struct Counter {
        prefix: String,
        seen: Vec<String>,
    }

    impl Handler for Counter {
        fn init(&mut self, config: &str) -> Result<(), String> {
            if config == "\"bad\"" {
                return Err("bad config".into());
            }
            self.prefix = config.to_owned();
            Ok(())
        }
        fn on_add(&mut self, obj: &Object, _: bool) -> Result<Action, HandlerError> {
            self.seen.push(format!("{}{}", self.prefix, obj.key()));
            if self.seen.len() > 1 {
                return Err(HandlerError::retry(self.seen.join(",")));
            }
            Ok(Action::RequeueAfter(5))
        }
    }

    thread_local! {
        static SLOT: Slot<Counter> = const { RefCell::new(None) };
    }

    fn pod() -> Object {
        Object::from_json(r#"{"apiVersion":"v1","kind":"Pod","metadata":{"namespace":"d","name":"p"}}"#).unwrap()
    }

    #[test]
    fn events_before_init_fail_and_state_lives_until_the_next_init() {
        let err = on_add_object(&SLOT, &pod(), true).unwrap_err();
        assert_eq!(err, HandlerError::fatal("wink-guest: on-add called before a successful init"));

        init(&SLOT, "x:".into()).unwrap();
        assert_eq!(on_add_object(&SLOT, &pod(), true), Ok(Action::RequeueAfter(5)), "the handler's action is returned");
        assert_eq!(on_add_object(&SLOT, &pod(), false), Err(HandlerError::retry("x:d/p,x:d/p")));
        on_update_object(&SLOT, &pod(), &pod()).unwrap();
        on_delete_object(&SLOT, &pod(), true).unwrap();

        assert_eq!(init(&SLOT, "\"bad\"".into()), Err("bad config".into()));
        assert!(on_delete_object(&SLOT, &pod(), false).is_err(), "a failed init drops the old handler");

        init(&SLOT, "y:".into()).unwrap();
        on_add_object(&SLOT, &pod(), true).unwrap();
    }
}
