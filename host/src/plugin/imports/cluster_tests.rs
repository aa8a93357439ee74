//! The checks a request passes before it reaches a cluster: permissions, budgets, timeouts.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use parking_lot::Mutex;

use super::*;
use crate::cluster::Verb;
use crate::kube::ResourceDef;
use crate::plugin::manifest::permissions::PolicyRule;

/// Records the requests it receives; answers with the request's object, or never.
#[derive(Default)]
struct Recording {
    requests: Mutex<Vec<String>>,
    /// The requests as received.
    received: Mutex<Vec<Request>>,
    /// How many kinds it was asked to resolve.
    resolves: std::sync::atomic::AtomicUsize,
    stall: bool,
}

/// The cluster-scoped kinds of the recording cluster; every other kind is namespaced.
const CLUSTER_SCOPED: &[&str] = &["Namespace", "ClusterRole", "ClusterRoleBinding", "Node"];

#[async_trait]
impl ClusterClient for Recording {
    async fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, RequestError> {
        self.resolves.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let namespaced = !CLUSTER_SCOPED.contains(&kind);
        Ok(ResourceDef::custom(api_version, kind, &format!("{}s", kind.to_lowercase()), namespaced))
    }

    async fn execute(&self, request: Request, _: Option<&Identity>) -> Result<Option<Object>, RequestError> {
        self.requests.lock().push(request.to_string());
        self.received.lock().push(request.clone());
        if self.stall {
            std::future::pending::<()>().await;
        }
        let json = format!(
            r#"{{"apiVersion":"{}","kind":"{}","metadata":{{"namespace":"{}","name":"{}"}}}}"#,
            request.api_version,
            request.kind,
            request.namespace.unwrap_or_default(),
            request.name
        );
        Ok(Some(Object::from_string(json).unwrap()))
    }
}

fn rule(yaml: &str) -> PolicyRule {
    serde_norway::from_str(yaml).unwrap()
}

fn access(
    client: Arc<Recording>,
    rules: Vec<PolicyRule>,
    limits: RequestLimits,
    rt: &tokio::runtime::Runtime,
) -> ClusterAccess {
    let permissions = Permissions { rules, cap: None };
    let link = ClusterLink::new("tester".into(), client, rt.handle().clone(), permissions, limits, None);
    ClusterAccess::new(Some(Arc::new(link)))
}

fn get(name: &str) -> Request {
    Request::new(Verb::Get, "apps/v1", "Deployment", Some("shop".into()), name)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
}

#[test]
fn nothing_is_permitted_by_default_and_a_refusal_never_reaches_the_cluster() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let mut access = access(client.clone(), vec![], RequestLimits::default(), &rt);
    let err = access.execute(get("web")).unwrap_err();
    assert!(
        matches!(&err, RequestError::NotPermitted(m) if m.contains("may not get Deployment (apps) in namespace shop named web")),
        "{err}"
    );
    assert!(client.requests.lock().is_empty(), "no request left the host");
}

#[test]
fn a_rule_lets_its_requests_through_and_no_others() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let rules = vec![rule("{apiGroups: [apps], resources: [deployments], verbs: [get]}")];
    let mut access = access(client.clone(), rules, RequestLimits::default(), &rt);
    assert_eq!(access.execute(get("web")).unwrap().unwrap().key(), "shop/web");
    let mut delete = get("web");
    delete.verb = Verb::Delete(Default::default());
    assert!(matches!(access.execute(delete), Err(RequestError::NotPermitted(_))));
    let mut status = get("web");
    status.subresource = Some(Subresource::Status);
    assert!(
        matches!(access.execute(status), Err(RequestError::NotPermitted(_))),
        "deployments/status is its own resource"
    );
    assert_eq!(*client.requests.lock(), ["get apps/v1/Deployment shop/web"]);
}

#[test]
fn a_call_makes_at_most_its_budget_of_requests() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let rules = vec![rule("{apiGroups: ['*'], resources: ['*'], verbs: ['*']}")];
    let limits = RequestLimits { per_call: 2, qps: 1000.0, burst: 1000, ..RequestLimits::default() };
    let mut access = access(client.clone(), rules, limits, &rt);
    access.begin_call();
    access.execute(get("a")).unwrap();
    access.execute(get("b")).unwrap();
    let err = access.execute(get("c")).unwrap_err();
    assert!(matches!(&err, RequestError::RateLimited(m) if m.contains("requests.perCall")), "{err}");
    access.begin_call();
    access.execute(get("d")).expect("the next call has its own budget");
    assert_eq!(client.requests.lock().len(), 3);
}

#[test]
fn requests_over_the_rate_are_refused_when_they_could_not_wait_within_the_timeout() {
    let rt = runtime();
    let client = Arc::new(Recording::default());
    let rules = vec![rule("{apiGroups: ['*'], resources: ['*'], verbs: ['*']}")];
    let limits = RequestLimits { qps: 0.01, burst: 2, timeout: Duration::from_secs(1), per_call: 100 };
    let mut access = access(client.clone(), rules, limits, &rt);
    access.execute(get("a")).unwrap();
    access.execute(get("b")).unwrap();
    let err = access.execute(get("c")).unwrap_err();
    assert!(matches!(&err, RequestError::RateLimited(m) if m.contains("over its request rate")), "{err}");
    assert_eq!(client.requests.lock().len(), 2, "the burst went through, the third did not");
}

#[test]
fn a_request_without_an_answer_times_out_and_the_wait_is_accounted() {
    let rt = runtime();
    let client = Arc::new(Recording { stall: true, ..Recording::default() });
    let rules = vec![rule("{apiGroups: ['*'], resources: ['*'], verbs: ['*']}")];
    let limits = RequestLimits { timeout: Duration::from_millis(200), ..RequestLimits::default() };
    let mut access = access(client, rules, limits, &rt);
    let err = access.execute(get("a")).unwrap_err();
    assert!(matches!(err, RequestError::TimedOut(_)), "{err}");
    let waited = access.take_waited();
    assert!(waited >= Duration::from_millis(200), "{waited:?}");
    assert_eq!(access.take_waited(), Duration::ZERO, "taken once");
}

#[test]
fn without_a_cluster_every_request_is_unavailable() {
    let mut access = ClusterAccess::new(None);
    assert!(matches!(access.execute(get("a")), Err(RequestError::Unavailable(_))));
}

#[path = "cluster_boundary_tests.rs"]
mod boundary;
