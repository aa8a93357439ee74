//! The directory source places objects as `kubectl apply` would: namespaces by the scope of
//! their kind (the folder's CustomResourceDefinitions included), and uids.

use std::path::Path;

use super::*;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

fn keys(src: &DirSource, api_version: &str, kind: &str) -> Vec<String> {
    let mut state = src.state.lock();
    state.source(api_version, kind).objects().iter().map(|o| o.key().to_owned()).collect()
}

fn uid(src: &DirSource, api_version: &str, kind: &str, key: &str) -> String {
    let mut state = src.state.lock();
    state.source(api_version, kind).get(key).unwrap().uid().to_owned()
}

fn messages(errors: &[DirSourceError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

const WIDGET_CRD: &str = concat!(
    "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: widgets.example.com}\n",
    "spec: {group: example.com, scope: Cluster, names: {kind: Widget, plural: widgets},\n",
    "  versions: [{name: v1, served: true, storage: true}]}\n",
);

/// Regression: namespaced objects written without a namespace got cluster-scoped keys, so a
/// plugin watching `namespaces: [default]` saw nothing.
#[test]
fn namespaced_objects_without_a_namespace_are_in_default_or_the_namespace_given() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: web}\n");
    write(dir.path(), "ns.yaml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: shop}\n");
    let src = DirSource::open(dir.path()).unwrap();
    assert_eq!(keys(&src, "v1", "Service"), ["default/web"]);
    assert_eq!(keys(&src, "v1", "Namespace"), ["default", "kube-node-lease", "kube-public", "kube-system", "shop"]);

    let options = DirSourceOptions { namespace: Some("shop".into()), ..DirSourceOptions::default() };
    let src = DirSource::open_with(dir.path(), options).unwrap();
    assert_eq!(keys(&src, "v1", "Service"), ["shop/web"]);
}

#[test]
fn a_cluster_scoped_objects_namespace_is_dropped_with_one_warning_per_change() {
    let dir = tempfile::tempdir().unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    let role =
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: reader, namespace: shop}\n";
    write(dir.path(), "rbac.yaml", role);
    let errors = messages(&src.rescan().unwrap());
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("rbac.yaml: document 1 (ClusterRole shop/reader): ClusterRole is cluster-scoped"),
        "{errors:?}"
    );
    assert_eq!(keys(&src, "rbac.authorization.k8s.io/v1", "ClusterRole"), ["reader"]);
    assert!(src.rescan().unwrap().is_empty(), "unchanged: no new warning");
}

/// A CustomResourceDefinition added after its objects places them again, by its scope; its
/// removal places them back as an unknown (namespaced) kind.
#[test]
fn a_definition_added_or_removed_later_places_its_objects_again() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n");
    let src = DirSource::open(dir.path()).unwrap();
    assert_eq!(keys(&src, "example.com/v1", "Widget"), ["default/w"]);

    write(dir.path(), "crd.yaml", WIDGET_CRD);
    let errors = messages(&src.rescan().unwrap());
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(keys(&src, "example.com/v1", "Widget"), ["w"]);
    assert_eq!(keys(&src, "apiextensions.k8s.io/v1", "CustomResourceDefinition"), ["widgets.example.com"]);

    std::fs::remove_file(dir.path().join("crd.yaml")).unwrap();
    let errors = messages(&src.rescan().unwrap());
    assert_eq!(keys(&src, "example.com/v1", "Widget"), ["default/w"]);
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].contains("widget.yaml: document 1 (Widget w): unknown kind Widget of example.com/v1"),
        "{errors:?}"
    );
}

#[test]
fn an_unknown_kind_is_warned_about_once() {
    let dir = tempfile::tempdir().unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    write(dir.path(), "a.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: a}\n");
    write(dir.path(), "b.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: b}\n");
    let errors = messages(&src.rescan().unwrap());
    assert_eq!(errors.len(), 1, "{errors:?}");
    write(dir.path(), "b.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: c}\n");
    assert!(src.rescan().unwrap().is_empty());
    assert_eq!(keys(&src, "example.com/v1", "Widget"), ["default/a", "default/c"]);
}

#[test]
fn uids_are_stable_across_rescans_and_restarts_and_a_given_uid_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "a.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: given, uid: 0000-given}\n",
    );
    let src = DirSource::open(dir.path()).unwrap();
    let first = uid(&src, "apps/v1", "Deployment", "default/web");
    assert_eq!(first, crate::source::placement::synthetic_uid("apps", "Deployment", "default", "web"));
    assert_eq!(uid(&src, "v1", "ConfigMap", "default/given"), "0000-given");
    // An edit (and a move to another file) keeps the uid.
    write(dir.path(), "a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: given, uid: 0000-given}\n");
    write(dir.path(), "b.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, labels: {v: '2'}}\n");
    src.rescan().unwrap();
    assert_eq!(uid(&src, "apps/v1", "Deployment", "default/web"), first);
    assert_eq!(uid(&DirSource::open(dir.path()).unwrap(), "apps/v1", "Deployment", "default/web"), first);
}

/// Regression: one bad document made the whole file skipped.
#[test]
fn a_bad_document_is_skipped_and_the_files_other_documents_load() {
    let dir = tempfile::tempdir().unwrap();
    let src = DirSource::open(dir.path()).unwrap();
    write(
        dir.path(),
        "mixed.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: 7}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
    );
    let errors = messages(&src.rescan().unwrap());
    assert_eq!(
        errors,
        ["mixed.yaml: document 2 (ConfigMap): `metadata.name` is a number, not a string; skipped"]
            .map(|m| format!("{}/{m}", dir.path().display()))
    );
    assert_eq!(keys(&src, "v1", "ConfigMap"), ["default/a", "default/c"]);
}

/// An object is stamped with its creation time when first read, as the API server stamps
/// what kubectl creates, and keeps it when its file changes; a time the file gives is kept.
#[test]
fn objects_are_stamped_with_their_creation_time_once() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: '1'}\n");
    write(
        dir.path(),
        "given.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, creationTimestamp: '2020-01-01T00:00:00Z'}\n",
    );
    let src = DirSource::open(dir.path()).unwrap();
    let created = |name: &str| {
        let mut state = src.state.lock();
        let obj = state.source("v1", "ConfigMap").get(&format!("default/{name}")).unwrap();
        obj.to_value().unwrap()["metadata"]["creationTimestamp"].as_str().unwrap_or_default().to_owned()
    };
    let first = created("a");
    assert!(first.ends_with('Z') && first.len() == 20, "{first}");
    assert_eq!(created("b"), "2020-01-01T00:00:00Z");
    write(dir.path(), "cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {v: '2'}\n");
    assert!(src.rescan().unwrap().is_empty());
    assert_eq!(created("a"), first, "kept across the file's change");
    let data = src.state.lock().source("v1", "ConfigMap").get("default/a").unwrap().to_value().unwrap()["data"].clone();
    assert_eq!(data, serde_json::json!({"v": "2"}), "the change was read");
}

/// A folder's CustomResourceDefinition is served established, whatever status its file
/// writes (controller-gen writes an empty one), as the API server's controllers set it.
#[test]
fn a_folders_definitions_are_established() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "crd.yaml", &format!("{WIDGET_CRD}status: {{acceptedNames: {{kind: ''}}, conditions: []}}\n"));
    let src = DirSource::open(dir.path()).unwrap();
    let crd = src
        .state
        .lock()
        .source("apiextensions.k8s.io/v1", "CustomResourceDefinition")
        .get("widgets.example.com")
        .unwrap();
    let status = crd.to_value().unwrap()["status"].clone();
    assert_eq!(status["conditions"][1]["type"], "Established");
    assert_eq!(status["acceptedNames"]["kind"], "Widget");
}
