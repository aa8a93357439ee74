//! The kinds the local API server serves and the discovery documents that describe them
//! (`/api`, `/api/v1`, `/apis`, `/apis/{group}`, `/apis/{group}/{version}`), in the legacy
//! (non-aggregated) discovery format that kube's `discovery::pinned_kind` and `Discovery` read.
//! A server asked for aggregated discovery answers with the legacy format, as servers older
//! than 1.26 do.

use std::sync::Arc;

use serde_json::{Value, json};

/// One served kind: what discovery says about it and how the server stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceDef {
    /// API group (`""` for core).
    pub group: String,
    /// Version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Pod`.
    pub kind: String,
    /// Plural resource name, e.g. `pods`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Built into Kubernetes rather than defined by a CRD: the API server leaves `apiVersion`
    /// and `kind` out of such kinds' LIST items (custom resources keep them).
    pub builtin: bool,
    /// Field selector labels besides `metadata.name` and `metadata.namespace`, each with the
    /// JSON pointer it reads (e.g. `spec.nodeName` → `/spec/nodeName` for Pods).
    pub selectable_fields: Vec<(String, String)>,
}

impl ResourceDef {
    /// A built-in kind.
    pub fn builtin(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced,
            builtin: true,
            selectable_fields: Vec::new(),
        }
    }

    /// A custom resource (as a CRD defines it).
    pub fn custom(group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) -> Self {
        Self { builtin: false, ..Self::builtin(group, version, kind, plural, namespaced) }
    }

    /// Adds a selectable field.
    pub fn with_field(mut self, label: &str, pointer: &str) -> Self {
        self.selectable_fields.push((label.into(), pointer.into()));
        self
    }

    /// `group/version`, or `version` for core.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// The kind of a list of these, e.g. `PodList`.
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    fn singular(&self) -> String {
        self.kind.to_lowercase()
    }
}

/// The kinds every server starts with.
pub fn builtin_resources() -> Vec<ResourceDef> {
    vec![
        ResourceDef::builtin("", "v1", "Namespace", "namespaces", false).with_field("status.phase", "/status/phase"),
        ResourceDef::builtin("", "v1", "Node", "nodes", false),
        ResourceDef::builtin("", "v1", "Pod", "pods", true)
            .with_field("spec.nodeName", "/spec/nodeName")
            .with_field("status.phase", "/status/phase"),
        ResourceDef::builtin("", "v1", "ConfigMap", "configmaps", true),
        ResourceDef::builtin("", "v1", "Secret", "secrets", true).with_field("type", "/type"),
        ResourceDef::builtin("", "v1", "Service", "services", true),
        ResourceDef::builtin("apps", "v1", "Deployment", "deployments", true),
        ResourceDef::builtin("apps", "v1", "ReplicaSet", "replicasets", true),
    ]
}

/// The served kinds; a kind's index is its id in the store.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    defs: Vec<Arc<ResourceDef>>,
}

impl Registry {
    pub(crate) fn add(&mut self, def: ResourceDef) -> Result<usize, String> {
        if self.by_kind(&def.api_version(), &def.kind).is_some() {
            return Err(format!("{} {} is already served", def.api_version(), def.kind));
        }
        if self.by_path(&def.group, &def.version, &def.plural).is_some() {
            return Err(format!("{}/{} {} is already served", def.group, def.version, def.plural));
        }
        self.defs.push(Arc::new(def));
        Ok(self.defs.len() - 1)
    }

    pub(crate) fn get(&self, id: usize) -> &Arc<ResourceDef> {
        &self.defs[id]
    }

    pub(crate) fn len(&self) -> usize {
        self.defs.len()
    }

    pub(crate) fn by_kind(&self, api_version: &str, kind: &str) -> Option<usize> {
        self.defs.iter().position(|d| d.kind == kind && d.api_version() == api_version)
    }

    pub(crate) fn by_path(&self, group: &str, version: &str, plural: &str) -> Option<usize> {
        self.defs.iter().position(|d| d.group == group && d.version == version && d.plural == plural)
    }

    fn groups(&self) -> Vec<String> {
        let mut groups: Vec<String> = Vec::new();
        for d in &self.defs {
            if !d.group.is_empty() && !groups.contains(&d.group) {
                groups.push(d.group.clone());
            }
        }
        groups
    }

    fn versions_of(&self, group: &str) -> Vec<String> {
        let mut versions: Vec<String> = Vec::new();
        for d in self.defs.iter().filter(|d| d.group == group) {
            if !versions.contains(&d.version) {
                versions.push(d.version.clone());
            }
        }
        versions
    }

    /// `GET /api`.
    pub(crate) fn core_versions(&self, server_address: &str) -> Value {
        json!({
            "kind": "APIVersions",
            "versions": self.versions_of(""),
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        })
    }

    fn group_doc(&self, group: &str) -> Value {
        let versions: Vec<Value> = self
            .versions_of(group)
            .into_iter()
            .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
            .collect();
        json!({"name": group, "preferredVersion": versions[0].clone(), "versions": versions})
    }

    /// `GET /apis`.
    pub(crate) fn group_list(&self) -> Value {
        let groups: Vec<Value> = self.groups().iter().map(|g| self.group_doc(g)).collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `GET /apis/{group}`.
    pub(crate) fn group(&self, group: &str) -> Option<Value> {
        self.groups().iter().any(|g| g == group).then(|| {
            let mut doc = self.group_doc(group);
            doc["kind"] = json!("APIGroup");
            doc["apiVersion"] = json!("v1");
            doc
        })
    }

    /// `GET /api/{version}` or `GET /apis/{group}/{version}`.
    pub(crate) fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let defs: Vec<&Arc<ResourceDef>> =
            self.defs.iter().filter(|d| d.group == group && d.version == version).collect();
        if defs.is_empty() {
            return None;
        }
        let verbs = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
        let mut resources = Vec::new();
        for d in defs {
            resources.push(json!({
                "name": d.plural, "singularName": d.singular(), "namespaced": d.namespaced,
                "kind": d.kind, "verbs": verbs,
            }));
            resources.push(json!({
                "name": format!("{}/status", d.plural), "singularName": "", "namespaced": d.namespaced,
                "kind": d.kind, "verbs": ["get", "patch", "update"],
            }));
        }
        let group_version = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
        Some(
            json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}),
        )
    }
}
