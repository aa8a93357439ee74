//! client-go's informer options on wink's informer: `SetTransform`, `SetWatchErrorHandler`
//! (only before start), and a registration that reports when it is stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::handler::handler_fn;
use super::list_watch::SourceError;
use super::object::Object;
use super::shared_informer::{InformerConfig, InformerError, SharedIndexInformer};
use crate::embedded::MemorySource;
use crate::errors::Chain;

fn informer(src: &MemorySource) -> SharedIndexInformer {
    let mut config = InformerConfig { name: "v1/ConfigMap".into(), ..InformerConfig::default() };
    config.reflector.backoff.jitter = 0.0;
    SharedIndexInformer::new(Arc::new(src.clone()), config).unwrap()
}

fn source() -> MemorySource {
    let src = MemorySource::default();
    for name in ["one", "two"] {
        src.apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "a", "name": name}}))
            .unwrap();
    }
    src
}

fn start(inf: &SharedIndexInformer) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let join = tokio::spawn(inf.clone().run(cancel.clone()));
    (cancel, join)
}

/// client-go's `sharedIndexInformer.SetTransform`: every object goes through the transform
/// before it is cached; once the informer has started, setting one fails.
#[tokio::test(start_paused = true)]
async fn set_transform_applies_to_every_object_and_is_refused_after_start() {
    let src = source();
    let inf = informer(&src);
    let seen = Arc::new(AtomicUsize::new(0));
    let counted = seen.clone();
    inf.set_transform(Arc::new(move |obj: Object| {
        counted.fetch_add(1, Ordering::SeqCst);
        obj
    }))
    .unwrap();
    let _run = start(&inf);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(inf.has_synced());
    assert_eq!(seen.load(Ordering::SeqCst), 2, "both listed objects were transformed");
    let again = inf.set_transform(Arc::new(|obj| obj));
    assert!(matches!(again, Err(InformerError::AlreadyStarted(_))), "{again:?}");
}

/// client-go's `sharedIndexInformer.SetWatchErrorHandler`: the handler is called with each
/// list or watch error; once the informer has started, setting one fails.
#[tokio::test(start_paused = true)]
async fn set_watch_error_handler_sees_list_errors_and_is_refused_after_start() {
    let src = source();
    src.fail_next_list(SourceError::Transport("connection reset".into()));
    let inf = informer(&src);
    let errors = Arc::new(Mutex::new(Vec::new()));
    let recorded = errors.clone();
    inf.set_watch_error_handler(Arc::new(move |err: &SourceError| recorded.lock().push(Chain(err).to_string())))
        .unwrap();
    let _run = start(&inf);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(inf.has_synced(), "the list is retried after backoff");
    assert_eq!(*errors.lock(), ["transport error: connection reset"]);
    let again = inf.set_watch_error_handler(Arc::new(|_: &SourceError| {}));
    assert!(matches!(again, Err(InformerError::AlreadyStarted(_))), "{again:?}");
}

/// A registration is stopped once its handler is removed, or once its informer stops
/// (client-go's `IsStopped`, reported per registration).
#[tokio::test(start_paused = true)]
async fn a_registration_is_stopped_when_removed_or_when_its_informer_stops() {
    let src = source();
    let inf = informer(&src);
    let removed = inf.add_event_handler(handler_fn(|_| crate::informer::DONE)).unwrap();
    let kept = inf.add_event_handler(handler_fn(|_| crate::informer::DONE)).unwrap();
    let (cancel, join) = start(&inf);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!removed.is_stopped() && !kept.is_stopped());
    inf.remove_event_handler(&removed).unwrap();
    assert!(removed.is_stopped());
    assert!(!kept.is_stopped(), "the other registration still runs");
    cancel.cancel();
    join.await.unwrap();
    assert!(inf.is_stopped() && kept.is_stopped());
}
