//! The cluster a replayed plugin talks to: its reads and writes go to an in-memory cluster
//! built from the recording (so a `get` after a `patch` sees the patch, and conflicts happen
//! as they would), and every write is noted as what it *would* have sent — nothing leaves the
//! process.

use std::sync::Arc;

use async_trait::async_trait;
use parking_lot::Mutex;

use crate::cluster::{ClusterClient, Identity, PatchType, Request, RequestError, Verb};
use crate::embedded::EmbeddedClient;
use crate::informer::Object;
use crate::kube::ResourceDef;

/// A [`ClusterClient`] that applies writes in memory and notes them.
pub(crate) struct DryRun {
    inner: EmbeddedClient,
    writes: Mutex<Vec<String>>,
}

impl std::fmt::Debug for DryRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DryRun").finish_non_exhaustive()
    }
}

impl DryRun {
    /// Writes applied through `inner`.
    pub fn new(inner: EmbeddedClient) -> Arc<Self> {
        Arc::new(Self { inner, writes: Mutex::default() })
    }

    /// The writes noted since the last call.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.writes.lock())
    }
}

fn describe(request: &Request, outcome: &Result<Option<Object>, RequestError>) -> String {
    let verb = match &request.verb {
        Verb::Get => "get",
        Verb::Create => "create",
        Verb::Update => "update",
        Verb::Patch(_) => "patch",
        Verb::Delete(_) => "delete",
    };
    let how = match &request.verb {
        Verb::Patch(PatchType::Merge) => " (merge)",
        Verb::Patch(PatchType::Json) => " (JSON patch)",
        Verb::Patch(PatchType::StrategicMerge) => " (strategic merge)",
        Verb::Patch(PatchType::Apply { .. }) => " (server-side apply)",
        _ => "",
    };
    let status = if request.subresource.is_some() { " status" } else { "" };
    let target = match &request.namespace {
        Some(ns) => format!("{ns}/{}", request.name),
        None => request.name.clone(),
    };
    let body = if request.body.is_empty() { String::new() } else { format!(": {}", request.body) };
    let result = match outcome {
        Ok(_) => String::new(),
        Err(e) => format!(" — would fail: {e}"),
    };
    format!("would {verb}{status} {} {} {target}{how}{body}{result}", request.api_version, request.kind)
}

#[async_trait]
impl ClusterClient for DryRun {
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, RequestError> {
        self.inner.resolve(api_version, kind).await
    }

    async fn execute(&self, request: Request, identity: Option<&Identity>) -> Result<Option<Object>, RequestError> {
        let is_write = !matches!(request.verb, Verb::Get);
        let noted = is_write.then(|| request.clone());
        let outcome = self.inner.execute(request, identity).await;
        if let Some(request) = noted {
            self.writes.lock().push(describe(&request, &outcome));
        }
        outcome
    }
}
