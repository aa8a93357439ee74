//! [`EmbeddedClient`]: plugins' requests to the embedded cluster (the directory source),
//! applied in memory with the API server's rules.
//!
//! The cluster is a set of [`MemorySource`]s, one per kind, which the informers watching that
//! kind list and watch; a write goes through [`MemorySource::write`], so the rules run under
//! the store's lock, and a change reaches every watching plugin as an event.

use std::sync::Arc;

use async_trait::async_trait;

use super::rules::Outcome;
use crate::cluster::{ClusterClient, Identity, Request, RequestError, Verb};
use crate::embedded::MemorySource;
use crate::informer::{Object, object_key};
use crate::kube::ResourceDef;

/// A kind the embedded cluster serves.
#[derive(Clone, Debug)]
pub struct Collection {
    /// The kind: its resource name, scope, status subresource, whether it is built in.
    pub def: ResourceDef,
    /// Its scale subresource, if it has one.
    pub scale: Option<crate::kube::scale::ScalePaths>,
    /// The fields a `fieldSelector` may name besides `metadata.name` and
    /// `metadata.namespace`, as (label, JSON pointer).
    pub fields: Vec<(String, String)>,
    /// Where its objects live.
    pub source: MemorySource,
}

/// Whether a namespace takes new objects (the API server's NamespaceLifecycle admission).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NamespacePhase {
    /// It exists and takes new objects.
    Active,
    /// It is being deleted: nothing new may be created in it.
    Terminating,
    /// There is no such namespace.
    Missing,
}

/// The namespaces every cluster has from its start.
pub(crate) const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-node-lease", "kube-public", "kube-system"];

/// The in-memory cluster a client writes to.
pub trait EmbeddedCluster: Send + Sync + 'static {
    /// The kind `kind` of `api_version`, if the cluster serves it.
    fn collection(&self, api_version: &str, kind: &str) -> Option<Collection>;

    /// Whether `namespace` takes new objects. By default, a cluster without namespace
    /// lifecycle: every namespace does.
    fn namespace_phase(&self, namespace: &str) -> NamespacePhase {
        let _ = namespace;
        NamespacePhase::Active
    }

    /// Every kind that has a store now, as (apiVersion, kind): where the garbage collector
    /// and the namespace controller look. By default none.
    fn stored_kinds(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// Whether writes through the cluster's client run kube-controller-manager's garbage
    /// collector and namespace controller (see [`controllers`](super::controllers)). By
    /// default not: a cluster of kube-apiserver alone.
    fn runs_controllers(&self) -> bool {
        false
    }
}

/// The phase of the Namespace object `namespace` stored in `cluster`, if any.
pub(crate) fn stored_namespace_phase(cluster: &dyn EmbeddedCluster, namespace: &str) -> Option<NamespacePhase> {
    let stored = cluster.collection("v1", "Namespace")?.source.get(namespace)?;
    Some(if stored.meta().deletion_timestamp.is_some() { NamespacePhase::Terminating } else { NamespacePhase::Active })
}

/// A [`ClusterClient`] over an [`EmbeddedCluster`]. Identities are ignored: the embedded
/// cluster has no accounts (wink's own permission check still applies).
#[derive(Clone)]
pub struct EmbeddedClient {
    cluster: Arc<dyn EmbeddedCluster>,
}

impl std::fmt::Debug for EmbeddedClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EmbeddedClient").finish_non_exhaustive()
    }
}

impl EmbeddedClient {
    /// A client of `cluster`.
    pub fn new(cluster: Arc<dyn EmbeddedCluster>) -> Self {
        Self { cluster }
    }

    /// The cluster written to.
    pub(super) fn cluster(&self) -> &dyn EmbeddedCluster {
        &*self.cluster
    }

    fn collection(&self, api_version: &str, kind: &str) -> Result<Collection, RequestError> {
        self.cluster.collection(api_version, kind).ok_or_else(|| {
            RequestError::NotFound(format!("the server could not find the requested resource ({api_version} {kind})"))
        })
    }
}

#[async_trait]
impl ClusterClient for EmbeddedClient {
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, RequestError> {
        Ok(self.collection(api_version, kind)?.def)
    }

    async fn execute(&self, request: Request, _identity: Option<&Identity>) -> Result<Option<Object>, RequestError> {
        self.execute_now(request).map(Outcome::returned)
    }
}

impl EmbeddedClient {
    /// Executes `request` at once (the embedded cluster never waits), telling a removal apart
    /// from a write: a delete's [`Outcome`] carries the object's final state.
    pub fn execute_now(&self, request: Request) -> Result<Outcome, RequestError> {
        request.check()?;
        let collection = self.collection(&request.api_version, &request.kind)?;
        let namespace = if collection.def.namespaced {
            Some(request.namespace.clone().ok_or_else(|| {
                RequestError::BadRequest(format!("{} {} needs a namespace", request.api_version, request.kind))
            })?)
        } else {
            None
        };
        if let Some(namespace) = &namespace
            && (request.verb == Verb::Create || request.is_apply())
        {
            self.admit_into(namespace)?;
        }
        let (api_version, kind) = (request.api_version.clone(), request.kind.clone());
        let outcome = super::rules::execute(&collection, namespace.as_deref(), request)?;
        if outcome.changed && self.cluster.runs_controllers() {
            super::controllers::after_write(self, &api_version, &kind, &outcome);
        }
        Ok(outcome)
    }
}

impl EmbeddedClient {
    /// The API server's NamespaceLifecycle admission: nothing is created in a namespace that
    /// does not exist or is being deleted. (An apply that finds its object only updates it,
    /// but is checked as a create: the object of a missing namespace cannot exist either.)
    fn admit_into(&self, namespace: &str) -> Result<(), RequestError> {
        match self.cluster.namespace_phase(namespace) {
            NamespacePhase::Active => Ok(()),
            NamespacePhase::Terminating => Err(RequestError::Forbidden(format!(
                "unable to create new content in namespace {namespace} because it is being terminated"
            ))),
            NamespacePhase::Missing => Err(RequestError::NotFound(format!("namespaces \"{namespace}\" not found"))),
        }
    }
}

/// The key of an object of `collection`.
pub(super) fn key_of(namespace: Option<&str>, name: &str) -> String {
    object_key(namespace, name)
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
