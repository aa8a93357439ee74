//! Tests of engine construction and the compile cache.

use super::*;
use crate::plugin::runtime::ticker::LINGER_TICKS;
use crate::plugin::test_guests::TempDir;

fn small(cache_dir: Option<PathBuf>) -> EngineConfig {
    EngineConfig { pool: Some(PoolLimits::small()), cache_dir, ..EngineConfig::default() }
}

fn component(tag: u32) -> Vec<u8> {
    wat::parse_str(format!("(component (core module (global i32 (i32.const {tag}))))")).unwrap()
}

#[tokio::test]
async fn second_compile_hits_the_cache() {
    let dir = TempDir::new("cache");
    let engine = PluginEngine::new(small(Some(dir.0.join("nested/cache")))).unwrap();
    assert!(matches!(engine.allocation(), Allocation::Pooling(_)));
    let bytes = component(1);
    let first = engine.compile(&bytes).unwrap();
    assert_eq!(first.outcome, CacheOutcome::Miss);
    let path = engine.cache_path(&first.digest).unwrap();
    assert!(path.exists(), "{} should exist", path.display());
    assert!(path.file_name().unwrap().to_str().unwrap().starts_with(&first.digest));
    let second = engine.compile(&bytes).unwrap();
    assert_eq!(second.outcome, CacheOutcome::Hit);
    assert_eq!((engine.compilations(), engine.cache_hits()), (1, 1));
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names.len(), 1, "{names:?}");

    // A second engine with the same settings shares the cache.
    let other = PluginEngine::new(small(Some(dir.0.join("nested/cache")))).unwrap();
    assert_eq!(other.compile(&bytes).unwrap().outcome, CacheOutcome::Hit);
    assert_eq!(other.compilations(), 0);
    // Another component is another file.
    assert_eq!(engine.compile(&component(2)).unwrap().outcome, CacheOutcome::Miss);
}

#[tokio::test]
async fn corrupt_cache_file_is_recompiled_and_overwritten() {
    let dir = TempDir::new("corrupt");
    let engine = PluginEngine::new(small(Some(dir.0.clone()))).unwrap();
    let bytes = component(3);
    let digest = engine.compile(&bytes).unwrap().digest;
    let path = engine.cache_path(&digest).unwrap();
    std::fs::write(&path, b"not a compiled component").unwrap();
    // The engine that compiled it keeps it in memory; a new one reads the corrupt file.
    assert_eq!(engine.compile(&bytes).unwrap().outcome, CacheOutcome::Hit);
    let engine = PluginEngine::new(small(Some(dir.0.clone()))).unwrap();
    assert_eq!(engine.compile(&bytes).unwrap().outcome, CacheOutcome::Miss);
    assert_ne!(std::fs::read(&path).unwrap(), b"not a compiled component");
    let fresh = PluginEngine::new(small(Some(dir.0.clone()))).unwrap();
    assert_eq!(fresh.compile(&bytes).unwrap().outcome, CacheOutcome::Hit);
    assert_eq!((engine.compilations(), fresh.compilations()), (1, 0));
}

#[tokio::test]
async fn copies_of_one_component_share_its_code_in_memory() {
    let engine = PluginEngine::new(small(None)).unwrap();
    let first = engine.compile(&component(6)).unwrap();
    assert_eq!(first.outcome, CacheOutcome::Disabled);
    let second = engine.compile(&component(6)).unwrap();
    assert_eq!(second.outcome, CacheOutcome::Hit, "served from memory, nothing compiled");
    assert_eq!((engine.compilations(), engine.cache_hits()), (1, 1));
    // Only the most recently used components are kept.
    for tag in 100..100 + MEMORY_CACHE_SIZE as u32 {
        engine.compile(&component(tag)).unwrap();
    }
    assert_eq!(engine.compile(&component(6)).unwrap().outcome, CacheOutcome::Disabled, "evicted");
}

/// A folder's plugins are read in parallel: copies of one component read at once compile
/// it once, the others waiting for it and sharing its code.
#[tokio::test]
async fn one_component_compiled_by_several_threads_at_once_is_compiled_once() {
    let engine = PluginEngine::new(small(None)).unwrap();
    let bytes = crate::plugin::test_guests::Guest::default().component();
    let start = std::sync::Barrier::new(4);
    let digests: Vec<String> = std::thread::scope(|s| {
        let threads: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    engine.compile(&bytes).unwrap().digest
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    assert!(digests.windows(2).all(|pair| pair[0] == pair[1]));
    assert_eq!((engine.compilations(), engine.cache_hits()), (1, 3));
    assert!(engine.0.compiling.lock().is_empty(), "no lock is left behind");
}

#[tokio::test]
async fn engines_with_other_settings_do_not_share_cache_files() {
    let dir = TempDir::new("settings");
    let pooled = PluginEngine::new(small(Some(dir.0.clone()))).unwrap();
    let mut config = small(Some(dir.0.clone()));
    config.pool = None;
    let on_demand = PluginEngine::new(config).unwrap();
    assert_eq!(on_demand.allocation(), &Allocation::OnDemand { fallback_reason: None });
    let digest = hex::encode(Sha256::digest(component(4)));
    // Pooling changes memory tunables, which changes compiled code, which changes the key;
    // whether or not it does, a file never loads into an incompatible engine.
    let (a, b) = (pooled.cache_path(&digest).unwrap(), on_demand.cache_path(&digest).unwrap());
    assert_eq!(a.parent(), b.parent());
    assert_eq!(on_demand.compile(&component(4)).unwrap().outcome, CacheOutcome::Miss);
    let second = pooled.compile(&component(4)).unwrap().outcome;
    assert_eq!(second, if a == b { CacheOutcome::Hit } else { CacheOutcome::Miss });
}

#[tokio::test]
async fn no_cache_dir_means_disabled() {
    let engine = PluginEngine::new(small(None)).unwrap();
    let compiled = engine.compile(&component(5)).unwrap();
    assert_eq!(compiled.outcome, CacheOutcome::Disabled);
    assert!(engine.cache_path(&compiled.digest).is_none());
}

#[tokio::test]
async fn invalid_bytes_fail_to_compile() {
    let engine = PluginEngine::new(small(None)).unwrap();
    assert!(matches!(engine.compile(b"\0asm garbage"), Err(EngineError::Compile { .. })));
}

#[test]
fn unreservable_pool_falls_back_to_on_demand() {
    let limits =
        PoolLimits { total_memories: 1_000_000, total_component_instances: 1_000_000, ..PoolLimits::default() };
    let engine = PluginEngine::new(EngineConfig { pool: Some(limits), ..EngineConfig::default() }).unwrap();
    assert!(
        matches!(engine.allocation(), Allocation::OnDemand { fallback_reason: Some(_) }),
        "{:?}",
        engine.allocation()
    );
}

#[test]
fn a_pool_for_ten_thousand_plugins_is_reserved() {
    // Sized per kind of place for what the guest languages' components hold, not four
    // memories each: that reserved more address space than a process has, and the engine
    // fell back to on-demand allocation.
    let engine =
        PluginEngine::new(EngineConfig { pool: Some(PoolLimits::for_instances(10_000)), ..EngineConfig::default() })
            .unwrap();
    assert!(
        matches!(engine.allocation(), Allocation::Pooling(limits) if limits.total_component_instances == 10_000),
        "{:?}",
        engine.allocation()
    );
}

#[tokio::test]
async fn loading_a_cache_file_marks_it_used_and_pruning_keeps_the_components_in_use() {
    let dir = TempDir::new("prune-engine");
    let mut config = small(Some(dir.0.clone()));
    config.cache_max_size = 0;
    let engine = PluginEngine::new(config.clone()).unwrap();
    let used = engine.compile(&component(7)).unwrap().digest;
    let unused = engine.compile(&component(8)).unwrap().digest;
    let (used_path, unused_path) = (engine.cache_path(&used).unwrap(), engine.cache_path(&unused).unwrap());
    let long_ago = SystemTime::now() - Duration::from_secs(3600);
    for path in [&used_path, &unused_path] {
        std::fs::File::options().write(true).open(path).unwrap().set_modified(long_ago).unwrap();
    }
    // A load from disk (a fresh engine has nothing in memory) is a use: the file is touched.
    let fresh = PluginEngine::new(config).unwrap();
    assert_eq!(fresh.compile(&component(7)).unwrap().outcome, CacheOutcome::Hit);
    let touched = used_path.metadata().unwrap().modified().unwrap();
    assert!(touched > long_ago + Duration::from_secs(60), "{touched:?}");
    // Over the bound (0 bytes): the component in use stays, the other goes.
    let report = engine.prune_cache(&[used.clone()].into()).unwrap();
    assert_eq!((report.evicted, report.kept), (1, 1), "{report:?}");
    assert!(used_path.exists() && !unused_path.exists());
    // Without a cache folder there is nothing to prune.
    assert!(PluginEngine::new(small(None)).unwrap().prune_cache(&Default::default()).is_none());
}

#[tokio::test]
async fn pruning_forgets_the_components_in_memory_that_no_plugin_uses() {
    let engine = PluginEngine::new(small(None)).unwrap();
    let used = engine.compile(&component(9)).unwrap().digest;
    engine.compile(&component(10)).unwrap();
    assert!(engine.prune_cache(&[used].into()).is_none(), "no cache folder");
    assert_eq!(engine.compile(&component(9)).unwrap().outcome, CacheOutcome::Hit, "in use: kept");
    assert_eq!(engine.compile(&component(10)).unwrap().outcome, CacheOutcome::Disabled, "unused: compiled again");
    assert_eq!(engine.compilations(), 3);
}

/// Regression: the ticker woke the host 100 times a second with no guest code to interrupt.
/// The ticker is a thread measuring real time, so this test waits real time, briefly.
#[test]
fn the_epoch_ticker_ticks_only_while_guest_code_runs() {
    let tick = Duration::from_millis(1);
    let engine = PluginEngine::new(EngineConfig { pool: None, epoch_tick: tick, ..EngineConfig::default() }).unwrap();
    std::thread::sleep(tick * 20);
    assert_eq!(engine.epoch_ticks(), 0, "idle: no ticks");
    let running = engine.guest_running();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while engine.epoch_ticks() < 5 {
        assert!(std::time::Instant::now() < deadline, "the ticker ticks while a guest runs");
        std::thread::yield_now();
    }
    drop(running);
    // A call while the ticker lingers wakes it though it is not parked, leaving a wake-up
    // token behind: that token must not make it linger twice.
    drop(engine.guest_running());
    let dropped = engine.epoch_ticks();
    // The ticker lingers for LINGER_TICKS ticks (however long a loaded machine makes them),
    // then parks: the count stops, at most LINGER_TICKS (and the tick under way) later.
    let parked = loop {
        let before = engine.epoch_ticks();
        std::thread::sleep(tick * 20);
        let after = engine.epoch_ticks();
        if after == before {
            break after;
        }
        assert!(std::time::Instant::now() < deadline, "parked again once no guest runs");
    };
    assert!(parked - dropped <= u64::from(LINGER_TICKS) + 1, "lingered {} ticks", parked - dropped);
}

/// A paused runtime clock (tokio's test clock auto-advances while the runtime waits on the
/// guest pool) cannot make a guest's deadline pass: deadlines are real time.
#[tokio::test(start_paused = true)]
async fn a_paused_runtime_clock_does_not_advance_deadlines() {
    let engine =
        PluginEngine::new(EngineConfig { pool: Some(PoolLimits::small()), ..EngineConfig::default() }).unwrap();
    let running = engine.guest_running();
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(engine.epoch_ticks() < 100, "an hour of paused time is not an hour of ticks: {}", engine.epoch_ticks());
    drop(running);
}
