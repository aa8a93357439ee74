//! The WASI clocks every plugin gets: `wasi:clocks/wall-clock` and
//! `wasi:clocks/monotonic-clock` (`now` and `resolution`), so that a guest's `time`,
//! `datetime` or `Date` works. The monotonic clock counts nanoseconds from the host's start.
//! `subscribe-*` (which needs `wasi:io/poll`) is not provided: a guest that imports it fails
//! to link, naming the function.

use std::sync::LazyLock;
use std::time::{Instant, SystemTime};

use wasmtime::component::{ComponentType, Linker, Lower};

use crate::plugin::runtime::instance::HostState;

/// The `datetime` record of `wasi:clocks/wall-clock`.
#[derive(ComponentType, Lower, Clone, Copy, Debug)]
#[component(record)]
struct Datetime {
    seconds: u64,
    nanoseconds: u32,
}

/// What the monotonic clock counts from.
static START: LazyLock<Instant> = LazyLock::new(Instant::now);

/// The interface names the clocks are defined under (wasmtime matches imports of any
/// compatible 0.2.x version to these).
pub const WALL_CLOCK: &str = "wasi:clocks/wall-clock@0.2.0";
/// See [`WALL_CLOCK`].
pub const MONOTONIC_CLOCK: &str = "wasi:clocks/monotonic-clock@0.2.0";

/// Defines both clocks.
pub fn link(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    LazyLock::force(&START);
    let mut wall = linker.instance(WALL_CLOCK)?;
    wall.func_wrap("now", |_, (): ()| {
        let since = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
        Ok((Datetime { seconds: since.as_secs(), nanoseconds: since.subsec_nanos() },))
    })?;
    wall.func_wrap("resolution", |_, (): ()| Ok((Datetime { seconds: 0, nanoseconds: 1 },)))?;
    let mut monotonic = linker.instance(MONOTONIC_CLOCK)?;
    monotonic.func_wrap("now", |_, (): ()| Ok((START.elapsed().as_nanos() as u64,)))?;
    monotonic.func_wrap("resolution", |_, (): ()| Ok((1u64,)))?;
    Ok(())
}
