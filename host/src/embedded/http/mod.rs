//! `wink run --serve-api ADDR`: the embedded cluster over the Kubernetes API, so that
//! `kubectl --server http://ADDR get pods`, `kubectl apply -f`, `kubectl delete` work
//! against it and plugins react.
//!
//! - [`discovery`]: `/version`, `/api`, `/apis`, `/apis/GROUP`, `/api/v1`,
//!   `/apis/GROUP/VERSION`: every kind the cluster serves (the built-in ones at each stable
//!   version of their group, the preferred first, the custom
//!   resources of the folder's CustomResourceDefinitions and of those created through this
//!   API, and whatever the files hold).
//! - [`handlers`]: routing, GET, and the writes — POST, PUT, PATCH (merge, JSON, strategic merge, apply), DELETE —
//!   through [`EmbeddedClient`](crate::embedded::EmbeddedClient): the same rules plugins'
//!   writes follow. Errors are `Status` objects with the API server's codes and reasons.
//! - [`collection`]: DELETE of a collection (`deletecollection`), with the selection and
//!   options of a LIST and a DELETE.
//! - [`read`]: LIST (paged over a snapshot, at a resourceVersion, `resourceVersionMatch`) and
//!   WATCH (a chunked stream of JSON lines, bookmarks, streaming lists), with the
//!   [`selection`]s and [`query`] rules of the API server, over the stores' semantics
//!   ([`MemorySource`](crate::embedded::MemorySource)).
//!
//! - [`scale`]: the `scale` subresource of Deployments, ReplicaSets, StatefulSets,
//!   ReplicationControllers and custom resources that declare one (`kubectl scale`).
//! - [`table`]: server-side printing, a GET or LIST answered as a `Table` of the kind's
//!   columns (`kubectl get`, `get -o wide`).
//! - [`reviews`]: SelfSubjectAccessReview, SelfSubjectRulesReview, SelfSubjectReview and
//!   TokenReview answered from the requester's identity and the cluster's RBAC, not stored.
//! - [`unserved`]: what needs a kubelet or a metrics server (`pods/log`, `exec`, `attach`,
//!   `portforward`, `proxy`, `metrics.k8s.io`) is answered with a Status saying so.
//!
//! - [`openapi`]: `/openapi/v2` (JSON and gnostic's protobuf) and `/openapi/v3`: the
//!   built-in kinds' upstream schemas and the custom resources', so kubectl validates
//!   manifests, explains fields and reads patch strategies.
//!
//! `/healthz`, `/livez` and `/readyz` answer `ok`. The tests' local API server is this router
//! with fault injection layered on top.
//!
//! - [`negotiation`] and [`protobuf`]: bodies in protobuf (`application/vnd.kubernetes.protobuf`)
//!   as well as JSON, as kube-apiserver reads and writes them for built-in kinds: a protobuf
//!   request body is converted to JSON where it enters, an answer to protobuf where it leaves
//!   when the client prefers it (objects, lists, Status, watch streams).
//!
//! - [`rbac`]: a request that impersonates a user (`Impersonate-User`, `-Group`, as the kube
//!   client does for a plugin's service account) is authorized by the Roles, ClusterRoles
//!   and bindings in the cluster, and refused with 403 as the API server would.
//!
//! Plain HTTP on the address given, no authentication: bind it to loopback (as
//! `kubectl proxy` does) unless the network around it is trusted.

mod collection;
mod delete_options;
mod discovery;
mod handlers;
mod media;
mod negotiation;
mod openapi;
mod options;
mod paths;
mod protobuf;
mod query;
pub(crate) mod rbac;
mod read;
mod reviews;
mod scale;
mod selection;
mod status;
mod table;
#[cfg(test)]
mod test_support;
mod unserved;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::embedded::EmbeddedCluster;

pub use discovery::Served;
pub use read::error_frame;

/// What the endpoint serves: an embedded cluster, and the kinds it lists in discovery.
pub trait ServedCluster: EmbeddedCluster {
    /// Every kind served, for discovery.
    fn served(&self) -> Vec<Served>;
}

/// How the endpoint answers.
#[derive(Clone, Debug)]
pub struct ApiOptions {
    /// How long a watch without `timeoutSeconds` lasts (the API server picks 30 to 60
    /// minutes). Default 30 minutes.
    pub default_watch_timeout: Duration,
}

impl Default for ApiOptions {
    fn default() -> Self {
        Self { default_watch_timeout: Duration::from_secs(1800) }
    }
}

/// The Kubernetes API over `cluster`, as an axum router (to serve, or to wrap in layers).
pub fn router(cluster: Arc<dyn ServedCluster>, options: ApiOptions) -> axum::Router {
    // The handler reads bodies with the API server's own limit (3 MiB), answering a Status.
    axum::Router::new()
        .fallback(handlers::handle)
        .layer(axum::extract::DefaultBodyLimit::disable())
        .with_state(handlers::State::new(cluster, options))
}

/// Serves `cluster` on `addr` until `cancel` fires; returns the bound address.
pub async fn serve_api(
    addr: SocketAddr,
    cluster: Arc<dyn ServedCluster>,
    cancel: CancellationToken,
) -> std::io::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let app = router(cluster, ApiOptions::default());
    let task = tokio::spawn(async move {
        let shutdown = async move { cancel.cancelled().await };
        if let Err(err) = axum::serve(listener, app).with_graceful_shutdown(shutdown).await {
            tracing::error!(error = %err, "the Kubernetes API endpoint stopped");
        }
    });
    Ok((bound, task))
}
