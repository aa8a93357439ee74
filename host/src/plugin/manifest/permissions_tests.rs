use super::*;
use crate::kube::rbac::Attributes;

fn rule(yaml: &str) -> PolicyRule {
    serde_norway::from_str(yaml).unwrap()
}

fn attrs<'a>(group: &'a str, resource: &'a str, verb: &'a str, ns: Option<&'a str>, name: &'a str) -> Attributes<'a> {
    Attributes { group, resource, verb, namespace: ns, name }
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
        super::super::Manifest::parse(&text, Path::new("/p/plugin.yaml")).unwrap()
    };
    assert_eq!(cap.refuse(&manifest("limits: {memory: 64Mi}\n")), None);
    let refusal = cap.refuse(&manifest("limits: {memory: 4Gi, callTimeout: 5s}\nrequests: {qps: 500}\n")).unwrap();
    for field in
        ["limits.memory 4Gi (at most 128Mi)", "limits.callTimeout 5s (at most 1s)", "requests.qps 500 (at most 10)"]
    {
        assert!(refusal.contains(field), "{refusal}");
    }
}
