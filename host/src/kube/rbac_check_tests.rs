use super::*;

const PLUGIN: &[&str] = &["get", "create", "update", "patch", "delete"];

fn rule(yaml: &str) -> PolicyRule {
    serde_norway::from_str(yaml).unwrap()
}

fn refused(yaml: &str) -> (String, String) {
    check_rule(&rule(yaml), Some(PLUGIN)).expect_err(yaml)
}

#[test]
fn a_rule_of_valid_entries_passes_without_warnings() {
    for yaml in [
        "{apiGroups: [policy], resources: [poddisruptionbudgets], verbs: [get, create, patch]}",
        "{apiGroups: [''], resources: [pods, pods/status, endpoints], verbs: ['*']}",
        "{apiGroups: ['*'], resources: ['*', '*/scale'], verbs: [delete]}",
        "{apiGroups: [events.k8s.io], resources: [events], verbs: [create, patch]}",
        "{apiGroups: [example.com], resources: [widgets], verbs: [get], namespaces: [shop]}",
    ] {
        assert_eq!(check_rule(&rule(yaml), Some(PLUGIN)), Ok(vec![]), "{yaml}");
    }
}

#[test]
fn a_version_in_api_groups_is_refused_with_the_group_alone() {
    let (field, why) = refused("{apiGroups: [policy/v1], resources: [poddisruptionbudgets], verbs: [get]}");
    assert_eq!(field, "apiGroups[0]");
    assert!(why.contains("`policy`"), "{why}");
    for core in ["v1", "core"] {
        let (_, why) = refused(&format!("{{apiGroups: [{core}], resources: [pods], verbs: [get]}}"));
        assert!(why.contains(r#"`""`"#), "{why}");
    }
    let (_, why) = refused("{apiGroups: [Apps], resources: [deployments], verbs: [get]}");
    assert!(why.contains("lowercase"), "{why}");
}

#[test]
fn a_kind_singular_or_short_name_in_resources_is_refused_with_the_plural() {
    for (written, meant) in [
        ("PodDisruptionBudget", "`poddisruptionbudgets`"),
        ("pdb", "`poddisruptionbudgets`"),
        ("Deployment/status", "`deployments/status`"),
        ("Pods", "`pods`"),
        ("Widget", "`widgets`"),
    ] {
        let yaml = format!("{{apiGroups: [policy, apps, '', example.com], resources: [{written}], verbs: [get]}}");
        let (field, why) = refused(&yaml);
        assert_eq!(field, "resources[0]");
        assert!(why.contains(meant), "{written}: {why}");
    }
    let (_, why) = refused("{apiGroups: [apps], resources: [deployment], verbs: [get]}");
    assert!(why.contains("`deployments`"), "{why}");
    // A short name of another group's kind may be a custom resource's plural.
    assert!(check_rule(&rule("{apiGroups: [example.com], resources: [quota], verbs: [get]}"), None).is_ok());
}

#[test]
fn unknown_verbs_are_refused_with_a_suggestion() {
    for (written, meant) in [("Get", "`get`"), ("PATCH", "`patch`"), ("read", "`get`"), ("apply", "`patch`")] {
        let (field, why) = refused(&format!("{{apiGroups: [''], resources: [pods], verbs: [get, {written}]}}"));
        assert_eq!(field, "verbs[1]");
        assert!(why.contains(meant), "{written}: {why}");
    }
    let (_, why) = refused("{apiGroups: [''], resources: [pods], verbs: [frobnicate]}");
    assert!(why.contains("deletecollection"), "lists the verbs: {why}");
}

#[test]
fn verbs_a_plugin_never_sends_refuse_the_rule_or_warn() {
    let (field, why) = refused("{apiGroups: [''], resources: [pods], verbs: [list, watch]}");
    assert_eq!(field, "verbs");
    assert!(why.contains("cache"), "{why}");
    let warnings = check_rule(&rule("{apiGroups: [''], resources: [pods], verbs: [get, list, watch]}"), Some(PLUGIN));
    let warnings = warnings.unwrap();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].contains("`list`, `watch`"), "{warnings:?}");
    // An API server's rule may list and watch.
    let server = check_rule(&rule("{apiGroups: [''], resources: [pods], verbs: [list, watch]}"), None);
    assert_eq!(server, Ok(vec![]));
}

#[test]
fn empty_lists_match_nothing() {
    assert_eq!(refused("{apiGroups: [''], resources: [], verbs: [get]}").0, "resources");
    assert_eq!(refused("{apiGroups: [''], resources: [pods], verbs: [get], namespaces: []}").0, "namespaces");
}

#[test]
fn a_built_in_resource_named_with_groups_that_do_not_serve_it_is_warned_about() {
    let warnings = check_rule(&rule("{apiGroups: [''], resources: [deployments], verbs: [get]}"), None).unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0].contains("`apps`"), "{warnings:?}");
    // A custom group may serve any plural.
    assert_eq!(
        check_rule(&rule("{apiGroups: [example.com], resources: [deployments], verbs: [get]}"), None),
        Ok(vec![])
    );
}
