//! The `WinkPlugin` custom resource (`wink.dev/v1alpha1`): a plugin as a Kubernetes object.
//! Its spec holds what a `plugin.yaml` holds, with the component taken from an OCI artifact
//! (`image`); its status is what wink reports of it. The CRD's schema is generated from these
//! types (and so from the manifest's own).

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plugin::manifest::{CacheGrant, Limits, ShardBy};
use crate::plugin::{FailurePolicy, PolicyRule, Reconcile, RequestLimits, ServiceAccountRef, WatchedResource};

/// What a `WinkPlugin` asks for: a plugin's manifest, and the OCI artifact of its component.
#[derive(CustomResource, Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[kube(
    group = "wink.dev",
    version = "v1alpha1",
    kind = "WinkPlugin",
    plural = "winkplugins",
    shortname = "wp",
    namespaced,
    status = "WinkPluginStatus",
    printcolumn = r#"{"name": "Image", "type": "string", "jsonPath": ".spec.image"}"#,
    printcolumn = r#"{"name": "Phase", "type": "string", "jsonPath": ".status.phase"}"#,
    printcolumn = r#"{"name": "Calls", "type": "integer", "jsonPath": ".status.calls"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WinkPluginSpec {
    /// The OCI artifact holding the plugin's component (`registry/repository:tag` or
    /// `…@sha256:…`), as `wink push` publishes it. A tag is resolved again when the object
    /// changes and on wink's reference refresh interval.
    pub image: String,
    /// The resources the plugin watches (at least one); a reconciler leaves it out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<WatchedResource>,
    /// A reconciler's primary, owned and watched resources and work queue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reconcile: Option<Reconcile>,
    /// Sandbox limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<Limits>,
    /// What the host does when the plugin traps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_policy: Option<FailurePolicy>,
    /// Cache read grants beyond the watched resources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache: Vec<CacheGrant>,
    /// Free-form configuration handed to the plugin's `init`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "crate::plugin::manifest::schema::any_json_schema")]
    pub config: Option<serde_json::Value>,
    /// What the plugin may ask of the cluster (RBAC-shaped rules).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permissions: Vec<PolicyRule>,
    /// The plugin's request budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<RequestLimits>,
    /// The service account (`namespace/name`) the plugin's requests are made as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<ServiceAccountRef>,
    /// With scale-out: split the plugin's objects across the members (by namespace or by
    /// object) instead of running it whole on one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard_by: Option<ShardBy>,
}

/// Where a `WinkPlugin` stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub enum Phase {
    /// Seen, not deployed yet (the artifact is being pulled).
    #[default]
    Pending,
    /// Running.
    Deployed,
    /// Not running: see `message`.
    Failed,
    /// Running, but quarantined after repeated traps: it gets no events until it changes.
    Quarantined,
}

/// What wink reports of a `WinkPlugin`.
#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WinkPluginStatus {
    /// Where the plugin stands.
    pub phase: Phase,
    /// Why it failed, or what happened last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The digest of the artifact running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// The name the plugin runs under in wink (logs, metrics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugin_name: Option<String>,
    /// The shard group member running it (with scale-out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Calls into the plugin so far.
    #[serde(default)]
    pub calls: u64,
    /// Handler errors so far.
    #[serde(default)]
    pub errors: u64,
    /// Traps so far.
    #[serde(default)]
    pub traps: u64,
}
