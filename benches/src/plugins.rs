//! The plugins the benchmarks run: `bench-noop` (Rust; reads each object's name), and the
//! Python and JavaScript components that `cargo xtask build-plugins` produced, if any.
//!
//! Built plugins come from `WINK_PLUGINS_DIR` when set (as `cargo xtask bench` sets it),
//! else from `.wink/plugins`, built on first use (see [`wink_tests::plugins_dir`]).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use wink::informer::Store;
use wink::plugin::{
    CacheResolver, CacheScope, ClusterLink, EngineConfig, GuestPool, LoadedPlugin, MetricsRegistry, PluginEngine,
    PluginHandler, PoolLimits, Sandbox, SandboxSettings, load_plugin,
};
use wink::plugin::{FailurePolicy, OnError};

/// The folder of the built `bench-writer` plugin (one request to the cluster per call).
pub fn bench_writer() -> PathBuf {
    wink_tests::plugin("bench/bench-writer")
}

/// The folder of the built `bench-noop` plugin (contract 0.3.0: objects lent as handles).
pub fn bench_noop() -> PathBuf {
    wink_tests::plugin("bench/bench-noop")
}

/// The folder of the built `bench-noop-v02` plugin: the same work against contract 0.2.0
/// (objects copied whole into the guest).
pub fn bench_noop_v02() -> PathBuf {
    wink_tests::plugin("bench/bench-noop-v02")
}

/// Which language a guest component was written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// Python (componentize-py).
    Python,
    /// JavaScript (ComponentizeJS).
    JavaScript,
}

impl Language {
    /// The folders under `plugins/` holding this language's plugin sources.
    fn source_dirs(self) -> &'static [&'static str] {
        match self {
            Self::Python => &["python"],
            Self::JavaScript => &["javascript", "js"],
        }
    }

    /// The language's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Python => "Python",
            Self::JavaScript => "JavaScript",
        }
    }
}

/// The built plugins written in `language`: the folders of `.wink/plugins` named like a
/// plugin source folder under `plugins/<language>/`.
pub fn built_in_language(language: Language) -> Vec<PathBuf> {
    let sources = wink_tests::repo_root().join("plugins");
    let built = wink_tests::plugins_dir();
    let mut found = Vec::new();
    for dir in language.source_dirs() {
        let Ok(entries) = std::fs::read_dir(sources.join(dir)) else { continue };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let candidate = built.join(&name);
            if candidate.join("plugin.yaml").is_file() {
                found.push(candidate);
            }
        }
    }
    found.sort();
    found
}

/// Engine settings for `instances` plugin instances, with a compile cache in `cache_dir`.
pub fn engine_config(instances: u32, cache_dir: Option<PathBuf>) -> EngineConfig {
    // The default pool has places for 1000 instances of up to 4 GiB each; a host of many
    // small plugins sizes the pool to its plugin count (`wink run --max-instances`) and caps
    // each memory at what manifests ask.
    let pool = PoolLimits { max_memory_size: 64 << 20, ..PoolLimits::for_instances(instances.max(16)) };
    EngineConfig { pool: Some(pool), cache_dir, ..EngineConfig::default() }
}

/// An engine for `instances` instances without a disk cache.
pub fn engine(instances: u32) -> PluginEngine {
    PluginEngine::new(engine_config(instances, None)).expect("starting the wasm engine")
}

/// Loads a built plugin (manifest + component, compiled by `engine`).
pub fn load(dir: &Path, engine: &PluginEngine) -> LoadedPlugin {
    load_plugin(dir, engine).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

/// Serves cache reads from one indexer (or none).
#[derive(Debug, Default)]
pub struct OneCache(pub Option<Store>);

impl CacheResolver for OneCache {
    fn store(&self, _api_version: &str, _kind: &str) -> Option<Store> {
        self.0.clone()
    }
}

/// Settings of a plugin started by a benchmark.
#[derive(Clone, Debug)]
pub struct PluginSettings {
    /// The plugin's name.
    pub name: String,
    /// The per-call deadline.
    pub call_timeout: Duration,
    /// The `init` config, as JSON.
    pub config_json: String,
}

impl PluginSettings {
    /// A plugin called `name` with the default deadline (1 s) and no config.
    pub fn named(name: impl Into<String>) -> Self {
        Self { name: name.into(), call_timeout: Duration::from_secs(1), config_json: "null".into() }
    }
}

/// The sandbox of `plugin` under another name (the manifest's memory cap; `settings`
/// override name, deadline and config).
pub fn sandbox(plugin: &LoadedPlugin, engine: &PluginEngine, settings: &PluginSettings) -> Sandbox {
    sandbox_with_cluster(plugin, engine, settings, None)
}

/// As [`sandbox`], with the plugin's `cluster` requests going through `cluster`.
pub fn sandbox_with_cluster(
    plugin: &LoadedPlugin,
    engine: &PluginEngine,
    settings: &PluginSettings,
    cluster: Option<Arc<ClusterLink>>,
) -> Sandbox {
    let m = &plugin.manifest;
    Sandbox::new(
        engine.clone(),
        plugin.pre.clone(),
        SandboxSettings {
            name: settings.name.as_str().into(),
            memory_limit: m.limits.memory.bytes(),
            call_timeout: settings.call_timeout,
            config_json: settings.config_json.as_str().into(),
            scope: Arc::new(CacheScope::from_manifest(m)),
            cluster,
        },
        Arc::new(OneCache(None)),
    )
}

/// A plugin handler for `plugin` under another name, as the registry would build it, with
/// the failure policy `onError: skip` and no quarantine.
pub fn handler(
    plugin: &LoadedPlugin,
    engine: &PluginEngine,
    settings: &PluginSettings,
    metrics: &MetricsRegistry,
    pool: &GuestPool,
) -> PluginHandler {
    let sandbox = sandbox(plugin, engine, settings);
    let policy = FailurePolicy { on_error: OnError::Skip, quarantine_after: 0 };
    PluginHandler::new(
        Arc::new(sandbox),
        policy,
        wink::informer::BackoffConfig::PLUGIN_RESTART,
        metrics.plugin(&settings.name),
        pool.clone(),
    )
}

/// Writes a plugin folder `<root>/<name>/` for the component at `component` (hard-linked,
/// or copied where links fail), watching Pods in `namespace` (all when `None`).
pub fn install_copy(root: &Path, name: &str, component: &Path, namespace: Option<&str>, config_yaml: &str) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).expect("creating a plugin folder");
    let file = component.file_name().expect("a component file name");
    let target = dir.join(file);
    if std::fs::hard_link(component, &target).is_err() {
        std::fs::copy(component, &target).expect("copying a component");
    }
    let namespaces = namespace.map(|ns| format!("    namespaces: [{ns}]\n")).unwrap_or_default();
    let manifest = format!(
        "name: {name}\ncomponent: {}\nresources:\n  - apiVersion: v1\n    kind: Pod\n{namespaces}limits:\n  memory: 64Mi\n  callTimeout: 1s\nfailurePolicy:\n  onError: skip\n  quarantineAfter: 5\n{config_yaml}",
        file.to_string_lossy()
    );
    std::fs::write(dir.join("plugin.yaml"), manifest).expect("writing a manifest");
    dir
}

/// The `config:` block of a built plugin's manifest (everything from the line `config:`
/// on), so copies keep the configuration their `init` needs.
pub fn config_block(plugin_dir: &Path) -> String {
    let text = std::fs::read_to_string(plugin_dir.join("plugin.yaml")).expect("reading a manifest");
    match text.find("\nconfig:") {
        Some(at) => text[at + 1..].to_owned(),
        None => String::new(),
    }
}

/// The component file of a built plugin folder (`<folder>/<last name>.wasm`).
pub fn component_of(plugin_dir: &Path) -> PathBuf {
    let name = plugin_dir.file_name().expect("a plugin folder name").to_string_lossy().into_owned();
    plugin_dir.join(format!("{name}.wasm"))
}
