//! Unit tests of the store: server-set fields, finalizers, snapshots, watch replay.

use super::*;

fn cm(ns: &str, name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": name}, "data": {"d": data}})
}

fn all(resource: usize) -> Selection {
    Selection { resource, namespace: None, labels: LabelSelector::default(), fields: FieldSelector::default() }
}

fn list(
    store: &Store,
    selection: Selection,
    limit: Option<usize>,
    token: Option<String>,
) -> Result<ListPage, ApiError> {
    store.list(&ListRequest {
        selection,
        resource_version: None,
        resource_version_match: None,
        limit,
        continue_token: token,
    })
}

#[test]
fn writes_set_server_fields_and_no_op_updates_change_nothing() {
    let mut store = Store::new(100, 1);
    let a = store.apply(cm("ns", "a", "1")).unwrap();
    assert_eq!(a.resource_version(), 2);
    assert_eq!(a.value["metadata"]["generation"], 1);
    let uid = a.value["metadata"]["uid"].clone();
    assert!(uid.as_str().is_some_and(|u| u.len() == 36));
    let same = store.apply(cm("ns", "a", "1")).unwrap();
    assert_eq!(same.resource_version(), 2, "a no-op update keeps the resourceVersion");
    let b = store.apply(cm("ns", "a", "2")).unwrap();
    assert_eq!((b.resource_version(), b.value["metadata"]["uid"].clone()), (3, uid));
    assert_eq!(b.value["metadata"]["generation"], 2);
    let mut labelled = cm("ns", "a", "2");
    labelled["metadata"]["labels"] = json!({"x": "y"});
    assert_eq!(store.apply(labelled).unwrap().value["metadata"]["generation"], 2, "metadata changes keep generation");
    assert!(store.apply(json!({"apiVersion": "v1", "kind": "Nope", "metadata": {"name": "x"}})).is_err());
    assert!(store.apply(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}})).is_err());
}

#[test]
fn finalizers_delay_deletion_until_removed() {
    let mut store = Store::new(100, 1);
    let id = store.resource("v1", "ConfigMap").unwrap();
    let mut obj = cm("ns", "f", "1");
    obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
    store.apply(obj.clone()).unwrap();
    let terminating = store.delete(id, "ns/f").unwrap();
    assert!(terminating.value.pointer("/metadata/deletionTimestamp").is_some());
    assert!(store.get(id, "ns/f").is_some());
    obj["metadata"]["finalizers"] = json!([]);
    store.apply(obj).unwrap();
    assert!(store.get(id, "ns/f").is_none());
}

#[test]
fn paginated_lists_read_a_snapshot_until_compaction() {
    let mut store = Store::new(100, 1);
    let id = store.resource("v1", "ConfigMap").unwrap();
    for i in 0..5 {
        store.apply(cm("ns", &format!("c{i}"), "x")).unwrap();
    }
    let first = list(&store, all(id), Some(2), None).unwrap();
    assert_eq!((first.items.len(), first.remaining), (2, Some(3)));
    store.delete(id, "ns/c3").unwrap();
    store.apply(cm("ns", "c9", "x")).unwrap();
    let second = list(&store, all(id), Some(10), first.continue_token.clone()).unwrap();
    let keys: Vec<_> = second.items.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["ns/c2", "ns/c3", "ns/c4"], "the page is read at the first page's resourceVersion");
    assert_eq!(second.resource_version, first.resource_version);
    assert!(second.continue_token.is_none());
    store.compact();
    let err = list(&store, all(id), Some(2), first.continue_token).err().unwrap();
    assert_eq!((err.code, err.reason), (410, "Expired"));
}

#[test]
fn watches_replay_from_a_resource_version_or_answer_410() {
    let mut store = Store::new(3, 1);
    let id = store.resource("v1", "ConfigMap").unwrap();
    for i in 0..5 {
        store.apply(cm("ns", &format!("c{i}"), "x")).unwrap();
    }
    let req = |rv: &str| WatchRequest {
        selection: Selection { resource: id, namespace: None, labels: Default::default(), fields: Default::default() },
        resource_version: Some(rv.into()),
        bookmarks: false,
        send_initial_events: false,
    };
    let mut rx = store.watch(req("4")).unwrap();
    let mut frames = Vec::new();
    while let Ok(WatchMsg::Frame(f)) = rx.try_recv() {
        frames.push(String::from_utf8(f.to_vec()).unwrap());
    }
    assert_eq!(frames.len(), 2);
    assert!(frames[0].contains("\"c3\"") && frames[1].contains("\"c4\""));
    let mut old = store.watch(req("2")).unwrap();
    let Ok(WatchMsg::Frame(error)) = old.try_recv() else { panic!("no error frame") };
    assert!(String::from_utf8_lossy(&error).contains("\"code\":410"));
    assert!(matches!(old.try_recv(), Ok(WatchMsg::End)));
}
