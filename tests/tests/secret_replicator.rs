//! The secret replicator, a Go plugin (`plugins/go/secret-replicator`), over a cluster folder.
//!
//! Specifies that a Secret or ConfigMap annotated `wink.dev/replicate-to` is copied into the
//! namespaces it lists (not its own), each copy annotated with its source; that a namespace
//! that does not exist yet gets a Warning Event on the source, and its copy once created; that the copies
//! follow the source's data; that a namespace leaving the list loses its copy; that a copy
//! edited or deleted by someone else is restored; that deleting the source deletes its copies;
//! and that objects without the annotation are left alone.
//!
//! Run with `cargo xtask test`, or `cargo test -p wink-tests --test secret_replicator`.

use serde_json::{Value, json};
use wink::cluster::{DeleteOptions, PatchType, Request, Verb};
use wink_tests::cluster::Cluster;
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::wait::wait_for;

const FROM: &str = "wink.dev/replicated-from";

fn secret(replicate_to: &str, password: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: shop\n  labels: {{app: shop}}\n  \
         annotations: {{wink.dev/replicate-to: \"{replicate_to}\"}}\ntype: Opaque\ndata: {{password: {password}}}\n"
    )
}

const SETTINGS: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: shop\n  \
    annotations: {wink.dev/replicate-to: payments}\ndata: {currency: EUR}\n";

fn namespace(name: &str) -> String {
    format!("apiVersion: v1\nkind: Namespace\nmetadata: {{name: {name}}}\n")
}

const PRIVATE: &str =
    "apiVersion: v1\nkind: Secret\nmetadata: {name: private, namespace: shop}\ndata: {key: c2VjcmV0}\n";

/// The copies of `kind` named `name` outside `shop`, by namespace, with their data.
fn copies(host: &TestHost, kind: &str, name: &str) -> Vec<(String, Value)> {
    let mut found: Vec<(String, Value)> = host
        .objects("v1", kind)
        .into_iter()
        .filter(|o| o["metadata"]["name"] == name && o["metadata"]["namespace"] != "shop")
        .map(|o| (o["metadata"]["namespace"].as_str().unwrap_or_default().to_owned(), o))
        .collect();
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

fn namespaces(copies: &[(String, Value)]) -> Vec<&str> {
    copies.iter().map(|(ns, _)| ns.as_str()).collect()
}

fn passwords(host: &TestHost) -> Vec<(String, String)> {
    copies(host, "Secret", "db")
        .into_iter()
        .map(|(ns, o)| (ns, o["data"]["password"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

fn pairs(namespaces: &[&str], password: &str) -> Vec<(String, String)> {
    namespaces.iter().map(|ns| ((*ns).to_owned(), password.to_owned())).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copies_follow_their_source_and_go_with_it() {
    let cluster = Cluster::new();
    for ns in ["shop", "payments", "web"] {
        cluster.write(&format!("ns-{ns}.yaml"), &namespace(ns));
    }
    // `shop`, the source's own namespace, is never a target; `later` does not exist yet.
    cluster.write("db.yaml", &secret("payments, web, shop, later", "czE="));
    cluster.write("settings.yaml", SETTINGS);
    cluster.write("private.yaml", PRIVATE);
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("secret-replicator", plugins.path(), "secret-replicator", None);
    let host = TestHost::start(cluster.path(), plugins.path()).await;

    let want = pairs(&["payments", "web"], "czE=");
    wait_for(
        "the Secret copied into payments and web",
        || passwords(&host) == want,
        || format!("{:?}", passwords(&host)),
    )
    .await;
    for (_, copy) in copies(&host, "Secret", "db") {
        assert_eq!(copy["metadata"]["annotations"][FROM], "shop/db", "{copy}");
        assert_eq!(copy["metadata"]["labels"]["app"], "shop", "{copy}");
        assert_eq!(copy["type"], "Opaque", "{copy}");
        assert!(copy["metadata"]["annotations"].get("wink.dev/replicate-to").is_none(), "a copy is no source: {copy}");
    }
    wait_for(
        "the ConfigMap copied into payments",
        || namespaces(&copies(&host, "ConfigMap", "settings")) == ["payments"],
        String::new,
    )
    .await;
    assert_eq!(copies(&host, "ConfigMap", "settings")[0].1["data"], json!({"currency": "EUR"}));
    assert!(copies(&host, "Secret", "private").is_empty(), "a Secret without the annotation stays where it is");

    // The namespace that did not exist: a Warning Event on the source, then its copy.
    let warned = || {
        host.objects("events.k8s.io/v1", "Event")
            .iter()
            .any(|e| e["regarding"]["name"] == "db" && e["type"] == "Warning" && e["reason"] == "ReplicationFailed")
    };
    wait_for("a Warning Event about the missing namespace", warned, String::new).await;
    cluster.write("ns-later.yaml", &namespace("later"));
    let want = pairs(&["later", "payments", "web"], "czE=");
    wait_for(
        "the copy written once the namespace exists",
        || passwords(&host) == want,
        || format!("{:?}", passwords(&host)),
    )
    .await;

    // The source changes (and leaves `later`): its copies follow.
    cluster.write("db.yaml", &secret("payments, web", "czI="));
    let want = pairs(&["payments", "web"], "czI=");
    wait_for(
        "the copies to follow the new password",
        || passwords(&host) == want,
        || format!("{:?}", passwords(&host)),
    )
    .await;

    // A namespace leaves the list: its copy goes.
    cluster.write("db.yaml", &secret("payments", "czI="));
    let want = pairs(&["payments"], "czI=");
    wait_for("the copy in web deleted", || passwords(&host) == want, || format!("{:?}", passwords(&host))).await;

    // Someone edits a copy, then deletes it: it is restored each time.
    let client = host.client();
    let edit = Request::new(Verb::Patch(PatchType::Merge), "v1", "Secret", Some("payments".into()), "db")
        .with_body(r#"{"data":{"password":"aGFja2Vk"}}"#.to_owned());
    client.execute_now(edit).expect("editing the copy");
    wait_for("the edited copy restored", || passwords(&host) == want, || format!("{:?}", passwords(&host))).await;
    let delete = Request::new(Verb::Delete(DeleteOptions::default()), "v1", "Secret", Some("payments".into()), "db");
    client.execute_now(delete).expect("deleting the copy");
    wait_for("the deleted copy restored", || passwords(&host) == want, || format!("{:?}", passwords(&host))).await;

    // The source goes: so do its copies; the other source's copy stays.
    cluster.remove("db.yaml");
    wait_for(
        "the copies deleted with their source",
        || passwords(&host).is_empty(),
        || format!("{:?}", passwords(&host)),
    )
    .await;
    assert_eq!(namespaces(&copies(&host, "ConfigMap", "settings")), ["payments"]);
    let status = host.status("secret-replicator").await.expect("the plugin is deployed");
    assert!(!status.quarantined, "{status:?}");
    assert_eq!(host.metrics("secret-replicator").traps(), 0, "{}", wink_tests::logs::logs().dump("secret-replicator"));
    host.stop().await;
}
