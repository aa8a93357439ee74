//! `/openapi/v2` and `/openapi/v3`: the OpenAPI documents kubectl validates manifests
//! against (`apply -f`, `create -f` without `--validate=false`), explains fields from
//! (`kubectl explain`), reads patch strategies from (`apply`'s strategic merge) and checks
//! query-parameter support in (`dryRun` before 1.26, `fieldValidation` since 1.25).
//!
//! - [`upstream`]: the built-in kinds' documents, vendored from the Kubernetes release the
//!   tests' kube-apiserver pins;
//! - [`crd`]: the custom resources' schemas, from the CustomResourceDefinitions stored in
//!   the cluster (the folder's and those created through the API);
//! - [`v3`]: the root (a URL per group-version) and one document per group-version;
//! - [`v2`]: one document, as JSON or as gnostic's protobuf ([`gnostic`]), which is all
//!   client-go's `OpenAPISchema()` reads.
//!
//! The PATCH operations list no `fieldValidation` parameter: the embedded cluster does not
//! refuse unknown fields, and kubectl validates on its side only when the server does not
//! say it will.

mod crd;
mod gnostic;
mod upstream;
mod v2;
mod v3;

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::ServedCluster;
use super::media::accepted;
use super::status::{failure, json_response};
use crate::cluster::RequestError;

pub(crate) use crd::CustomKind;

/// The media type of gnostic's OpenAPI v2 protobuf message, as kube-openapi answers it.
pub(crate) const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// The name client-go before 1.27 asks for it by; Go's `mime` cannot parse it, so it is
/// answered as [`V2_PROTOBUF`].
pub(crate) const V2_PROTOBUF_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The forms `/openapi/v2` is served in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum V2Form {
    Json,
    Protobuf,
}

/// The form of `/openapi/v2` a request's `Accept` takes first, as kube-openapi's handler
/// picks it (no `Accept` is `*/*`, JSON); `None` when it takes neither (406).
fn v2_form(headers: &HeaderMap) -> Option<V2Form> {
    let ranges = accepted(headers);
    if ranges.is_empty() && headers.get(header::ACCEPT).is_none() {
        return Some(V2Form::Json);
    }
    let forms = [
        ("application/json", V2Form::Json),
        (V2_PROTOBUF_DEPRECATED, V2Form::Protobuf),
        (V2_PROTOBUF, V2Form::Protobuf),
    ];
    ranges.iter().find_map(|range| forms.iter().find(|(mime, _)| range.admits(mime)).map(|(_, form)| *form))
}

/// Why an OpenAPI document could not be answered: the vendored data or descriptors are
/// broken (a build that shipped them so is a bug).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A vendored specification did not decompress.
    #[error("decompressing the vendored {what}")]
    Decompress {
        /// Which file.
        what: &'static str,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A vendored specification is not what it should be.
    #[error("the vendored OpenAPI specification: {0}")]
    Vendored(String),
    /// gnostic's descriptors did not load.
    #[error("the openapi.v2 descriptors: {0}")]
    Descriptors(String),
}

/// The result of this module's functions.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Which OpenAPI document a path asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum OpenApi {
    /// `/openapi/v2`.
    V2,
    /// `/openapi/v3`: the URLs of the group-versions' documents.
    V3Root,
    /// `/openapi/v3/<path>`: one group-version's (`api/v1`, `apis/apps/v1`).
    V3(String),
}

/// The CustomResourceDefinitions stored in `cluster`, and the kinds they define.
fn custom_kinds(cluster: &dyn ServedCluster) -> Vec<CustomKind> {
    let Some(collection) = cluster.collection("apiextensions.k8s.io/v1", "CustomResourceDefinition") else {
        return Vec::new();
    };
    let crds: Vec<Value> = collection.source.objects().iter().filter_map(|crd| crd.to_value().ok()).collect();
    crd::custom_kinds(&crds)
}

/// Answers a request for the OpenAPI document `which`.
pub fn answer(cluster: &dyn ServedCluster, which: &OpenApi, headers: &HeaderMap) -> Response {
    let customs = custom_kinds(cluster);
    let answered = match which {
        OpenApi::V2 => match v2_form(headers) {
            Some(V2Form::Protobuf) => v2::protobuf(&customs)
                .map(|bytes| (StatusCode::OK, [(header::CONTENT_TYPE, V2_PROTOBUF)], bytes).into_response()),
            Some(V2Form::Json) => v2::json(&customs).map(|document| json_response(StatusCode::OK, &document)),
            None => return StatusCode::NOT_ACCEPTABLE.into_response(),
        },
        OpenApi::V3Root => {
            let mut api_versions: Vec<String> = cluster.served().into_iter().map(|s| s.def.api_version()).collect();
            api_versions.sort();
            api_versions.dedup();
            v3::root(&api_versions, &customs).map(|root| json_response(StatusCode::OK, &root))
        }
        OpenApi::V3(path) => match v3::document(path, &customs) {
            Ok(Some(document)) => Ok((
                StatusCode::OK,
                [
                    (header::CONTENT_TYPE, "application/json".to_owned()),
                    (header::ETAG, format!("\"{}\"", document.hash)),
                ],
                document.text,
            )
                .into_response()),
            Ok(None) => {
                let message = format!("the server could not find the requested resource (/openapi/v3/{path})");
                return failure(&RequestError::NotFound(message));
            }
            Err(e) => Err(e),
        },
    };
    answered.unwrap_or_else(|e| {
        tracing::error!(error = %e, "an OpenAPI document could not be built");
        failure(&RequestError::Unavailable(e.to_string()))
    })
}

#[cfg(test)]
#[path = "openapi_tests.rs"]
mod tests;
