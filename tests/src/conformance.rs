//! The fixed parts of the conformance suite (`tests/conformance/SPEC.md`): which languages
//! have a guest, where each guest is, and the manifest every guest is deployed with. The
//! runner is `tests/tests/conformance.rs`.

use std::path::PathBuf;

use wink::embedded::MemorySource;
use wink::embedded::{Collection, EmbeddedCluster};
use wink::kube::ResourceDef;

use crate::{plugins_dir, repo_root};

/// The scenario's cluster: one in-memory store per kind, which the guest's requests write to
/// (with the API server's rules) and its informers watch.
#[derive(Clone, Default)]
pub struct ScenarioCluster {
    kinds: Vec<(&'static str, &'static str, Collection)>,
}

impl ScenarioCluster {
    /// Serves `source` as `(api_version, kind)`, named `plural` in `group`.
    pub fn serve(
        &mut self,
        api_version: &'static str,
        kind: &'static str,
        plural: &str,
        namespaced: bool,
        source: MemorySource,
    ) {
        let def = ResourceDef {
            status_subresource: kind == "Pod",
            built_in: true,
            ..ResourceDef::custom(api_version, kind, plural, namespaced)
        };
        let collection = Collection { def, scale: None, fields: Vec::new(), source };
        self.kinds.push((api_version, kind, collection));
    }
}

impl EmbeddedCluster for ScenarioCluster {
    fn collection(&self, api_version: &str, kind: &str) -> Option<Collection> {
        self.kinds.iter().find(|(a, k, _)| *a == api_version && *k == kind).map(|(_, _, c)| c.clone())
    }
}

/// Calls `$mac!(rust, python, javascript, c)`: every language with a conformance guest, one
/// identifier each, so that the runner gets one `#[test]` per language (as wasmtime's
/// `foreach_*!` macros give one test per guest program). Adding a guest under
/// `plugins/conformance/` without adding its language here fails the suite, and so does a
/// language here whose guest was not built.
#[macro_export]
macro_rules! foreach_language {
    ($mac:ident) => {
        $mac!(rust, python, javascript, c, go);
    };
}

/// What follows `component:` in the manifest of every guest (SPEC.md, "The manifest").
pub const MANIFEST_TAIL: &str = "\
resources:
  - apiVersion: v1
    kind: Pod
    namespaces: [conf]
  - apiVersion: v1
    kind: Namespace
cache:
  - apiVersion: v1
    kind: ConfigMap
    namespaces: [conf]
failurePolicy:
  onError: retry
  quarantineAfter: 0
permissions:
  - apiGroups: [\"\"]
    resources: [configmaps]
    verbs: [get, create, update, patch]
    namespaces: [conf]
  - apiGroups: [events.k8s.io]
    resources: [events]
    verbs: [create, patch]
";

/// The manifest tail with `config` set to `config` (YAML), or with no `config` at all.
pub fn manifest_tail(config: Option<&str>) -> String {
    match config {
        Some(config) => format!("{MANIFEST_TAIL}config: {config}\n"),
        None => MANIFEST_TAIL.to_owned(),
    }
}

/// The name of the guest of `language`: `conformance-<language>`.
pub fn guest_name(language: &str) -> String {
    format!("conformance-{language}")
}

/// The built-plugin path of the guest of `language` (for [`crate::install_plugin`]).
///
/// # Panics
/// When the guest was not built, saying where to look: a missing guest fails its language.
pub fn built_guest(language: &str) -> String {
    let relative = format!("conformance/{}", guest_name(language));
    let dir = plugins_dir().join(&relative);
    let wasm = dir.join(format!("{}.wasm", guest_name(language)));
    assert!(
        dir.join("plugin.yaml").is_file() && wasm.is_file(),
        "the {language} guest of the conformance suite was not built into {}: see the output of \
         `cargo xtask build-plugins` (is plugins/{relative} there? could its toolchain be installed?)",
        dir.display()
    );
    relative
}

/// The languages that have a guest folder under `plugins/conformance/`.
pub fn guest_sources() -> Vec<String> {
    let dir: PathBuf = repo_root().join("plugins").join("conformance");
    let mut languages: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.path().join("plugin.yaml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .map(|name| name.strip_prefix("conformance-").map(str::to_owned).unwrap_or(name))
        .collect();
    languages.sort();
    languages
}
