//! Which kinds are namespaced: the Kubernetes API's built-in kinds, plus the
//! CustomResourceDefinitions of the folder.
//!
//! The built-in table holds every kind the Kubernetes API serves (as of 1.33, the scopes of
//! `k8s-openapi`'s generated types, which a test checks), plus kinds of older API groups a
//! manifest may still name (`extensions`, PodSecurityPolicy). It is keyed by group and kind,
//! as a kind keeps its scope across versions. A CustomResourceDefinition adds its kind in its
//! group, for each version it serves, with its `spec.scope`.

use std::collections::BTreeMap;

/// Kinds of the built-in table that no current Kubernetes serves at any version (kept for
/// the scope of old manifests' objects), with the release that removed them.
const REMOVED: &[(&str, &str, &str)] = &[("policy", "PodSecurityPolicy", "1.25")];

/// The Kubernetes release that removed a built-in kind, if one did.
pub(crate) fn removed_in(group: &str, kind: &str) -> Option<&'static str> {
    REMOVED.iter().find(|(g, k, _)| *g == group && *k == kind).map(|(_, _, release)| *release)
}

/// Whether objects of a kind live in a namespace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Objects live in a namespace (`namespace/name` keys).
    Namespaced,
    /// Objects are cluster-wide (`name` keys).
    Cluster,
}

use Scope::{Cluster, Namespaced};

/// The built-in kinds: (group, kind, scope). The core group is "".
const BUILT_IN: &[(&str, &str, Scope)] = &[
    ("", "Binding", Namespaced),
    ("", "ComponentStatus", Cluster),
    ("", "ConfigMap", Namespaced),
    ("", "Endpoints", Namespaced),
    ("", "Event", Namespaced),
    ("", "LimitRange", Namespaced),
    ("", "Namespace", Cluster),
    ("", "Node", Cluster),
    ("", "PersistentVolume", Cluster),
    ("", "PersistentVolumeClaim", Namespaced),
    ("", "Pod", Namespaced),
    ("", "PodTemplate", Namespaced),
    ("", "ReplicationController", Namespaced),
    ("", "ResourceQuota", Namespaced),
    ("", "Secret", Namespaced),
    ("", "Service", Namespaced),
    ("", "ServiceAccount", Namespaced),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy", Cluster),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding", Cluster),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", Cluster),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", Cluster),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", Cluster),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", Cluster),
    ("apiextensions.k8s.io", "CustomResourceDefinition", Cluster),
    ("apiregistration.k8s.io", "APIService", Cluster),
    ("apps", "ControllerRevision", Namespaced),
    ("apps", "DaemonSet", Namespaced),
    ("apps", "Deployment", Namespaced),
    ("apps", "ReplicaSet", Namespaced),
    ("apps", "StatefulSet", Namespaced),
    ("authentication.k8s.io", "SelfSubjectReview", Cluster),
    ("authentication.k8s.io", "TokenReview", Cluster),
    ("authorization.k8s.io", "LocalSubjectAccessReview", Namespaced),
    ("authorization.k8s.io", "SelfSubjectAccessReview", Cluster),
    ("authorization.k8s.io", "SelfSubjectRulesReview", Cluster),
    ("authorization.k8s.io", "SubjectAccessReview", Cluster),
    ("autoscaling", "HorizontalPodAutoscaler", Namespaced),
    ("batch", "CronJob", Namespaced),
    ("batch", "Job", Namespaced),
    ("certificates.k8s.io", "CertificateSigningRequest", Cluster),
    ("certificates.k8s.io", "ClusterTrustBundle", Cluster),
    ("coordination.k8s.io", "Lease", Namespaced),
    ("coordination.k8s.io", "LeaseCandidate", Namespaced),
    ("discovery.k8s.io", "EndpointSlice", Namespaced),
    ("events.k8s.io", "Event", Namespaced),
    ("extensions", "DaemonSet", Namespaced),
    ("extensions", "Deployment", Namespaced),
    ("extensions", "Ingress", Namespaced),
    ("extensions", "NetworkPolicy", Namespaced),
    ("extensions", "PodSecurityPolicy", Cluster),
    ("extensions", "ReplicaSet", Namespaced),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema", Cluster),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", Cluster),
    ("internal.apiserver.k8s.io", "StorageVersion", Cluster),
    ("networking.k8s.io", "IPAddress", Cluster),
    ("networking.k8s.io", "Ingress", Namespaced),
    ("networking.k8s.io", "IngressClass", Cluster),
    ("networking.k8s.io", "NetworkPolicy", Namespaced),
    ("networking.k8s.io", "ServiceCIDR", Cluster),
    ("node.k8s.io", "RuntimeClass", Cluster),
    ("policy", "PodDisruptionBudget", Namespaced),
    ("policy", "PodSecurityPolicy", Cluster),
    ("rbac.authorization.k8s.io", "ClusterRole", Cluster),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", Cluster),
    ("rbac.authorization.k8s.io", "Role", Namespaced),
    ("rbac.authorization.k8s.io", "RoleBinding", Namespaced),
    ("resource.k8s.io", "DeviceClass", Cluster),
    ("resource.k8s.io", "DeviceTaintRule", Cluster),
    ("resource.k8s.io", "ResourceClaim", Namespaced),
    ("resource.k8s.io", "ResourceClaimTemplate", Namespaced),
    ("resource.k8s.io", "ResourceSlice", Cluster),
    ("scheduling.k8s.io", "PriorityClass", Cluster),
    ("storage.k8s.io", "CSIDriver", Cluster),
    ("storage.k8s.io", "CSINode", Cluster),
    ("storage.k8s.io", "CSIStorageCapacity", Namespaced),
    ("storage.k8s.io", "StorageClass", Cluster),
    ("storage.k8s.io", "VolumeAttachment", Cluster),
    ("storage.k8s.io", "VolumeAttributesClass", Cluster),
    ("storagemigration.k8s.io", "StorageVersionMigration", Cluster),
];

/// The group of an apiVersion: `apps` of `apps/v1`, "" of `v1`.
pub(crate) fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

fn version_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or(api_version, |(_, version)| version)
}

/// Every built-in kind: (group, kind, scope).
pub(crate) fn built_ins() -> impl Iterator<Item = (&'static str, &'static str, Scope)> {
    BUILT_IN.iter().copied()
}

/// The built-in kinds of an API group (`""`: the core group), in table order.
pub(crate) fn built_in_kinds(group: &str) -> impl Iterator<Item = &'static str> + '_ {
    BUILT_IN.iter().filter(move |(g, _, _)| *g == group).map(|(_, kind, _)| *kind)
}

/// The scope of a built-in kind, if `api_version`'s group has it.
pub fn built_in(api_version: &str, kind: &str) -> Option<Scope> {
    let group = group_of(api_version);
    BUILT_IN.iter().find(|(g, k, _)| *g == group && *k == kind).map(|(_, _, scope)| *scope)
}

/// The kinds the CustomResourceDefinitions of a folder define: (group, version, kind) →
/// scope. Compared between scans to tell whether objects must be placed again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Scopes {
    custom: BTreeMap<(String, String, String), CustomKind>,
}

/// A kind a CustomResourceDefinition defines, in one served version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct CustomKind {
    /// Its scope.
    pub scope: Scope,
    /// Its plural resource name (`spec.names.plural`).
    pub plural: String,
    /// Whether this version has a status subresource.
    pub status: bool,
    /// This version's scale subresource, if it declares one.
    pub scale: Option<super::scale::ScalePaths>,
}

impl Scopes {
    /// The kinds defined by the CustomResourceDefinitions among `objects`. A definition
    /// without a group, kind or versions defines nothing; an unknown `spec.scope` is taken
    /// as namespaced.
    pub fn from_objects<'a>(objects: impl IntoIterator<Item = &'a serde_json::Value>) -> Self {
        let mut custom = BTreeMap::new();
        for crd in objects {
            let text = |pointer: &str| crd.pointer(pointer).and_then(|v| v.as_str()).unwrap_or_default();
            if text("/kind") != "CustomResourceDefinition" || group_of(text("/apiVersion")) != "apiextensions.k8s.io" {
                continue;
            }
            let (group, kind) = (text("/spec/group"), text("/spec/names/kind"));
            if group.is_empty() || kind.is_empty() {
                continue;
            }
            let scope = if text("/spec/scope") == "Cluster" { Cluster } else { Namespaced };
            let plural = match text("/spec/names/plural") {
                "" => kind.to_lowercase() + "s",
                plural => plural.to_owned(),
            };
            // v1: `versions[*]` with `served`; v1beta1 also allowed a single `version`.
            let mut versions: Vec<(&str, bool, Option<super::scale::ScalePaths>)> = crd
                .pointer("/spec/versions")
                .and_then(|v| v.as_array())
                .into_iter()
                .flatten()
                .filter(|v| v.get("served").and_then(serde_json::Value::as_bool) == Some(true))
                .filter_map(|v| {
                    let scale = v.pointer("/subresources/scale").and_then(super::scale::custom);
                    Some((v.get("name")?.as_str()?, v.pointer("/subresources/status").is_some(), scale))
                })
                .collect();
            if versions.is_empty() && !text("/spec/version").is_empty() {
                let scale = crd.pointer("/spec/subresources/scale").and_then(super::scale::custom);
                versions.push((text("/spec/version"), crd.pointer("/spec/subresources/status").is_some(), scale));
            }
            for (version, status, scale) in versions {
                let kind_of = CustomKind { scope, plural: plural.clone(), status, scale };
                custom.insert((group.to_owned(), version.to_owned(), kind.to_owned()), kind_of);
            }
        }
        Self { custom }
    }

    /// The scope of a kind: a built-in one, or one defined by a CustomResourceDefinition
    /// serving `api_version`; `None` when the kind is unknown.
    pub fn scope(&self, api_version: &str, kind: &str) -> Option<Scope> {
        built_in(api_version, kind).or_else(|| self.custom(api_version, kind).map(|c| c.scope))
    }

    /// Every kind the CustomResourceDefinitions define: (apiVersion, kind, definition).
    pub fn customs(&self) -> impl Iterator<Item = (String, &str, &CustomKind)> {
        self.custom.iter().map(|((group, version, kind), custom)| (format!("{group}/{version}"), kind.as_str(), custom))
    }

    /// The kind of `api_version` a CustomResourceDefinition defines, if any.
    pub fn custom(&self, api_version: &str, kind: &str) -> Option<&CustomKind> {
        let key = (group_of(api_version).to_owned(), version_of(api_version).to_owned(), kind.to_owned());
        self.custom.get(&key)
    }
}

#[cfg(test)]
#[path = "scope_tests.rs"]
mod tests;
