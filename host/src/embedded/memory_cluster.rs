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
use crate::cluster::ResourceInfo;
use crate::embedded::{Collection, EmbeddedCluster};
use crate::kube::fields::built_in_fields;
use crate::kube::scope::{Scope, group_of};

/// Built-in kinds with a status subresource (group, kind).
const WITH_STATUS: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
    ("", "Pod"),
    ("", "ReplicationController"),
    ("", "ResourceQuota"),
    ("", "Service"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("apps", "DaemonSet"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("batch", "CronJob"),
    ("batch", "Job"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("policy", "PodDisruptionBudget"),
    ("resource.k8s.io", "ResourceClaim"),
    ("storage.k8s.io", "VolumeAttachment"),
];

/// What the API server knows of a built-in kind: its resource name and scope, and whether it
/// has a status subresource. `None` for kinds that are not built in.
pub(crate) fn built_in_kind(api_version: &str, kind: &str) -> Option<(ResourceInfo, bool)> {
    // A built-in group serves its kinds at its own versions only: `v2` ConfigMaps are no kind.
    if crate::kube::versions::unserved_version(api_version).is_some() {
        return None;
    }
    let scope = crate::kube::scope::built_in(api_version, kind)?;
    let group = group_of(api_version);
    let (g, v) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::core::GroupVersionKind::gvk(g, v, kind);
    let plural = kube::core::ApiResource::from_gvk(&gvk).plural;
    let info = ResourceInfo { group: group.to_owned(), plural, namespaced: scope == Scope::Namespaced };
    Some((info, WITH_STATUS.contains(&(group, kind))))
}

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
                if let Some((info, status)) = built_in_kind(&api_version, kind) {
                    let fields = built_in_fields(group, kind);
                    this.insert(&api_version, kind, info, status, true, fields);
                }
            }
        }
        this
    }

    fn insert(
        &self,
        api_version: &str,
        kind: &str,
        info: ResourceInfo,
        status: bool,
        built_in: bool,
        fields: Vec<(String, String)>,
    ) {
        let served = Served {
            api_version: api_version.to_owned(),
            kind: kind.to_owned(),
            plural: info.plural.clone(),
            namespaced: info.namespaced,
            status,
            scale: built_in && crate::kube::scale::built_in(&info.group, kind).is_some(),
        };
        let source = self.source(api_version, kind);
        let scale = if built_in { crate::kube::scale::built_in(&info.group, kind) } else { None };
        let collection = Collection { info, status_subresource: status, built_in, scale, fields, source };
        self.kinds.write().insert((api_version.to_owned(), kind.to_owned()), Kind { served, collection });
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
            && let Some((info, status)) = built_in_kind(stored_version, stored_kind)
        {
            let fields = built_in_fields(&info.group, stored_kind);
            self.insert(stored_version, stored_kind, info, status, true, fields);
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
        let taken = self
            .kinds
            .read()
            .values()
            .any(|k| k.served.api_version == api_version && (k.served.kind == kind || k.served.plural == plural));
        if taken {
            return Err(format!("{api_version} {kind} ({plural}) is already served"));
        }
        let info = ResourceInfo { group: group_of(api_version).to_owned(), plural: plural.to_owned(), namespaced };
        self.insert(api_version, kind, info, status, false, fields);
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
