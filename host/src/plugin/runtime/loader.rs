//! Loading a plugin: manifest, component, compilation, and the check that the component
//! implements the `handler-plugin` world with nothing but the host's imports.
//!
//! [`load_plugin`] is what `wink check` runs and what the registry runs before it starts a
//! plugin. Each failure says what is wrong and names the file: a file that is not wasm, a
//! core module that was never componentized, a component of another world, one that imports
//! WASI or another interface the host does not provide, or one whose types do not match.
//!
//! Memory is checked before anything costly: a `limits.memory` above the largest linear
//! memory the engine's instance pool allows is refused before the component is read; a
//! component file larger than [`LoadLimits::max_component_size`] is refused from its
//! metadata, before it is read; and a component whose initial memory ([`InitialMemory`]:
//! memory minimums and data segments) exceeds `limits.memory` is refused before it is
//! compiled, so before any instance of it exists.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use wasmtime::component::Component;

use crate::plugin::contract::bindings::{WitVersion, World, check_exports};
use crate::plugin::imports::{CacheResolver, CacheScope, ClusterLink, wasi};
use crate::plugin::manifest::{MANIFEST_FILE, Manifest, ManifestError, format_bytes};
use crate::plugin::runtime::engine::{CacheOutcome, Compiled, EngineError, PluginEngine};
use crate::plugin::runtime::file_identity::FileIdentity;
use crate::plugin::runtime::footprint::InitialMemory;
use crate::plugin::runtime::instance::{PluginPre, Sandbox, SandboxSettings, linker};

/// The default largest component file the loader reads: 128 MiB (a Python or JavaScript
/// runtime with its libraries is a few tens of MiB).
pub(crate) const DEFAULT_MAX_COMPONENT_SIZE: u64 = 128 << 20;

/// Bounds on what the loader reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LoadLimits {
    /// The largest component file, in bytes; a larger one is refused before it is read.
    /// Default `DEFAULT_MAX_COMPONENT_SIZE`.
    pub max_component_size: u64,
}

impl Default for LoadLimits {
    fn default() -> Self {
        Self { max_component_size: DEFAULT_MAX_COMPONENT_SIZE }
    }
}

/// Why a plugin could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The manifest is missing or invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The component file could not be read.
    #[error("cannot read component {}: {source}", path.display())]
    ReadComponent {
        /// The component file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The component file is missing from a plugin's source folder: it is built elsewhere.
    #[error(
        "{} holds the source of a plugin ({marker}) but not its component {}: build it first \
         (in a checkout of wink, `cargo xtask build-plugins --only {}` writes the built plugin under \
         .wink/plugins/) and give the built folder",
        dir.display(), component.display(), dir.display()
    )]
    NotBuilt {
        /// The plugin's folder.
        dir: PathBuf,
        /// The component file the manifest names.
        component: PathBuf,
        /// The source file found (`Cargo.toml`, `go.mod`, `app.py`…).
        marker: String,
    },
    /// The manifest and the component disagree on what the plugin is: a `reconcile` section
    /// for a handler, or a reconciler without one.
    #[error("{}: {}", path.display(), if *reconciler_manifest {
        "the manifest has a `reconcile` section but the component is a handler (it exports wink:plugin/handler): build it as a reconciler, or remove `reconcile` and list `resources`"
    } else {
        "the component is a reconciler (it exports wink:plugin/reconciler@0.4.0) but the manifest has no `reconcile` section naming its primary resource (`reconcile: {for: {apiVersion: …, kind: …}}`)"
    })]
    WorldMismatch {
        /// The manifest.
        path: PathBuf,
        /// Whether the manifest is a reconciler's.
        reconciler_manifest: bool,
    },
    /// The component file is larger than the host loads.
    #[error("{} is {}, larger than the largest component this host loads ({}; see --max-component-size)", path.display(), format_bytes(*size), format_bytes(*max))]
    ComponentTooLarge {
        /// The component file.
        path: PathBuf,
        /// Its size, in bytes.
        size: u64,
        /// The largest size loaded, in bytes.
        max: u64,
    },
    /// The manifest's memory limit is above the largest linear memory the engine's instance
    /// pool allows: the plugin could never grow to its limit.
    #[error("{}: plugin {plugin}: limits.memory {} is above the largest linear memory this host's instance pool allows ({})", path.display(), format_bytes(*limit), format_bytes(*max))]
    MemoryAbovePoolMax {
        /// The manifest file.
        path: PathBuf,
        /// The plugin.
        plugin: String,
        /// Its `limits.memory`, in bytes.
        limit: u64,
        /// The pool's `max_memory_size`, in bytes.
        max: u64,
    },
    /// The component needs more memory before its first call than its plugin's limit.
    #[error("{}: plugin {plugin}: the component's initial memory is {} ({} of memory minimums in {} core module(s), {} of data segments), above its limits.memory of {}", path.display(), format_bytes(initial.total()), format_bytes(initial.memories), initial.modules, format_bytes(initial.data), format_bytes(*limit))]
    InitialMemoryAboveLimit {
        /// The component file.
        path: PathBuf,
        /// The plugin.
        plugin: String,
        /// What the component needs before its first call.
        initial: InitialMemory,
        /// The plugin's `limits.memory`, in bytes.
        limit: u64,
    },
    /// The file does not start with the WebAssembly magic number.
    #[error("{} is not a WebAssembly file", path.display())]
    NotWasm {
        /// The component file.
        path: PathBuf,
    },
    /// The file is a core WebAssembly module, not a component.
    #[error("{} is a core WebAssembly module, not a component: turn it into a component (wit-component, `cargo xtask build-plugins`)", path.display())]
    CoreModule {
        /// The component file.
        path: PathBuf,
    },
    /// wasmtime could not compile the component.
    #[error("cannot compile {}: {source}", path.display())]
    Compile {
        /// The component file.
        path: PathBuf,
        /// The engine's error.
        #[source]
        source: EngineError,
    },
    /// The component imports interfaces the host does not provide.
    #[error("{} imports {}, which the host does not provide to wink:plugin@{} plugins (allowed: {})", path.display(), imports.join(", "), version.as_str(), version.allowed_imports().join(", "))]
    UnsupportedImports {
        /// The component file.
        path: PathBuf,
        /// The contract version the component implements.
        version: WitVersion,
        /// The unknown imports.
        imports: Vec<String>,
    },
    /// The component exports neither the handler nor the reconciler interface: it
    /// implements another world.
    #[error("{} exports no wink handler or reconciler (`wink:plugin/handler@0.1.0` to `@0.4.0`, `wink:plugin/reconciler@0.4.0`): it does not implement the wink:plugin/handler-plugin world, nor the reconciler-plugin world (it exports: {})", path.display(), if exports.is_empty() { "nothing".to_owned() } else { exports.join(", ") })]
    MissingExport {
        /// The component file.
        path: PathBuf,
        /// What the component exports instead.
        exports: Vec<String>,
    },
    /// The imports or exports have the right names but the wrong types.
    #[error("{} does not match the wink:plugin contract: {source:#}", path.display())]
    Link {
        /// The component file.
        path: PathBuf,
        /// wasmtime's type-check error.
        #[source]
        source: wasmtime::Error,
    },
}

/// A plugin ready to run: its manifest and its component, compiled and pre-linked.
#[derive(Clone)]
pub struct LoadedPlugin {
    /// The manifest.
    pub manifest: Arc<Manifest>,
    /// The component file.
    pub component_path: PathBuf,
    /// The compiled component.
    pub component: Component,
    /// The component pre-linked against the host's imports.
    pub pre: PluginPre,
    /// Whether compilation was served from the disk cache.
    pub cache: CacheOutcome,
    /// The sha256 of the component file, in hex.
    pub digest: String,
    /// What the component needs before its first call.
    pub initial_memory: InitialMemory,
}

impl std::fmt::Debug for LoadedPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedPlugin")
            .field("name", &self.manifest.name)
            .field("component_path", &self.component_path)
            .field("cache", &self.cache)
            .field("digest", &self.digest)
            .finish_non_exhaustive()
    }
}

impl LoadedPlugin {
    /// The plugin's name.
    pub fn name(&self) -> &str {
        self.manifest.name.as_str()
    }

    /// A sandbox that starts instances of this plugin with the manifest's limits, its
    /// `config`, cache reads scoped by the manifest and served by `resolver`, and cluster
    /// requests through `cluster` (none: every request is `unavailable`).
    pub fn sandbox(
        &self,
        engine: &PluginEngine,
        resolver: Arc<dyn CacheResolver>,
        cluster: Option<Arc<ClusterLink>>,
    ) -> Sandbox {
        let m = &self.manifest;
        let settings = SandboxSettings {
            name: m.name.as_str().into(),
            memory_limit: m.limits.memory.bytes(),
            call_timeout: m.limits.call_timeout,
            config_json: m.config_json().into(),
            scope: Arc::new(CacheScope::from_manifest(m)),
            cluster,
        };
        Sandbox::new(engine.clone(), self.pre.clone(), settings, resolver)
    }
}

/// Loads a plugin from its folder (which holds `plugin.yaml`) or from its manifest file.
///
/// Blocking and possibly slow (compiling a large component takes seconds on a cache miss):
/// from async code, call it inside `tokio::task::spawn_blocking`.
pub fn load_plugin(path: impl AsRef<Path>, engine: &PluginEngine) -> Result<LoadedPlugin, LoadError> {
    load_manifest(load_plugin_manifest(path)?, engine, &LoadLimits::default())
}

/// The manifest of the plugin in a folder (which holds `plugin.yaml`), or in a manifest file.
pub(crate) fn load_plugin_manifest(path: impl AsRef<Path>) -> Result<Manifest, ManifestError> {
    let path = path.as_ref();
    let manifest_path = if path.is_dir() { path.join(MANIFEST_FILE) } else { path.to_owned() };
    Manifest::load(&manifest_path)
}

/// Loads the plugin of a manifest already read: checks its memory limit against the engine,
/// then reads (at most `limits.max_component_size` bytes), checks, compiles and links its
/// component. Blocking, like [`load_plugin`].
pub(crate) fn load_manifest(
    manifest: Manifest,
    engine: &PluginEngine,
    limits: &LoadLimits,
) -> Result<LoadedPlugin, LoadError> {
    let limit = manifest.limits.memory.bytes();
    if let Some(max) = engine.max_memory_size()
        && limit > max
    {
        let (path, plugin) = (manifest.path().to_owned(), manifest.name.to_string());
        return Err(LoadError::MemoryAbovePoolMax { path, plugin, limit, max });
    }
    let component_path = manifest.component_path();
    let above_limit = |initial: InitialMemory| {
        let (path, plugin) = (component_path.clone(), manifest.name.to_string());
        Err(LoadError::InitialMemoryAboveLimit { path, plugin, initial, limit })
    };
    let (compiled, pre) = match known_component(&component_path, engine, limits.max_component_size) {
        Some((compiled, _)) if compiled.initial_memory.total() > limit => return above_limit(compiled.initial_memory),
        Some(known) => known,
        None => {
            let (bytes, identity) = read_component(&component_path, limits.max_component_size)?;
            check_header(&bytes, &component_path)?;
            // A component wasmparser cannot read is left to the compiler, whose error says more.
            let initial_memory = InitialMemory::of(&bytes).unwrap_or_default();
            if initial_memory.total() > limit {
                return above_limit(initial_memory);
            }
            prepare_component(&bytes, identity, &component_path, engine)?
        }
    };
    let initial_memory = compiled.initial_memory;
    let reconciler_manifest = manifest.reconcile.is_some();
    if reconciler_manifest != (pre.world() == World::Reconciler) {
        return Err(LoadError::WorldMismatch { path: manifest.path().to_owned(), reconciler_manifest });
    }
    Ok(LoadedPlugin {
        manifest: Arc::new(manifest),
        component_path,
        component: compiled.component,
        pre,
        cache: compiled.outcome,
        digest: compiled.digest,
        initial_memory,
    })
}

/// The component at `path`, compiled and linked, if the engine read that file (or a hard
/// link to it) before and keeps it: many tenants' copies of one plugin read it once. Files
/// modified too recently to be told apart by their metadata are read (see [`FileIdentity`]).
fn known_component(path: &Path, engine: &PluginEngine, max: u64) -> Option<(Compiled, PluginPre)> {
    let meta = std::fs::metadata(path).ok().filter(|meta| meta.len() <= max)?;
    engine.linked_file(&FileIdentity::settled(&meta, std::time::SystemTime::now())?)
}

/// Reads a component file of at most `max` bytes, refusing a larger one from its metadata
/// before reading it (and, should it grow meanwhile, after `max + 1` bytes). Also says which
/// file at which version the bytes came from, where that can be trusted ([`FileIdentity`]).
/// The file that marks `dir` as a plugin's source: a Rust crate, Go module, or Python,
/// JavaScript or C sources.
fn source_marker(dir: &Path) -> Option<String> {
    let named = ["Cargo.toml", "go.mod", "package.json"].into_iter().find(|f| dir.join(f).is_file());
    named.map(str::to_owned).or_else(|| {
        let entries = std::fs::read_dir(dir).ok()?;
        entries
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|name| [".py", ".js", ".c"].iter().any(|ext| name.ends_with(ext)))
    })
}

fn read_component(path: &Path, max: u64) -> Result<(Vec<u8>, Option<FileIdentity>), LoadError> {
    let read_error = |source: std::io::Error| {
        let dir = path.parent().unwrap_or(Path::new("."));
        match source_marker(dir) {
            Some(marker) if source.kind() == std::io::ErrorKind::NotFound => {
                let component = PathBuf::from(path.file_name().unwrap_or_default());
                LoadError::NotBuilt { dir: dir.to_owned(), component, marker }
            }
            _ => LoadError::ReadComponent { path: path.to_owned(), source },
        }
    };
    let too_large = |size| LoadError::ComponentTooLarge { path: path.to_owned(), size, max };
    let file = std::fs::File::open(path).map_err(read_error)?;
    let before = file.metadata().map_err(read_error)?;
    let size = before.len();
    if size > max {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    let mut reader = file.take(max.saturating_add(1));
    reader.read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    let identity = reader
        .into_inner()
        .metadata()
        .ok()
        .and_then(|after| FileIdentity::of_read(&before, &after, std::time::SystemTime::now()))
        .filter(|_| bytes.len() as u64 == size);
    Ok((bytes, identity))
}

/// Refuses a file that is not wasm, or a core module.
fn check_header(bytes: &[u8], path: &Path) -> Result<(), LoadError> {
    if bytes.len() < 8 || &bytes[..4] != b"\0asm" {
        return Err(LoadError::NotWasm { path: path.to_owned() });
    }
    // Bytes 4..8: version and layer. Core modules are layer 0, components layer 1.
    if bytes[6..8] == [0, 0] {
        return Err(LoadError::CoreModule { path: path.to_owned() });
    }
    Ok(())
}

/// Compiles component bytes (through the cache) and checks them against the world; `path`
/// names the file in errors.
/// `identity` is the file the bytes were read from, where known (see [`FileIdentity`]).
pub(crate) fn prepare_component(
    bytes: &[u8],
    identity: Option<FileIdentity>,
    path: &Path,
    engine: &PluginEngine,
) -> Result<(Compiled, PluginPre), LoadError> {
    let path_buf = || path.to_owned();
    check_header(bytes, path)?;
    let compiled =
        engine.compile_read(bytes, identity).map_err(|source| LoadError::Compile { path: path_buf(), source })?;
    if let Some(pre) = compiled.linked.get() {
        return Ok((compiled.clone(), pre.clone()));
    }
    let pre = link(&compiled.component, engine, path)?;
    // Another plugin of the same component may have linked it meanwhile: either result serves.
    let _ = compiled.linked.set(pre.clone());
    Ok((compiled, pre))
}

/// Checks a compiled component's exports and imports against the contract and pre-links it.
fn link(component: &Component, engine: &PluginEngine, path: &Path) -> Result<PluginPre, LoadError> {
    let path_buf = || path.to_owned();
    let component_type = component.component_type();
    let exports: Vec<String> = component_type.exports(engine.wasmtime()).map(|(name, _)| name.to_owned()).collect();
    let Some((version, world)) = WitVersion::of_exports(exports.iter().map(String::as_str)) else {
        return Err(LoadError::MissingExport { path: path_buf(), exports });
    };
    let imports: Vec<String> = component_type.imports(engine.wasmtime()).map(|(name, _)| name.to_owned()).collect();
    let unknown: Vec<String> =
        imports.into_iter().filter(|i| !i.starts_with("wasi:") && !version.allows_import(i)).collect();
    if !unknown.is_empty() {
        return Err(LoadError::UnsupportedImports { path: path_buf(), version, imports: unknown });
    }
    let link_error = |source| LoadError::Link { path: path_buf(), source };
    let mut linker = linker(engine).map_err(link_error)?;
    let refused = wasi::link(&mut linker, component).map_err(link_error)?;
    linker
        .instantiate_pre(component)
        .and_then(|pre| check_exports(&pre, version, world).map(|()| PluginPre::new(pre, version, world, refused)))
        .map_err(link_error)
}

#[cfg(test)]
#[path = "loader_tests.rs"]
mod tests;
