//! No panic stops delivery: a panicking source, transform, index function or handler is
//! survived, counted, and the part it hit restarts, with paused time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::handler::{EntryResults, EventHandler, HandlerResult, Notification, handler_fn};
use super::list_watch::{ListParams, ListerWatcher, ObjectList, SourceError, WatchParams, WatchStream};
use super::object::Object;
use super::shared_informer::{InformerConfig, SharedIndexInformer};
use crate::embedded::MemorySource;

fn cm(name: &str, data: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": "a", "name": name}, "data": {"v": data}})
}

/// A handler's view of the world: key → resourceVersion, from what it was told.
#[derive(Clone, Default)]
struct View(Arc<Mutex<BTreeMap<String, String>>>);

impl View {
    fn apply(&self, n: &Notification) {
        let mut view = self.0.lock();
        match n {
            Notification::Add { obj, .. } | Notification::Update { new: obj, .. } => {
                view.insert(obj.key().to_owned(), obj.resource_version().to_owned());
            }
            Notification::Delete { obj, .. } => {
                view.remove(obj.key());
            }
        }
    }

    fn get(&self) -> BTreeMap<String, String> {
        self.0.lock().clone()
    }

    fn handler(&self) -> Arc<dyn EventHandler> {
        let view = self.clone();
        handler_fn(move |n| {
            view.apply(&n);
            crate::informer::DONE
        })
    }
}

fn source_view(src: &MemorySource) -> BTreeMap<String, String> {
    src.objects().into_iter().map(|o| (o.key().to_owned(), o.resource_version().to_owned())).collect()
}

fn config() -> InformerConfig {
    let mut config = InformerConfig { name: "v1/ConfigMap".into(), ..InformerConfig::default() };
    config.reflector.backoff.jitter = 0.0;
    config
}

fn start(inf: &SharedIndexInformer) -> CancellationToken {
    let cancel = CancellationToken::new();
    tokio::spawn(inf.clone().run(cancel.clone()));
    cancel
}

/// Long enough, in paused time, for backoff (800 ms at first) and retries to pass.
async fn pass_time() {
    tokio::time::sleep(Duration::from_secs(5)).await;
}

/// A source whose first watch stream panics at its first event.
struct PanickingWatch {
    inner: MemorySource,
    armed: Arc<AtomicBool>,
}

#[async_trait]
impl ListerWatcher for PanickingWatch {
    async fn list(&self, params: &ListParams) -> Result<ObjectList, SourceError> {
        self.inner.list(params).await
    }

    async fn watch(&self, params: &WatchParams) -> Result<WatchStream, SourceError> {
        let stream = self.inner.watch(params).await?;
        let armed = self.armed.clone();
        Ok(stream
            .map(move |event| {
                assert!(!armed.swap(false, Ordering::SeqCst), "the source's decoder hit a bug");
                event
            })
            .boxed())
    }
}

/// client-go's `ListAndWatch` returning an error (here: a panic in the source, which
/// client-go's `HandleCrash` would turn into a crash) makes `Reflector.Run` list again after
/// backoff; wink catches the panic at the reflector and does the same.
#[tokio::test(start_paused = true)]
async fn a_source_that_panics_is_relisted_and_every_handler_keeps_receiving() {
    let src = MemorySource::default();
    src.apply(cm("x", "1")).unwrap();
    let lw = PanickingWatch { inner: src.clone(), armed: Arc::new(AtomicBool::new(true)) };
    let inf = SharedIndexInformer::new(Arc::new(lw), config()).unwrap();
    let (first, second) = (View::default(), View::default());
    inf.add_event_handler(first.handler()).unwrap();
    inf.add_event_handler(second.handler()).unwrap();
    let _cancel = start(&inf);
    pass_time().await;
    src.apply(cm("x", "2")).unwrap(); // the watch panics on this event
    pass_time().await;
    assert_eq!(inf.panics(), 1);
    assert_eq!(src.list_requests().len(), 2, "the panic relists");
    src.apply(cm("y", "1")).unwrap();
    pass_time().await;
    assert_eq!(first.get(), source_view(&src));
    assert_eq!(second.get(), source_view(&src));
}

/// client-go's `processorListener.run` is wrapped in `HandleCrash`, which crashes the
/// process on a handler panic; wink recovers instead, as controller-runtime's `RecoverPanic`
/// does: the panicking key is retried with backoff, the listener keeps delivering later
/// events, and neighbours are untouched.
#[tokio::test(start_paused = true)]
async fn a_native_handler_that_panics_keeps_receiving_and_its_neighbour_is_untouched() {
    let src = MemorySource::default();
    src.apply(cm("bad", "1")).unwrap();
    src.apply(cm("good", "1")).unwrap();
    let inf = SharedIndexInformer::new(Arc::new(src.clone()), config()).unwrap();
    let (panicky, neighbour) = (View::default(), View::default());
    let panics_left = Arc::new(AtomicU32::new(1));
    let handler = {
        let (view, panics_left) = (panicky.clone(), panics_left.clone());
        handler_fn(move |n| {
            if n.object().name() == "bad" && panics_left.fetch_sub(1, Ordering::SeqCst) > 0 {
                panic!("index out of bounds in the handler");
            }
            view.apply(&n);
            crate::informer::DONE
        })
    };
    let reg = inf.add_event_handler(handler).unwrap();
    inf.add_event_handler(neighbour.handler()).unwrap();
    let _cancel = start(&inf);
    pass_time().await;
    src.apply(cm("later", "1")).unwrap();
    pass_time().await;
    assert_eq!(reg.listener().stats().panics.load(Ordering::Relaxed), 1);
    assert_eq!(panicky.get(), source_view(&src), "the panicking key was retried, later events delivered");
    assert_eq!(neighbour.get(), source_view(&src));
}

/// A handler's own `deliver_batch` that panics: the batch's first entry is retried with
/// backoff, the others are queued again unstarted, and nothing is lost.
#[tokio::test(start_paused = true)]
async fn a_batch_that_panics_as_a_whole_is_delivered_again() {
    struct PanicsOnce {
        view: View,
        armed: AtomicBool,
    }
    #[async_trait]
    impl EventHandler for PanicsOnce {
        async fn on_add(&self, obj: &Object, initial: bool) -> HandlerResult {
            self.view.apply(&Notification::Add { obj: obj.clone(), initial });
            crate::informer::DONE
        }
        async fn deliver_batch(&self, batch: &[Vec<Notification>]) -> Vec<EntryResults> {
            assert!(!self.armed.swap(false, Ordering::SeqCst), "a bug in the batch path");
            let mut out = Vec::new();
            for entry in batch {
                let mut results = Vec::new();
                for n in entry {
                    results.push(n.deliver(self).await);
                }
                out.push(results);
            }
            out
        }
    }
    let src = MemorySource::default();
    for name in ["a", "b", "c"] {
        src.apply(cm(name, "1")).unwrap();
    }
    let inf = SharedIndexInformer::new(Arc::new(src.clone()), config()).unwrap();
    let handler = Arc::new(PanicsOnce { view: View::default(), armed: AtomicBool::new(true) });
    let reg = inf.add_event_handler(handler.clone()).unwrap();
    let _cancel = start(&inf);
    pass_time().await;
    assert_eq!(reg.listener().stats().panics.load(Ordering::Relaxed), 1);
    assert_eq!(handler.view.get(), source_view(&src));
}

/// A transform (client-go's `SetTransform`) or an index function that panics on one object
/// does not stop the others: the transform keeps that object as received, and the key
/// whose indexing panicked is skipped while the informer goes on.
#[tokio::test(start_paused = true)]
async fn a_panic_on_one_objects_path_does_not_stop_the_others() {
    let src = MemorySource::default();
    for name in ["before", "odd", "after"] {
        src.apply(cm(name, "1")).unwrap();
    }
    let inf = SharedIndexInformer::new(Arc::new(src.clone()), config()).unwrap();
    inf.set_transform(Arc::new(|obj: Object| {
        assert_ne!(obj.name(), "odd", "the transform cannot handle this object");
        obj
    }))
    .unwrap();
    inf.add_indexers(vec![(
        "by-data".into(),
        Arc::new(|obj: &Object| {
            assert_ne!(obj.name(), "poison", "the index function cannot handle this object");
            vec![obj.name().to_owned()]
        }),
    )])
    .unwrap();
    let view = View::default();
    inf.add_event_handler(view.handler()).unwrap();
    let _cancel = start(&inf);
    pass_time().await;
    assert_eq!(view.get(), source_view(&src), "the odd object kept as received, with the others");
    let after_transform = inf.panics();
    assert!(after_transform >= 1, "the transform's panic is counted");
    src.apply(cm("poison", "1")).unwrap();
    src.apply(cm("fine", "1")).unwrap();
    pass_time().await;
    assert_eq!(inf.panics(), after_transform + 1, "the index function's panic is counted");
    let seen = view.get();
    assert!(seen.contains_key("a/fine"), "delivery goes on after the skipped key: {seen:?}");
    assert!(!seen.contains_key("a/poison"), "the key whose processing panicked is skipped: {seen:?}");
}
