//! Discovery documents: what `kubectl` reads before anything else, to map a kind to its
//! resource path and to know whether it is namespaced.

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// One kind the endpoint serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// Its `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// Its kind, e.g. `Deployment`.
    pub kind: String,
    /// Its plural resource name, e.g. `deployments`.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether it has a status subresource.
    pub status: bool,
}

impl Served {
    fn group_version(&self) -> (&str, &str) {
        self.api_version.split_once('/').unwrap_or(("", &self.api_version))
    }
}

/// kubectl's short names of the built-in kinds.
const SHORT_NAMES: &[(&str, &[&str])] = &[
    ("ConfigMap", &["cm"]),
    ("CronJob", &["cj"]),
    ("CustomResourceDefinition", &["crd", "crds"]),
    ("DaemonSet", &["ds"]),
    ("Deployment", &["deploy"]),
    ("Endpoints", &["ep"]),
    ("Event", &["ev"]),
    ("HorizontalPodAutoscaler", &["hpa"]),
    ("Ingress", &["ing"]),
    ("LimitRange", &["limits"]),
    ("Namespace", &["ns"]),
    ("NetworkPolicy", &["netpol"]),
    ("Node", &["no"]),
    ("PersistentVolume", &["pv"]),
    ("PersistentVolumeClaim", &["pvc"]),
    ("Pod", &["po"]),
    ("PodDisruptionBudget", &["pdb"]),
    ("ReplicaSet", &["rs"]),
    ("ReplicationController", &["rc"]),
    ("ResourceQuota", &["quota"]),
    ("Service", &["svc"]),
    ("ServiceAccount", &["sa"]),
    ("StatefulSet", &["sts"]),
    ("StorageClass", &["sc"]),
];

const VERBS: [&str; 8] = ["create", "delete", "get", "list", "patch", "update", "watch", "deletecollection"];

/// `/version`.
pub fn version() -> Value {
    json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-wink", "platform": "linux/amd64"})
}

/// `/api`.
pub fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
}

/// `/apis`: every group but the core one, each with its versions (the first is preferred).
pub fn groups(served: &[Served]) -> Value {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in served {
        let (group, version) = s.group_version();
        if group.is_empty() {
            continue;
        }
        let versions = groups.entry(group).or_default();
        if !versions.contains(&version) {
            versions.push(version);
        }
    }
    let groups: Vec<Value> = groups
        .into_iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> =
                versions.iter().map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v})).collect();
            json!({"name": group, "versions": versions, "preferredVersion": versions[0]})
        })
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/GROUP`: one group with its versions (an `APIGroup`), or `None` when none is served.
pub fn group(served: &[Served], name: &str) -> Option<Value> {
    let mut list = groups(served);
    let groups = list.get_mut("groups")?.as_array_mut()?;
    let mut group = groups.drain(..).find(|g| g["name"] == name)?;
    let map = group.as_object_mut()?;
    map.insert("kind".into(), "APIGroup".into());
    map.insert("apiVersion".into(), "v1".into());
    Some(group)
}

/// `/api/v1` or `/apis/GROUP/VERSION`: the resources of one group version, or `None` when
/// none is served.
pub fn resources(served: &[Served], group: &str, version: &str) -> Option<Value> {
    let api_version = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
    let mut resources = Vec::new();
    for s in served.iter().filter(|s| s.api_version == api_version) {
        // Events of the core group keep `ev` only where kubectl expects it (core/v1).
        let short: &[&str] = SHORT_NAMES
            .iter()
            .find(|(kind, _)| *kind == s.kind && (s.kind != "Event" || group.is_empty()))
            .map_or(&[], |(_, names)| names);
        resources.push(json!({
            "name": s.plural,
            "singularName": s.kind.to_lowercase(),
            "namespaced": s.namespaced,
            "kind": s.kind,
            "verbs": VERBS,
            "shortNames": short,
        }));
        if s.status {
            resources.push(json!({
                "name": format!("{}/status", s.plural),
                "singularName": "",
                "namespaced": s.namespaced,
                "kind": s.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    (!resources.is_empty()).then(
        || json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": api_version, "resources": resources}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(api_version: &str, kind: &str) -> Served {
        Served {
            api_version: api_version.into(),
            kind: kind.into(),
            plural: "xs".into(),
            namespaced: true,
            status: false,
        }
    }

    /// `/apis/GROUP` is an `APIGroup` of the group's versions, the first preferred.
    #[test]
    fn one_group_is_an_api_group() {
        let all = [served("v1", "Pod"), served("apps/v1", "Deployment"), served("example.com/v1", "Widget")];
        let apps = group(&all, "apps").unwrap();
        assert_eq!(
            apps,
            json!({"kind": "APIGroup", "apiVersion": "v1", "name": "apps",
                   "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                   "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}})
        );
        assert_eq!(group(&all, "batch"), None);
    }
}
