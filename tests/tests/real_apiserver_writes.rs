//! Plugins' writes (the `cluster` import, after admission: a [`Request`] executed by a
//! [`ClusterClient`]) have the same outcomes on the embedded cluster as on a real
//! kube-apiserver: one table of cases ([`CASES`]) — get, create, update, every patch type,
//! delete with preconditions and propagation, the status subresource, recording an Event —
//! run through a [`KubeClient`] to the real server (`wink_tests::control_plane`) and through
//! an [`EmbeddedClient`] over a [`MemoryCluster`]. Per case: success (and the fields it
//! shows) or the error's variant, and for `Invalid` the causes' fields and reasons on both.
//! Where the embedded cluster knowingly differs, the case says how and why (`known`).
//!
//! Run with `cargo xtask test -- --test real_apiserver_writes`, or
//! `env $(cargo xtask control-plane) cargo test -p wink-tests --test real_apiserver_writes`.

use std::sync::Arc;

use anyhow::{Result, ensure};
use serde_json::{Value, json};
use wink::cluster::{
    ClusterClient, DeleteOptions, EventRecorder, EventSpec, EventType, Identity, KubeClient, PatchType, Preconditions,
    PropagationPolicy, Regarding, Request, RequestError, Subresource, Verb,
};
use wink::embedded::{EmbeddedClient, MemoryCluster, MemorySourceOptions};
use wink_tests::control_plane::ControlPlane;

/// What a case does.
enum Action {
    /// Executes a request (as ServiceAccount `nobody` of the namespace when `as_nobody`).
    Request { request: fn(&str) -> Request, as_nobody: bool },
    /// Records an Event through an [`EventRecorder`] over the client.
    Event(fn(&str) -> EventSpec),
}

/// What a case should come to.
#[derive(Clone, Copy, Debug)]
enum Expect {
    /// Success; the returned object as the case's `show` prints it (`removed`: none).
    Ok(&'static str),
    /// An error of this [`RequestError::label`].
    Err(&'static str),
}

/// A case where the embedded cluster knowingly differs from the real server.
struct Known {
    embedded: Expect,
    why: &'static str,
}

/// One case of the table.
struct Case {
    name: &'static str,
    /// Requests that must succeed first (each case has objects of its own).
    setup: fn(&str) -> Vec<Request>,
    action: Action,
    /// What the real server answers (and the embedded cluster, unless `known`).
    expect: Expect,
    /// Prints the fields of a returned object the case compares.
    show: fn(&Value) -> String,
    known: Option<Known>,
}

/// The outcome of a case on one cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Outcome {
    Ok(String),
    Err { label: &'static str, causes: Vec<(String, String)>, message: String },
}

/// Executes a request as the admin.
const fn act(request: fn(&str) -> Request) -> Action {
    Action::Request { request, as_nobody: false }
}

fn request(verb: Verb, api_version: &str, kind: &str, ns: &str, name: &str, body: Value) -> Request {
    let body = if body.is_null() { String::new() } else { body.to_string() };
    Request::new(verb, api_version, kind, Some(ns.to_owned()), name).with_body(body)
}

fn config_map(ns: &str, name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns}, "data": data})
}

fn create_cm(ns: &str, name: &str) -> Request {
    request(Verb::Create, "v1", "ConfigMap", ns, "", config_map(ns, name, json!({"a": "1"})))
}

fn cm(verb: Verb, ns: &str, name: &str, body: Value) -> Request {
    request(verb, "v1", "ConfigMap", ns, name, body)
}

fn deployment(ns: &str, name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": ns},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "app", "image": "example/app:1"}]}}}})
}

fn create_deployment(ns: &str, name: &str) -> Request {
    request(Verb::Create, "apps/v1", "Deployment", ns, "", deployment(ns, name))
}

fn delete(preconditions: Preconditions, propagation_policy: Option<PropagationPolicy>) -> Verb {
    Verb::Delete(DeleteOptions { preconditions, propagation_policy, grace_period_seconds: None })
}

fn apply(manager: &str, force: bool) -> Verb {
    Verb::Patch(PatchType::Apply { field_manager: manager.to_owned(), force })
}

fn status(request: Request) -> Request {
    request.with_subresource(Some(Subresource::Status))
}

fn none(_: &str) -> Vec<Request> {
    Vec::new()
}

fn data(o: &Value) -> String {
    o["data"].to_string()
}

fn nothing(_: &Value) -> String {
    String::new()
}

/// Finalizers, and whether the object is being deleted.
fn deleting(o: &Value) -> String {
    format!("{} deleting={}", o["metadata"]["finalizers"], o["metadata"]["deletionTimestamp"].is_string())
}

fn containers(o: &Value) -> String {
    let names = o["spec"]["template"]["spec"]["containers"].as_array().into_iter().flatten();
    names.map(|c| c["name"].as_str().unwrap_or("?")).collect::<Vec<_>>().join(",")
}

fn replicas(o: &Value) -> String {
    format!("spec={} status={}", o["spec"]["replicas"], o["status"]["replicas"])
}

fn event(ns: &str, name: &str, reason: &str) -> EventSpec {
    EventSpec {
        regarding: Regarding {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: Some(ns.to_owned()),
            name: name.to_owned(),
            uid: String::new(),
        },
        event_type: EventType::Normal,
        reason: reason.to_owned(),
        action: "Reconcile".into(),
        note: "checked".into(),
    }
}

/// The cases, each with objects of its own in the test's namespace.
const CASES: &[Case] = &[
    Case {
        name: "get an object",
        setup: |ns| vec![create_cm(ns, "get")],
        action: act(|ns| cm(Verb::Get, ns, "get", Value::Null)),
        expect: Expect::Ok(r#"{"a":"1"}"#),
        show: data,
        known: None,
    },
    Case {
        name: "get a missing object",
        setup: none,
        action: act(|ns| cm(Verb::Get, ns, "missing", Value::Null)),
        expect: Expect::Err("not_found"),
        show: nothing,
        known: None,
    },
    Case {
        name: "create",
        setup: none,
        action: act(|ns| create_cm(ns, "create")),
        expect: Expect::Ok(r#"{"a":"1"}"#),
        show: data,
        known: None,
    },
    Case {
        name: "create an existing name",
        setup: |ns| vec![create_cm(ns, "twice")],
        action: act(|ns| create_cm(ns, "twice")),
        expect: Expect::Err("already_exists"),
        show: nothing,
        known: None,
    },
    Case {
        name: "create with an invalid name",
        setup: none,
        action: act(|ns| create_cm(ns, "Not_A_Name")),
        expect: Expect::Err("invalid"),
        show: nothing,
        known: None,
    },
    Case {
        name: "create with an invalid data key",
        setup: none,
        action: act(|ns| cm(Verb::Create, ns, "", config_map(ns, "bad-key", json!({"no spaces": "1"})))),
        expect: Expect::Err("invalid"),
        show: nothing,
        known: None,
    },
    Case {
        name: "create a Deployment without selector or template",
        setup: none,
        action: act(|ns| {
            let body = json!({"apiVersion": "apps/v1", "kind": "Deployment",
                    "metadata": {"name": "empty", "namespace": ns}, "spec": {"replicas": 1}});
            request(Verb::Create, "apps/v1", "Deployment", ns, "", body)
        }),
        expect: Expect::Err("invalid"),
        show: nothing,
        known: Some(Known {
            embedded: Expect::Ok(""),
            why: "the embedded cluster checks metadata, ConfigMap and Secret keys, not the specs of workloads",
        }),
    },
    Case {
        name: "create in a missing namespace",
        setup: none,
        action: act(|_| create_cm("no-such-namespace", "orphan")),
        expect: Expect::Err("not_found"),
        show: nothing,
        known: Some(Known {
            embedded: Expect::Ok(""),
            why: "the embedded cluster does not require an object's namespace to exist (a directory source's objects name theirs freely)",
        }),
    },
    Case {
        name: "update without a resourceVersion",
        setup: |ns| vec![create_cm(ns, "update")],
        action: act(|ns| cm(Verb::Update, ns, "update", config_map(ns, "update", json!({"a": "2"})))),
        expect: Expect::Ok(r#"{"a":"2"}"#),
        show: data,
        known: None,
    },
    Case {
        name: "update from a stale resourceVersion",
        setup: |ns| vec![create_cm(ns, "stale")],
        action: act(|ns| {
            let mut body = config_map(ns, "stale", json!({"a": "2"}));
            body["metadata"]["resourceVersion"] = "1".into();
            cm(Verb::Update, ns, "stale", body)
        }),
        expect: Expect::Err("conflict"),
        show: nothing,
        known: None,
    },
    Case {
        name: "update a missing object",
        setup: none,
        action: act(|ns| cm(Verb::Update, ns, "never", config_map(ns, "never", json!({})))),
        expect: Expect::Err("not_found"),
        show: nothing,
        known: None,
    },
    Case {
        name: "merge patch",
        setup: |ns| vec![create_cm(ns, "merge")],
        action: act(|ns| cm(Verb::Patch(PatchType::Merge), ns, "merge", json!({"data": {"b": "2"}}))),
        expect: Expect::Ok(r#"{"a":"1","b":"2"}"#),
        show: data,
        known: None,
    },
    Case {
        name: "merge patch of a missing object",
        setup: none,
        action: act(|ns| cm(Verb::Patch(PatchType::Merge), ns, "absent", json!({"data": {"b": "2"}}))),
        expect: Expect::Err("not_found"),
        show: nothing,
        known: None,
    },
    Case {
        name: "JSON patch",
        setup: |ns| vec![create_cm(ns, "json")],
        action: act(|ns| {
            let ops = json!([{"op": "add", "path": "/data/b", "value": "2"}, {"op": "remove", "path": "/data/a"}]);
            cm(Verb::Patch(PatchType::Json), ns, "json", ops)
        }),
        expect: Expect::Ok(r#"{"b":"2"}"#),
        show: data,
        known: None,
    },
    Case {
        name: "JSON patch whose test fails",
        setup: |ns| vec![create_cm(ns, "json-test")],
        action: act(|ns| {
            let ops = json!([{"op": "test", "path": "/data/a", "value": "other"}]);
            cm(Verb::Patch(PatchType::Json), ns, "json-test", ops)
        }),
        expect: Expect::Err("invalid"),
        show: nothing,
        known: None,
    },
    Case {
        name: "strategic merge patch merges containers by name",
        setup: |ns| vec![create_deployment(ns, "strategic")],
        action: act(|ns| {
            let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "sidecar", "image": "example/side:1"}]}}}});
            request(Verb::Patch(PatchType::StrategicMerge), "apps/v1", "Deployment", ns, "strategic", patch)
        }),
        expect: Expect::Ok("sidecar,app"),
        show: containers,
        known: None,
    },
    Case {
        name: "server-side apply creates",
        setup: none,
        action: act(|ns| cm(apply("wink-a", false), ns, "applied", config_map(ns, "applied", json!({"a": "1"})))),
        expect: Expect::Ok(r#"{"a":"1"}"#),
        show: data,
        known: None,
    },
    Case {
        name: "server-side apply of another manager's field conflicts",
        setup: |ns| vec![cm(apply("wink-a", false), ns, "contested", config_map(ns, "contested", json!({"a": "1"})))],
        action: act(|ns| cm(apply("wink-b", false), ns, "contested", config_map(ns, "contested", json!({"a": "2"})))),
        expect: Expect::Err("conflict"),
        show: nothing,
        known: None,
    },
    Case {
        name: "server-side apply forced takes the field",
        setup: |ns| vec![cm(apply("wink-a", false), ns, "forced", config_map(ns, "forced", json!({"a": "1"})))],
        action: act(|ns| cm(apply("wink-b", true), ns, "forced", config_map(ns, "forced", json!({"a": "2"})))),
        expect: Expect::Ok(r#"{"a":"2"}"#),
        show: data,
        known: None,
    },
    Case {
        name: "delete",
        setup: |ns| vec![create_cm(ns, "delete")],
        action: act(|ns| cm(delete(Preconditions::default(), None), ns, "delete", Value::Null)),
        expect: Expect::Ok("removed"),
        show: nothing,
        known: None,
    },
    Case {
        name: "delete a missing object",
        setup: none,
        action: act(|ns| cm(delete(Preconditions::default(), None), ns, "gone", Value::Null)),
        expect: Expect::Err("not_found"),
        show: nothing,
        known: None,
    },
    Case {
        name: "delete with a wrong uid precondition",
        setup: |ns| vec![create_cm(ns, "uid")],
        action: act(|ns| {
            let preconditions = Preconditions { uid: Some("not-its-uid".into()), resource_version: None };
            cm(delete(preconditions, None), ns, "uid", Value::Null)
        }),
        expect: Expect::Err("conflict"),
        show: nothing,
        known: None,
    },
    Case {
        name: "delete with a stale resourceVersion precondition",
        setup: |ns| vec![create_cm(ns, "rv")],
        action: act(|ns| {
            let preconditions = Preconditions { uid: None, resource_version: Some("1".into()) };
            cm(delete(preconditions, None), ns, "rv", Value::Null)
        }),
        expect: Expect::Err("conflict"),
        show: nothing,
        known: None,
    },
    Case {
        name: "delete orphaning dependents",
        setup: |ns| vec![create_cm(ns, "orphan")],
        action: act(|ns| {
            cm(delete(Preconditions::default(), Some(PropagationPolicy::Orphan)), ns, "orphan", Value::Null)
        }),
        expect: Expect::Ok(r#"["orphan"] deleting=true"#),
        show: deleting,
        known: None,
    },
    Case {
        name: "delete in the foreground",
        setup: |ns| vec![create_cm(ns, "foreground")],
        action: act(|ns| {
            cm(delete(Preconditions::default(), Some(PropagationPolicy::Foreground)), ns, "foreground", Value::Null)
        }),
        expect: Expect::Ok(r#"["foregroundDeletion"] deleting=true"#),
        show: deleting,
        known: None,
    },
    Case {
        name: "delete in the background",
        setup: |ns| vec![create_cm(ns, "background")],
        action: act(|ns| {
            cm(delete(Preconditions::default(), Some(PropagationPolicy::Background)), ns, "background", Value::Null)
        }),
        expect: Expect::Ok("removed"),
        show: nothing,
        known: None,
    },
    Case {
        name: "delete an object with a finalizer",
        setup: |ns| {
            let mut body = config_map(ns, "finalized", json!({}));
            body["metadata"]["finalizers"] = json!(["example.com/keep"]);
            vec![cm(Verb::Create, ns, "", body)]
        },
        action: act(|ns| cm(delete(Preconditions::default(), None), ns, "finalized", Value::Null)),
        expect: Expect::Ok(r#"["example.com/keep"] deleting=true"#),
        show: deleting,
        known: None,
    },
    Case {
        name: "status update keeps the spec",
        setup: |ns| vec![create_deployment(ns, "status")],
        action: act(|ns| {
            let mut body = deployment(ns, "status");
            body["spec"]["replicas"] = 5.into();
            body["status"] = json!({"replicas": 1, "observedGeneration": 1});
            status(request(Verb::Update, "apps/v1", "Deployment", ns, "status", body))
        }),
        expect: Expect::Ok("spec=1 status=1"),
        show: replicas,
        known: None,
    },
    Case {
        name: "status merge patch ignores the spec",
        setup: |ns| vec![create_deployment(ns, "status-patch")],
        action: act(|ns| {
            let patch = json!({"spec": {"replicas": 7}, "status": {"replicas": 1}});
            status(request(Verb::Patch(PatchType::Merge), "apps/v1", "Deployment", ns, "status-patch", patch))
        }),
        expect: Expect::Ok("spec=1 status=1"),
        show: replicas,
        known: None,
    },
    Case {
        name: "status of a kind without the subresource",
        setup: |ns| vec![create_cm(ns, "no-status")],
        action: act(|ns| status(cm(Verb::Patch(PatchType::Merge), ns, "no-status", json!({"data": {"b": "2"}})))),
        expect: Expect::Err("not_found"),
        show: nothing,
        known: None,
    },
    Case {
        name: "record an Event",
        setup: |ns| vec![create_cm(ns, "evented")],
        action: Action::Event(|ns| event(ns, "evented", "Checked")),
        expect: Expect::Ok("recorded"),
        show: nothing,
        known: None,
    },
    Case {
        name: "record an Event in a missing namespace",
        setup: none,
        action: Action::Event(|_| event("no-such-namespace", "x", "Checked")),
        expect: Expect::Err("not_found"),
        show: nothing,
        known: Some(Known {
            embedded: Expect::Ok("recorded"),
            why: "the embedded cluster does not require an object's namespace to exist",
        }),
    },
    Case {
        name: "a write RBAC does not grant",
        setup: none,
        action: Action::Request { request: |ns| create_cm(ns, "forbidden"), as_nobody: true },
        expect: Expect::Err("forbidden"),
        show: nothing,
        known: Some(Known {
            embedded: Expect::Ok(""),
            why: "the embedded cluster has no accounts: EmbeddedClient ignores identities, and wink's own \
                  permission check (NotPermitted, before any client) is what guards it",
        }),
    },
];

/// Runs every case against `client` in namespace `ns`.
async fn run_cases(client: Arc<dyn ClusterClient>, ns: &str) -> Result<Vec<Outcome>> {
    let nobody = Identity::service_account(ns, "nobody");
    let recorder = EventRecorder::new(client.clone(), "wink-tests".into());
    let mut outcomes = Vec::new();
    for case in CASES {
        for setup in (case.setup)(ns) {
            let what = setup.to_string();
            client.execute(setup, None).await.map_err(|e| anyhow::anyhow!("{}: setup {what}: {e}", case.name))?;
        }
        let result = match &case.action {
            Action::Request { request, as_nobody } => {
                let identity = (*as_nobody).then_some(&nobody);
                client.execute(request(ns), identity).await.map(|o| match o {
                    Some(obj) => (case.show)(&obj.to_value().unwrap_or_default()),
                    None => "removed".to_owned(),
                })
            }
            Action::Event(spec) => recorder.record(spec(ns), None).await.map(|()| "recorded".to_owned()),
        };
        outcomes.push(match result {
            Ok(shown) => Outcome::Ok(shown),
            Err(e) => {
                let mut causes = match &e {
                    RequestError::Invalid { causes, .. } => {
                        causes.iter().map(|c| (c.field.clone(), c.reason.clone())).collect()
                    }
                    _ => Vec::new(),
                };
                causes.sort();
                Outcome::Err { label: e.label(), causes, message: e.to_string() }
            }
        });
    }
    Ok(outcomes)
}

/// An outcome for a failure message.
fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok(shown) => format!("ok {shown:?}"),
        Outcome::Err { label, causes, message } => format!("{label} {causes:?} ({message})"),
    }
}

/// Whether `outcome` is what `expect` says.
fn comes_to(outcome: &Outcome, expect: Expect) -> bool {
    match (outcome, expect) {
        (Outcome::Ok(shown), Expect::Ok(want)) => shown == want,
        (Outcome::Err { label, .. }, Expect::Err(want)) => *label == want,
        _ => false,
    }
}

/// Every case comes to what the table says on the real server and on the embedded cluster,
/// and errors of the same case carry the same causes on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_writes_match_the_embedded_cluster() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let ns = cp.namespace("writes").await?;
    let real: Arc<dyn ClusterClient> = Arc::new(KubeClient::new(cp.admin_config().await?)?);

    let cluster = Arc::new(MemoryCluster::new(MemorySourceOptions::default()));
    let embedded: Arc<dyn ClusterClient> = Arc::new(EmbeddedClient::new(cluster));
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
    embedded
        .execute(Request::new(Verb::Create, "v1", "Namespace", None, "").with_body(namespace.to_string()), None)
        .await?;

    let on_real = run_cases(real, &ns).await?;
    let on_embedded = run_cases(embedded, &ns).await?;
    let mut problems = Vec::new();
    for ((case, real), embedded) in CASES.iter().zip(&on_real).zip(&on_embedded) {
        if !comes_to(real, case.expect) {
            problems.push(format!(
                "{}: the real server answered {}, the table says {:?}",
                case.name,
                describe(real),
                case.expect
            ));
        }
        if let Some(known) = &case.known {
            eprintln!("known difference, {}: {}", case.name, known.why);
        }
        let want = case.known.as_ref().map_or(case.expect, |k| k.embedded);
        if !comes_to(embedded, want) {
            problems.push(format!(
                "{}: the embedded cluster answered {}, expected {want:?}",
                case.name,
                describe(embedded)
            ));
        }
        if let (Outcome::Err { causes: a, .. }, Outcome::Err { causes: b, .. }) = (real, embedded)
            && a != b
        {
            let (real, embedded) = (describe(real), describe(embedded));
            problems.push(format!("{}: causes differ: real {real}, embedded {embedded}", case.name));
        }
    }
    ensure!(problems.is_empty(), "{} of {} cases differ:\n{}", problems.len(), CASES.len(), problems.join("\n"));
    Ok(())
}
