//! A reconciler's part of the manifest: its primary resource, the resources it owns and
//! those it watches, and how its work queue runs.
//!
//! ```yaml
//! reconcile:
//!   for: {apiVersion: apps/v1, kind: Deployment}      # the primary: its keys are reconciled
//!   owns:                                              # an event enqueues its controller owner
//!     - {apiVersion: v1, kind: Service}
//!   watches:                                           # an event enqueues the primary it names
//!     - apiVersion: v1
//!       kind: ConfigMap
//!       mapTo: {annotation: example.com/deployment}     # or {label: …}: `name` or `namespace/name`;
//!                                                      # or {plugin: true}: the plugin's `map-to-keys`
//!   workers: 1                                         # reconciles at once, on separate instances
//!   rateLimits: {baseDelay: 5ms, maxDelay: 1000s, qps: 10, burst: 100}
//! ```
//!
//! The three lists become the plugin's watched `resources` (which a reconciler's manifest
//! leaves out), so that their informers, cache grants and filters are those of any plugin.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::WatchedResource;
use crate::kube::LabelSelector;
use crate::kube::rbac::{Attributes, PolicyRule, allowed};
use crate::workqueue::RateLimits;

/// The most reconciles a plugin may run at once.
pub(crate) const MAX_WORKERS: u32 = 16;

/// What a reconciler reconciles, and what leads to it.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Reconcile {
    /// The primary resource: every event on one of its objects enqueues that object's key.
    #[serde(rename = "for")]
    pub primary: WatchedResource,
    /// Resources whose objects the primary's objects control: an event on one enqueues the
    /// key of its controller owner (the `ownerReferences` entry with `controller: true` whose
    /// kind is the primary's), in the object's namespace.
    #[serde(default)]
    pub owns: Vec<WatchedResource>,
    /// Other resources: an event on one enqueues the primary key it names (`mapTo`).
    #[serde(default)]
    pub watches: Vec<WatchedKind>,
    /// Reconciles run at once, each on an instance of its own (default 1). More than one only
    /// where the plugin keeps no state between calls that they would share.
    #[serde(default = "default_workers")]
    pub workers: u32,
    /// How failed keys are retried.
    #[serde(default)]
    pub rate_limits: RateLimitsSpec,
}

fn default_workers() -> u32 {
    1
}

/// A watched resource and how its objects name a primary. (Its fields repeat
/// [`WatchedResource`]'s but for the resync: serde cannot flatten one struct into another and
/// still refuse unknown fields.)
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WatchedKind {
    /// `apiVersion` of the resource, e.g. `v1`.
    pub api_version: String,
    /// `kind` of the resource, e.g. `ConfigMap`.
    pub kind: String,
    /// Only objects in these namespaces; absent = all namespaces.
    #[serde(default)]
    pub namespaces: Option<Vec<String>>,
    /// Only objects whose labels match this selector; absent = all objects.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// Where an object names the primary it concerns: `{label: KEY}` or `{annotation: KEY}`.
    pub map_to: MapToSpec,
}

/// `mapTo` as written: one of `label` and `annotation`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MapToSpec {
    /// The label whose value names the primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The annotation whose value names the primary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotation: Option<String>,
    /// The plugin's `map-to-keys` export says which primaries an object concerns.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub plugin: bool,
}

impl MapToSpec {
    /// The mapping, when exactly one is given (a non-empty label or annotation, or the
    /// plugin).
    pub fn mapping(&self) -> Option<MapTo> {
        match (&self.label, &self.annotation, self.plugin) {
            (Some(label), None, false) if !label.is_empty() => Some(MapTo::Label(label.clone())),
            (None, Some(annotation), false) if !annotation.is_empty() => Some(MapTo::Annotation(annotation.clone())),
            (None, None, true) => Some(MapTo::Plugin),
            _ => None,
        }
    }
}

impl WatchedKind {
    /// The resource and its filters, as any plugin watches one (no resync: a watched
    /// object's resync would only repeat its primary's).
    pub fn resource(&self) -> WatchedResource {
        WatchedResource {
            api_version: self.api_version.clone(),
            kind: self.kind.clone(),
            namespaces: self.namespaces.clone(),
            label_selector: self.label_selector.clone(),
            resync_period: None,
        }
    }
}

/// Where a watched object names its primary: the value of a label or an annotation, `name`
/// (the primary in the object's namespace) or `namespace/name`. An object without it, or with
/// an empty value, concerns no primary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapTo {
    /// This label's value.
    Label(String),
    /// This annotation's value.
    Annotation(String),
    /// What the plugin's `map-to-keys` export returns.
    Plugin,
}

/// The retry delays of a reconciler's keys (client-go's defaults, as controller-runtime's).
#[derive(Clone, Copy, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RateLimitsSpec {
    /// The first retry's delay, doubled on each further failure of the key (default `5ms`).
    #[serde(default = "default_base_delay", with = "humantime_serde")]
    #[schemars(schema_with = "super::schema::duration_schema")]
    pub base_delay: Duration,
    /// The longest a key's delay grows (default `1000s`).
    #[serde(default = "default_max_delay", with = "humantime_serde")]
    #[schemars(schema_with = "super::schema::duration_schema")]
    pub max_delay: Duration,
    /// Retries per second over all keys (default 10).
    #[serde(default = "default_qps")]
    pub qps: f64,
    /// Retries at once above that rate (default 100).
    #[serde(default = "default_burst")]
    pub burst: u32,
}

fn default_base_delay() -> Duration {
    RateLimits::default().base_delay
}
fn default_max_delay() -> Duration {
    RateLimits::default().max_delay
}
fn default_qps() -> f64 {
    RateLimits::default().qps
}
fn default_burst() -> u32 {
    RateLimits::default().burst
}

impl Default for RateLimitsSpec {
    fn default() -> Self {
        let RateLimits { base_delay, max_delay, qps, burst } = RateLimits::default();
        Self { base_delay, max_delay, qps, burst }
    }
}

impl RateLimitsSpec {
    /// The work queue's limits.
    pub fn limits(&self) -> RateLimits {
        RateLimits { base_delay: self.base_delay, max_delay: self.max_delay, qps: self.qps, burst: self.burst }
    }
}

/// What an event on one of a reconciler's watched resources enqueues.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// The object's own key.
    Primary,
    /// The key of its controller owner of the primary's kind.
    Owned {
        /// The primary's `apiVersion`.
        api_version: String,
        /// The primary's `kind`.
        kind: String,
    },
    /// The key a label or annotation names.
    Mapped(MapTo),
}

impl Reconcile {
    /// The resources to watch, in order: the primary, the owned, the watched.
    pub fn resources(&self) -> Vec<WatchedResource> {
        let watched = self.watches.iter().map(WatchedKind::resource);
        std::iter::once(self.primary.clone()).chain(self.owns.iter().cloned()).chain(watched).collect()
    }

    /// The role of each of [`resources`](Self::resources), in the same order.
    pub fn roles(&self) -> Vec<Role> {
        let owned = Role::Owned { api_version: self.primary.api_version.clone(), kind: self.primary.kind.clone() };
        std::iter::once(Role::Primary)
            .chain(self.owns.iter().map(|_| owned.clone()))
            .chain(self.watches.iter().filter_map(|w| w.map_to.mapping()).map(Role::Mapped))
            .collect()
    }

    /// Owned built-in resources that no rule of `rules` lets the plugin create: a controller
    /// creates what it owns, so such a reconciler can only watch them (a warning: it may
    /// adopt objects others create).
    pub fn owned_without_create(&self, rules: &[PolicyRule]) -> Vec<String> {
        let owned = self.owns.iter().enumerate();
        owned
            .filter_map(|(i, owned)| {
                let def = crate::kube::resource::built_in(&owned.api_version, &owned.kind)?;
                let namespace =
                    owned.namespaces.as_ref().and_then(|list| list.first()).map_or("default", String::as_str);
                let create = Attributes {
                    group: &def.group,
                    resource: &def.plural,
                    verb: "create",
                    namespace: def.namespaced.then_some(namespace),
                    name: "",
                };
                let group = if def.group.is_empty() { "\"\"" } else { def.group.as_str() };
                (!allowed(rules, &create)).then(|| {
                    format!(
                        "reconcile.owns[{i}]: no permission allows creating {} {}, which a controller usually \
                         creates for its primaries (add `create` on `{}` in apiGroups [{group}]), so it can only \
                         watch them",
                        owned.api_version, owned.kind, def.plural
                    )
                })
            })
            .collect()
    }

    /// Checks what serde cannot: `(field, message)` of the first problem.
    pub fn validate(&self) -> Result<(), (String, String)> {
        if !(1..=MAX_WORKERS).contains(&self.workers) {
            return Err(("reconcile.workers".into(), format!("must be from 1 to {MAX_WORKERS}, not {}", self.workers)));
        }
        let limits = &self.rate_limits;
        if limits.base_delay.is_zero() || limits.base_delay > limits.max_delay {
            return Err(("reconcile.rateLimits.baseDelay".into(), "must be above 0 and at most maxDelay".into()));
        }
        if !(limits.qps.is_finite() && limits.qps > 0.0) || limits.burst == 0 {
            return Err(("reconcile.rateLimits".into(), "qps must be above 0 and burst at least 1".into()));
        }
        for (i, watched) in self.watches.iter().enumerate() {
            if watched.map_to.mapping().is_none() {
                return Err((
                    format!("reconcile.watches[{i}].mapTo"),
                    "must say one of {label: KEY}, {annotation: KEY} or {plugin: true}".into(),
                ));
            }
        }
        Ok(())
    }
}
