//! The answers to what the embedded cluster leaves out by design: it stores objects and
//! runs plugins, but runs no kubelet, scheduler, controllers or metrics server, so nothing
//! has logs, a shell or ports, and nothing measures usage. Those requests get a `Status`
//! that says so in words (kubectl prints its message), not a bare 404.

use axum::response::Response;

use super::paths::Unserved;
use super::status::status_failure;

/// The answer to a request for `what`.
pub(super) fn unserved(what: &Unserved) -> Response {
    match what {
        // 400, as kube-apiserver answers the log or exec of a Pod no node runs.
        Unserved::Kubelet(subresource) => status_failure(
            400,
            "BadRequest",
            &format!(
                "{subresource} is not served: the embedded cluster (wink --serve-api) runs no kubelet, so no Pod \
                 runs and nothing has logs, exec, attach, port-forward or proxy; it stores objects and runs plugins"
            ),
        ),
        Unserved::Metrics => status_failure(
            404,
            "NotFound",
            "metrics.k8s.io is not served: the embedded cluster (wink --serve-api) runs no kubelet and no metrics \
             server, so there is no usage to show (kubectl top)",
        ),
    }
}

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use serde_json::json;

    use super::super::test_support::{endpoint, send};

    #[tokio::test]
    async fn what_needs_a_kubelet_is_refused_in_words() {
        let app = endpoint();
        let (status, answer) = send(&app, "GET", "/api/v1/namespaces/shop/pods/web/log", "", None).await;
        assert_eq!((status, &answer["kind"]), (StatusCode::BAD_REQUEST, &json!("Status")));
        assert!(answer["message"].as_str().unwrap().contains("runs no kubelet"), "{answer}");
        let (status, answer) = send(&app, "GET", "/apis/metrics.k8s.io/v1beta1/nodes", "", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert!(answer["message"].as_str().unwrap().contains("no metrics"), "{answer}");
    }
}
