//! Where each object of the folder is placed, as `kubectl apply` into an empty cluster would
//! place it.
//!
//! - A namespaced object without `metadata.namespace` goes to the default namespace:
//!   `default`, or the one given ([`DirSourceOptions::namespace`](super::DirSourceOptions),
//!   `wink run --namespace`). Given one, an object naming another namespace is refused, as
//!   `kubectl apply -n` refuses it.
//! - A cluster-scoped object has its `metadata.namespace` removed (the API server ignores
//!   it), with a warning naming the file and the document.
//! - A kind neither built in nor defined by a CustomResourceDefinition of the folder is taken
//!   as namespaced, with one warning per kind.
//! - An object without `metadata.uid` gets a stable one, derived from its group, kind,
//!   namespace and name (a UUID v5), so that the same object has the same uid across scans
//!   and restarts; a uid the file gives is kept.
//!
//! Which kinds are namespaced depends on the CustomResourceDefinitions of the whole folder,
//! so placing is a pass over every file's objects after reading (`Placer::set_scopes`
//! says when a changed definition means every file must be placed again).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::dir::DirSourceError;
use super::documents::ManifestObject;
use crate::kube::scope::{Scope, Scopes, group_of};

/// Identity of an object in the folder: (apiVersion, kind, key).
pub(super) type ObjectId = (String, String, String);

/// The namespace of the synthetic uids (a UUID v5 namespace of wink's own).
const UID_NAMESPACE: uuid::Uuid = uuid::uuid!("a706067c-f1c9-44e2-a808-af8de5f9300f");

/// The namespace objects go to when neither they nor the options name one.
pub(crate) const DEFAULT_NAMESPACE: &str = "default";

/// The uid wink gives an object its file gives none: the same for the same group, kind,
/// namespace ("" when cluster-scoped) and name, wherever and whenever it is computed.
pub(crate) fn synthetic_uid(group: &str, kind: &str, namespace: &str, name: &str) -> String {
    let identity = serde_json::json!([group, kind, namespace, name]).to_string();
    uuid::Uuid::new_v5(&UID_NAMESPACE, identity.as_bytes()).hyphenated().to_string()
}

/// One file's objects, placed.
#[derive(Debug, Default)]
pub(super) struct Placed {
    /// The objects by identity, as the cache holds them.
    pub objects: BTreeMap<ObjectId, serde_json::Value>,
    /// Namespaces removed and objects refused, naming the file and the document.
    pub warnings: Vec<DirSourceError>,
    /// Kinds met for the first time that are unknown (one warning per kind).
    pub unknown_kinds: Vec<DirSourceError>,
}

/// Places objects: namespaces and uids.
#[derive(Debug)]
pub(super) struct Placer {
    namespace: String,
    /// Whether the namespace was given (`-n`): objects naming another one are refused.
    given: bool,
    scopes: Scopes,
    /// Unknown kinds already warned about, as (apiVersion, kind).
    warned: BTreeSet<(String, String)>,
}

impl Placer {
    /// A placer for `namespace` (`None` or empty: `default`, any namespace allowed).
    pub fn new(namespace: Option<String>) -> Self {
        let namespace = namespace.filter(|ns| !ns.is_empty());
        let given = namespace.is_some();
        let namespace = namespace.unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());
        Self { namespace, given, scopes: Scopes::default(), warned: BTreeSet::new() }
    }

    /// The scopes objects are placed with.
    pub fn scopes(&self) -> &Scopes {
        &self.scopes
    }

    /// Takes the kinds the folder's CustomResourceDefinitions define; returns whether they
    /// changed (then every file's objects must be placed again).
    pub fn set_scopes(&mut self, scopes: Scopes) -> bool {
        if scopes == self.scopes {
            return false;
        }
        self.scopes = scopes;
        // A kind defined since is warned about again if its definition goes.
        let scopes = &self.scopes;
        self.warned.retain(|(api_version, kind)| scopes.scope(api_version, kind).is_none());
        true
    }

    /// Places one file's objects. A later object with the identity of an earlier one
    /// replaces it, as a later `kubectl apply` does.
    pub fn place(&mut self, path: &Path, objects: &[ManifestObject]) -> Placed {
        let mut placed = Placed::default();
        for object in objects {
            let mut value = object.value.clone();
            let text = |pointer: &str| value.pointer(pointer).and_then(|v| v.as_str()).unwrap_or_default().to_owned();
            let (api_version, kind, name) = (text("/apiVersion"), text("/kind"), text("/metadata/name"));
            let namespace = text("/metadata/namespace");
            let warn = |message: String| DirSourceError::Placement {
                path: path.to_owned(),
                message: format!("{} ({}): {message}", object.location, object.describe()),
            };
            let scope = self.scopes.scope(&api_version, &kind).unwrap_or_else(|| {
                if self.warned.insert((api_version.clone(), kind.clone())) {
                    placed.unknown_kinds.push(warn(format!(
                        "unknown kind {kind} of {api_version} (neither built in nor defined by a \
                         CustomResourceDefinition of the folder); taken as namespaced"
                    )));
                }
                Scope::Namespaced
            });
            let namespace = match scope {
                Scope::Cluster => {
                    if !namespace.is_empty() {
                        placed
                            .warnings
                            .push(warn(format!("{kind} is cluster-scoped; its namespace `{namespace}` is ignored")));
                    }
                    String::new()
                }
                Scope::Namespaced if namespace.is_empty() => self.namespace.clone(),
                Scope::Namespaced if self.given && namespace != self.namespace => {
                    placed.warnings.push(warn(format!(
                        "its namespace `{namespace}` does not match the namespace `{}` given; skipped",
                        self.namespace
                    )));
                    continue;
                }
                Scope::Namespaced => namespace,
            };
            let Some(metadata) = value.get_mut("metadata").and_then(|m| m.as_object_mut()) else { continue };
            if namespace.is_empty() {
                metadata.remove("namespace");
            } else {
                metadata.insert("namespace".into(), namespace.clone().into());
            }
            if metadata.get("uid").and_then(|u| u.as_str()).is_none_or(str::is_empty) {
                let uid = synthetic_uid(group_of(&api_version), &kind, &namespace, &name);
                metadata.insert("uid".into(), uid.into());
            }
            let key = if namespace.is_empty() { name } else { format!("{namespace}/{name}") };
            placed.objects.insert((api_version, kind, key), value);
        }
        placed
    }
}

#[cfg(test)]
#[path = "placement_tests.rs"]
mod tests;
