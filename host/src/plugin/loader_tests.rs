//! Tests of plugin loading: the happy path through the compile cache, and each way a file
//! can fail to be a plugin.

use super::*;
use crate::plugin::engine::{EngineConfig, PoolLimits};
use crate::plugin::imports::cache::NoCache;
use crate::plugin::outcome::CallOutcome;
use crate::plugin::test_guests::{Guest, TempDir};

fn engine(cache_dir: Option<PathBuf>) -> PluginEngine {
    PluginEngine::new(EngineConfig { pool: Some(PoolLimits::small()), cache_dir, ..EngineConfig::default() }).unwrap()
}

const MANIFEST: &str =
    "name: demo\ncomponent: demo.wasm\nresources:\n  - {apiVersion: v1, kind: Pod}\nconfig: {x: 1}\n";

fn plugin_dir(bytes: &[u8]) -> TempDir {
    let dir = TempDir::new("loader");
    std::fs::write(dir.0.join(MANIFEST_FILE), MANIFEST).unwrap();
    std::fs::write(dir.0.join("demo.wasm"), bytes).unwrap();
    dir
}

fn load_error(bytes: &[u8]) -> (LoadError, String) {
    let dir = plugin_dir(bytes);
    let err = load_plugin(&dir.0, &engine(None)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&dir.0.join("demo.wasm").display().to_string()), "file not named: {text}");
    (err, text)
}

#[test]
fn loads_a_plugin_folder_and_hits_the_cache_the_second_time() {
    let dir = plugin_dir(&Guest::default().component());
    let cache = TempDir::new("loader-cache");
    let engine = engine(Some(cache.0.clone()));
    let first = load_plugin(&dir.0, &engine).unwrap();
    assert_eq!(first.name(), "demo");
    assert_eq!(first.cache, CacheOutcome::Miss);
    assert!(engine.cache_path(&first.digest).unwrap().exists());
    let second = load_plugin(dir.0.join(MANIFEST_FILE), &engine).unwrap();
    assert_eq!(second.cache, CacheOutcome::Hit);
    assert_eq!(engine.compilations(), 1);
    let mut instance = second.sandbox(&engine, Arc::new(NoCache)).instantiate().unwrap();
    let pod = crate::informer::Object::from_str(r#"{"kind":"Pod","metadata":{"name":"p"}}"#).unwrap();
    assert_eq!(instance.on_add(&pod, true), CallOutcome::Ok);
}

#[test]
fn a_file_that_is_not_wasm() {
    let (err, text) = load_error(b"#!/bin/sh\necho not wasm\n");
    assert!(matches!(err, LoadError::NotWasm { .. }), "{err:?}");
    assert!(text.contains("is not a WebAssembly file"), "{text}");
}

#[test]
fn a_core_module() {
    let (err, text) = load_error(&wat::parse_str("(module)").unwrap());
    assert!(matches!(err, LoadError::CoreModule { .. }), "{err:?}");
    assert!(text.contains("not a component"), "{text}");
}

#[test]
fn a_component_of_another_world() {
    let bytes = wat::parse_str(r#"(component (instance $i) (export "acme:x/run" (instance $i)))"#);
    let (err, text) = load_error(&bytes.unwrap());
    assert!(
        matches!(err, LoadError::MissingExport { ref exports, .. } if exports == &["acme:x/run".to_owned()]),
        "{err:?}"
    );
    assert!(text.contains("does not export `wink:plugin/handler@0.1.0`"), "{text}");
    let (err, _) = load_error(&wat::parse_str("(component)").unwrap());
    assert!(matches!(err, LoadError::MissingExport { .. }), "{err:?}");
}

#[test]
fn a_component_importing_wasi() {
    let bytes = wat::parse_str(
        r#"(component (import "wasi:cli/environment@0.2.0" (instance)) (import "wasi:io/streams@0.2.0" (instance)))"#,
    );
    let (err, text) = load_error(&bytes.unwrap());
    assert!(matches!(err, LoadError::ImportsWasi { ref imports, .. } if imports.len() == 2), "{err:?}");
    assert!(text.contains("imports WASI (wasi:cli/environment@0.2.0, wasi:io/streams@0.2.0)"), "{text}");
}

#[test]
fn a_component_importing_something_else() {
    let (err, text) =
        load_error(&wat::parse_str(r#"(component (import "wink:plugin/log@0.2.0" (instance)))"#).unwrap());
    assert!(matches!(err, LoadError::UnsupportedImports { .. }), "{err:?}");
    assert!(text.contains("wink:plugin/log@0.2.0, which the host does not provide"), "{text}");
}

#[test]
fn a_component_with_the_right_names_but_wrong_types() {
    let (err, text) = load_error(
        &wat::parse_str(r#"(component (instance $i) (export "wink:plugin/handler@0.1.0" (instance $i)))"#).unwrap(),
    );
    assert!(matches!(err, LoadError::Link { .. }), "{err:?}");
    assert!(text.contains("does not match the wink:plugin@0.1.0 contract"), "{text}");
}

#[test]
fn a_folder_without_a_manifest() {
    let dir = TempDir::new("empty");
    let err = load_plugin(&dir.0, &engine(None)).unwrap_err();
    assert!(matches!(err, LoadError::Manifest(ManifestError::Read { .. })), "{err:?}");
    assert!(err.to_string().contains("plugin.yaml"));
}

#[test]
fn a_missing_component_file() {
    let dir = TempDir::new("missing");
    std::fs::write(dir.0.join(MANIFEST_FILE), MANIFEST).unwrap();
    let err = load_plugin(&dir.0, &engine(None)).unwrap_err();
    assert!(matches!(err, LoadError::ReadComponent { .. }), "{err:?}");
    assert!(err.to_string().contains("demo.wasm"));
}
