//! The contract with guests, seen from the host: what every other part of the plugin room
//! speaks when it speaks of a call.
//!
//! - [`bindings`]: the only `bindgen!` of the WIT world, the contract versions a plugin may
//!   implement, and `Object` conversions.
//! - [`guest_text`]: every string a guest hands the host, escaped onto one line and bounded.
//! - [`outcome`]: what came of one call: success, the guest's own error, or a trap by kind.

pub mod bindings;
pub(crate) mod guest_text;
pub(crate) mod outcome;
