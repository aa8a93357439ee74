//! Guests for the sandbox tests, built from source at test time: a core module written in
//! WAT whose exports follow the canonical ABI of `wink:plugin/handler@0.1.0`, turned into a
//! component with `wit-component` against the repository's 0.1.0 WIT (`wit/v0.1.0/`): so the
//! sandbox tests also keep the earlier contract version working. 0.2.0 behaviour (cluster
//! requests, requeues) is tested with SDK-built guests. Nothing prebuilt is checked
//! in; each behaviour (loop forever, grow memory, trap, return an error…) is a few lines.
//!
//! ABI notes: an `object` flattens to more than 16 values, so `on-*` receive one pointer to
//! their arguments (allocated with `cabi_realloc`) and every export returns a pointer to its
//! result: `result<_, handler-error>` is `{u8 tag; u8 case @4; ptr @8; len @12}` and
//! `result<_, string>` is `{u8 tag; ptr @4; len @8}`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::informer::Object;
use crate::plugin::imports::cache::NoCache;
use crate::plugin::runtime::engine::{EngineConfig, PluginEngine, PoolLimits};
use crate::plugin::runtime::instance::{Sandbox, SandboxSettings};
use crate::plugin::runtime::loader::prepare_component;

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(pub PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("wink-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What an export does.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Behaviour {
    /// Returns ok.
    Ok,
    /// Returns `handler-error::retry(MESSAGE)`.
    Retry,
    /// Returns `handler-error::fatal(MESSAGE)`.
    Fatal,
    /// Loops forever.
    Loop,
    /// Grows memory by 1 MiB at a time until growth fails, then returns ok.
    Grow,
    /// Executes `unreachable`.
    Unreachable,
    /// Recurses without end.
    Recurse,
    /// Logs MESSAGE at info level through the `log` import, then returns ok.
    Log,
    /// (`init` only) returns `err(MESSAGE)`.
    Reject,
    /// Grows memory by 64 MiB and returns `retry` with a reason of [`HUGE`] code units (bytes
    /// in UTF-8 and latin1, twice as many in UTF-16): MESSAGE followed by NULs.
    RetryHuge,
    /// As [`Behaviour::RetryHuge`], with `fatal`.
    FatalHuge,
    /// (`init` only) as [`Behaviour::RetryHuge`], with `err`.
    RejectHuge,
    /// Logs [`FORGED`] at info level, then returns ok.
    LogForged,
    /// Grows memory by 64 MiB and logs a message of [`HUGE`] code units, then returns ok.
    LogHuge,
}

/// The length of the strings of the `*Huge` behaviours: 32 MiB.
pub(crate) const HUGE: usize = 32 << 20;

/// What [`Behaviour::LogForged`] logs: a newline, a carriage return and an ANSI escape.
pub(crate) const FORGED: &str = "ok\nforged\r\x1b[2K";

/// The message guests return or log.
pub(crate) const MESSAGE: &str = "try again later";

fn body(b: Behaviour, init: bool) -> &'static str {
    match (b, init) {
        (Behaviour::Ok, false) => "(call $ok)",
        (Behaviour::Ok, true) => "(call $init_ok)",
        (Behaviour::Retry, _) => "(call $err (i32.const 0))",
        (Behaviour::Fatal, _) => "(call $err (i32.const 1))",
        (Behaviour::Loop, _) => "(loop $l (br $l)) (unreachable)",
        (Behaviour::Grow, false) => {
            "(loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) (call $ok)"
        }
        (Behaviour::Grow, true) => {
            "(loop $l (br_if $l (i32.ne (memory.grow (i32.const 16)) (i32.const -1)))) (call $init_ok)"
        }
        (Behaviour::Unreachable, _) => "(unreachable)",
        (Behaviour::Recurse, _) => "(call $recurse (i32.const 0))",
        (Behaviour::Log, false) => "(call $log (i32.const 2) (i32.const 256) (i32.const 15)) (call $ok)",
        (Behaviour::Log, true) => "(call $log (i32.const 2) (i32.const 256) (i32.const 15)) (call $init_ok)",
        (Behaviour::Reject, _) => "(call $init_err)",
        (Behaviour::RetryHuge, _) => {
            "(drop (memory.grow (i32.const 1025))) (call $err_at (i32.const 0) (i32.const 33554432))"
        }
        (Behaviour::FatalHuge, _) => {
            "(drop (memory.grow (i32.const 1025))) (call $err_at (i32.const 1) (i32.const 33554432))"
        }
        (Behaviour::RejectHuge, _) => "(drop (memory.grow (i32.const 1025))) (call $init_err_at (i32.const 33554432))",
        (Behaviour::LogForged, false) => "(call $log (i32.const 2) (i32.const 512) (i32.const 14)) (call $ok)",
        (Behaviour::LogHuge, _) => {
            "(drop (memory.grow (i32.const 1025))) (call $log (i32.const 2) (i32.const 256) (i32.const 33554432)) (call $ok)"
        }
        (Behaviour::LogForged, true) => "(call $log (i32.const 2) (i32.const 512) (i32.const 14)) (call $init_ok)",
    }
}

/// The behaviours of the four exports.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Guest {
    pub init: Behaviour,
    pub on_add: Behaviour,
    pub on_update: Behaviour,
    pub on_delete: Behaviour,
}

impl Default for Guest {
    fn default() -> Self {
        Self { init: Behaviour::Ok, on_add: Behaviour::Ok, on_update: Behaviour::Ok, on_delete: Behaviour::Ok }
    }
}

impl Guest {
    /// A guest whose `on-add` behaves as given and everything else returns ok.
    pub(crate) fn on_add(b: Behaviour) -> Self {
        Self { on_add: b, ..Self::default() }
    }

    /// The core module, in WAT.
    pub(crate) fn wat(&self) -> String {
        assert_eq!(MESSAGE.len(), 15);
        format!(
            r#"(module
  (import "wink:plugin/log@0.1.0" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 4096))
  (data (i32.const 256) "{MESSAGE}")
  (data (i32.const 512) "ok\0aforged\0d\1b[2K")
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $p i32)
    (local.set $p (i32.and (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
                           (i32.xor (i32.sub (local.get 2) (i32.const 1)) (i32.const -1))))
    (global.set $heap (i32.add (local.get $p) (local.get 3)))
    (block $fits
      (br_if $fits (i32.le_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536))))
      (drop (memory.grow (i32.add (i32.const 1)
        (i32.div_u (i32.sub (global.get $heap) (i32.mul (memory.size) (i32.const 65536))) (i32.const 65536))))))
    (local.get $p))
  (func $ok (result i32) (i32.store8 (i32.const 64) (i32.const 0)) (i32.const 64))
  (func $err (param $case i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 1))
    (i32.store8 (i32.const 68) (local.get $case))
    (i32.store (i32.const 72) (i32.const 256))
    (i32.store (i32.const 76) (i32.const 15))
    (i32.const 64))
  (func $err_at (param $case i32) (param $len i32) (result i32)
    (i32.store8 (i32.const 64) (i32.const 1))
    (i32.store8 (i32.const 68) (local.get $case))
    (i32.store (i32.const 72) (i32.const 256))
    (i32.store (i32.const 76) (local.get $len))
    (i32.const 64))
  (func $init_err_at (param $len i32) (result i32)
    (i32.store8 (i32.const 96) (i32.const 1))
    (i32.store (i32.const 100) (i32.const 256))
    (i32.store (i32.const 104) (local.get $len))
    (i32.const 96))
  (func $init_ok (result i32) (i32.store8 (i32.const 96) (i32.const 0)) (i32.const 96))
  (func $init_err (result i32)
    (i32.store8 (i32.const 96) (i32.const 1))
    (i32.store (i32.const 100) (i32.const 256))
    (i32.store (i32.const 104) (i32.const 15))
    (i32.const 96))
  (func $recurse (param i32) (result i32) (call $recurse (i32.add (local.get 0) (i32.const 1))))
  (func (export "wink:plugin/handler@0.1.0#init") (param i32 i32) (result i32) {init})
  (func (export "wink:plugin/handler@0.1.0#on-add") (param i32) (result i32) {on_add})
  (func (export "wink:plugin/handler@0.1.0#on-update") (param i32) (result i32) {on_update})
  (func (export "wink:plugin/handler@0.1.0#on-delete") (param i32) (result i32) {on_delete})
)"#,
            init = body(self.init, true),
            on_add = body(self.on_add, false),
            on_update = body(self.on_update, false),
            on_delete = body(self.on_delete, false),
        )
    }

    /// The component's bytes.
    pub(crate) fn component(&self) -> Vec<u8> {
        componentize(&self.wat())
    }

    /// The component's bytes, its strings in `encoding`.
    pub(crate) fn component_encoded(&self, encoding: wit_component::StringEncoding) -> Vec<u8> {
        componentize_with(&self.wat(), encoding)
    }
}

/// Turns a core module (WAT) exporting the handler ABI into a `handler-plugin` component.
pub(crate) fn componentize(wat: &str) -> Vec<u8> {
    componentize_with(wat, wit_component::StringEncoding::UTF8)
}

/// As [`componentize`], with strings in `encoding`.
pub(crate) fn componentize_with(wat: &str, encoding: wit_component::StringEncoding) -> Vec<u8> {
    let mut resolve = wit_parser::Resolve::default();
    let wit = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("../wit/v0.1.0");
    let (package, _) = resolve.push_dir(&wit).expect("parsing wit/v0.1.0/");
    let world = resolve.select_world(&[package], Some("handler-plugin")).expect("world handler-plugin");
    let mut module = wat::parse_str(wat).expect("valid WAT");
    wit_component::embed_component_metadata(&mut module, &resolve, world, encoding, false)
        .expect("embedding component metadata");
    wit_component::ComponentEncoder::default()
        .validate(true)
        .module(&module)
        .expect("module accepted by wit-component")
        .encode()
        .expect("encoding the component")
}

/// An engine with a small pool.
pub(crate) fn engine() -> PluginEngine {
    PluginEngine::new(EngineConfig { pool: Some(PoolLimits::small()), ..EngineConfig::default() }).unwrap()
}

/// A sandbox for `guest` without cache access.
pub(crate) fn sandbox_with(engine: &PluginEngine, guest: Guest, memory_limit: u64, call_timeout: Duration) -> Sandbox {
    sandbox_of(engine, &guest.component(), memory_limit, call_timeout)
}

/// A sandbox for a component without cache access.
pub(crate) fn sandbox_of(
    engine: &PluginEngine,
    component: &[u8],
    memory_limit: u64,
    call_timeout: Duration,
) -> Sandbox {
    let (_, pre) = prepare_component(component, None, Path::new("guest.wasm"), engine).unwrap();
    let settings = SandboxSettings {
        name: "test-guest".into(),
        memory_limit,
        call_timeout,
        config_json: "null".into(),
        scope: Arc::default(),
        cluster: None,
    };
    Sandbox::new(engine.clone(), pre, settings, Arc::new(NoCache))
}

/// A Pod in namespace `shop`.
pub(crate) fn pod(name: &str) -> Object {
    Object::from_string(
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop", "labels": {"app": "web"}}})
            .to_string(),
    )
    .unwrap()
}
