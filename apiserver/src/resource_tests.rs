//! Specifications of `ResourceDef`.

use serde_json::json;

use super::*;
use crate::test_support::{configmaps, deployments, pods, widgets};

#[test]
fn api_version_has_the_group_except_for_core() {
    assert_eq!(pods().api_version(), "v1");
    assert_eq!(deployments().api_version(), "apps/v1");
}

#[test]
fn generation_is_kept_by_custom_resources_and_built_ins_with_status() {
    assert!(widgets().tracks_generation());
    assert!(deployments().tracks_generation());
    assert!(!configmaps().tracks_generation());
}

#[test]
fn a_crd_gives_one_definition_per_served_version() {
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "subresources": {"status": {}}},
                {"name": "v1beta1", "served": true, "storage": false},
                {"name": "v1alpha1", "served": false, "storage": false},
            ],
        },
    });
    let defs = ResourceDef::from_crd(&crd).expect("crd");
    assert_eq!(defs.len(), 2);
    assert_eq!(defs[0].api_version(), "example.com/v1");
    assert!(defs[0].status_subresource && !defs[0].namespaced && !defs[0].built_in);
    assert_eq!(defs[1].version, "v1beta1");
    assert!(!defs[1].status_subresource);
}

#[test]
fn a_crd_without_scope_or_with_an_unknown_one_is_refused() {
    let mut crd = json!({"spec": {"group": "g", "names": {"kind": "K", "plural": "ks"}, "versions": []}});
    assert_eq!(ResourceDef::from_crd(&crd), Err(CrdError::Missing("spec.scope")));
    crd["spec"]["scope"] = json!("Galaxy");
    assert_eq!(ResourceDef::from_crd(&crd), Err(CrdError::Scope("Galaxy".into())));
}

#[test]
fn well_known_resources_include_namespaces_as_cluster_scoped() {
    let namespaces = ResourceDef::well_known().into_iter().find(|d| d.kind == "Namespace").expect("namespaces");
    assert!(!namespaces.namespaced);
    assert!(namespaces.name_is_label());
}
