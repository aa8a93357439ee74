//! What is particular to Go guests: Go's runtime inside the sandbox.
//!
//! Specifies that Go's garbage collector never runs while the host writes into a Go plugin's
//! memory (the component model forbids the clock read a collection makes then, and the call
//! would trap): a plugin that reads thousands of objects per event while it allocates handles
//! every event without a trap, and its memory stays bounded by collections between calls.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test go_guest`.

use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::wait::wait_for;

const CONFIG_MAPS: usize = 150;

fn config_map(i: usize, version: usize) -> String {
    let filler = "x".repeat(8 << 10);
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: cm-{i}, namespace: churn}}\ndata: {{version: \"{version}\", filler: {filler}}}\n"
    )
}

fn listed() -> usize {
    logs().guest_lines("go-churn").iter().filter(|l| l.starts_with("listed ")).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_collects_garbage_between_calls_only() {
    let cluster = Cluster::new();
    cluster.write("ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: churn}\n");
    for i in 0..CONFIG_MAPS {
        cluster.write(&format!("cm-{i}.yaml"), &config_map(i, 1));
    }
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("hostile/go-churn", plugins.path(), "go-churn", None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    // Each event lists ~1.2 MiB of ConfigMaps and drops a MiB: a collection is due every few
    // events, and most of the allocating happens inside cabi_realloc.
    wait_for("every initial ConfigMap handled", || listed() >= CONFIG_MAPS, || logs().dump("go-churn")).await;
    for i in 0..CONFIG_MAPS / 3 {
        cluster.write(&format!("cm-{i}.yaml"), &config_map(i, 2));
    }
    wait_for("the updates handled", || listed() >= CONFIG_MAPS + CONFIG_MAPS / 3, || logs().dump("go-churn")).await;
    let metrics = host.metrics("go-churn");
    assert_eq!(metrics.traps(), 0, "{}", logs().dump("go-churn"));
    assert_eq!(metrics.restarts(), 0, "{}", logs().dump("go-churn"));
    host.stop().await;
}
