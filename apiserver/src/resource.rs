//! `ResourceDef`: what the write rules need to know about a resource type.
//!
//! Its group, version, kind and plural name (for messages and apiVersion checks), whether it
//! is namespaced, whether it has a `status` subresource (which splits writes to `status` from
//! writes to the rest), and whether it is built into the API server or defined by a
//! CustomResourceDefinition (built-ins accept strategic merge patches and unconditional
//! updates; custom resources do not). [`ResourceDef::from_crd`] reads one from a CRD object.

use serde_json::Value;

/// A resource type, as the write rules see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceDef {
    /// The API group; empty for the core group.
    pub group: String,
    /// The version served (`v1`).
    pub version: String,
    /// The kind (`Pod`).
    pub kind: String,
    /// The plural resource name (`pods`).
    pub plural: String,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Whether the resource has a `status` subresource.
    pub status_subresource: bool,
    /// Built into the API server (not a CustomResourceDefinition).
    pub built_in: bool,
}

/// Why a CustomResourceDefinition object could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrdError {
    /// A required field is missing or has the wrong type.
    #[error("CustomResourceDefinition has no {0}")]
    Missing(&'static str),
    /// `spec.scope` is neither `Namespaced` nor `Cluster`.
    #[error("CustomResourceDefinition has an unknown spec.scope {0:?}")]
    Scope(String),
}

impl ResourceDef {
    /// A built-in resource.
    pub fn built_in(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool, status: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            status_subresource: status,
            built_in: true,
        }
    }

    /// A custom resource (a CustomResourceDefinition's) of `api_version` (`group/version`),
    /// without a status subresource.
    pub fn custom(api_version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        Self { built_in: false, ..Self::built_in(group, version, kind, plural, namespaced, false) }
    }

    /// The apiVersion objects of this resource carry (`v1`, `apps/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// Whether objects of this resource carry `api_version` (`v1`, `apps/v1`), without
    /// building the string.
    pub fn has_api_version(&self, api_version: &str) -> bool {
        match api_version.split_once('/') {
            Some((group, version)) => !group.is_empty() && group == self.group && version == self.version,
            None => self.group.is_empty() && api_version == self.version,
        }
    }

    /// The path of its collection: `/api/v1/pods`, `/api/v1/namespaces/{ns}/pods`,
    /// `/apis/{group}/{version}/…` (a namespace only for a namespaced resource).
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        let base = if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        };
        match namespace {
            Some(ns) if self.namespaced => format!("{base}/namespaces/{ns}/{}", self.plural),
            _ => format!("{base}/{}", self.plural),
        }
    }

    /// The group-qualified resource, as messages write it (`pods`, `deployments.apps`).
    pub fn group_resource(&self) -> String {
        qualify(&self.plural, &self.group)
    }

    /// The group-qualified kind, as validation messages write it (`Pod`, `Deployment.apps`).
    pub fn group_kind(&self) -> String {
        qualify(&self.kind, &self.group)
    }

    /// Whether `metadata.generation` is kept, as the API server's strategies keep it: always
    /// for custom resources; for built-ins, mostly those with a status subresource (the kinds
    /// with a spec that controllers observe) but Namespaces and Services, and also
    /// IngressClasses, NetworkPolicies, PriorityClasses and admission configurations.
    /// ConfigMaps, Secrets and the like have none.
    pub fn tracks_generation(&self) -> bool {
        if !self.built_in {
            return true;
        }
        match (self.group.as_str(), self.kind.as_str()) {
            // A status subresource but no generation.
            ("", "Namespace" | "Service") => false,
            // A generation but no status subresource.
            ("networking.k8s.io", "IngressClass" | "NetworkPolicy")
            | ("scheduling.k8s.io", "PriorityClass")
            | ("admissionregistration.k8s.io", _) => true,
            _ => self.status_subresource,
        }
    }

    /// Whether a delete is graceful, as the API server's strategies with `CheckGracefulDelete`
    /// make it: Pods. Nothing here plays the kubelet, so the grace period is the one
    /// kube-apiserver gives a Pod no node runs (0) and the Pod goes at once — but first
    /// stamped as being deleted, which its last state (the DELETE's answer, the watch's
    /// DELETED event) shows.
    pub fn deletes_gracefully(&self) -> bool {
        self.built_in && self.group.is_empty() && self.kind == "Pod"
    }

    /// Whether this is the built-in Namespace kind, whose deletion is the namespace
    /// lifecycle's (see [`crate::delete`]).
    pub fn is_namespace(&self) -> bool {
        self.built_in && self.group.is_empty() && self.kind == "Namespace"
    }

    /// Whether object names must be DNS-1123 labels (namespaces; services, whose names are
    /// DNS-1123 labels since Kubernetes 1.34's relaxed service name validation, no longer
    /// DNS-1035 labels) rather than subdomains.
    pub(crate) fn name_is_label(&self) -> bool {
        self.built_in && self.group.is_empty() && matches!(self.kind.as_str(), "Namespace" | "Service")
    }

    /// Whether object names need only be path segments (RBAC's roles and bindings, whose
    /// names such as `system:metrics-server` hold colons): apiserver's
    /// `ValidatePathSegmentName`.
    pub(crate) fn name_is_path_segment(&self) -> bool {
        self.built_in && self.group == "rbac.authorization.k8s.io"
    }

    /// One definition per served version of a CustomResourceDefinition object
    /// (`apiextensions.k8s.io/v1`).
    pub fn from_crd(crd: &Value) -> Result<Vec<ResourceDef>, CrdError> {
        let spec = crd.get("spec").ok_or(CrdError::Missing("spec"))?;
        let group = spec.get("group").and_then(Value::as_str).ok_or(CrdError::Missing("spec.group"))?;
        let names = spec.get("names").ok_or(CrdError::Missing("spec.names"))?;
        let kind = names.get("kind").and_then(Value::as_str).ok_or(CrdError::Missing("spec.names.kind"))?;
        let plural = names.get("plural").and_then(Value::as_str).ok_or(CrdError::Missing("spec.names.plural"))?;
        let namespaced = match spec.get("scope").and_then(Value::as_str) {
            Some("Namespaced") => true,
            Some("Cluster") => false,
            Some(other) => return Err(CrdError::Scope(other.into())),
            None => return Err(CrdError::Missing("spec.scope")),
        };
        let versions = spec.get("versions").and_then(Value::as_array).ok_or(CrdError::Missing("spec.versions"))?;
        let mut defs = Vec::new();
        for version in versions {
            if version.get("served").and_then(Value::as_bool) == Some(false) {
                continue;
            }
            let name = version.get("name").and_then(Value::as_str).ok_or(CrdError::Missing("spec.versions[].name"))?;
            let status = version.pointer("/subresources/status").is_some_and(Value::is_object);
            defs.push(ResourceDef {
                group: group.into(),
                version: name.into(),
                kind: kind.into(),
                plural: plural.into(),
                namespaced,
                status_subresource: status,
                built_in: false,
            });
        }
        Ok(defs)
    }

    /// The common built-in resources of the core, apps, batch, rbac, networking, coordination,
    /// policy and apiextensions groups.
    pub fn well_known() -> Vec<ResourceDef> {
        let b = ResourceDef::built_in;
        vec![
            b("", "v1", "Pod", "pods", true, true),
            b("", "v1", "Service", "services", true, true),
            b("", "v1", "ConfigMap", "configmaps", true, false),
            b("", "v1", "Secret", "secrets", true, false),
            b("", "v1", "ServiceAccount", "serviceaccounts", true, false),
            b("", "v1", "Endpoints", "endpoints", true, false),
            b("", "v1", "Event", "events", true, false),
            b("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", true, true),
            b("", "v1", "PersistentVolume", "persistentvolumes", false, true),
            b("", "v1", "Namespace", "namespaces", false, true),
            b("", "v1", "Node", "nodes", false, true),
            b("apps", "v1", "Deployment", "deployments", true, true),
            b("apps", "v1", "StatefulSet", "statefulsets", true, true),
            b("apps", "v1", "DaemonSet", "daemonsets", true, true),
            b("apps", "v1", "ReplicaSet", "replicasets", true, true),
            b("batch", "v1", "Job", "jobs", true, true),
            b("batch", "v1", "CronJob", "cronjobs", true, true),
            b("rbac.authorization.k8s.io", "v1", "Role", "roles", true, false),
            b("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", true, false),
            b("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", false, false),
            b("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", false, false),
            b("networking.k8s.io", "v1", "Ingress", "ingresses", true, true),
            b("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", true, false),
            b("coordination.k8s.io", "v1", "Lease", "leases", true, false),
            b("policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", true, true),
            b("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "customresourcedefinitions", false, true),
        ]
    }
}

fn qualify(name: &str, group: &str) -> String {
    if group.is_empty() { name.to_string() } else { format!("{name}.{group}") }
}

#[cfg(test)]
#[path = "resource_tests.rs"]
mod tests;
