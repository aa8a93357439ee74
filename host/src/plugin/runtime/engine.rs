//! The host's one `wasmtime::Engine`: configuration, the epoch ticker, and the on-disk cache
//! of compiled components.
//!
//! - **Allocation.** The pooling allocator pre-reserves slots for many small instances, so
//!   re-instantiating a plugin after a trap costs microseconds. Its limits are configurable
//!   ([`PoolLimits`]); if the pool cannot be reserved (a low `ulimit -v`, an overcommit
//!   policy), the engine falls back to on-demand allocation and says why ([`Allocation`]).
//! - **Deadlines.** Epoch interruption is on; one thread ticks `increment_epoch` every
//!   [`EngineConfig::epoch_tick`] of real time while guest code runs
//!   ([`PluginEngine::guest_running`]) and a few ticks after
//!   ([`LINGER_TICKS`](super::ticker::LINGER_TICKS); see [`super::ticker`]), is parked while
//!   none does (an idle host does not wake up 100 times a second), and stops when the
//!   last handle to the engine is dropped.
//!   Deadlines are real time, not the async runtime's clock: a runtime whose clock is
//!   paused or skewed (tokio's test clock auto-advances while the runtime waits on a guest)
//!   cannot make a guest's deadline pass early.
//!   Each store checks its call's deadline on every tick
//!   ([`deadline`](super::deadline)).
//! - **Compile cache.** Compiling a component takes from tens of milliseconds (Rust) to
//!   seconds (Python, JavaScript); loading a compiled one takes milliseconds. Compiled
//!   components are stored as `<cache_dir>/<sha256 of the component>-<engine hash>.cwasm`
//!   where the engine hash covers wasmtime's version and every setting that affects code
//!   ([`wasmtime::Engine::precompile_compatibility_hash`]). Files are written to a temporary
//!   name and renamed, so a reader never sees half a file. A file that fails to load is
//!   recompiled and overwritten, with a warning. A file's modification time is its last use
//!   (it is touched on every load), and [`PluginEngine::prune_cache`] keeps the folder under
//!   [`EngineConfig::cache_max_size`] without ever removing a file in use (see
//!   [`super::cache_prune`]).
//! - **Shared code.** The engine also keeps the most recently used compiled components in
//!   memory ([`MEMORY_CACHE_SIZE`] of them, by digest), so plugins that use the same
//!   component — many tenants' copies of one plugin — share one copy of its code and metadata
//!   instead of each mapping the cache file again: a copy loads in microseconds and costs no
//!   memory beyond its own instances; each is linked once ([`Compiled::linked`]). Pruning
//!   forgets the ones no deployed plugin uses.
//!
//! The cache directory must be writable only by the host's user: a `.cwasm` is native code
//! that wasmtime maps and runs without verifying it.

use std::hash::Hasher;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::cache_prune::{PruneReport, prune};
use super::file_identity::{FileIdentity, KnownDigests};
use super::footprint::InitialMemory;
use super::instance::PluginPre;
use super::ticker::{EpochTicker, GuestRunning};

/// Bumped when the cache's file layout changes, so old files are never read.
const CACHE_FORMAT: &str = "wink-cwasm-1";

/// The default bound of the compile cache folder: 1 GiB.
pub(crate) const DEFAULT_CACHE_MAX_SIZE: u64 = 1 << 30;

/// How many distinct compiled components the engine keeps in memory for reuse.
pub(crate) const MEMORY_CACHE_SIZE: usize = 32;

/// Why the engine could not be built or a component could not be compiled.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// wasmtime rejected the configuration, even with on-demand allocation.
    #[error("cannot create the wasmtime engine: {source}")]
    Config {
        /// wasmtime's error.
        #[source]
        source: wasmtime::Error,
    },
    /// The compile cache directory could not be created.
    #[error("cannot create the compile cache directory {}: {source}", path.display())]
    CacheDir {
        /// The directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The bytes are not a valid component for this engine (malformed, or using a feature
    /// the engine does not enable).
    #[error("cannot compile the component: {source}")]
    Compile {
        /// wasmtime's error.
        #[source]
        source: wasmtime::Error,
    },
    /// The epoch ticker thread could not be started.
    #[error("cannot start the epoch ticker thread: {source}")]
    Ticker {
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
}

/// Limits of the pooling allocator, which reserves address space for all its places when the
/// engine starts (only what instances touch becomes memory). [`PoolLimits::for_instances`]
/// sizes every kind of place for a number of plugin instances; the default is for 1000.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolLimits {
    /// Concurrent component instances (one per live plugin instance).
    pub total_component_instances: u32,
    /// Concurrent core instances (a component holds several).
    pub total_core_instances: u32,
    /// Concurrent linear memories. Each reserves address space (about 4 GiB) but only what
    /// is touched is memory.
    pub total_memories: u32,
    /// Concurrent tables.
    pub total_tables: u32,
    /// The most elements of one table. Default 65 536 (interpreters have large tables).
    pub table_elements: usize,
    /// The most tables one core module may define. Default 4.
    pub max_tables_per_module: u32,
    /// The largest linear memory, in bytes: a plugin whose `limits.memory` is larger is
    /// refused when it is loaded. Default 4 GiB.
    pub max_memory_size: usize,
    /// The most instance metadata of one core instance, in bytes. Default 1 MiB.
    pub max_core_instance_size: usize,
    /// The most metadata of one component instance, in bytes. Default 4 MiB.
    pub max_component_instance_size: usize,
}

/// The plugin instances [`PoolLimits::default`] has places for.
pub const DEFAULT_MAX_INSTANCES: u32 = 1000;

impl Default for PoolLimits {
    fn default() -> Self {
        Self::for_instances(DEFAULT_MAX_INSTANCES)
    }
}

impl PoolLimits {
    /// Places for `instances` plugin instances of any of the guest languages: each holds one
    /// component instance, and at most two memories and two tables (a JavaScript component
    /// has two memories; Rust, C and Python components one, each with two tables) and a few
    /// dozen core instances (an interpreter's component is many modules). Memories take the
    /// most address space: 10,000 instances reserve about 80 TiB of the 128 TiB a 64-bit
    /// Linux process has; a pool that cannot be reserved falls back to on-demand allocation
    /// (see [`Allocation`]).
    pub fn for_instances(instances: u32) -> Self {
        let instances = instances.max(1);
        Self {
            total_component_instances: instances,
            total_core_instances: instances.saturating_mul(32),
            total_memories: instances.saturating_mul(2),
            total_tables: instances.saturating_mul(4),
            table_elements: 65_536,
            max_tables_per_module: 4,
            max_memory_size: 4 << 30,
            max_core_instance_size: 1 << 20,
            max_component_instance_size: 4 << 20,
        }
    }

    /// Small limits for tests and tools that run a handful of instances.
    pub fn small() -> Self {
        Self {
            total_component_instances: 32,
            total_core_instances: 256,
            total_memories: 32,
            total_tables: 64,
            ..Self::default()
        }
    }

    fn to_wasmtime(&self) -> PoolingAllocationConfig {
        let mut pool = PoolingAllocationConfig::new();
        pool.total_component_instances(self.total_component_instances)
            .total_core_instances(self.total_core_instances)
            .total_memories(self.total_memories)
            .total_tables(self.total_tables)
            .table_elements(self.table_elements)
            .max_tables_per_module(self.max_tables_per_module)
            .max_memory_size(self.max_memory_size)
            .max_core_instance_size(self.max_core_instance_size)
            .max_component_instance_size(self.max_component_instance_size);
        pool
    }
}

/// Engine settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Pooling allocator limits; `None` = on-demand allocation. Default: [`PoolLimits::default`].
    pub pool: Option<PoolLimits>,
    /// The epoch tick: deadlines are accurate to about one tick. Default 10 ms.
    pub epoch_tick: Duration,
    /// Where compiled components are cached; `None` = no disk cache. Default `None`.
    pub cache_dir: Option<PathBuf>,
    /// The size the cache folder is pruned to, in bytes (files in use always stay).
    /// Default `DEFAULT_CACHE_MAX_SIZE`.
    pub cache_max_size: u64,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self {
            pool: Some(PoolLimits::default()),
            epoch_tick: Duration::from_millis(10),
            cache_dir: None,
            cache_max_size: DEFAULT_CACHE_MAX_SIZE,
        }
    }
}

/// How the engine allocates instances.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allocation {
    /// The pooling allocator, with these limits.
    Pooling(PoolLimits),
    /// On-demand allocation: requested, or the fallback when the pool could not be reserved.
    OnDemand {
        /// Why the pool was not used (`None` when on-demand was requested).
        fallback_reason: Option<String>,
    },
}

/// Whether a compiled component came from the disk cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Loaded from the cache: nothing was compiled.
    Hit,
    /// Compiled (no usable cache file), and the result stored.
    Miss,
    /// Compiled; the engine has no cache directory.
    Disabled,
}

/// A compiled component's pre-linked form, set by the first plugin that links it and shared
/// by every plugin using the same component (linking resolves the same imports each time).
pub(crate) type Linked = Arc<std::sync::OnceLock<PluginPre>>;

/// A compiled component and where it came from.
#[derive(Clone)]
pub struct Compiled {
    /// The component, ready to link.
    pub component: Component,
    /// Its pre-linked form, once linked (shared while the engine keeps the component).
    pub linked: Linked,
    /// Whether it came from the cache.
    pub outcome: CacheOutcome,
    /// The sha256 of the component's bytes, in hex.
    pub digest: String,
    /// Its memory before its first call (zero if wasmparser cannot read it: the compiler
    /// would have refused it).
    pub initial_memory: InitialMemory,
}

struct Inner {
    engine: wasmtime::Engine,
    config: EngineConfig,
    allocation: Allocation,
    engine_hash: String,
    compilations: AtomicU64,
    cache_hits: AtomicU64,
    temp_counter: AtomicU64,
    /// Recently used components by digest, most recent first.
    in_memory: parking_lot::Mutex<std::collections::VecDeque<Compiled>>,
    /// Ticks while guest code runs; stops with the engine.
    ticker: EpochTicker,
    /// The digests of component files read, by file identity.
    known_digests: KnownDigests<String>,
    /// A lock per digest being compiled or loaded, so that plugins of one component read at
    /// once (a folder's reads run in parallel) compile it once: the others wait for it.
    compiling: parking_lot::Mutex<std::collections::HashMap<String, Arc<parking_lot::Mutex<()>>>>,
}

/// The host's wasmtime engine. Cheap to clone; the epoch ticker stops with the last clone.
#[derive(Clone)]
pub struct PluginEngine(Arc<Inner>);

impl std::fmt::Debug for PluginEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PluginEngine")
            .field("allocation", &self.0.allocation)
            .field("epoch_tick", &self.0.config.epoch_tick)
            .field("cache_dir", &self.0.config.cache_dir)
            .finish()
    }
}

fn base_config() -> Config {
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true);
    config
}

/// Feeds `Hash` output into SHA-256 so the engine hash is stable across runs and builds.
struct Sha256Hasher(Sha256);

impl Hasher for Sha256Hasher {
    fn finish(&self) -> u64 {
        unreachable!("only the digest is read")
    }

    fn write(&mut self, bytes: &[u8]) {
        self.0.update(bytes);
    }
}

impl PluginEngine {
    /// Builds the engine and starts its epoch ticker thread.
    pub fn new(config: EngineConfig) -> Result<Self, EngineError> {
        let (engine, allocation) = match &config.pool {
            Some(limits) => {
                let mut pooled = base_config();
                pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(limits.to_wasmtime()));
                match wasmtime::Engine::new(&pooled) {
                    Ok(engine) => (engine, Allocation::Pooling(limits.clone())),
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot reserve the pooling allocator; falling back to on-demand allocation");
                        let engine =
                            wasmtime::Engine::new(&base_config()).map_err(|source| EngineError::Config { source })?;
                        (engine, Allocation::OnDemand { fallback_reason: Some(e.to_string()) })
                    }
                }
            }
            None => {
                let engine = wasmtime::Engine::new(&base_config()).map_err(|source| EngineError::Config { source })?;
                (engine, Allocation::OnDemand { fallback_reason: None })
            }
        };
        if let Some(dir) = &config.cache_dir {
            create_private_dir(dir).map_err(|source| EngineError::CacheDir { path: dir.clone(), source })?;
        }
        let engine_hash = {
            let mut hasher = Sha256Hasher(Sha256::new());
            std::hash::Hash::hash(&engine.precompile_compatibility_hash(), &mut hasher);
            hasher.0.update(CACHE_FORMAT.as_bytes());
            hex::encode(&hasher.0.finalize()[..8])
        };
        let ticker = EpochTicker::start(engine.clone(), config.epoch_tick.max(Duration::from_millis(1)))
            .map_err(|source| EngineError::Ticker { source })?;
        Ok(Self(Arc::new(Inner {
            engine,
            config,
            allocation,
            engine_hash,
            compilations: AtomicU64::new(0),
            cache_hits: AtomicU64::new(0),
            temp_counter: AtomicU64::new(0),
            in_memory: parking_lot::Mutex::default(),
            ticker,
            known_digests: KnownDigests::default(),
            compiling: parking_lot::Mutex::default(),
        })))
    }

    /// The wasmtime engine.
    pub fn wasmtime(&self) -> &wasmtime::Engine {
        &self.0.engine
    }

    /// How instances are allocated.
    pub fn allocation(&self) -> &Allocation {
        &self.0.allocation
    }

    /// How many more plugin instances the pool has places for now: its free component
    /// instances, or half its free memories if fewer (an instance may hold two). `None` with
    /// on-demand allocation, which has no cap.
    pub fn free_instance_places(&self) -> Option<u64> {
        let Allocation::Pooling(limits) = &self.0.allocation else { return None };
        let live = self.0.engine.pooling_allocator_metrics()?;
        let instances = u64::from(limits.total_component_instances).saturating_sub(live.component_instances());
        let memories = usize::try_from(limits.total_memories).unwrap_or(usize::MAX).saturating_sub(live.memories()) / 2;
        Some(instances.min(u64::try_from(memories).unwrap_or(u64::MAX)))
    }

    /// The settings the engine was built with.
    pub fn config(&self) -> &EngineConfig {
        &self.0.config
    }

    /// Marks guest code as running until the guard is dropped: the epoch ticker ticks while
    /// any such guard lives.
    pub fn guest_running(&self) -> GuestRunning<'_> {
        self.0.ticker.guest_running()
    }

    /// The epoch tick: how often a running call's deadline is checked.
    pub fn epoch_tick(&self) -> Duration {
        self.0.config.epoch_tick.max(Duration::from_millis(1))
    }

    /// How many times the epoch ticker has ticked.
    pub fn epoch_ticks(&self) -> u64 {
        self.0.ticker.ticks()
    }

    /// The largest linear memory an instance may have, in bytes: the pooling allocator's
    /// `max_memory_size` (`None` with on-demand allocation, which has no such bound).
    pub fn max_memory_size(&self) -> Option<u64> {
        match &self.0.allocation {
            Allocation::Pooling(limits) => Some(u64::try_from(limits.max_memory_size).unwrap_or(u64::MAX)),
            Allocation::OnDemand { .. } => None,
        }
    }

    /// Prunes the compile caches, never removing the components whose digests are in
    /// `in_use`: forgets the other components kept in memory (a removed plugin's code is
    /// freed with its last instance), and prunes the cache folder to
    /// [`EngineConfig::cache_max_size`] (see `super::cache_prune`). Returns what it did to
    /// the folder, `None` without one. Blocking (reads the folder).
    pub fn prune_cache(&self, in_use: &std::collections::HashSet<String>) -> Option<PruneReport> {
        self.0.in_memory.lock().retain(|compiled| in_use.contains(&compiled.digest));
        let dir = self.0.config.cache_dir.as_ref()?;
        match prune(dir, &self.0.engine_hash, in_use, self.0.config.cache_max_size) {
            Ok(report) => {
                if report.evicted + report.foreign_removed + report.stale_temp_removed > 0 {
                    tracing::info!(dir = %dir.display(), evicted = report.evicted, other_engines = report.foreign_removed,
                        kept = report.kept, kept_bytes = report.kept_bytes, "compile cache pruned");
                }
                Some(report)
            }
            Err(e) => {
                tracing::warn!(dir = %dir.display(), error = %e, "cannot prune the compile cache");
                None
            }
        }
    }

    /// The number of components compiled (not loaded from the cache) so far.
    pub fn compilations(&self) -> u64 {
        self.0.compilations.load(Ordering::Relaxed)
    }

    /// The number of components served from a cache (in memory or on disk) so far.
    pub fn cache_hits(&self) -> u64 {
        self.0.cache_hits.load(Ordering::Relaxed)
    }

    /// The cache file a component with this sha256 digest is stored in, if caching is on.
    pub fn cache_path(&self, digest: &str) -> Option<PathBuf> {
        let dir = self.0.config.cache_dir.as_ref()?;
        Some(dir.join(format!("{digest}-{}.cwasm", self.0.engine_hash)))
    }

    /// Compiles a component: from memory when this engine already has it, else through the
    /// disk cache when one is configured.
    pub fn compile(&self, bytes: &[u8]) -> Result<Compiled, EngineError> {
        self.compile_read(bytes, None)
    }

    /// [`compile`](Self::compile) for bytes read from the file at `identity`: a file whose
    /// digest this engine knows (the same file read again, or a hard link to it) is not
    /// hashed again.
    pub fn compile_read(&self, bytes: &[u8], identity: Option<FileIdentity>) -> Result<Compiled, EngineError> {
        let digest = match identity.and_then(|id| self.0.known_digests.get(&id)) {
            Some(digest) => digest,
            None => {
                let digest = hex::encode(Sha256::digest(bytes));
                if let Some(identity) = identity {
                    self.0.known_digests.insert(identity, digest.clone());
                }
                digest
            }
        };
        if let Some(compiled) = self.remembered_hit(&digest) {
            return Ok(compiled);
        }
        let lock = self.0.compiling.lock().entry(digest.clone()).or_default().clone();
        let result = {
            let _compiling = lock.lock();
            // Compiled by another plugin's read while this one waited, or compiled now.
            match self.remembered_hit(&digest) {
                Some(compiled) => Ok(compiled),
                None => self.compile_or_load(bytes, digest.clone()).inspect(|compiled| self.remember(compiled)),
            }
        };
        let mut compiling = self.0.compiling.lock();
        // The last one out removes the lock (the map's and this one are the only handles).
        if Arc::strong_count(&lock) == 2 {
            compiling.remove(&digest);
        }
        result
    }

    /// The component in the file at `identity`, compiled and linked, if this engine read that
    /// file (or a hard link to it) before and still keeps its component in memory: the file
    /// need not be read again. (`identity` is a settled file's, whose metadata identify its
    /// contents.)
    pub fn linked_file(&self, identity: &FileIdentity) -> Option<(Compiled, PluginPre)> {
        let compiled = self.remembered(&self.0.known_digests.get(identity)?)?;
        let pre = compiled.linked.get()?.clone();
        self.0.cache_hits.fetch_add(1, Ordering::Relaxed);
        Some((compiled, pre))
    }

    /// [`remembered`](Self::remembered), counted as a cache hit.
    fn remembered_hit(&self, digest: &str) -> Option<Compiled> {
        let compiled = self.remembered(digest)?;
        self.0.cache_hits.fetch_add(1, Ordering::Relaxed);
        Some(compiled)
    }

    fn remembered(&self, digest: &str) -> Option<Compiled> {
        let mut in_memory = self.0.in_memory.lock();
        let at = in_memory.iter().position(|c| c.digest == digest)?;
        let entry = in_memory.remove(at)?;
        let found = Compiled { outcome: CacheOutcome::Hit, ..entry.clone() };
        in_memory.push_front(entry);
        Some(found)
    }

    fn remember(&self, compiled: &Compiled) {
        let mut in_memory = self.0.in_memory.lock();
        in_memory.retain(|c| c.digest != compiled.digest);
        in_memory.push_front(compiled.clone());
        in_memory.truncate(MEMORY_CACHE_SIZE);
    }

    fn compile_or_load(&self, bytes: &[u8], digest: String) -> Result<Compiled, EngineError> {
        let initial_memory = InitialMemory::of(bytes).unwrap_or_default();
        let path = self.cache_path(&digest);
        let compiled =
            |component, outcome| Compiled { component, linked: Linked::default(), outcome, digest, initial_memory };
        let Some(path) = path else {
            return Ok(compiled(self.compile_now(bytes)?, CacheOutcome::Disabled));
        };
        if path.exists() {
            match self.load_cached(&path) {
                Ok(component) => {
                    self.0.cache_hits.fetch_add(1, Ordering::Relaxed);
                    return Ok(compiled(component, CacheOutcome::Hit));
                }
                Err(e) => tracing::warn!(path = %path.display(), error = %e, "corrupt compile cache file; recompiling"),
            }
        }
        let component = self.compile_now(bytes)?;
        match component.serialize() {
            Ok(serialized) => {
                if let Err(e) = self.write_atomically(&path, &serialized) {
                    tracing::warn!(path = %path.display(), error = %e, "cannot write the compile cache");
                }
            }
            Err(e) => tracing::warn!(error = %e, "cannot serialize a compiled component for the cache"),
        }
        Ok(compiled(component, CacheOutcome::Miss))
    }

    fn compile_now(&self, bytes: &[u8]) -> Result<Component, EngineError> {
        self.0.compilations.fetch_add(1, Ordering::Relaxed);
        Component::from_binary(&self.0.engine, bytes).map_err(|source| EngineError::Compile { source })
    }

    fn load_cached(&self, path: &Path) -> wasmtime::Result<Component> {
        // SAFETY: `deserialize_file` requires a file produced by `Component::serialize` for a
        // compatible engine and not modified since. This file was written by `compile` below
        // (to a temporary name, then renamed, so never seen half-written), under a name made
        // of the sha256 of the component's bytes and the hash of every engine setting that
        // affects compiled code; wasmtime also checks the engine compatibility header. The
        // cache directory is created private to the host's user.
        #[allow(unsafe_code, reason = "loading our own content-addressed, atomically written .cwasm file")]
        let component = unsafe { Component::deserialize_file(&self.0.engine, path) }?;
        // The modification time is the file's last use, for pruning (atime is often off).
        if let Err(e) = std::fs::File::options().write(true).open(path).and_then(|f| f.set_modified(SystemTime::now()))
        {
            tracing::debug!(path = %path.display(), error = %e, "cannot touch a compile cache file");
        }
        Ok(component)
    }

    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> std::io::Result<()> {
        use std::io::Write;
        let n = self.0.temp_counter.fetch_add(1, Ordering::Relaxed);
        let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("component");
        let temp = path.with_file_name(format!(".{file_name}.{}.{n}.tmp", std::process::id()));
        let result = (|| {
            let mut file = std::fs::File::create(&temp)?;
            file.write_all(bytes)?;
            file.sync_all()?;
            std::fs::rename(&temp, path)
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&temp);
        }
        result
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
#[path = "engine_tests.rs"]
mod tests;
