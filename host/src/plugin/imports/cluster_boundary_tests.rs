//! The tenant boundary on plugins' requests: the kind's scope decides, names never reach a
//! URL unchecked, refusals cost budget and remember nothing, shutdown ends every wait.

use std::sync::atomic::Ordering;

use super::*;
use crate::cluster::{EventSpec, EventType, PatchType, Regarding};
use crate::plugin::manifest::permissions::PolicyEntry;

fn everything_in(namespace: &str) -> Vec<PolicyRule> {
    vec![rule(&format!("{{apiGroups: ['*'], resources: ['*'], verbs: ['*'], namespaces: [{namespace}]}}"))]
}

fn everything() -> Vec<PolicyRule> {
    vec![rule("{apiGroups: ['*'], resources: ['*'], verbs: ['*']}")]
}

fn request(verb: Verb, api_version: &str, kind: &str, namespace: Option<&str>, name: &str) -> Request {
    Request::new(verb, api_version, kind, namespace.map(str::to_owned), name)
}

fn refused(result: Result<Option<Object>, RequestError>) -> String {
    match result {
        Err(RequestError::NotPermitted(message)) => message,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_namespaced_grant_never_reaches_a_cluster_scoped_kind_whatever_namespace_the_guest_names() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let mut access = access(client.clone(), everything_in("tenant-a"), RequestLimits::default(), &rt);
    let delete = request(Verb::Delete(Default::default()), "v1", "Namespace", Some("tenant-a"), "tenant-b");
    let message = refused(access.execute(delete));
    assert!(message.contains("may not delete namespaces (core) named tenant-b"), "{message}");
    let binding = r#"{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRoleBinding",
        "metadata":{"name":"own-it","namespace":"tenant-a"},
        "roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}}"#;
    let create = requests::with_body(Verb::Create, binding.to_owned(), None).unwrap();
    refused(access.execute(create));
    let relabel = request(Verb::Patch(PatchType::Merge), "v1", "Namespace", Some("tenant-a"), "tenant-b")
        .with_body(r#"{"metadata":{"labels":{"owner":"a"}}}"#);
    refused(access.execute(relabel));
    refused(access.execute(request(Verb::Get, "v1", "Namespace", Some("tenant-a"), "tenant-b")));
    assert!(client.requests.lock().is_empty(), "nothing reached the cluster");
}

#[test]
fn a_cluster_scoped_request_is_sent_without_the_namespace_the_guest_named() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let mut access = access(client.clone(), everything(), RequestLimits::default(), &rt);
    access.execute(request(Verb::Get, "v1", "Namespace", Some("tenant-a"), "tenant-b")).unwrap();
    assert_eq!(client.received.lock()[0].namespace, None, "checked and sent as cluster-scoped");
}

#[test]
fn the_policy_cap_is_not_bypassed_by_naming_a_namespace() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let cap = PolicyEntry { rules: everything_in("tenant-a"), ..PolicyEntry::default() };
    let permissions = Permissions { rules: everything(), cap: Some(cap) };
    let link = ClusterLink::new(
        "tenant".into(),
        client.clone(),
        rt.handle().clone(),
        permissions,
        RequestLimits::default(),
        None,
    );
    let mut access = ClusterAccess::new(Some(Arc::new(link)));
    let message =
        refused(access.execute(request(Verb::Delete(Default::default()), "v1", "Namespace", Some("tenant-a"), "x")));
    assert!(message.contains("the operator's policy"), "{message}");
    access.execute(request(Verb::Get, "v1", "ConfigMap", Some("tenant-a"), "x")).expect("within the cap");
}

#[test]
fn a_namespaced_kind_needs_a_namespace() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let mut access = access(client.clone(), everything(), RequestLimits::default(), &rt);
    let err = access.execute(request(Verb::Get, "apps/v1", "Deployment", None, "web")).unwrap_err();
    assert!(matches!(&err, RequestError::BadRequest(m) if m.contains("needs a namespace")), "{err}");
    assert!(client.requests.lock().is_empty());
}

#[test]
fn names_that_would_address_something_else_never_reach_the_cluster() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let limits = RequestLimits { per_call: 1000, qps: 1000.0, burst: 1000, ..RequestLimits::default() };
    let mut access = access(client.clone(), everything(), limits, &rt);
    for name in ["web/status", "../secrets/db", "..", ".", "web/", "", "a%2Fb", "line\nbreak", &"x".repeat(254)] {
        let err = access.execute(request(Verb::Get, "apps/v1", "Deployment", Some("shop"), name)).unwrap_err();
        assert!(
            matches!(&err, RequestError::Invalid { causes, .. } if causes[0].field == "metadata.name"),
            "{name:?}: {err}"
        );
    }
    for namespace in ["../kube-system", "Shop", "a/b", ""] {
        let err = access.execute(request(Verb::Get, "apps/v1", "Deployment", Some(namespace), "web")).unwrap_err();
        assert!(
            matches!(&err, RequestError::Invalid { causes, .. } if causes[0].field == "metadata.namespace"),
            "{namespace:?}"
        );
    }
    for (api_version, kind) in [("apps/../v1", "Deployment"), ("../v1", "Pod"), ("v1", "Pod/status"), ("v1", "")] {
        let err = access.execute(request(Verb::Get, api_version, kind, Some("shop"), "web")).unwrap_err();
        assert!(matches!(err, RequestError::Invalid { .. }), "{api_version} {kind}");
    }
    assert!(client.requests.lock().is_empty(), "{:?}", client.requests.lock());
    // A name a URL would read otherwise, but that some kinds allow (RBAC names are path
    // segments), is sent: the client encodes it.
    access.execute(request(Verb::Get, "apps/v1", "Deployment", Some("shop"), "?limit=500")).unwrap();
}

#[test]
fn an_apply_may_create_only_with_leave_to_create() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let patch_only = vec![rule("{apiGroups: [''], resources: [configmaps], verbs: [patch]}")];
    let mut access = access(client.clone(), patch_only, RequestLimits::default(), &rt);
    let apply = || {
        let apply = PatchType::Apply { field_manager: "tester".into(), force: false };
        request(Verb::Patch(apply), "v1", "ConfigMap", Some("shop"), "settings").with_body("{}")
    };
    access.execute(apply()).unwrap();
    let merge = request(Verb::Patch(PatchType::Merge), "v1", "ConfigMap", Some("shop"), "settings");
    access.execute(merge.with_body("{}")).unwrap();
    let rules = vec![rule("{apiGroups: [''], resources: [configmaps], verbs: [patch, create]}")];
    let mut both = super::access(client.clone(), rules, RequestLimits::default(), &rt);
    both.execute(apply()).unwrap();
    let may_create: Vec<bool> = client.received.lock().iter().map(|r| r.may_create).collect();
    assert_eq!(may_create, [false, true, true], "only an apply needs `create` to create");
}

#[test]
fn refused_requests_are_counted_against_the_budget() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let limits = RequestLimits { per_call: 3, ..RequestLimits::default() };
    let mut access = access(client.clone(), vec![], limits, &rt);
    access.begin_call();
    for _ in 0..3 {
        refused(access.execute(get("web")));
    }
    let err = access.execute(get("web")).unwrap_err();
    assert!(matches!(&err, RequestError::RateLimited(m) if m.contains("requests.perCall")), "{err}");
}

#[test]
fn a_plugin_resolves_nothing_it_may_not_use_and_remembers_a_bounded_number_of_kinds() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let limits = RequestLimits { per_call: 1000, qps: 1000.0, burst: 1000, ..RequestLimits::default() };
    let mut nothing = access(client.clone(), vec![], limits, &rt);
    let mut only_apps =
        access(client.clone(), vec![rule("{apiGroups: [apps], resources: ['*'], verbs: [get]}")], limits, &rt);
    for i in 0..500 {
        nothing.begin_call();
        only_apps.begin_call();
        let made_up = format!("made-up-{i}.example.com/v1");
        refused(nothing.execute(request(Verb::Get, &made_up, "Widget", Some("shop"), "x")));
        refused(only_apps.execute(request(Verb::Get, &made_up, "Widget", Some("shop"), "x")));
    }
    assert_eq!(client.resolves.load(Ordering::Relaxed), 0, "no rule names these groups: nothing was looked up");
    let mut anything = access(client.clone(), everything(), limits, &rt);
    for i in 0..RESOLVED_KINDS + 100 {
        anything.begin_call();
        anything.execute(request(Verb::Get, "example.com/v1", &format!("Widget{i}"), Some("shop"), "x")).unwrap();
    }
    let link = anything.link.clone().unwrap();
    assert_eq!(link.resolved.lock().len(), RESOLVED_KINDS);
}

#[test]
fn shutdown_cancels_requests_waiting_for_an_answer_or_for_their_rate() {
    let rt = runtime();
    let shutdown = CancellationToken::new();
    let stalled = Arc::new(Recording { stall: true, ..Recording::default() });
    let limits = RequestLimits { timeout: Duration::from_secs(300), qps: 0.01, burst: 1, per_call: 10 };
    let link = |client: Arc<Recording>| {
        let permissions = Permissions { rules: everything(), cap: None };
        let link = ClusterLink::new("tester".into(), client, rt.handle().clone(), permissions, limits, None);
        ClusterAccess::new(Some(Arc::new(link.with_shutdown(shutdown.clone()))))
    };
    let (waiting_answer, mut waiting_rate) = (link(stalled), link(Arc::new(Recording::default())));
    waiting_rate.execute(get("first")).expect("the burst");
    let (tx, rx) = std::sync::mpsc::channel();
    for mut access in [waiting_answer, waiting_rate] {
        let tx = tx.clone();
        std::thread::spawn(move || tx.send(access.execute(get("second"))));
    }
    shutdown.cancel();
    for _ in 0..2 {
        let answer = rx.recv_timeout(Duration::from_secs(30)).expect("every wait ended at shutdown");
        assert!(matches!(&answer, Err(RequestError::Unavailable(m)) if m.contains("shutting down")), "{answer:?}");
    }
}

#[test]
fn an_event_over_the_api_servers_bounds_is_refused_before_it_is_sent_or_kept() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let rules = vec![rule("{apiGroups: [events.k8s.io], resources: [events], verbs: [create, patch]}")];
    let mut access = access(client.clone(), rules, RequestLimits::default(), &rt);
    let event = |reason: String, note: String| EventSpec {
        regarding: Regarding {
            api_version: "v1".into(),
            kind: "Pod".into(),
            namespace: Some("shop".into()),
            name: "web".into(),
            uid: String::new(),
        },
        event_type: EventType::Warning,
        reason,
        action: "Check".into(),
        note,
    };
    let err = access.record_event(event("R".repeat(4 << 20), String::new())).unwrap_err();
    assert!(matches!(&err, RequestError::Invalid { causes, .. } if causes[0].field == "reason"), "{err}");
    let err = access.record_event(event("Checked".into(), "n".repeat(1025))).unwrap_err();
    assert!(matches!(&err, RequestError::Invalid { causes, .. } if causes[0].field == "note"), "{err}");
    assert!(client.requests.lock().is_empty());
}

#[test]
fn a_manifest_asking_more_than_the_policys_limits_is_refused_at_deploy() {
    let rt = runtime();
    let _entered = rt.enter();
    let policy: Policy = serde_norway::from_str("default:\n  limits: {memory: 32Mi, requests: {burst: 5}}\n").unwrap();
    let context = ClusterContext::new(Arc::new(Recording::default()), false).with_policy(policy);
    let text = "name: greedy\ncomponent: p.wasm\nresources:\n  - {apiVersion: v1, kind: Pod}\nlimits: {memory: 4Gi}\n";
    let manifest = Manifest::parse(text, std::path::Path::new("/p/plugin.yaml")).unwrap();
    let err = context.link(&manifest, PluginMetrics::detached("greedy")).unwrap_err();
    assert!(err.contains("limits.memory 4Gi (at most 32Mi)") && err.contains("requests.burst 10 (at most 5)"), "{err}");
}
