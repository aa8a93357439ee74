//! The WASI clocks every plugin gets: `wasi:clocks/wall-clock` and
//! `wasi:clocks/monotonic-clock` (`now` and `resolution`), so that a guest's `time`,
//! `datetime` or `Date` works. The monotonic clock counts nanoseconds from the host's start.
//! `subscribe-*` (which needs `wasi:io/poll`) is refused: calling it traps. They are linked
//! per component, at the version it imports ([`wasi`](super::wasi)).

use std::sync::LazyLock;
use std::time::{Instant, SystemTime};

use wasmtime::component::{ComponentType, LinkerInstance, Lower};

/// The `datetime` record of `wasi:clocks/wall-clock`.
#[derive(ComponentType, Lower, Clone, Copy, Debug)]
#[component(record)]
struct Datetime {
    seconds: u64,
    nanoseconds: u32,
}

/// What the monotonic clock counts from.
static START: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Defines `item` of the clock `interface` (any version) in `instance`; false when it is not
/// one the host provides (`subscribe-*`).
pub fn define<T: 'static>(instance: &mut LinkerInstance<'_, T>, interface: &str, item: &str) -> wasmtime::Result<bool> {
    LazyLock::force(&START);
    let wall = interface.starts_with("wasi:clocks/wall-clock@");
    match (wall, item) {
        (true, "now") => instance.func_wrap("now", |_, (): ()| {
            let since = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
            Ok((Datetime { seconds: since.as_secs(), nanoseconds: since.subsec_nanos() },))
        })?,
        (true, "resolution") => {
            instance.func_wrap("resolution", |_, (): ()| Ok((Datetime { seconds: 0, nanoseconds: 1 },)))?
        }
        (false, "now") => instance.func_wrap("now", |_, (): ()| Ok((START.elapsed().as_nanos() as u64,)))?,
        (false, "resolution") => instance.func_wrap("resolution", |_, (): ()| Ok((1u64,)))?,
        _ => return Ok(false),
    }
    Ok(true)
}
