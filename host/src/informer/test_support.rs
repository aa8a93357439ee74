//! Helpers shared by the informer's unit tests.

use std::sync::Arc;

use super::object::Object;

/// Runs `test` on a current-thread tokio runtime with paused time, inside a mocked `quanta`
/// clock — the clock the delivery lag is read off, which tokio's paused time does not move:
/// the test moves it with the mock it is given. The listener tasks the test spawns run on
/// this thread, so they read the mock too.
pub(crate) fn with_mock_clock<F: Future>(test: impl FnOnce(Arc<quanta::Mock>) -> F) -> F::Output {
    let (clock, mock) = quanta::Clock::mock();
    quanta::with_clock(&clock, || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime")
            .block_on(test(mock))
    })
}

/// A Pod in `ns` named `name` at resourceVersion `rv`.
pub(crate) fn pod(ns: &str, name: &str, rv: u64) -> Object {
    pod_with_labels(ns, name, rv, &[])
}

/// A Pod with labels.
pub(crate) fn pod_with_labels(ns: &str, name: &str, rv: u64, labels: &[(&str, &str)]) -> Object {
    let labels: serde_json::Map<_, _> = labels.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect();
    Object::from_string(
        serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{ns}-{name}"),
                          "resourceVersion": rv.to_string(), "labels": labels},
        })
        .to_string(),
    )
    .expect("test pod is valid")
}
