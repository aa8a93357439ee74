use super::*;

fn rule(yaml: &str) -> PolicyRule {
    serde_norway::from_str(yaml).unwrap()
}

fn attrs<'a>(group: &'a str, resource: &'a str, verb: &'a str, ns: Option<&'a str>, name: &'a str) -> Attributes<'a> {
    Attributes { group, resource, verb, namespace: ns, name }
}

#[test]
fn a_rule_needs_group_resource_and_verb_to_match() {
    let r = rule("{apiGroups: [apps], resources: [deployments], verbs: [get, patch]}");
    assert!(r.allows(&attrs("apps", "deployments", "patch", Some("a"), "web")));
    assert!(!r.allows(&attrs("apps", "deployments", "delete", Some("a"), "web")), "verb");
    assert!(!r.allows(&attrs("", "deployments", "get", Some("a"), "web")), "group");
    assert!(!r.allows(&attrs("apps", "statefulsets", "get", Some("a"), "web")), "resource");
    assert!(!r.allows(&attrs("apps", "deployments/status", "patch", Some("a"), "web")), "a subresource is named apart");
}

#[test]
fn wildcards_match_anything_and_star_slash_matches_a_subresource_of_any_resource() {
    let r = rule("{apiGroups: ['*'], resources: ['*/status'], verbs: ['*']}");
    assert!(r.allows(&attrs("apps", "deployments/status", "update", None, "x")));
    assert!(!r.allows(&attrs("apps", "deployments", "update", None, "x")));
}

#[test]
fn resource_names_restrict_named_verbs_and_never_allow_create() {
    let r = rule("{apiGroups: [''], resources: [configmaps], verbs: ['*'], resourceNames: [settings]}");
    assert!(r.allows(&attrs("", "configmaps", "update", Some("a"), "settings")));
    assert!(!r.allows(&attrs("", "configmaps", "update", Some("a"), "other")));
    assert!(!r.allows(&attrs("", "configmaps", "create", Some("a"), "settings")), "RBAC: names never limit create");
}

#[test]
fn namespaces_restrict_and_exclude_cluster_scoped_objects() {
    let r = rule("{apiGroups: [''], resources: ['*'], verbs: [get], namespaces: [shop]}");
    assert!(r.allows(&attrs("", "pods", "get", Some("shop"), "p")));
    assert!(!r.allows(&attrs("", "pods", "get", Some("kube-system"), "p")));
    assert!(!r.allows(&attrs("", "namespaces", "get", None, "shop")));
}
