//! [`MemoryCluster`]: a cluster held in memory, one [`MemorySource`] per kind sharing one
//! [`Revision`]: every built-in kind at its preferred version, plus the kinds registered and
//! those of the CustomResourceDefinitions created in it (served from then on, as the API
//! server establishes them). It is an [`EmbeddedCluster`] (writes through
//! [`EmbeddedClient`](crate::embedded::EmbeddedClient), with the API server's rules) and a
//! [`ServedCluster`] (served over HTTP by [`crate::embedded::http::router`]): the tests' local API
//! server and offline tools run on it.

use std::collections::BTreeMap;

use parking_lot::RwLock;

use super::http::{Served, ServedCluster};
use super::memory::{MemorySource, MemorySourceOptions, Revision};
use crate::embedded::{Collection, EmbeddedCluster};
use crate::kube::fields::built_in_fields;
use crate::kube::{ResourceDef, resource};

/// A kind the cluster serves.
struct Kind {
    served: Served,
    collection: Collection,
}

/// A cluster in memory. See the module docs.
pub struct MemoryCluster {
    kinds: RwLock<BTreeMap<(String, String), Kind>>,
    options: MemorySourceOptions,
}

impl std::fmt::Debug for MemoryCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryCluster").field("kinds", &self.kinds.read().len()).finish_non_exhaustive()
    }
}

impl MemoryCluster {
    /// A cluster serving every built-in kind a current API server serves, at each stable
    /// version of its group (see [`crate::kube::versions::embedded_versions`]); its stores take
    /// `options` (their [`Revision`] is the cluster's).
    pub fn new(options: MemorySourceOptions) -> Self {
        let this = Self { kinds: RwLock::default(), options };
        for (group, kind, _) in
            crate::kube::scope::built_ins().filter(|(g, k, _)| crate::kube::scope::removed_in(g, k).is_none())
        {
            for version in crate::kube::versions::embedded_versions(group) {
                let api_version = if group.is_empty() { version.to_owned() } else { format!("{group}/{version}") };
                if let Some(def) = resource::built_in(&api_version, kind) {
                    this.insert(def, built_in_fields(group, kind));
                }
            }
        }
        this
    }

    fn insert(&self, def: ResourceDef, fields: Vec<(String, String)>) {
        let (api_version, kind) = (def.api_version(), def.kind.clone());
        let scale = if def.built_in { crate::kube::scale::built_in(&def.group, &kind) } else { None };
        let served = Served { def: def.clone(), scale: scale.is_some() };
        let source = self.source(&api_version, &kind);
        let collection = Collection { def, scale, fields, source };
        self.kinds.write().insert((api_version, kind), Kind { served, collection });
    }

    /// The store of `kind`: its own (new unless it is served already), or, for a kind stored
    /// as another, a view of that kind's store (which is served first when it is not yet).
    fn source(&self, api_version: &str, kind: &str) -> MemorySource {
        let Some((stored_version, stored_kind, conversion)) = super::memory_view::shared_storage(api_version, kind)
        else {
            let key = (api_version.to_owned(), kind.to_owned());
            return match self.kinds.read().get(&key) {
                Some(served) => served.collection.source.clone(),
                None => MemorySource::new(self.options.clone()),
            };
        };
        let key = (stored_version.to_owned(), stored_kind.to_owned());
        if !self.kinds.read().contains_key(&key)
            && let Some(def) = resource::built_in(stored_version, stored_kind)
        {
            let fields = built_in_fields(&def.group, stored_kind);
            self.insert(def, fields);
        }
        self.source(stored_version, stored_kind).view(conversion)
    }

    /// Serves a custom resource (as installing its CRD would): `plural`, its scope, whether it
    /// has a status subresource, and its selectable fields as (label, JSON pointer). Refused
    /// when the kind or its resource path is already served.
    pub fn register(
        &self,
        api_version: &str,
        kind: &str,
        plural: &str,
        namespaced: bool,
        status: bool,
        fields: Vec<(String, String)>,
    ) -> Result<(), String> {
        let taken = self.kinds.read().values().any(|k| {
            k.served.def.has_api_version(api_version) && (k.served.def.kind == kind || k.served.def.plural == plural)
        });
        if taken {
            return Err(format!("{api_version} {kind} ({plural}) is already served"));
        }
        let def =
            ResourceDef { status_subresource: status, ..ResourceDef::custom(api_version, kind, plural, namespaced) };
        self.insert(def, fields);
        Ok(())
    }

    /// Serves the kinds of the CustomResourceDefinitions stored in the cluster that are not
    /// served yet, as the API server establishes a CRD once it is created.
    fn establish_crds(&self) {
        let key = (CRD_KIND[0].to_owned(), CRD_KIND[1].to_owned());
        let Some(crds) = self.kinds.read().get(&key).map(|k| k.collection.source.clone()) else { return };
        for crd in crds.objects() {
            let Ok(crd) = crd.to_value() else { continue };
            let spec = &crd["spec"];
            let (Some(group), Some(kind), Some(plural)) =
                (spec["group"].as_str(), spec["names"]["kind"].as_str(), spec["names"]["plural"].as_str())
            else {
                continue;
            };
            let namespaced = spec["scope"].as_str() != Some("Cluster");
            for version in spec["versions"].as_array().into_iter().flatten() {
                let Some(name) = version["name"].as_str() else { continue };
                if version["served"].as_bool() == Some(false) {
                    continue;
                }
                let api_version = format!("{group}/{name}");
                if self.kinds.read().contains_key(&(api_version.clone(), kind.to_owned())) {
                    continue;
                }
                let status = version["subresources"].get("status").is_some();
                let fields = version["selectableFields"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|f| f["jsonPath"].as_str())
                    .map(|path| (path.trim_start_matches('.').to_owned(), path.replace('.', "/")))
                    .collect();
                if let Err(why) = self.register(&api_version, kind, plural, namespaced, status, fields) {
                    tracing::warn!(crd = %crd["metadata"]["name"], %why, "a CustomResourceDefinition is not served");
                }
            }
        }
    }

    /// Every kind's collection.
    pub fn collections(&self) -> Vec<Collection> {
        self.kinds.read().values().map(|k| k.collection.clone()).collect()
    }

    /// The cluster's revision (the newest resourceVersion).
    pub fn revision(&self) -> &Revision {
        &self.options.revision
    }
}

impl EmbeddedCluster for MemoryCluster {
    fn collection(&self, api_version: &str, kind: &str) -> Option<Collection> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(kind) = self.kinds.read().get(&key) {
            return Some(kind.collection.clone());
        }
        self.establish_crds();
        self.kinds.read().get(&key).map(|k| k.collection.clone())
    }
}

impl ServedCluster for MemoryCluster {
    fn served(&self) -> Vec<Served> {
        self.establish_crds();
        self.kinds.read().values().map(|k| k.served.clone()).collect()
    }
}

/// The kind of CustomResourceDefinitions.
const CRD_KIND: [&str; 2] = ["apiextensions.k8s.io/v1", "CustomResourceDefinition"];
