//! Property: whatever sequence of changes, disconnects, compactions, failures and resyncs
//! the source goes through, once it is quiet the informer's cache equals the source and
//! every handler's view (rebuilt from the adds, updates and deletes it received) equals the
//! cache, filtered by what the handler asked for.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use proptest::prelude::*;
use serde_json::json;
use tokio_util::sync::CancellationToken;
use wink::embedded::{MemorySource, MemorySourceOptions};
use wink::informer::{
    HandlerError, InformerConfig, ListenerOptions, Notification, SharedIndexInformer, SourceError, handler_fn,
};

#[derive(Clone, Debug)]
enum Op {
    Apply { ns: u8, name: u8 },
    Delete { ns: u8, name: u8 },
    Compact,
    Disconnect,
    Bookmark,
    FailList,
    FailWatch,
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..2u8, 0..6u8).prop_map(|(ns, name)| Op::Apply { ns, name }),
        3 => (0..2u8, 0..6u8).prop_map(|(ns, name)| Op::Delete { ns, name }),
        1 => Just(Op::Compact),
        1 => Just(Op::Disconnect),
        1 => Just(Op::Bookmark),
        1 => Just(Op::FailList),
        1 => Just(Op::FailWatch),
        3 => (0..3000u16).prop_map(Op::Advance),
    ]
}

type View = Arc<Mutex<BTreeMap<String, String>>>;

fn recorder(view: View) -> Arc<dyn wink::informer::EventHandler> {
    handler_fn(move |n| {
        let mut view = view.lock();
        match n {
            Notification::Add { obj, .. } | Notification::Update { new: obj, .. } => {
                view.insert(obj.key().to_owned(), obj.resource_version().to_owned());
            }
            Notification::Delete { obj, .. } => {
                view.remove(obj.key());
            }
        }
        wink::informer::DONE
    })
}

fn run_case(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
    rt.block_on(async move {
        let src = MemorySource::new(MemorySourceOptions { history_limit: 8, ..MemorySourceOptions::default() });
        let informer = SharedIndexInformer::new(Arc::new(src.clone()), InformerConfig::default()).unwrap();
        let all: View = View::default();
        let resyncing: View = View::default();
        let ns0: View = View::default();
        let flaky: View = View::default();
        informer.add_event_handler(recorder(all.clone())).unwrap();
        informer
            .add_event_handler_with_options(
                recorder(resyncing.clone()),
                ListenerOptions::new("resync", Duration::from_secs(1)),
            )
            .unwrap();
        let mut only_ns0 = ListenerOptions::new("ns0", Duration::ZERO);
        only_ns0.namespaces = Some(["ns0".to_owned()].into());
        informer.add_event_handler_with_options(recorder(ns0.clone()), only_ns0).unwrap();
        // Fails every third call with `retry`.
        let calls = AtomicU64::new(0);
        let inner = recorder(flaky.clone());
        informer
            .add_event_handler(handler_fn(move |n| {
                if calls.fetch_add(1, Ordering::SeqCst) % 3 == 2 {
                    return Err(HandlerError::Retry("flaky".into()));
                }
                let inner = inner.clone();
                futures::executor::block_on(n.deliver(inner.as_ref()))
            }))
            .unwrap();
        let cancel = CancellationToken::new();
        tokio::spawn(informer.clone().run(cancel.clone()));
        let mut version = 0u64;
        // Every injected failure can add up to one capped backoff (30 s) before recovery.
        let faults =
            ops.iter().filter(|op| matches!(op, Op::FailList | Op::FailWatch | Op::Compact | Op::Disconnect)).count();
        for op in ops {
            match op {
                Op::Apply { ns, name } => {
                    version += 1;
                    src.apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"namespace": format!("ns{ns}"), "name": format!("c{name}")},
                        "data": {"v": version.to_string()}}))
                        .unwrap();
                }
                Op::Delete { ns, name } => {
                    src.delete(&format!("ns{ns}/c{name}"));
                }
                Op::Compact => src.compact(),
                Op::Disconnect => src.disconnect_watches(),
                Op::Bookmark => src.bookmark(),
                Op::FailList => src.fail_next_list(SourceError::Transport("injected".into())),
                Op::FailWatch => src.fail_next_watch(SourceError::Transport("injected".into())),
                Op::Advance(ms) => tokio::time::sleep(Duration::from_millis(u64::from(ms))).await,
            }
            tokio::task::yield_now().await;
        }
        // Quiet: let backoffs, retries and resyncs play out.
        tokio::time::sleep(Duration::from_secs(120 + 30 * faults as u64)).await;
        let truth: BTreeMap<String, String> =
            src.objects().into_iter().map(|o| (o.key().to_owned(), o.resource_version().to_owned())).collect();
        let cache: BTreeMap<String, String> = informer
            .store()
            .list()
            .into_iter()
            .map(|o| (o.key().to_owned(), o.resource_version().to_owned()))
            .collect();
        prop_assert_eq!(&cache, &truth, "indexer equals the source");
        prop_assert_eq!(&*all.lock(), &cache, "plain handler");
        prop_assert_eq!(&*resyncing.lock(), &cache, "resyncing handler");
        prop_assert_eq!(&*flaky.lock(), &cache, "handler that asks for retries");
        let cache_ns0: BTreeMap<_, _> =
            cache.iter().filter(|(k, _)| k.starts_with("ns0/")).map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert_eq!(&*ns0.lock(), &cache_ns0, "namespace-filtered handler");
        cancel.cancel();
        Ok(())
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn informer_converges_to_the_source_under_faults(ops in prop::collection::vec(op(), 1..60)) {
        run_case(ops)?;
    }
}
