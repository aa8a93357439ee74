//! The endpoint over an in-memory cluster, and one request at a time to it, for the tests
//! of this module's files.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

use crate::embedded::{ApiOptions, MemoryCluster, MemorySourceOptions, router};

/// An endpoint over an empty cluster.
pub(crate) fn endpoint() -> axum::Router {
    router(Arc::new(MemoryCluster::new(MemorySourceOptions::default())), ApiOptions::default())
}

/// Sends one request; the status and the JSON body (`Null` when there is none).
pub(crate) async fn send(
    app: &axum::Router,
    method: &str,
    uri: &str,
    content_type: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let headers: &[(&str, &str)] = if body.is_some() { &[("content-type", content_type)] } else { &[] };
    send_with(app, method, uri, headers, body).await
}

/// Sends one request with `headers`; the status and the JSON body (`Null` when none).
pub(crate) async fn send_with(
    app: &axum::Router,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut request = Request::builder().method(method).uri(uri);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let body = body.map_or_else(Body::empty, |b| Body::from(b.to_string()));
    let response = app.clone().oneshot(request.body(body).unwrap()).await.unwrap();
    let status = response.status();
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX).await.unwrap();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}
