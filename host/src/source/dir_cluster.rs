//! The directory source as an embedded cluster that accepts writes.
//!
//! Plugins' writes (through [`EmbeddedClient`](crate::embedded::EmbeddedClient)) are applied in
//! memory, on the same per-kind stores the files fill, with the API server's rules; every
//! watching plugin sees them as events. Writes live in memory only: they are gone when wink
//! stops, and never touch the files.
//!
//! **When a file and a plugin both change an object**, the file's change wins as of when it
//! is read: the object becomes what the file now defines (as `kubectl replace` would), keeping
//! its uid and creation time, and keeping the status plugins wrote when the file defines
//! none. A plugin's later write applies on top again. An object a plugin created (in no file)
//! lives until a plugin deletes it; an object whose files are all gone is deleted, finalizers
//! or not. A file that does not change is not read again, so a plugin's write to an object
//! stays until that object's definition changes.

use serde_json::Value;

use super::dir::DirSource;
use crate::cluster::RequestError;
use crate::embedded::Write;
use crate::embedded::http::{Served, ServedCluster};
use crate::embedded::{Collection, EmbeddedCluster, NamespacePhase, SYSTEM_NAMESPACES, stored_namespace_phase};
use crate::informer::{Object, ObjectError};
use crate::kube::scale::ScalePaths;
use crate::kube::scope::group_of;
use crate::kube::{ResourceDef, resource};

impl DirSource {
    /// What the cluster knows of a kind without touching its store: its definition, and its
    /// scale subresource if it has one.
    fn kind_info(&self, api_version: &str, kind: &str) -> Option<(ResourceDef, Option<ScalePaths>)> {
        if let Some(def) = resource::built_in(api_version, kind) {
            let scale = crate::kube::scale::built_in(&def.group, kind);
            return Some((def, scale));
        }
        let custom = self.custom_kind(api_version, kind)?;
        let namespaced = custom.scope == crate::kube::Scope::Namespaced;
        let def = ResourceDef {
            status_subresource: custom.status,
            ..ResourceDef::custom(api_version, kind, &custom.plural, namespaced)
        };
        Some((def, custom.scale))
    }
}

impl EmbeddedCluster for DirSource {
    fn collection(&self, api_version: &str, kind: &str) -> Option<Collection> {
        let (def, scale) = self.kind_info(api_version, kind)?;
        let fields = if def.built_in { crate::kube::fields::built_in_fields(&def.group, kind) } else { Vec::new() };
        let source = self.store(api_version, kind);
        Some(Collection { def, scale, fields, source })
    }

    /// A namespace exists when a Namespace object of that name is stored, when it is one of
    /// the namespaces every cluster starts with, or when the folder's files put objects in
    /// it (as if the folder had been applied into a cluster that had them).
    fn namespace_phase(&self, namespace: &str) -> NamespacePhase {
        if let Some(phase) = stored_namespace_phase(self, namespace) {
            return phase;
        }
        if SYSTEM_NAMESPACES.contains(&namespace) || self.files_use_namespace(namespace) {
            NamespacePhase::Active
        } else {
            NamespacePhase::Missing
        }
    }

    fn stored_kinds(&self) -> Vec<(String, String)> {
        self.kinds()
    }

    /// A folder served as a cluster is a whole cluster: kube-controller-manager's garbage
    /// collector and namespace controller run on its writes.
    fn runs_controllers(&self) -> bool {
        true
    }
}

impl ServedCluster for DirSource {
    /// Every kind served, from the kinds' definitions only: listing them creates no store.
    fn served(&self) -> Vec<Served> {
        let mut served: Vec<Served> = Vec::new();
        let mut add = |api_version: String, kind: &str| {
            if served.iter().any(|s| s.def.has_api_version(&api_version) && s.def.kind == kind) {
                return;
            }
            if let Some((def, scale)) = self.kind_info(&api_version, kind) {
                served.push(Served { def, scale: scale.is_some() });
            }
        };
        for (group, kind, _) in
            crate::kube::scope::built_ins().filter(|(g, k, _)| crate::kube::scope::removed_in(g, k).is_none())
        {
            for version in crate::kube::versions::embedded_versions(group) {
                add(if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") }, kind);
            }
        }
        for (api_version, kind) in self.custom_kinds().into_iter().chain(self.kinds()) {
            add(api_version, &kind);
        }
        served
    }
}

/// The write a file's (new) definition of an object makes: the object as the file defines
/// it, keeping the stored object's uid and creation time (stamped when it was first read,
/// unless the file gives one), and its status when the file has none.
pub(super) fn file_write(current: Option<&Object>, mut value: Value) -> Result<Write, RequestError> {
    let kind = (value["apiVersion"].as_str().unwrap_or_default(), value["kind"].as_str().unwrap_or_default());
    if wink_apiserver::crd_status::is_crd(group_of(kind.0), kind.1) {
        // Its status is the server's, whatever the file says (controller-gen writes an empty one).
        let previous = current.and_then(|c| c.to_value().ok());
        let now = wink_apiserver::Context::timestamp(&wink_apiserver::SystemContext);
        wink_apiserver::crd_status::establish(&mut value, previous.as_ref(), &now);
    }
    let Some(current) = current else {
        // Created now, as the API server stamps what kubectl creates (unless the file says
        // when).
        if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.entry("creationTimestamp")
                .or_insert_with(|| wink_apiserver::Context::timestamp(&wink_apiserver::SystemContext).into());
        }
        return Ok(Write::Put(value));
    };
    let stored = current.to_value().map_err(|e: ObjectError| RequestError::BadRequest(e.to_string()))?;
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in ["uid", "creationTimestamp"] {
            if let Some(kept) = stored["metadata"].get(field) {
                meta.insert(field.to_owned(), kept.clone());
            }
        }
    }
    if value.get("status").is_none()
        && let (Some(status), Some(obj)) = (stored.get("status"), value.as_object_mut())
    {
        obj.insert("status".to_owned(), status.clone());
    }
    Ok(Write::Put(value))
}

/// The Namespace `name` as the API server stores one created with only its name (a uid of
/// its own, stable across restarts as the files' objects' are).
pub(super) fn implicit_namespace(name: &str) -> Value {
    let mut value = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {
            "name": name,
            "uid": super::placement::synthetic_uid("", "Namespace", "", name),
            "creationTimestamp": wink_apiserver::Context::timestamp(&wink_apiserver::SystemContext),
        },
    });
    let def = wink_apiserver::ResourceDef::built_in("", "v1", "Namespace", "namespaces", false, true);
    wink_apiserver::defaults::apply(&def, &mut value);
    value
}
