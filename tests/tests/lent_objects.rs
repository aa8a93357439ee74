//! A 0.3.0 handler reads its objects through lent `event-object` handles, part by part, and
//! sees exactly the object the host holds.
//!
//! The `event-recorder` plugin (built with the Rust SDK, which implements 0.4.0, whose handler world is 0.3.0's) describes
//! every added object in one line, reading each part through the SDK in an order that takes
//! every path of a lent object: the scalar fields one host call each; labels and annotations
//! looked up by key, one host call each for the first four, then the whole metadata; the
//! lists (from the metadata); the same lookups again, now from the metadata; the JSON; and a
//! clone, which copies the object out of the host and must equal it.
//!
//! Specifies: every field a handler reads through a handle is the object's own — scalars,
//! labels and annotations by key (present and missing, before and after the metadata is
//! fetched), the label and annotation lists sorted by key, owner references with their
//! controller flag, the generation, the JSON — and a clone of a lent object equals it.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test lent_objects`.

use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::wait::wait_for;

const PLUGIN: &str = "describer";

const POD: &str = r#"apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: shop
  uid: u-web-1
  generation: 3
  labels:
    zone: a
    app: web
    team: payments
    tier: front
    extra: "x_y-1.z"
  annotations:
    note: hi
    owner-team: payments
  ownerReferences:
    - apiVersion: apps/v1
      kind: ReplicaSet
      name: web-abc
      uid: rs-1
      controller: true
    - apiVersion: v1
      kind: Node
      name: n1
      uid: node-1
spec:
  containers:
    - name: main
      image: registry.example/app:1
"#;

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  uid: node-1\n";

fn manifest() -> String {
    "resources:\n  - apiVersion: v1\n    kind: Pod\n  - apiVersion: v1\n    kind: Node\n\
     config:\n  describe:\n    labels: [app, team, missing, tier, zone, extra]\n    annotations: [note, gone]\n"
        .to_owned()
}

/// The lookups' part of a description, with `prefix` (empty, or `again:`).
fn lookups(prefix: &str, labels: [&str; 6], annotations: [&str; 2]) -> String {
    let keys = ["app", "team", "missing", "tier", "zone", "extra"];
    let mut text = String::new();
    for (key, value) in keys.iter().zip(labels) {
        text.push_str(&format!(" {prefix}label:{key}={value}"));
    }
    for (key, value) in ["note", "gone"].iter().zip(annotations) {
        text.push_str(&format!(" {prefix}annotation:{key}={value}"));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handler_reads_every_part_of_a_lent_object_as_the_host_holds_it() {
    let cluster = Cluster::new();
    cluster.write("shop.web-1.yaml", POD);
    cluster.write("node.n1.yaml", NODE);
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), PLUGIN, Some(&manifest()));
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    host.wait_synced().await;
    let described =
        || -> Vec<String> { logs().guest_lines(PLUGIN).into_iter().filter(|l| l.starts_with("object ")).collect() };
    wait_for("both objects described", || described().len() == 2, || logs().dump(PLUGIN)).await;
    host.stop().await;

    let pod_labels = ["web", "payments", "-", "front", "a", "x_y-1.z"];
    let pod_annotations = ["hi", "-"];
    let pod = format!(
        "object key=shop/web-1 api_version=v1 kind=Pod uid=u-web-1 generation=3{} \
         labels=app=web,extra=x_y-1.z,team=payments,tier=front,zone=a annotations=note=hi,owner-team=payments \
         owners=ReplicaSet/web-abc/rs-1/true,Node/n1/node-1/false deleting=- json_uid=u-web-1{} clone_equal=true",
        lookups("", pod_labels, pod_annotations),
        lookups("again:", pod_labels, pod_annotations),
    );
    let none = ["-"; 6];
    let node = format!(
        "object key=n1 api_version=v1 kind=Node uid=node-1 generation=-{} labels= annotations= owners= \
         deleting=- json_uid=node-1{} clone_equal=true",
        lookups("", none, ["-", "-"]),
        lookups("again:", none, ["-", "-"]),
    );
    let mut lines = described();
    lines.sort();
    assert_eq!(lines, [node, pod], "{}", logs().dump(PLUGIN));
}
