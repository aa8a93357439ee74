//! `wink check`: what `run` would do with one plugin before its first event, without a
//! source.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{AppError, Bounds, engine};
use crate::kube::versions;
use crate::plugin::imports::cache::NoCache;
use crate::plugin::manifest::format_bytes;
use crate::plugin::runtime::loader::{load_manifest, load_plugin_manifest};
use crate::plugin::{CacheOutcome, LoadError, LoadedPlugin, Manifest, MemoryBudget, PluginEngine};

/// What [`check`] found.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// Human-readable lines describing the plugin.
    pub lines: Vec<String>,
    /// What may not work although `run` would start the plugin: a watched or granted kind
    /// that is not a built-in Kubernetes kind ([`crate::kube::versions`]), permission rules
    /// partly unusable ([`Manifest::warnings`]).
    pub warnings: Vec<String>,
}

/// Does with one plugin (a folder or a manifest path) what [`run`](super::run) would with `bounds` before
/// its first event: parses the manifest (each apiVersion `v1` or `group/version`), checks its
/// memory against the budget (as if it were the only plugin) and the instance pool, checks
/// the component's size and its initial memory against `limits.memory`, compiles it, checks
/// it implements the plugin world with no imports beyond wink's, then starts an instance and
/// calls `init` with the manifest's config (a refusal is an error carrying the guest's
/// reason). The cache is empty during `init`. A kind that is not built into Kubernetes is a
/// warning.
pub fn check(path: &Path, cache_dir: Option<PathBuf>, bounds: &Bounds) -> Result<CheckReport, AppError> {
    let engine = engine(cache_dir, bounds)?;
    let manifest = load_plugin_manifest(path).map_err(LoadError::from)?;
    let budget = bounds.memory_budget();
    budget.check(&manifest)?;
    let plugin = load_manifest(manifest, &engine, &bounds.load)?;
    let m = &plugin.manifest;
    let mut lines = describe(&plugin, &budget);
    lines.extend(grants(m));
    // A reconciler's resources are its `for`, `owns` and `watches` (its `resources` left out).
    let (at, watched) = match &m.reconcile {
        Some(r) => ("reconcile", r.resources()),
        None => ("resources", m.resources.clone()),
    };
    let kinds = watched.iter().map(|r| (at, &r.api_version, &r.kind));
    let kinds = kinds.chain(m.cache.iter().map(|g| ("cache", &g.api_version, &g.kind)));
    let mut warnings: Vec<String> = kinds
        .filter_map(|(at, api_version, kind)| {
            versions::unknown_kind(api_version, kind).map(|why| format!("{}: {at}: {why}", m.path().display()))
        })
        .collect();
    warnings.extend(m.warnings().into_iter().map(|why| format!("{}: {why}", m.path().display())));
    if !m.permissions.is_empty() && !imports_cluster(&plugin, &engine) {
        warnings.push(format!(
            "{}: permissions: the component does not import wink:plugin/cluster, so it makes no requests and \
             these rules are never used",
            m.path().display()
        ));
    }
    // As `run` starts it: an instance, then `init` with the config.
    let plugin_error =
        |outcome| AppError::Init { path: m.path().to_owned(), plugin: plugin.name().to_owned(), outcome };
    plugin.sandbox(&engine, Arc::new(NoCache), None).instantiate().map_err(plugin_error)?;
    lines.push(format!(
        "  init: accepted its config ({})",
        match &m.config {
            Some(_) => "from the manifest",
            None => "none given: null",
        }
    ));
    Ok(CheckReport { lines, warnings })
}

/// Whether the component imports the `cluster` interface (of any contract version): a
/// component that makes no request does not (toolchains that link a whole world import it
/// whether the plugin calls it or not).
fn imports_cluster(plugin: &LoadedPlugin, engine: &PluginEngine) -> bool {
    let component = plugin.component.component_type();
    component.imports(engine.wasmtime()).any(|(name, _)| name.starts_with("wink:plugin/cluster@"))
}

/// The plugin's component, limits and memory.
fn describe(plugin: &LoadedPlugin, budget: &MemoryBudget) -> Vec<String> {
    let m = &plugin.manifest;
    let initial = plugin.initial_memory;
    let mut lines = vec![
        format!("plugin {} is valid", plugin.name()),
        format!(
            "  component: {} ({}, implements wink:plugin/{}@{})",
            plugin.component_path.display(),
            match plugin.cache {
                CacheOutcome::Hit => "compiled earlier, from the cache",
                CacheOutcome::Miss => "compiled now, cached",
                CacheOutcome::Disabled => "compiled now",
            },
            plugin.pre.world().as_str(),
            plugin.pre.version().as_str()
        ),
        format!("  limits: memory {} bytes, {:?} per call", m.limits.memory.bytes(), m.limits.call_timeout),
        format!(
            "  memory: {} before the first call ({} of memory minimums, {} of data segments); reserves {} of the plugin memory budget of {}",
            format_bytes(initial.total()),
            format_bytes(initial.memories),
            format_bytes(initial.data),
            format_bytes(crate::plugin::runtime::budget::reservation_of(m)),
            format_bytes(budget.total())
        ),
    ];
    if !plugin.pre.refused_wasi().is_empty() {
        lines.push(format!(
            "  WASI: clocks and randomness given; refused (calls trap): {}",
            plugin.pre.refused_wasi().join(", ")
        ));
    }
    lines
}

/// What the plugin may do and see: its permissions, service account, watched resources and
/// cache grants.
fn grants(m: &Manifest) -> Vec<String> {
    let mut lines = Vec::new();
    if m.permissions.is_empty() {
        lines.push("  cluster: no permissions (every request is refused)".to_owned());
    }
    for rule in &m.permissions {
        let namespaces = rule.namespaces.as_ref().map_or("all namespaces".to_owned(), |ns| ns.join(", "));
        lines.push(format!(
            "  may {} {} (groups {}) in {namespaces}",
            rule.verbs.join(", "),
            rule.resources.join(", "),
            rule.api_groups.iter().map(|g| if g.is_empty() { "core" } else { g }).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(account) = &m.service_account {
        lines.push(format!("  requests as service account {account} on a real cluster"));
    }
    for r in &m.resources {
        let namespaces = r.namespaces.as_ref().map_or("all namespaces".to_owned(), |ns| ns.join(", "));
        let selector = r.label_selector.as_ref().map_or(String::new(), |s| format!(", labels {s}"));
        let resync =
            r.resync().map_or("no resync".to_owned(), |d| format!("resync every {}", humantime::format_duration(d)));
        lines.push(format!("  watches {}/{} in {namespaces}{selector}, {resync}", r.api_version, r.kind));
    }
    for g in &m.cache {
        lines.push(format!("  may read {}/{} from the cache", g.api_version, g.kind));
    }
    if let Some(r) = &m.reconcile {
        let kind = |api_version: &str, kind: &str| format!("{api_version}/{kind}");
        lines.push(format!(
            "  reconciles {} keys ({} worker(s)); owns {}; maps {}",
            kind(&r.primary.api_version, &r.primary.kind),
            r.workers,
            if r.owns.is_empty() {
                "nothing".to_owned()
            } else {
                r.owns.iter().map(|o| kind(&o.api_version, &o.kind)).collect::<Vec<_>>().join(", ")
            },
            if r.watches.is_empty() {
                "nothing else".to_owned()
            } else {
                r.watches.iter().map(|w| kind(&w.api_version, &w.kind)).collect::<Vec<_>>().join(", ")
            }
        ));
    }
    lines
}
