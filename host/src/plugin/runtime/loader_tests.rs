//! Tests of plugin loading: the happy path through the compile cache, and each way a file
//! can fail to be a plugin.

use super::*;
use crate::plugin::contract::outcome::CallOutcome;
use crate::plugin::imports::cache::NoCache;
use crate::plugin::runtime::engine::{EngineConfig, PoolLimits};
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
    let mut instance = second.sandbox(&engine, Arc::new(NoCache), None).instantiate().unwrap();
    let pod = crate::informer::Object::from_str(r#"{"kind":"Pod","metadata":{"name":"p"}}"#).unwrap();
    assert_eq!(instance.on_add(&pod, true), CallOutcome::Ok);
}

/// Plugins of one component (many tenants' copies) link it once: the engine keeps the
/// pre-linked form beside the compiled code, and a later plugin takes it from there.
#[test]
fn plugins_of_one_component_share_its_link() {
    let bytes = Guest::default().component();
    let (a, b) = (plugin_dir(&bytes), plugin_dir(&bytes));
    let engine = engine(None);
    assert!(engine.compile(&bytes).unwrap().linked.get().is_none(), "compiled, not linked yet");
    load_plugin(&a.0, &engine).unwrap();
    assert!(engine.compile(&bytes).unwrap().linked.get().is_some(), "the first plugin's link is kept");
    let second = load_plugin(&b.0, &engine).unwrap();
    let mut instance = second.sandbox(&engine, Arc::new(NoCache), None).instantiate().unwrap();
    let pod = crate::informer::Object::from_str(r#"{"kind":"Pod","metadata":{"name":"p"}}"#).unwrap();
    assert_eq!(instance.on_add(&pod, true), CallOutcome::Ok, "the shared link runs the second plugin");
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
    assert!(text.contains("exports no wink handler or reconciler (`wink:plugin/handler@0.1.0` to `@0.4.0`"), "{text}");
    let (err, _) = load_error(&wat::parse_str("(component)").unwrap());
    assert!(matches!(err, LoadError::MissingExport { .. }), "{err:?}");
}

#[test]
fn a_component_importing_wasi_loads_with_the_clocks_real_and_the_rest_refused() {
    let bytes = wat::parse_str(
        r#"(component (import "wasi:cli/environment@0.2.0" (instance)) (import "wasi:io/streams@0.2.0" (instance))
             (import "wasi:clocks/wall-clock@0.2.3" (instance))
             (instance $i) (export "wink:plugin/handler@0.2.0" (instance $i)))"#,
    );
    let dir = plugin_dir(&bytes.unwrap());
    // It links (the handler export is empty, so only the type check of the exports fails).
    let err = load_plugin(&dir.0, &engine(None)).unwrap_err();
    assert!(matches!(err, LoadError::Link { .. }), "{err:?}");
    assert!(err.to_string().contains("handler"), "{err}");
}

#[test]
fn a_component_importing_something_else() {
    let (err, text) = load_error(
        &wat::parse_str(
            r#"(component (import "wink:plugin/log@0.3.0" (instance)) (instance $i) (export "wink:plugin/handler@0.2.0" (instance $i)))"#,
        )
        .unwrap(),
    );
    assert!(matches!(err, LoadError::UnsupportedImports { .. }), "{err:?}");
    assert!(
        text.contains("wink:plugin/log@0.3.0, which the host does not provide to wink:plugin@0.2.0 plugins"),
        "{text}"
    );
    // A 0.1.0 plugin gets 0.1.0's interfaces: not the 0.2.0 `cluster`.
    let (err, text) = load_error(
        &wat::parse_str(
            r#"(component (import "wink:plugin/cluster@0.2.0" (instance)) (instance $i) (export "wink:plugin/handler@0.1.0" (instance $i)))"#,
        )
        .unwrap(),
    );
    assert!(matches!(err, LoadError::UnsupportedImports { .. }), "{err:?}");
    assert!(text.contains("to wink:plugin@0.1.0 plugins"), "{text}");
}

#[test]
fn a_component_with_the_right_names_but_wrong_types() {
    let (err, text) = load_error(
        &wat::parse_str(r#"(component (instance $i) (export "wink:plugin/handler@0.1.0" (instance $i)))"#).unwrap(),
    );
    assert!(matches!(err, LoadError::Link { .. }), "{err:?}");
    assert!(text.contains("does not match the wink:plugin contract"), "{text}");
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

/// `wink check plugins/label-auditor`: a source folder, not a built plugin; the error says
/// to build it first, and how.
#[test]
fn a_source_folder_is_said_to_need_building() {
    let dir = TempDir::new("source");
    std::fs::write(dir.0.join(MANIFEST_FILE), MANIFEST).unwrap();
    std::fs::write(dir.0.join("Cargo.toml"), "[package]\nname = \"demo\"\n").unwrap();
    let err = load_plugin(&dir.0, &engine(None)).unwrap_err();
    assert!(matches!(&err, LoadError::NotBuilt { marker, .. } if marker == "Cargo.toml"), "{err:?}");
    let message = err.to_string();
    assert!(message.contains("build it first") && message.contains("cargo xtask build-plugins --only"), "{message}");
}

/// A plugin folder whose manifest caps memory at `memory`.
fn plugin_dir_with_memory(bytes: &[u8], memory: &str) -> TempDir {
    let dir = plugin_dir(bytes);
    std::fs::write(dir.0.join(MANIFEST_FILE), format!("{MANIFEST}limits: {{memory: {memory}}}\n")).unwrap();
    dir
}

/// A handler guest whose memory starts at 64 pages (4 MiB) with a 3 MiB data segment.
fn guest_with_a_large_data_segment() -> Vec<u8> {
    let wat = Guest::default().wat().replace(
        r#"(memory (export "memory") 1)"#,
        &format!(r#"(memory (export "memory") 64) (data (i32.const 65536) "{}")"#, "x".repeat(3 << 20)),
    );
    crate::plugin::test_guests::componentize(&wat)
}

#[test]
fn records_the_initial_memory_of_a_plugin() {
    let dir = plugin_dir(&Guest::default().component());
    let plugin = load_plugin(&dir.0, &engine(None)).unwrap();
    assert_eq!(plugin.initial_memory.memories, 65536, "{:?}", plugin.initial_memory);
    assert!(plugin.initial_memory.modules >= 1);
}

// Regression: a component with a 300 MB data segment took the host to ~900 MB resident
// before any call, whatever its manifest's limit.
#[test]
fn a_component_whose_data_segment_exceeds_its_memory_limit_is_refused_before_compiling() {
    let dir = plugin_dir_with_memory(&guest_with_a_large_data_segment(), "1Mi");
    let cache = TempDir::new("loader-data-cache");
    let engine = engine(Some(cache.0.clone()));
    let err = load_plugin(&dir.0, &engine).unwrap_err();
    let LoadError::InitialMemoryAboveLimit { initial, limit, .. } = &err else { panic!("{err:?}") };
    assert_eq!((initial.memories, *limit), (4 << 20, 1 << 20));
    // The 3 MiB segment, plus the guest's own few small ones (its strings).
    assert!((3 << 20..(3 << 20) + 4096).contains(&initial.data), "{initial:?}");
    let text = err.to_string();
    for part in ["demo.wasm", "plugin demo", "4Mi of memory minimums", "of data segments", "limits.memory of 1Mi"] {
        assert!(text.contains(part), "`{part}` missing from: {text}");
    }
    assert_eq!(engine.compilations(), 0, "refused before compiling");
    assert_eq!(std::fs::read_dir(&cache.0).unwrap().count(), 0, "nothing cached");
    // Under a limit that holds it, the same component loads.
    let dir = plugin_dir_with_memory(&guest_with_a_large_data_segment(), "8Mi");
    load_plugin(&dir.0, &engine).unwrap();
}

#[test]
fn a_limit_above_the_pools_largest_memory_is_refused_before_the_component_is_read() {
    let dir = TempDir::new("pool-max");
    std::fs::write(dir.0.join(MANIFEST_FILE), format!("{MANIFEST}limits: {{memory: 64Mi}}\n")).unwrap();
    let pool = PoolLimits { max_memory_size: 16 << 20, ..PoolLimits::small() };
    let engine = PluginEngine::new(EngineConfig { pool: Some(pool), ..EngineConfig::default() }).unwrap();
    assert_eq!(engine.max_memory_size(), Some(16 << 20));
    // No component file: the limit is refused first.
    let err = load_plugin(&dir.0, &engine).unwrap_err();
    assert!(matches!(err, LoadError::MemoryAbovePoolMax { limit, max, .. } if limit == 64 << 20 && max == 16 << 20));
    let text = err.to_string();
    assert!(text.contains("plugin demo: limits.memory 64Mi is above"), "{text}");
    assert!(text.contains("instance pool allows (16Mi)"), "{text}");
}

#[test]
fn an_oversized_component_file_is_refused_from_its_metadata() {
    let dir = plugin_dir(b"");
    // A sparse 64 GiB file: reading it would exhaust memory; its size alone refuses it.
    std::fs::File::options().write(true).open(dir.0.join("demo.wasm")).unwrap().set_len(64 << 30).unwrap();
    let manifest = load_plugin_manifest(&dir.0).unwrap();
    let err = load_manifest(manifest, &engine(None), &LoadLimits::default()).unwrap_err();
    assert!(matches!(err, LoadError::ComponentTooLarge { size, max, .. } if size == 64 << 30 && max == 128 << 20));
    let text = err.to_string();
    assert!(text.contains("demo.wasm is 64Gi, larger than the largest component this host loads (128Mi"), "{text}");
    // The bound is configurable: a real component over a small bound is refused too.
    let dir = plugin_dir(&Guest::default().component());
    let manifest = load_plugin_manifest(&dir.0).unwrap();
    let err = load_manifest(manifest, &engine(None), &LoadLimits { max_component_size: 1024 }).unwrap_err();
    assert!(matches!(err, LoadError::ComponentTooLarge { max: 1024, .. }), "{err:?}");
}

/// A component file the engine read before and still keeps (the same file, or a hard link
/// to it, unchanged by its metadata) is not read again: here its bytes are overwritten in
/// place with its size and time kept, and the plugin still loads the component read first.
#[test]
fn a_component_file_known_by_its_identity_is_not_read_again() {
    let bytes = Guest::default().component();
    let dir = plugin_dir(&bytes);
    let component = dir.0.join("demo.wasm");
    let long_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    std::fs::File::options().write(true).open(&component).unwrap().set_modified(long_ago).unwrap();
    let engine = engine(None);
    let first = load_plugin(&dir.0, &engine).unwrap();
    let file = std::fs::File::options().write(true).open(&component).unwrap();
    std::io::Write::write_all(&mut &file, &vec![0u8; bytes.len()]).unwrap();
    file.set_modified(long_ago).unwrap();
    let second = load_plugin(&dir.0, &engine).unwrap();
    assert_eq!(second.digest, first.digest, "the component read first, the file not read again");
    assert_eq!(second.initial_memory, first.initial_memory);
    assert_eq!(second.cache, CacheOutcome::Hit);
    // Once the file's metadata moves, it is read (and here refused: it is no longer wasm).
    file.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(30)).unwrap();
    assert!(matches!(load_plugin(&dir.0, &engine), Err(LoadError::NotWasm { .. })));
}
