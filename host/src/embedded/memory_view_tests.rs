//! A view serves its store's objects in its own form: one object, one resourceVersion, one
//! change per write, whichever form writes it.

use futures::StreamExt;
use serde_json::{Value, json};

use super::*;
use crate::embedded::memory::Write;
use crate::embedded::{EmbeddedCluster, MemoryCluster, MemorySourceOptions};
use crate::informer::list_watch::{ListParams, ListerWatcher, WatchParams};

fn core_event(name: &str, message: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"namespace": "shop", "name": name},
        "involvedObject": {"kind": "Deployment", "namespace": "shop", "name": "web"},
        "reason": "Started", "message": message, "type": "Normal", "count": 1
    })
}

fn events_event(name: &str, note: &str) -> Value {
    json!({
        "apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"namespace": "shop", "name": name},
        "eventTime": "2026-11-28T10:00:00.000000Z",
        "reportingController": "wink.dev/test", "reportingInstance": "wink-0",
        "action": "Reload", "reason": "ConfigChanged", "note": note, "type": "Normal",
        "regarding": {"kind": "Deployment", "namespace": "shop", "name": "web"}
    })
}

fn events_of(cluster: &MemoryCluster) -> (MemorySource, MemorySource) {
    let core = cluster.collection("v1", "Event").unwrap().source;
    let events = cluster.collection("events.k8s.io/v1", "Event").unwrap().source;
    (core, events)
}

fn value(object: &Object) -> Value {
    object.to_value().unwrap()
}

#[test]
fn an_object_written_in_either_form_is_read_in_both() {
    let cluster = MemoryCluster::new(MemorySourceOptions::default());
    let (core, events) = events_of(&cluster);
    let stored = core.apply(core_event("a", "pulled")).unwrap();
    let shown = events.get("shop/a").unwrap();
    assert_eq!(value(&shown)["apiVersion"], "events.k8s.io/v1");
    assert_eq!(value(&shown)["note"], "pulled");
    assert_eq!(value(&shown)["regarding"]["name"], "web");
    assert_eq!(shown.resource_version(), stored.resource_version(), "one object, one resourceVersion");

    let written = events.apply(events_event("b", "reloaded")).unwrap();
    assert_eq!(value(&written)["apiVersion"], "events.k8s.io/v1", "a write answers in the writer's form");
    let in_core = value(&core.get("shop/b").unwrap());
    assert_eq!(in_core["apiVersion"], "v1");
    assert_eq!(in_core["message"], "reloaded");
    assert_eq!(in_core["reportingComponent"], "wink.dev/test");
    assert_eq!(in_core["involvedObject"]["name"], "web");
    assert_eq!(core.objects().len(), 2);
    assert_eq!(events.objects().len(), 2);
}

/// A rule writing through the view sees the stored object in the view's form, and its result
/// is stored in the store's form.
#[test]
fn writes_through_a_view_decide_on_its_form() {
    let cluster = MemoryCluster::new(MemorySourceOptions::default());
    let (core, events) = events_of(&cluster);
    core.apply(core_event("a", "pulled")).unwrap();
    let updated = events
        .write("shop/a", |current| {
            let mut seen = value(current.unwrap());
            assert_eq!(seen["note"], "pulled", "the rule sees the view's form");
            seen["note"] = json!("pulled again");
            Ok::<_, ObjectError>(Write::Put(seen))
        })
        .unwrap();
    assert_eq!(value(&updated)["note"], "pulled again");
    assert_eq!(value(&core.get("shop/a").unwrap())["message"], "pulled again");
    let unchanged = events.write("shop/a", |current| Ok::<_, ObjectError>(Write::Unchanged(value(current.unwrap()))));
    assert_eq!(value(&unchanged.unwrap())["apiVersion"], "events.k8s.io/v1");
    let gone = events.delete("shop/a").unwrap();
    assert_eq!(value(&gone)["apiVersion"], "events.k8s.io/v1");
    assert!(core.get("shop/a").is_none());
}

/// Each form's watch sees every change once, in its own form, at the store's versions.
#[tokio::test]
async fn watches_of_each_form_see_every_change_in_their_form() {
    let cluster = MemoryCluster::new(MemorySourceOptions::default());
    let (core, events) = events_of(&cluster);
    core.apply(core_event("before", "listed")).unwrap();
    let from = core.resource_version().to_string();
    let mut core_watch =
        core.watch(&WatchParams { resource_version: from.clone(), ..Default::default() }).await.unwrap();
    let mut events_watch =
        events.watch(&WatchParams { resource_version: "0".into(), ..Default::default() }).await.unwrap();
    let written = events.apply(events_event("during", "watched")).unwrap();

    let Some(Ok(WatchEvent::Added(first))) = events_watch.next().await else { panic!("the initial event") };
    assert_eq!((first.name(), value(&first)["note"].clone()), ("before", json!("listed")));
    let Some(Ok(WatchEvent::Added(second))) = events_watch.next().await else { panic!("the write") };
    assert_eq!(value(&second)["apiVersion"], "events.k8s.io/v1");
    let Some(Ok(WatchEvent::Added(in_core))) = core_watch.next().await else { panic!("the write in core") };
    assert_eq!(value(&in_core)["message"], "watched");
    assert_eq!(in_core.resource_version(), written.resource_version());
    assert_eq!(second.resource_version(), written.resource_version());

    let listed = events.list(&ListParams::default()).await.unwrap();
    let notes: Vec<Value> = listed.items.iter().map(|o| value(o)["note"].clone()).collect();
    assert_eq!(notes, [json!("listed"), json!("watched")]);
    assert_eq!(listed.resource_version, core.resource_version().to_string());
}

/// The storage kind is served once however the cluster was built: the view never replaces
/// the store it shows.
#[test]
fn the_cluster_keeps_one_store_for_both_forms() {
    let cluster = MemoryCluster::new(MemorySourceOptions::default());
    let (core, events) = events_of(&cluster);
    events.apply(events_event("x", "one")).unwrap();
    assert_eq!(cluster.collection("v1", "Event").unwrap().source.objects().len(), 1);
    assert_eq!(core.objects().len(), 1);
    assert!(shared_storage("v1", "Event").is_none() && shared_storage("v1", "ConfigMap").is_none());
}
