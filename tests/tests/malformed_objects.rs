//! Policy plugins report an object they cannot read, never skip it silently: a workload
//! whose containers are ill-formed (`initContainers: "x"`, which a real API server refuses
//! but a folder or an older server may still hold) would otherwise hide its images from the
//! policy.
//!
//! Specifies that the Python `image-policy` and the JavaScript `resource-requests` plugins
//! fail the event with an error naming the object and the field, and keep checking the
//! well-formed objects beside it.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test malformed_objects`.

use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::wait::wait_for;

const HIDDEN: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: hidden, namespace: shop}\n\
spec:\n  template:\n    spec:\n      initContainers: x\n      containers: [{name: app, image: docker.io/evil:1}]\n";
const PLAIN: &str = "apiVersion: v1\nkind: Pod\nmetadata: {name: plain, namespace: shop}\n\
spec: {containers: [{name: app, image: docker.io/plain:1}]}\n";

/// Whether a record says the Deployment is malformed at `field`, with `consequence`.
fn reported(field: &str, consequence: &str) -> bool {
    let needle =
        format!("Deployment shop/hidden is malformed: {field} is not a list; its {consequence} cannot be checked");
    logs().records().iter().any(|r| std::iter::once(&r.message).chain(r.fields.values()).any(|t| t.contains(&needle)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_plugins_report_a_workload_they_cannot_read_and_check_the_others() {
    logs();
    let cluster = Cluster::new();
    cluster.write("hidden.yaml", HIDDEN);
    cluster.write("plain.yaml", PLAIN);
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("image-policy", plugins.path(), "image-policy", None);
    install_plugin("resource-requests", plugins.path(), "resource-requests", None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    let field = "spec.template.spec.initContainers";
    let both = || reported(field, "images") && reported(field, "containers");
    wait_for("both plugins to report the malformed Deployment", both, || {
        format!("{}\n{}", logs().dump("image-policy"), logs().dump("resource-requests"))
    })
    .await;
    let checked_plain = || logs().guest_lines("image-policy").iter().any(|l| l.contains("Pod shop/plain"));
    wait_for("image-policy to check the well-formed Pod", checked_plain, || logs().dump("image-policy")).await;
    host.stop().await;
}
