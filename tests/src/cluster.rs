//! A temporary folder of manifests: the "cluster" of the directory source.
//!
//! Files are written through a temporary name and a rename ([`crate::write_atomic`]), so the
//! source's watcher never reads half a file.

use std::path::Path;

use tempfile::TempDir;

use crate::write_atomic;

/// A folder of manifests in a temporary directory, removed on drop.
pub struct Cluster {
    dir: TempDir,
}

impl Default for Cluster {
    fn default() -> Self {
        Self::new()
    }
}

impl Cluster {
    /// An empty cluster.
    pub fn new() -> Self {
        Self { dir: tempfile::Builder::new().prefix("wink-cluster-").tempdir().expect("creating a temporary folder") }
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes (creates or replaces) a manifest file.
    pub fn write(&self, file: &str, text: &str) {
        write_atomic(&self.path().join(file), text);
    }

    /// Removes a manifest file.
    pub fn remove(&self, file: &str) {
        std::fs::remove_file(self.path().join(file)).expect("removing a manifest");
    }

    /// Writes one Pod into its own file, `<namespace>.<name>.yaml`; returns its key.
    pub fn put_pod(&self, namespace: &str, name: &str, labels: &[(&str, &str)]) -> String {
        self.write(&pod_file(namespace, name), &pod_yaml(namespace, name, labels));
        format!("{namespace}/{name}")
    }

    /// Removes a Pod written by [`Cluster::put_pod`].
    pub fn remove_pod(&self, namespace: &str, name: &str) {
        self.remove(&pod_file(namespace, name));
    }
}

/// The file [`Cluster::put_pod`] writes a Pod to.
pub fn pod_file(namespace: &str, name: &str) -> String {
    format!("{namespace}.{name}.yaml")
}

/// A Pod manifest with these labels (values are quoted, so any string works).
pub fn pod_yaml(namespace: &str, name: &str, labels: &[(&str, &str)]) -> String {
    let mut text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: {namespace}\n  uid: uid-{namespace}-{name}\n"
    );
    if !labels.is_empty() {
        text.push_str("  labels:\n");
        for (k, v) in labels {
            text.push_str(&format!("    {k}: \"{v}\"\n"));
        }
    }
    text.push_str("spec:\n  containers:\n    - name: main\n      image: registry.example/app:1\n");
    text
}
