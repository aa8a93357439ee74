//! [`KubeClient`]: requests to a real API server through the kube client, optionally as a
//! service account (Kubernetes impersonation: `Impersonate-User` / `Impersonate-Group`), so
//! that the server's own RBAC enforces a tenant's rights too. wink's own account then needs
//! only `impersonate` on the accounts its plugins name.
//!
//! Kinds are resolved once through discovery and remembered; one kube client is kept per
//! identity.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::pinned_kind;
use parking_lot::Mutex;

use super::{
    ClusterClient, DeleteOptions, Identity, PatchType, PropagationPolicy, Request, RequestError, Subresource, Verb,
};
use crate::informer::Object;
use crate::kube::ResourceDef;
use crate::kube::resource::discovered;

/// Resolved kinds: (apiVersion, kind) → the resource as kube-rs's dynamic API takes it, and
/// its definition.
type Kinds = HashMap<(String, String), (ApiResource, ResourceDef)>;

/// A [`ClusterClient`] over a real API server.
#[derive(Clone)]
pub struct KubeClient {
    config: kube::Config,
    client: kube::Client,
    kinds: Arc<Mutex<Kinds>>,
    impersonated: Arc<Mutex<HashMap<Identity, kube::Client>>>,
}

impl std::fmt::Debug for KubeClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KubeClient").field("cluster", &self.config.cluster_url.to_string()).finish_non_exhaustive()
    }
}

fn error(e: kube::Error) -> RequestError {
    match e {
        // The server's Status, read as the embedded cluster's rules write it: one conversion.
        kube::Error::Api(status) => {
            match serde_json::to_value(&*status).and_then(serde_json::from_value::<wink_apiserver::Status>) {
                Ok(status) => status.into(),
                Err(_) => RequestError::from_status(status.code, &status.reason, status.message.clone(), Vec::new()),
            }
        }
        kube::Error::SerdeError(e) => RequestError::BadRequest(format!("cannot decode the answer: {e}")),
        other => RequestError::Unavailable(other.to_string()),
    }
}

/// Characters a name keeps as they are in a URL path: the unreserved ones and those RBAC
/// names use (`system:controller:x`); everything else is percent-encoded.
const PATH_SEGMENT: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~').remove(b':').remove(b'@');

/// `name` as one URL path segment. [`Request::check`] has refused `.`, `..`, `/`
/// and `%`; what is left that a URL would read otherwise (`?`, `#`, spaces) is encoded.
fn path_segment(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, PATH_SEGMENT).to_string()
}

fn bad_json(e: serde_json::Error) -> RequestError {
    RequestError::BadRequest(format!("not valid JSON: {e}"))
}

fn to_object(obj: &DynamicObject) -> Result<Object, RequestError> {
    let json = serde_json::to_string(obj).map_err(|e| RequestError::BadRequest(e.to_string()))?;
    Object::from_string(json).map_err(|e| RequestError::BadRequest(format!("the server's answer: {e}")))
}

impl KubeClient {
    /// A client from a kube configuration (the one the kube source uses).
    pub fn new(config: kube::Config) -> Result<Self, kube::Error> {
        let client = kube::Client::try_from(config.clone())?;
        Ok(Self { config, client, kinds: Arc::default(), impersonated: Arc::default() })
    }

    fn client_for(&self, identity: Option<&Identity>) -> Result<kube::Client, RequestError> {
        let Some(identity) = identity else { return Ok(self.client.clone()) };
        if let Some(client) = self.impersonated.lock().get(identity) {
            return Ok(client.clone());
        }
        let mut config = self.config.clone();
        config.auth_info.impersonate = Some(identity.user.clone());
        // A service account's groups are the API server's to add (it derives them from the
        // name when no `Impersonate-Group` is sent). Naming them would need `impersonate` on
        // `groups` too, which RBAC cannot narrow to those groups: whoever has it may act as
        // any group, `system:masters` included.
        if !identity.is_service_account() {
            config.auth_info.impersonate_groups = Some(identity.groups.clone());
        }
        let client = kube::Client::try_from(config).map_err(|e| RequestError::Unavailable(e.to_string()))?;
        self.impersonated.lock().insert(identity.clone(), client.clone());
        Ok(client)
    }

    async fn kind(&self, api_version: &str, kind: &str) -> Result<(ApiResource, ResourceDef), RequestError> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(found) = self.kinds.lock().get(&key) {
            return Ok(found.clone());
        }
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, caps) = pinned_kind(&self.client, &gvk).await.map_err(|e| match e {
            kube::Error::Discovery(_) => {
                RequestError::NotFound(format!("the server does not serve {api_version} {kind}"))
            }
            other => error(other),
        })?;
        let def = discovered(&resource, &caps);
        let found = (resource, def);
        self.kinds.lock().insert(key, found.clone());
        Ok(found)
    }
}

#[async_trait]
impl ClusterClient for KubeClient {
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, RequestError> {
        Ok(self.kind(api_version, kind).await?.1)
    }

    async fn execute(&self, request: Request, identity: Option<&Identity>) -> Result<Option<Object>, RequestError> {
        request.check()?;
        let (resource, def) = self.kind(&request.api_version, &request.kind).await?;
        let namespaced = def.namespaced;
        let client = self.client_for(identity)?;
        let api: Api<DynamicObject> = match (&request.namespace, namespaced) {
            (Some(ns), true) => Api::namespaced_with(client, ns, &resource),
            (None, true) => {
                return Err(RequestError::BadRequest(format!(
                    "{} {} needs a namespace",
                    request.api_version, request.kind
                )));
            }
            (_, false) => Api::all_with(client, &resource),
        };
        // kube-rs joins the name into the path as it is: encoded, it stays one segment.
        let encoded = path_segment(&request.name);
        let name = encoded.as_str();
        if request.is_apply() && !request.may_create {
            // Without leave to create, an apply must find the object; the server (as the
            // plugin's account) checks `create` itself when impersonating.
            match api.get(name).await.map_err(error) {
                Err(RequestError::NotFound(_)) => return Err(request.apply_may_not_create()),
                other => drop(other?),
            }
        }
        let status = request.subresource == Some(Subresource::Status);
        let pp = PostParams { dry_run: request.dry_run, ..PostParams::default() };
        let answer = match &request.verb {
            Verb::Get => api.get(name).await.map_err(error)?,
            Verb::Create => {
                let obj: DynamicObject = serde_json::from_str(&request.body).map_err(bad_json)?;
                api.create(&pp, &obj).await.map_err(error)?
            }
            Verb::Update if status => {
                let obj: DynamicObject = serde_json::from_str(&request.body).map_err(bad_json)?;
                api.replace_status(name, &pp, &obj).await.map_err(error)?
            }
            Verb::Update => {
                let obj: DynamicObject = serde_json::from_str(&request.body).map_err(bad_json)?;
                api.replace(name, &pp, &obj).await.map_err(error)?
            }
            Verb::Patch(patch_type) => {
                let (patch, mut params) = patch_of(patch_type, &request.body)?;
                params.dry_run = request.dry_run;
                if status {
                    api.patch_status(name, &params, &patch).await.map_err(error)?
                } else {
                    api.patch(name, &params, &patch).await.map_err(error)?
                }
            }
            Verb::Delete(options) => {
                let params = delete_params(options, request.dry_run);
                return match api.delete(name, &params).await.map_err(error)? {
                    either::Either::Left(obj) => {
                        // The object remains (finalizers); one that came back without a
                        // deletionTimestamp was deleted at once and is only its final state.
                        let pending = obj.metadata.deletion_timestamp.is_some()
                            && obj.metadata.finalizers.as_ref().is_some_and(|f| !f.is_empty());
                        if pending { to_object(&obj).map(Some) } else { Ok(None) }
                    }
                    either::Either::Right(_) => Ok(None),
                };
            }
        };
        to_object(&answer).map(Some)
    }
}

/// The kube client's patch, and its parameters, for a request's patch and body.
fn patch_of(patch_type: &PatchType, body: &str) -> Result<(Patch<serde_json::Value>, PatchParams), RequestError> {
    let value = || serde_json::from_str::<serde_json::Value>(body).map_err(bad_json);
    Ok(match patch_type {
        PatchType::Merge => (Patch::Merge(value()?), PatchParams::default()),
        PatchType::StrategicMerge => (Patch::Strategic(value()?), PatchParams::default()),
        PatchType::Json => (Patch::Json(serde_json::from_str(body).map_err(bad_json)?), PatchParams::default()),
        PatchType::Apply { field_manager, force } => {
            let params = PatchParams::apply(field_manager);
            (Patch::Apply(value()?), if *force { params.force() } else { params })
        }
    })
}

/// The kube client's delete parameters for a request's options.
fn delete_params(options: &DeleteOptions, dry_run: bool) -> DeleteParams {
    let p = &options.preconditions;
    DeleteParams {
        dry_run,
        grace_period_seconds: options.grace_period_seconds.map(|s| s.max(0) as u32),
        propagation_policy: options.propagation_policy.map(|p| match p {
            PropagationPolicy::Orphan => kube::api::PropagationPolicy::Orphan,
            PropagationPolicy::Background => kube::api::PropagationPolicy::Background,
            PropagationPolicy::Foreground => kube::api::PropagationPolicy::Foreground,
        }),
        preconditions: (p.uid.is_some() || p.resource_version.is_some())
            .then(|| kube::api::Preconditions { uid: p.uid.clone(), resource_version: p.resource_version.clone() }),
    }
}

#[cfg(test)]
mod tests {
    use super::path_segment;

    #[test]
    fn a_name_stays_one_path_segment_whatever_it_holds() {
        assert_eq!(path_segment("?limit=500"), "%3Flimit%3D500");
        assert_eq!(path_segment("a b#c"), "a%20b%23c");
        assert_eq!(path_segment("system:controller:web-1.x_y~z@q"), "system:controller:web-1.x_y~z@q");
        assert_eq!(path_segment("caf\u{e9}"), "caf%C3%A9");
    }
}
