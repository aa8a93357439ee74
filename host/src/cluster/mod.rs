//! Requests to a cluster: what plugins' `cluster` imports are executed by.
//!
//! A [`ClusterClient`] executes one [`Request`] (get, create, update, patch, delete, on the
//! object or its status subresource) and answers with the object the server returned or a
//! typed [`RequestError`]. Two clients exist: the embedded cluster's
//! ([`EmbeddedClient`](crate::embedded::EmbeddedClient): writes applied in memory with the
//! API server's rules) and a real API server's through the kube client ([`KubeClient`],
//! optionally impersonating a service account). Permissions, budgets and timeouts are the plugin layer's business
//! ([`crate::plugin`]); a client only executes.
//!
//! [`EventRecorder`] sends Events through a client, aggregating repeats as client-go's
//! recorder does.

mod error;
mod events;
mod kube_client;
mod request;

pub use error::Cause;
pub use error::RequestError;
pub use events::{EventRecorder, EventSpec, EventType, Regarding};
pub use kube_client::KubeClient;
pub(crate) use request::MAX_BODY_BYTES;
pub use request::{DeleteOptions, Identity, PatchType, Preconditions, PropagationPolicy, Request, Subresource, Verb};

use async_trait::async_trait;

use crate::informer::Object;
use crate::kube::ResourceDef;

/// Executes requests against one cluster.
#[async_trait]
pub trait ClusterClient: Send + Sync + 'static {
    /// What the cluster knows of a kind: its plural resource name, scope and subresources.
    /// `NotFound` when it serves no such kind.
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, RequestError>;

    /// Executes one request, as `identity` when given (impersonation), and returns the
    /// object the server answered with: `None` only for a delete that removed the object.
    async fn execute(&self, request: Request, identity: Option<&Identity>) -> Result<Option<Object>, RequestError>;
}
