//! Where objects are placed: namespaces by scope, and uids.

use serde_json::{Value, json};

use super::*;
use crate::source::documents::Location;

fn objects(values: &[Value]) -> Vec<ManifestObject> {
    values
        .iter()
        .enumerate()
        .map(|(i, value)| ManifestObject { location: Location { document: i + 1, item: None }, value: value.clone() })
        .collect()
}

fn obj(api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Value {
    let mut value = json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": name}});
    if let Some(ns) = namespace {
        value["metadata"]["namespace"] = json!(ns);
    }
    value
}

fn keys(placed: &Placed) -> Vec<String> {
    placed.objects.keys().map(|(_, kind, key)| format!("{kind} {key}")).collect()
}

fn messages(errors: &[DirSourceError]) -> Vec<String> {
    assert!(errors.iter().all(|e| matches!(e, DirSourceError::Placement { .. })), "{errors:?}");
    errors.iter().map(ToString::to_string).collect()
}

#[test]
fn namespaced_objects_without_a_namespace_go_to_default() {
    let mut placer = Placer::new(None);
    let placed = placer.place(
        Path::new("a.yaml"),
        &objects(&[obj("v1", "Service", None, "web"), obj("apps/v1", "Deployment", Some("shop"), "web")]),
    );
    assert_eq!(keys(&placed), ["Deployment shop/web", "Service default/web"]);
    let service = &placed.objects[&("v1".into(), "Service".into(), "default/web".into())];
    assert_eq!(service["metadata"]["namespace"], "default");
    assert!(placed.warnings.is_empty() && placed.unknown_kinds.is_empty());
}

#[test]
fn a_given_namespace_is_the_default_and_refuses_objects_naming_another() {
    let mut placer = Placer::new(Some("team-a".into()));
    let placed = placer.place(
        Path::new("a.yaml"),
        &objects(&[
            obj("v1", "Service", None, "web"),
            obj("v1", "Service", Some("team-a"), "api"),
            obj("v1", "Service", Some("team-b"), "other"),
            obj("v1", "Namespace", None, "team-b"),
        ]),
    );
    assert_eq!(keys(&placed), ["Namespace team-b", "Service team-a/api", "Service team-a/web"]);
    assert_eq!(
        messages(&placed.warnings),
        [
            "a.yaml: document 3 (Service team-b/other): its namespace `team-b` does not match the namespace `team-a` given; skipped"
        ]
    );
}

#[test]
fn a_cluster_scoped_object_loses_its_namespace_with_a_warning() {
    let mut placer = Placer::new(None);
    let placed = placer.place(
        Path::new("rbac.yaml"),
        &objects(&[
            obj("rbac.authorization.k8s.io/v1", "ClusterRole", Some("shop"), "reader"),
            obj("v1", "Namespace", None, "shop"),
        ]),
    );
    assert_eq!(keys(&placed), ["ClusterRole reader", "Namespace shop"]);
    let role = &placed.objects[&("rbac.authorization.k8s.io/v1".into(), "ClusterRole".into(), "reader".into())];
    assert!(role["metadata"].get("namespace").is_none(), "{role}");
    assert_eq!(
        messages(&placed.warnings),
        [
            "rbac.yaml: document 1 (ClusterRole shop/reader): ClusterRole is cluster-scoped; its namespace `shop` is ignored"
        ]
    );
}

#[test]
fn an_unknown_kind_is_namespaced_with_one_warning_per_kind() {
    let mut placer = Placer::new(None);
    let widgets = objects(&[
        obj("example.com/v1", "Widget", None, "a"),
        obj("example.com/v1", "Widget", Some("shop"), "b"),
        obj("example.com/v1", "Gadget", None, "c"),
    ]);
    let placed = placer.place(Path::new("w.yaml"), &widgets);
    assert_eq!(keys(&placed), ["Gadget default/c", "Widget default/a", "Widget shop/b"]);
    let warned = messages(&placed.unknown_kinds);
    assert_eq!(warned.len(), 2, "{warned:?}");
    assert!(
        warned[0].starts_with("w.yaml: document 1 (Widget a): unknown kind Widget of example.com/v1"),
        "{warned:?}"
    );
    assert!(warned[1].contains("document 3 (Gadget c): unknown kind Gadget"), "{warned:?}");
    assert!(placer.place(Path::new("again.yaml"), &widgets).unknown_kinds.is_empty(), "once per kind");
}

#[test]
fn custom_kinds_take_the_scope_of_their_definition_in_the_folder() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Gadget", "plural": "gadgets"},
                 "versions": [{"name": "v1", "served": true, "storage": true}]},
    });
    let mut placer = Placer::new(None);
    assert!(placer.set_scopes(Scopes::from_objects([&crd])));
    assert!(!placer.set_scopes(Scopes::from_objects([&crd])), "unchanged");
    let placed = placer.place(Path::new("g.yaml"), &objects(&[obj("example.com/v1", "Gadget", Some("shop"), "g")]));
    assert_eq!(keys(&placed), ["Gadget g"]);
    assert!(placed.unknown_kinds.is_empty());
    assert_eq!(placed.warnings.len(), 1, "cluster-scoped: its namespace is ignored");
    // Its definition gone, the kind is unknown again, and warned about again.
    assert!(placer.set_scopes(Scopes::default()));
    let placed = placer.place(Path::new("g.yaml"), &objects(&[obj("example.com/v1", "Gadget", Some("shop"), "g")]));
    assert_eq!(keys(&placed), ["Gadget shop/g"]);
    assert_eq!(placed.unknown_kinds.len(), 1);
}

#[test]
fn objects_without_a_uid_get_a_stable_one_from_their_identity() {
    let mut placer = Placer::new(None);
    let mut given = obj("v1", "ConfigMap", Some("shop"), "given");
    given["metadata"]["uid"] = json!("1234");
    let file = objects(&[obj("v1", "ConfigMap", None, "web"), obj("v1", "Secret", None, "web"), given]);
    let uids = |placed: &Placed| -> Vec<String> {
        placed.objects.values().map(|v| v["metadata"]["uid"].as_str().unwrap().to_owned()).collect()
    };
    let first = uids(&placer.place(Path::new("a.yaml"), &file));
    // In key order: ConfigMap default/web, ConfigMap shop/given, Secret default/web.
    assert_eq!(first[1], "1234", "a uid the file gives is kept");
    assert_eq!(first[0], synthetic_uid("", "ConfigMap", "default", "web"));
    assert_eq!(first[2], synthetic_uid("", "Secret", "default", "web"));
    assert_ne!(first[0], first[2], "another kind, another uid");
    assert!(uuid::Uuid::parse_str(&first[0]).is_ok_and(|u| u.get_version_num() == 5), "{}", first[0]);
    // The same object in another file, or in another process: the same uid.
    assert_eq!(uids(&Placer::new(None).place(Path::new("b.yaml"), &file)), first);
    // Its namespace and group are part of its identity.
    assert_ne!(synthetic_uid("", "ConfigMap", "default", "web"), synthetic_uid("", "ConfigMap", "other", "web"));
    assert_ne!(synthetic_uid("apps", "Deployment", "a", "b"), synthetic_uid("", "Deployment", "a", "b"));
    // A fixed value: uids must not change between releases.
    assert_eq!(synthetic_uid("", "ConfigMap", "default", "web"), "a9bd0198-ef09-5509-9a0e-1e1655ed1e83");
}
