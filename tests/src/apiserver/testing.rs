//! Helpers for tests that run informers against the local API server in real time: polling
//! for a condition with a generous deadline (never asserting on timings), informer settings
//! with short backoffs, and a native handler that records what it was told (as the
//! [`Seen`] events of [`crate::recorder`], which the event-recorder plugin's lines parse to).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use wink::informer::{
    BackoffConfig, EventHandler, HandlerResult, InformerConfig, Notification, ReflectorConfig, SharedIndexInformer,
    handler_fn,
};
use wink::source::KubeSource;

use super::ApiServer;
use crate::recorder::Seen;

/// With `RUST_LOG` set, prints logs (filtered by it) to the test's output; call at the start
/// of a test. Does nothing when another subscriber is already installed.
pub fn print_logs() {
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
}

/// Reflector backoff for tests: 50 ms doubling to 1 s.
pub fn fast_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_millis(50),
        factor: 2.0,
        max: Duration::from_secs(1),
        jitter: 0.2,
        reset_after: Duration::from_secs(5),
    }
}

/// Informer settings for tests: short backoffs, pages of `page_size`.
pub fn informer_config(name: &str, page_size: Option<u32>) -> InformerConfig {
    InformerConfig {
        name: name.to_owned(),
        reflector: ReflectorConfig { backoff: fast_backoff(), page_size, ..ReflectorConfig::default() },
        ..InformerConfig::default()
    }
}

/// A kube source configured by the server's kubeconfig.
pub async fn kube_source(server: &ApiServer) -> KubeSource {
    KubeSource::from_kubeconfig(server.kubeconfig(), None).await.expect("the generated kubeconfig is usable")
}

/// Key → resourceVersion of every object in an informer's cache.
pub fn cache_versions(informer: &SharedIndexInformer) -> BTreeMap<String, String> {
    informer.store().list().into_iter().map(|o| (o.key().to_owned(), o.resource_version().to_owned())).collect()
}

#[derive(Default)]
struct Recorded {
    seen: Vec<Seen>,
    view: BTreeMap<String, String>,
}

/// A native handler recording every notification and the view they add up to (key →
/// resourceVersion, by [`Seen::apply_to`]). Clones share the record.
#[derive(Clone, Default)]
pub struct Recorder {
    inner: Arc<Mutex<Recorded>>,
}

impl Recorder {
    /// Records `notification`.
    pub fn record(&self, notification: &Notification) {
        let seen = Seen::from(notification);
        let mut inner = self.inner.lock();
        seen.clone().apply_to(&mut inner.view);
        inner.seen.push(seen);
    }

    /// A handler that records into this recorder.
    pub fn handler(&self) -> Arc<dyn EventHandler> {
        let recorder = self.clone();
        handler_fn(move |n| -> HandlerResult {
            recorder.record(&n);
            wink::informer::DONE
        })
    }

    /// Every notification so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.inner.lock().seen.clone()
    }

    /// The notifications about one key.
    pub fn seen_for(&self, key: &str) -> Vec<Seen> {
        self.inner.lock().seen.iter().filter(|s| s.key() == key).cloned().collect()
    }

    /// Key → resourceVersion, rebuilt from the notifications.
    pub fn view(&self) -> BTreeMap<String, String> {
        self.inner.lock().view.clone()
    }
}
