//! The WASI a plugin gets: the clocks and randomness; every other WASI interface a component
//! imports is linked to functions that trap when called, naming the interface and function.
//!
//! Language runtimes (CPython, SpiderMonkey) import parts of WASI whether or not a plugin uses
//! them. The host grants none of them (no files, environment, standard streams, randomness
//! or sockets), so a plugin that tries one traps with a message that says so; the clocks are
//! real (`now` and `resolution`; `subscribe-*`, which needs `wasi:io/poll`, is refused too),
//! `wasi:random` gives the host's randomness (CPython seeds itself on its first call; entropy
//! opens nothing), and `wasi:cli/environment` answers as an empty environment (no variables,
//! no arguments, no working directory), which runtimes read on their first call.
//! Nothing is granted by being imported: this only lets such components load, so that their
//! runtime's clock works.

use wasmtime::component::types::ComponentItem;
use wasmtime::component::{Component, Linker, ResourceType, Val};

use super::clocks;
use crate::plugin::contract::bindings::is_clock_import;

/// The most random bytes one call returns (a larger request traps).
const MAX_RANDOM_BYTES: u64 = 1 << 20;

/// Defines `item` of a `wasi:random` interface with the host's randomness; false for an item
/// it does not know.
fn random<T: 'static>(instance: &mut wasmtime::component::LinkerInstance<'_, T>, item: &str) -> wasmtime::Result<bool> {
    match item {
        "get-random-bytes" | "get-insecure-random-bytes" => instance.func_new(item, |_, _, params, results| {
            let Some(Val::U64(len)) = params.first() else { wasmtime::bail!("random bytes: bad arguments") };
            if *len > MAX_RANDOM_BYTES {
                wasmtime::bail!("a plugin asked for {len} random bytes at once (at most {MAX_RANDOM_BYTES})");
            }
            let mut bytes = vec![0u8; *len as usize];
            rand::fill(&mut bytes[..]);
            results[0] = Val::List(bytes.into_iter().map(Val::U8).collect());
            Ok(())
        })?,
        "get-random-u64" | "get-insecure-random-u64" => instance.func_new(item, |_, _, _, results| {
            results[0] = Val::U64(rand::random());
            Ok(())
        })?,
        "insecure-seed" => instance.func_new(item, |_, _, _, results| {
            results[0] = Val::Tuple(vec![Val::U64(rand::random()), Val::U64(rand::random())]);
            Ok(())
        })?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// The type of every refused resource (none is ever created).
struct Refused;

/// Links the WASI imports of `component`: the clocks at the version it imports, and a
/// trapping stub for everything else. Returns the refused interfaces.
pub fn link<T: 'static>(linker: &mut Linker<T>, component: &Component) -> wasmtime::Result<Vec<String>> {
    let engine = component.engine().clone();
    let mut refused = Vec::new();
    for (name, import) in component.component_type().imports(&engine) {
        if !name.starts_with("wasi:") {
            continue;
        }
        let ComponentItem::ComponentInstance(instance) = import.ty else {
            wasmtime::bail!("`{name}` is imported as a bare item, not an interface");
        };
        let clock = is_clock_import(name);
        if !clock && !name.starts_with("wasi:random/") {
            refused.push(name.to_owned());
        }
        let mut linked = linker.instance(name)?;
        for (item, export) in instance.exports(&engine) {
            if clock && clocks::define(&mut linked, name, item)? {
                continue;
            }
            let environment = name.starts_with("wasi:cli/environment@");
            if name.starts_with("wasi:random/") && random(&mut linked, item)? {
                continue;
            }
            match export.ty {
                ComponentItem::ComponentFunc(_) if environment && item != "initial-cwd" => {
                    linked.func_new(item, |_, _, _, results| {
                        results[0] = Val::List(Vec::new());
                        Ok(())
                    })?;
                }
                ComponentItem::ComponentFunc(_) if environment => {
                    linked.func_new(item, |_, _, _, results| {
                        results[0] = Val::Option(None);
                        Ok(())
                    })?;
                }
                ComponentItem::ComponentFunc(_) => {
                    let what = format!("{name}#{item}");
                    linked.func_new(item, move |_, _, _, _| {
                        wasmtime::bail!("{what} is refused: wink plugins get no WASI but the clocks")
                    })?;
                }
                ComponentItem::Resource(_) => linked.resource(item, ResourceType::host::<Refused>(), |_, _| Ok(()))?,
                _ => {}
            }
        }
    }
    Ok(refused)
}
