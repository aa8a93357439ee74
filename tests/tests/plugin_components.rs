//! The sandbox against the real plugins built from `plugins/` by `cargo xtask build-plugins`.
//!
//! Run with `cargo xtask test` (which builds the plugins and sets `WINK_PLUGINS_DIR`), or
//! `cargo test -p wink-tests --test plugin_components` (which builds them first when needed).

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use wink::informer::BackoffConfig;
use wink::informer::owner_uid_index_func;
use wink::informer::{EventHandler, HandlerError, Indexer, OWNER_UID_INDEX, Object};
use wink::plugin::CacheResolver;
use wink::plugin::NoCache;
use wink::plugin::PluginMetrics;
use wink::plugin::{CacheOutcome, EngineConfig, PluginEngine, PoolLimits};
use wink::plugin::{CallOutcome, TrapKind};
use wink::plugin::{GuestPool, PluginHandler};
use wink::plugin::{LoadError, LoadedPlugin, load_plugin};
use wink_tests::{plugin, plugins_dir};

fn engine(cache_dir: Option<PathBuf>) -> PluginEngine {
    PluginEngine::new(EngineConfig { pool: Some(PoolLimits::small()), cache_dir, ..EngineConfig::default() }).unwrap()
}

fn load(engine: &PluginEngine, relative: &str) -> LoadedPlugin {
    let dir = plugin(relative);
    load_plugin(&dir, engine).unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()))
}

fn handler(engine: &PluginEngine, plugin: &LoadedPlugin, resolver: Arc<dyn CacheResolver>) -> PluginHandler {
    let sandbox = Arc::new(plugin.sandbox(engine, resolver, None));
    let backoff = BackoffConfig {
        initial: Duration::from_millis(5),
        max: Duration::from_millis(20),
        ..BackoffConfig::PLUGIN_RESTART
    };
    let metrics = PluginMetrics::detached(plugin.name());
    PluginHandler::new(sandbox, plugin.manifest.failure_policy.clone(), backoff, metrics, GuestPool::new(2))
}

fn object(value: serde_json::Value) -> Object {
    Object::from_string(value.to_string()).unwrap()
}

fn pod(name: &str, labels: serde_json::Value) -> Object {
    object(
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop", "uid": format!("uid-{name}"), "labels": labels}}),
    )
}

#[tokio::test]
async fn example_plugins_load_start_and_hit_the_cache() {
    let dir = plugins_dir();
    let cache = tempfile::tempdir().unwrap();
    let engine = engine(Some(cache.path().to_owned()));
    for name in ["label-auditor", "event-recorder", "owner-lookup"] {
        let first = load_plugin(dir.join(name), &engine).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(first.name(), name);
        assert_eq!(first.cache, CacheOutcome::Miss, "{name}");
        let second = load_plugin(dir.join(name), &engine).unwrap();
        assert_eq!(second.cache, CacheOutcome::Hit, "{name}");
        let h = handler(&engine, &second, Arc::new(NoCache));
        assert_eq!(h.warm_up().await, CallOutcome::Ok, "{name}: init");
        assert_eq!(
            h.on_add(&pod("web-1", serde_json::json!({"app": "web", "team": "a"})), true).await,
            wink::informer::DONE,
            "{name}"
        );
    }
    assert_eq!(engine.compilations(), 3);
}

#[test]
fn wrong_world_is_refused_with_a_clear_error() {
    let dir = plugins_dir();
    let err = load_plugin(dir.join("hostile/wrong-world"), &engine(None)).unwrap_err();
    assert!(matches!(err, LoadError::MissingExport { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("wrong-world.wasm") && text.contains("handler-plugin"), "{text}");
}

#[tokio::test]
async fn spin_is_interrupted_skipped_and_quarantined() {
    let engine = engine(None);
    let plugin = load(&engine, "hostile/spin");
    let h = handler(&engine, &plugin, Arc::new(NoCache));
    let quarantine_after = plugin.manifest.failure_policy.quarantine_after;
    assert_eq!(quarantine_after, 3);
    let spin = |i: u32| pod(&format!("p{i}"), serde_json::json!({}));
    for i in 0..quarantine_after - 1 {
        assert_eq!(h.on_add(&spin(i), false).await, wink::informer::DONE, "onError: skip");
    }
    assert!(!h.is_quarantined());
    // Another event works, on a new instance, and resets the count of consecutive traps.
    assert_eq!(h.on_delete(&spin(0), false).await, wink::informer::DONE);
    assert_eq!(h.consecutive_failures(), 0);
    for i in 0..quarantine_after {
        assert!(!h.is_quarantined());
        assert_eq!(h.on_add(&spin(i), false).await, wink::informer::DONE);
    }
    assert!(h.is_quarantined(), "three traps in a row");
    assert_eq!(h.metrics().traps_of("interrupt"), u64::from(2 * quarantine_after - 1));
}

#[tokio::test]
async fn memory_bomb_hits_the_cap() {
    let engine = engine(None);
    let plugin = load(&engine, "hostile/memory-bomb");
    let mut instance = plugin.sandbox(&engine, Arc::new(NoCache), None).instantiate().unwrap();
    let outcome = tokio::task::spawn_blocking(move || {
        let first = instance.on_add(&pod("a", serde_json::json!({})), false);
        (first, instance.peak_memory())
    })
    .await
    .unwrap();
    assert_eq!(outcome.0, CallOutcome::Trap(TrapKind::OutOfMemory));
    assert!(outcome.1 as u64 <= plugin.manifest.limits.memory.bytes());
}

#[tokio::test]
async fn trap_plugin_traps_only_on_marked_objects_and_recovers() {
    let engine = engine(None);
    let plugin = load(&engine, "hostile/trap");
    let mut policy = plugin.manifest.failure_policy.clone();
    policy.on_error = wink::plugin::OnError::Retry;
    let sandbox = Arc::new(plugin.sandbox(&engine, Arc::new(NoCache), None));
    let h = PluginHandler::new(
        sandbox,
        policy,
        BackoffConfig::PLUGIN_RESTART,
        PluginMetrics::detached("trap"),
        GuestPool::new(1),
    );
    let bad = pod("bad", serde_json::json!({"wink.test/trap": "true"}));
    let good = pod("good", serde_json::json!({}));
    assert_eq!(h.on_add(&good, false).await, wink::informer::DONE);
    assert!(matches!(h.on_add(&bad, false).await, Err(HandlerError::Retry(_))));
    assert_eq!(h.on_add(&good, false).await, wink::informer::DONE);
    assert_eq!(h.metrics().traps_of("other"), 1);
    assert_eq!(h.metrics().restarts(), 1);
}

/// Collects formatted log lines.
#[derive(Clone, Default)]
struct Captured(Arc<parking_lot::Mutex<Vec<u8>>>);

impl Captured {
    /// Everything this test binary logs, from every thread: one process-wide subscriber. (A
    /// thread-scoped one raced with the other tests: a callsite's cached interest is global,
    /// and the guest log's was at times decided without the scoped subscriber, which then
    /// saw nothing.) The interest of every callsite is decided again once it is set: one
    /// that another test's thread registered while the subscriber was being set could keep
    /// the interest it had without it (never), and this test would see nothing.
    fn process_wide() -> Self {
        static CAPTURED: std::sync::OnceLock<Captured> = std::sync::OnceLock::new();
        let captured = CAPTURED
            .get_or_init(|| {
                let captured = Captured::default();
                let writer = captured.clone();
                let subscriber =
                    tracing_subscriber::fmt().with_writer(move || writer.clone()).with_ansi(false).finish();
                tracing::subscriber::set_global_default(subscriber).expect("the only global subscriber of this binary");
                captured
            })
            .clone();
        tracing::callsite::rebuild_interest_cache();
        captured
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn owner_lookup_reads_the_scoped_cache() {
    let engine = engine(None);
    let plugin = load(&engine, "owner-lookup");
    let owner = |kind: &str, name: &str| serde_json::json!([{"apiVersion": "apps/v1", "kind": kind, "name": name, "uid": format!("uid-{name}"), "controller": true}]);
    let deploy = object(
        serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "uid": "uid-web"}}),
    );
    let rs = object(
        serde_json::json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-abc", "namespace": "shop", "uid": "uid-web-abc", "ownerReferences": owner("Deployment", "web")}}),
    );
    let pod = object(
        serde_json::json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-abc-1", "namespace": "shop", "uid": "uid-p", "ownerReferences": owner("ReplicaSet", "web-abc")}}),
    );
    let indexer = |objects: &[&Object]| {
        let idx = Indexer::new();
        idx.add_indexers([(OWNER_UID_INDEX.to_owned(), owner_uid_index_func())]).unwrap();
        objects.iter().for_each(|o| idx.add((*o).clone()));
        idx.store()
    };
    let (pods, sets, deploys) = (indexer(&[&pod]), indexer(&[&rs]), indexer(&[&deploy]));
    let resolver = move |api_version: &str, kind: &str| match (api_version, kind) {
        ("v1", "Pod") => Some(pods.clone()),
        ("apps/v1", "ReplicaSet") => Some(sets.clone()),
        ("apps/v1", "Deployment") => Some(deploys.clone()),
        _ => None,
    };
    let captured = Captured::process_wide();
    let mut instance = plugin.sandbox(&engine, Arc::new(resolver), None).instantiate().unwrap();
    assert_eq!(instance.on_add(&pod, false), CallOutcome::Ok);
    assert_eq!(instance.on_add(&rs, false), CallOutcome::Ok);
    let logs = captured.text();
    assert!(logs.contains("pod shop/web-abc-1 belongs to Deployment shop/web via ReplicaSet shop/web-abc"), "{logs}");
    assert!(logs.contains("ReplicaSet shop/web-abc owns 1 pods"), "{logs}");
    assert!(logs.contains("plugin=\"owner-lookup\"") || logs.contains("plugin=owner-lookup"), "{logs}");
}
