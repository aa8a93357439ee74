//! Discovery documents: what `kubectl` reads before anything else, to map a kind to its
//! resource path and to know whether it is namespaced.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::kube::ResourceDef;

/// One kind the endpoint serves: its definition, and whether it has a scale subresource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Served {
    /// The kind.
    pub def: ResourceDef,
    /// Whether it has a scale subresource.
    pub scale: bool,
}

const VERBS: [&str; 8] = ["create", "delete", "get", "list", "patch", "update", "watch", "deletecollection"];

/// `/version`: every field of apimachinery's `version.Info` as kube-apiserver 1.33 writes
/// it (clients such as the official Python client refuse a document missing one). The API
/// is 1.33's, emulating 1.33 and compatible from 1.32; the build fields describe wink.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "emulationMajor": "1",
        "emulationMinor": "33",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "32",
        "gitVersion": "v1.33.0-wink",
        "gitCommit": format!("wink-{}", env!("CARGO_PKG_VERSION")),
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "none (wink is not written in Go)",
        "compiler": "rustc",
        "platform": platform(),
    })
}

/// The platform as Go names it (`linux/amd64`, `darwin/arm64`).
fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        other => other,
    };
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    format!("{os}/{arch}")
}

/// `/api`.
pub(crate) fn core_versions() -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": []})
}

/// `/apis`: every group but the core one, each with its versions (the first is preferred).
pub fn groups(served: &[Served]) -> Value {
    let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for s in served {
        let (group, version) = (s.def.group.as_str(), s.def.version.as_str());
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
    for s in served.iter().filter(|s| s.def.api_version() == api_version) {
        let mut resource = json!({
            "name": s.def.plural,
            "singularName": s.def.kind.to_lowercase(),
            "namespaced": s.def.namespaced,
            "kind": s.def.kind,
            // A review is only ever created (and answered, never stored).
            "verbs": if super::reviews::is_review(s) { &["create"][..] } else { &VERBS[..] },
            "shortNames": crate::kube::names::short_names(group, &s.def.kind),
        });
        let categories = crate::kube::names::categories(group, &s.def.kind);
        if !categories.is_empty() {
            resource["categories"] = json!(categories);
        }
        resources.push(resource);
        if s.def.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", s.def.plural),
                "singularName": "",
                "namespaced": s.def.namespaced,
                "kind": s.def.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
        if s.scale {
            resources.push(json!({
                "name": format!("{}/scale", s.def.plural),
                "singularName": "",
                "namespaced": s.def.namespaced,
                "group": "autoscaling",
                "version": "v1",
                "kind": "Scale",
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

    /// The official Python client refused `/version` when a field of `version.Info` was
    /// missing.
    #[test]
    fn version_has_every_field_of_version_info() {
        let version = version();
        for field in [
            "major",
            "minor",
            "emulationMajor",
            "emulationMinor",
            "minCompatibilityMajor",
            "minCompatibilityMinor",
            "gitVersion",
            "gitCommit",
            "gitTreeState",
            "buildDate",
            "goVersion",
            "compiler",
            "platform",
        ] {
            assert!(version[field].as_str().is_some_and(|v| !v.is_empty()), "{field}: {version}");
        }
        assert!(version["platform"].as_str().unwrap().contains('/'));
    }

    fn served(api_version: &str, kind: &str) -> Served {
        Served { def: ResourceDef::custom(api_version, kind, "xs", true), scale: false }
    }

    fn named(plural: &str, api_version: &str, kind: &str) -> Served {
        Served { def: ResourceDef::custom(api_version, kind, plural, true), scale: false }
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

    /// `kubectl get deploy` and `kubectl get all` resolve through these.
    #[test]
    fn resources_carry_upstream_short_names_and_categories() {
        let deployments = named("deployments", "apps/v1", "Deployment");
        let list = resources(&[deployments], "apps", "v1").unwrap();
        assert_eq!(list["resources"][0]["shortNames"], json!(["deploy"]));
        assert_eq!(list["resources"][0]["categories"], json!(["all"]));
        let configmaps = named("configmaps", "v1", "ConfigMap");
        let list = resources(&[configmaps], "", "v1").unwrap();
        assert_eq!(list["resources"][0]["shortNames"], json!(["cm"]));
        assert_eq!(list["resources"][0].get("categories"), None);
    }
}
