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

#[test]
fn the_policy_caps_what_a_manifest_grants_itself() {
    let manifest = vec![rule("{apiGroups: ['*'], resources: ['*'], verbs: ['*']}")];
    let policy: Policy = serde_norway::from_str(
        "plugins:\n  reloader:\n    rules: [{apiGroups: [apps], resources: [deployments], verbs: [patch]}]\n    serviceAccounts: [team-a/reloader]\n",
    )
    .unwrap();
    let capped = Permissions { rules: manifest.clone(), cap: Some(policy.entry("reloader").clone()) };
    assert_eq!(capped.check(&attrs("apps", "deployments", "patch", Some("a"), "w")), Ok(()));
    assert_eq!(capped.check(&attrs("", "secrets", "get", Some("a"), "s")), Err(Refusal::Policy));
    let other = Permissions { rules: manifest, cap: Some(policy.entry("someone-else").clone()) };
    assert_eq!(
        other.check(&attrs("apps", "deployments", "patch", Some("a"), "w")),
        Err(Refusal::Policy),
        "default: nothing"
    );
    assert!(capped.may_impersonate(&"team-a/reloader".parse().unwrap()));
    assert!(!capped.may_impersonate(&"kube-system/admin".parse().unwrap()));
    let uncapped = Permissions { rules: vec![], cap: None };
    assert_eq!(uncapped.check(&attrs("", "pods", "get", None, "p")), Err(Refusal::Manifest), "nothing by default");
}

#[test]
fn limits_default_like_client_go_and_service_accounts_parse() {
    let limits: RequestLimits = serde_norway::from_str("{}").unwrap();
    assert_eq!((limits.qps, limits.burst), (5.0, 10));
    assert!("no-slash".parse::<ServiceAccountRef>().is_err());
    assert!("a/b/c".parse::<ServiceAccountRef>().is_err());
}

#[test]
fn the_policy_caps_memory_call_time_and_request_budget() {
    let policy: Policy = serde_norway::from_str(
        "default:\n  limits: {memory: 128Mi, callTimeout: 1s, requests: {qps: 10, timeout: 10s}}\n",
    )
    .unwrap();
    let cap = &policy.entry("anyone").limits;
    let manifest = |extra: &str| {
        let text = format!("name: p\ncomponent: p.wasm\nresources:\n  - {{apiVersion: v1, kind: Pod}}\n{extra}");
        super::super::manifest::Manifest::parse(&text, Path::new("/p/plugin.yaml")).unwrap()
    };
    assert_eq!(cap.refuse(&manifest("limits: {memory: 64Mi}\n")), None);
    let refusal = cap.refuse(&manifest("limits: {memory: 4Gi, callTimeout: 5s}\nrequests: {qps: 500}\n")).unwrap();
    for field in
        ["limits.memory 4Gi (at most 128Mi)", "limits.callTimeout 5s (at most 1s)", "requests.qps 500 (at most 10)"]
    {
        assert!(refusal.contains(field), "{refusal}");
    }
}
