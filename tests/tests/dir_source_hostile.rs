//! The directory source over files it must not trust, end to end as `wink run --source dir:`
//! wires it: the real file watcher, shared informers and a real plugin.
//!
//! Specifies that a link to a device, a FIFO (at startup and added later), a folder link that
//! loops and documents nested too deep (128 and 100,000 levels) are each skipped with a
//! warning naming them, while every other object is delivered; that changes keep flowing
//! afterwards; and that deleting the deepest object allowed, or the file of a refused document,
//! does not stop the source.
//!
//! Run with `cargo test -p wink-tests --test dir_source_hostile`.

use std::path::Path;

use wink::informer::MAX_DEPTH;
use wink_tests::cluster::{Cluster, pod_yaml};
use wink_tests::host::TestHost;
use wink_tests::install_plugin;
use wink_tests::logs::logs;
use wink_tests::recorder::view_of;
use wink_tests::wait::wait_for;

const PLUGIN: &str = "hostile-dir-recorder";

fn mkfifo(path: &Path) {
    let status = std::process::Command::new("mkfifo").arg(path).status().expect("running mkfifo");
    assert!(status.success(), "mkfifo {}", path.display());
}

/// A Pod whose `spec` nests arrays down to `levels` levels (the Pod itself is level 1).
fn nested_pod(name: &str, levels: usize) -> String {
    let inner = levels - 1;
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: shop}}\nspec: {}{}\n",
        "[".repeat(inner),
        "]".repeat(inner)
    )
}

async fn wait_delivered(key: &str) {
    wait_for(&format!("{PLUGIN} to hold {key}"), || view_of(PLUGIN).contains_key(key), || logs().dump(PLUGIN)).await;
}

async fn wait_gone(key: &str) {
    wait_for(&format!("{PLUGIN} to see {key} deleted"), || !view_of(PLUGIN).contains_key(key), || logs().dump(PLUGIN))
        .await;
}

/// Waits for a warning whose error names `what`.
async fn wait_warned(what: &str) {
    let warned = || {
        logs()
            .records()
            .iter()
            .any(|r| r.level == tracing::Level::WARN && r.field("error").is_some_and(|e| e.contains(what)))
    };
    let context = || logs().records().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    wait_for(&format!("a warning naming {what}"), warned, context).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_files_are_skipped_by_name_and_everything_else_is_delivered() {
    let cluster = Cluster::new();
    let first = cluster.put_pod("shop", "first", &[]);
    std::os::unix::fs::symlink("/dev/zero", cluster.path().join("zero.yaml")).unwrap();
    mkfifo(&cluster.path().join("pipe.yaml"));
    let sub = cluster.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("in-sub.yaml"), pod_yaml("shop", "in-sub", &[])).unwrap();
    std::os::unix::fs::symlink(cluster.path(), sub.join("up")).unwrap();
    let deep = [
        pod_yaml("shop", "before-deep", &[]),
        nested_pod("too-deep", MAX_DEPTH + 1),
        nested_pod("far-too-deep", 100_000),
        pod_yaml("shop", "after-deep", &[]),
    ];
    cluster.write("deep.yaml", &deep.join("---\n"));
    let plugins = tempfile::tempdir().unwrap();
    install_plugin("event-recorder", plugins.path(), PLUGIN, None);

    // Startup neither blocks nor runs away, and delivers every other object.
    let host = TestHost::start(cluster.path(), plugins.path()).await;
    for key in [first.as_str(), "shop/in-sub", "shop/before-deep", "shop/after-deep"] {
        wait_delivered(key).await;
    }
    for what in ["zero.yaml", "pipe.yaml", "loops back to", "document 2: nested deeper", "document 3: nested deeper"] {
        wait_warned(what).await;
    }

    // A FIFO added while running is skipped; changes keep flowing.
    mkfifo(&cluster.path().join("late-pipe.yaml"));
    let later = cluster.put_pod("shop", "later", &[]);
    wait_delivered(&later).await;
    wait_warned("late-pipe.yaml").await;

    // The deepest object allowed is delivered and deleted, and the source carries on.
    cluster.write("deepest.yaml", &nested_pod("deepest", MAX_DEPTH));
    wait_delivered("shop/deepest").await;
    cluster.remove("deepest.yaml");
    wait_gone("shop/deepest").await;
    // Removing the file with the refused documents deletes its other objects (a document one
    // level deeper was once stored, and deleting it panicked the watcher).
    cluster.remove("deep.yaml");
    wait_gone("shop/before-deep").await;
    wait_gone("shop/after-deep").await;
    let last = cluster.put_pod("shop", "last", &[]);
    wait_delivered(&last).await;

    for key in ["shop/too-deep", "shop/far-too-deep"] {
        assert!(!view_of(PLUGIN).contains_key(key), "{key} was delivered");
    }
    host.stop().await;
}
