//! `wink:plugin/cluster`: a plugin's requests to the cluster, checked and budgeted.
//!
//! Each request goes: the plugin's permissions ([`Permissions`]: its manifest's RBAC-shaped
//! rules, capped by the operator's policy; deny by default) → its budget (requests per
//! handler call, then its rate: QPS and burst, as client-go's client-side limiter) → the
//! [`ClusterClient`] (the embedded cluster, or a real API server as the plugin's service
//! account). A refusal by wink never reaches the server; it is logged with the plugin's name
//! and the rule it lacked, and returned as `not-permitted`.
//!
//! A request blocks the guest's call until its answer (or the plugin's request timeout),
//! but not its neighbours: the guest thread first hands its place in the guest pool to a
//! fresh thread ([`block_in_place`]), and the time spent waiting is given back to the call's
//! CPU deadline by the caller ([`ClusterAccess::take_waited`]).

use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, Instant};

use governor::clock::{Clock, DefaultClock};
use governor::{Quota, RateLimiter};
use tokio_util::sync::CancellationToken;

use crate::cluster::{ClusterClient, EventRecorder, EventSpec, Identity, Request, RequestError, Subresource, Verb};
use crate::informer::Object;
use crate::kube::ResourceDef;
use crate::plugin::manifest::Manifest;
use crate::plugin::manifest::permissions::{Attributes, Permissions, Policy, Refusal, RequestLimits};
use crate::plugin::metrics::PluginMetrics;
use crate::plugin::threads::pool::block_in_place;

use super::refusals::RefusalLog;

/// The most kinds one plugin's link remembers as resolved.
pub(crate) const RESOLVED_KINDS: usize = 256;

type Limiter = RateLimiter<governor::state::NotKeyed, governor::state::InMemoryState, DefaultClock>;

/// What every instance of one plugin shares: its client, permissions, budget and recorder.
pub struct ClusterLink {
    plugin: Arc<str>,
    client: Arc<dyn ClusterClient>,
    runtime: tokio::runtime::Handle,
    permissions: Permissions,
    limits: RequestLimits,
    identity: Option<Identity>,
    limiter: Limiter,
    recorder: EventRecorder,
    /// Kinds already resolved (a kind's resource name and scope do not change while it is
    /// served): most requests then make one hop to the runtime, not two. Only kinds the
    /// cluster serves are kept, at most [`RESOLVED_KINDS`] of them.
    resolved: parking_lot::Mutex<hashlink::LruCache<(String, String), ResourceDef>>,
    /// Its refusals, logged at a bounded rate.
    refusals: RefusalLog,
    /// Where requests are counted (by verb and outcome).
    metrics: Option<PluginMetrics>,
    /// Fires at shutdown: every wait ends at once.
    shutdown: CancellationToken,
}

impl std::fmt::Debug for ClusterLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterLink")
            .field("plugin", &self.plugin)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl ClusterLink {
    /// The link of one plugin. `runtime` runs the client's requests.
    pub fn new(
        plugin: Arc<str>,
        client: Arc<dyn ClusterClient>,
        runtime: tokio::runtime::Handle,
        permissions: Permissions,
        limits: RequestLimits,
        identity: Option<Identity>,
    ) -> Self {
        let period = Duration::from_secs_f64(1.0 / limits.qps.max(1e-3));
        let burst = NonZeroU32::new(limits.burst.max(1)).unwrap_or(NonZeroU32::MIN);
        let quota = Quota::with_period(period).unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN)).allow_burst(burst);
        let recorder = EventRecorder::new(client.clone(), plugin.to_string());
        Self {
            plugin,
            client,
            runtime,
            permissions,
            limits,
            identity,
            limiter: RateLimiter::direct(quota),
            recorder,
            resolved: parking_lot::Mutex::new(hashlink::LruCache::new(RESOLVED_KINDS)),
            refusals: RefusalLog::default(),
            metrics: None,
            shutdown: CancellationToken::new(),
        }
    }

    /// Ending every wait when `shutdown` fires (see [`ClusterContext::with_shutdown`]).
    pub fn with_shutdown(mut self, shutdown: CancellationToken) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Counting its requests in `metrics`.
    pub fn with_metrics(mut self, metrics: PluginMetrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Counts one request's outcome, and how long it took from `started`.
    fn count(&self, verb: &str, resource: &str, error: Option<&RequestError>, started: Instant) {
        if let Some(metrics) = &self.metrics {
            let outcome = error.map_or("ok", RequestError::label);
            metrics.request(verb, outcome);
            metrics.request_duration(verb, resource, outcome, started.elapsed());
        }
    }

    /// The resource a request of `kind` in `api_version` addresses, as kubectl names it
    /// (`deployments.apps`): its resource name once the cluster has resolved the kind, its
    /// lowercase kind before.
    fn resource_of(&self, api_version: &str, kind: &str) -> String {
        let key = (api_version.to_owned(), kind.to_owned());
        let plural = self.resolved.lock().peek(&key).map_or_else(|| kind.to_lowercase(), |info| info.plural.clone());
        match api_version.rsplit_once('/') {
            Some((group, _)) => format!("{plural}.{group}"),
            None => plural,
        }
    }

    /// What the cluster knows of a kind, remembered once the cluster has answered.
    fn resolve(&self, api_version: &str, kind: &str) -> Result<ResourceDef, RequestError> {
        let key = (api_version.to_owned(), kind.to_owned());
        if let Some(info) = self.resolved.lock().get(&key) {
            return Ok(info.clone());
        }
        let client = self.client.clone();
        let (v, k) = key.clone();
        let info = wait(self, self.limits.timeout, async move { client.resolve(&v, &k).await })?;
        self.resolved.lock().insert(key, info.clone());
        Ok(info)
    }

    /// The Event recorder of this plugin.
    pub fn recorder(&self) -> &EventRecorder {
        &self.recorder
    }
}

/// Where a host's plugins send their requests, and the operator's cap on their manifests.
#[derive(Clone)]
pub struct ClusterContext {
    client: Arc<dyn ClusterClient>,
    policy: Option<Arc<Policy>>,
    impersonate: bool,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for ClusterContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterContext").field("policy", &self.policy.is_some()).finish_non_exhaustive()
    }
}

impl ClusterContext {
    /// Requests go to `client`. With `impersonate`, a plugin whose manifest names a service
    /// account makes its requests as that account (a real cluster); without, the name is
    /// only checked against the policy (the embedded cluster has no accounts).
    pub fn new(client: Arc<dyn ClusterClient>, impersonate: bool) -> Self {
        Self { client, policy: None, impersonate, shutdown: CancellationToken::new() }
    }

    /// Cancels every request still waiting (on its rate limit or for an answer) when
    /// `shutdown` fires: the guest's call gets `unavailable` at once, so that wink stops
    /// within its grace period whatever the plugins' budgets and the API server do.
    #[must_use]
    pub fn with_shutdown(mut self, shutdown: CancellationToken) -> Self {
        self.shutdown = shutdown;
        self
    }

    /// Caps every manifest with the operator's `policy`.
    #[must_use]
    pub fn with_policy(mut self, policy: Policy) -> Self {
        self.policy = Some(Arc::new(policy));
        self
    }

    /// The link of the plugin of `manifest`, on the current tokio runtime. Fails when the
    /// manifest names a service account the policy does not allow, or asks for more memory,
    /// call time or requests than the policy's limits allow.
    pub fn link(&self, manifest: &Manifest, metrics: PluginMetrics) -> Result<Arc<ClusterLink>, String> {
        let cap = self.policy.as_ref().map(|p| p.entry(manifest.name.as_str()).clone());
        if let Some(refusal) = cap.as_ref().and_then(|cap| cap.limits.refuse(manifest)) {
            return Err(format!("plugin {}: {refusal}", manifest.name));
        }
        let permissions = Permissions { rules: manifest.permissions.clone(), cap };
        let identity = match &manifest.service_account {
            Some(account) if !permissions.may_impersonate(account) => {
                return Err(format!(
                    "plugin {}: the operator's policy does not allow the service account {account}",
                    manifest.name
                ));
            }
            Some(account) if self.impersonate => Some(Identity::service_account(&account.namespace, &account.name)),
            _ => None,
        };
        let runtime = tokio::runtime::Handle::try_current().map_err(|e| e.to_string())?;
        let name: Arc<str> = manifest.name.as_str().into();
        let link = ClusterLink::new(name, self.client.clone(), runtime, permissions, manifest.requests, identity);
        Ok(Arc::new(link.with_metrics(metrics).with_shutdown(self.shutdown.clone())))
    }
}

/// The `cluster` import's state in one instance's store.
#[derive(Debug, Default)]
pub struct ClusterAccess {
    link: Option<Arc<ClusterLink>>,
    requests_this_call: u32,
    waited: Duration,
}

impl ClusterAccess {
    /// Access through `link`; `None`: every request is `unavailable` (e.g. `wink check`).
    pub fn new(link: Option<Arc<ClusterLink>>) -> Self {
        Self { link, requests_this_call: 0, waited: Duration::ZERO }
    }

    /// Starts a handler call: its request count starts from zero.
    pub fn begin_call(&mut self) {
        self.requests_this_call = 0;
        self.waited = Duration::ZERO;
    }

    /// The time spent waiting on the cluster since the last call of this method.
    pub fn take_waited(&mut self) -> Duration {
        std::mem::take(&mut self.waited)
    }

    fn link(&self) -> Result<Arc<ClusterLink>, RequestError> {
        self.link
            .clone()
            .ok_or_else(|| RequestError::Unavailable("this host has no cluster to send requests to".into()))
    }

    /// Budgets, checks and executes one request.
    pub fn execute(&mut self, request: Request) -> Result<Option<Object>, RequestError> {
        let link = self.link()?;
        let started = Instant::now();
        let client = link.client.clone();
        let verb = request.verb.rbac();
        let (api_version, kind) = (request.api_version.clone(), request.kind.clone());
        let result = self.admit(&link, request, started).and_then(|request| {
            send(&link, started, move |identity| async move { client.execute(request, identity.as_ref()).await })
        });
        self.waited += started.elapsed();
        link.count(verb, &link.resource_of(&api_version, &kind), result.as_ref().err(), started);
        result
    }

    /// Records an Event (checked as `create` and `patch` of `events.k8s.io` `events`).
    pub fn record_event(&mut self, spec: EventSpec) -> Result<(), RequestError> {
        let link = self.link()?;
        let started = Instant::now();
        let namespace = spec.regarding.namespace.clone().unwrap_or_else(|| "default".to_owned());
        let check = |verb| Attributes {
            group: "events.k8s.io",
            resource: "events",
            verb,
            namespace: Some(&namespace),
            name: "",
        };
        let recorder = link.recorder.clone();
        let result = self
            .spend(&link, started)
            .and_then(|()| spec.check())
            .and_then(|()| self.permit(&link, &check("create")))
            .and_then(|()| self.permit(&link, &check("patch")))
            .and_then(|()| {
                send(&link, started, move |identity| async move { recorder.record(spec, identity.as_ref()).await })
            });
        self.waited += started.elapsed();
        link.count("record_event", "events.events.k8s.io", result.as_ref().err(), started);
        result
    }

    /// What a request must pass before it is sent, in this order: the budget (a refused
    /// request is a request too), the names it addresses, a rule for its API group and verb
    /// (before anything is resolved for it), the kind's scope (a cluster-scoped request has
    /// no namespace, whatever the guest sent; a namespaced one must have one), then the
    /// rules on the very attributes the request is sent with. Returns the request as sent.
    fn admit(&mut self, link: &ClusterLink, mut request: Request, started: Instant) -> Result<Request, RequestError> {
        self.spend(link, started)?;
        request.check()?;
        let group = request.api_version.rsplit_once('/').map_or("", |(group, _)| group);
        if !link.permissions.may_reach(group, request.verb.rbac()) {
            let attributes = Attributes {
                group,
                resource: &request.kind,
                verb: request.verb.rbac(),
                namespace: request.namespace.as_deref(),
                name: &request.name,
            };
            return Err(self.refuse(link, &attributes, Refusal::Manifest));
        }
        let info = link.resolve(&request.api_version, &request.kind)?;
        if !info.namespaced {
            request.namespace = None;
        } else if request.namespace.is_none() {
            return Err(RequestError::BadRequest(format!(
                "{} {} is namespaced: the request needs a namespace",
                request.api_version, request.kind
            )));
        }
        let resource = match request.subresource {
            Some(Subresource::Status) => format!("{}/status", info.plural),
            None => info.plural.clone(),
        };
        let attributes = Attributes {
            group: &info.group,
            resource: &resource,
            verb: request.verb.rbac(),
            namespace: request.namespace.as_deref(),
            name: &request.name,
        };
        self.permit(link, &attributes)?;
        if request.is_apply() {
            // An apply that finds no object creates it: the API server allows that only to
            // whom may create, and so does wink (decided by the cluster, atomically).
            request.may_create = link.permissions.check(&Attributes { verb: "create", ..attributes }).is_ok();
        }
        Ok(request)
    }

    fn permit(&self, link: &ClusterLink, attributes: &Attributes<'_>) -> Result<(), RequestError> {
        link.permissions.check(attributes).map_err(|refusal| self.refuse(link, attributes, refusal))
    }

    /// Logs (at a bounded rate) and returns the refusal of `attributes`.
    fn refuse(&self, link: &ClusterLink, attributes: &Attributes<'_>, refusal: Refusal) -> RequestError {
        let by = match refusal {
            Refusal::Manifest => "no rule of its manifest's `permissions` allows it",
            Refusal::Policy => "the operator's policy does not allow it",
        };
        // Escaped and bounded once, for the log line and the guest's error alike.
        let shown = crate::plugin::contract::guest_text::GuestText::new(&attributes.to_string());
        link.refusals.refused(&link.plugin, &shown, by);
        RequestError::NotPermitted(format!("plugin {} may not {}: {by}", link.plugin, shown.as_str()))
    }

    /// Counts a request against the per-call budget, then waits for the rate limiter as long
    /// as the request's timeout allows.
    fn spend(&mut self, link: &ClusterLink, started: Instant) -> Result<(), RequestError> {
        if self.requests_this_call >= link.limits.per_call {
            return Err(RequestError::RateLimited(format!(
                "plugin {} made {} requests in this call, its limit (requests.perCall)",
                link.plugin, link.limits.per_call
            )));
        }
        self.requests_this_call += 1;
        loop {
            match link.limiter.check() {
                Ok(()) => return Ok(()),
                Err(not_until) => {
                    let wait_for = not_until.wait_time_from(DefaultClock::default().now());
                    if started.elapsed() + wait_for > link.limits.timeout {
                        return Err(RequestError::RateLimited(format!(
                            "plugin {} is over its request rate ({} per second, burst {}); the next request is allowed in {}",
                            link.plugin,
                            link.limits.qps,
                            link.limits.burst,
                            humantime::format_duration(round_ms(wait_for))
                        )));
                    }
                    pause(link, wait_for)?;
                }
            }
        }
    }
}

fn round_ms(d: Duration) -> Duration {
    Duration::from_millis(d.as_millis().max(1) as u64)
}

/// Sends an admitted request, as the plugin's identity, within what is left of its timeout
/// since `started`.
fn send<T, F>(
    link: &ClusterLink,
    started: Instant,
    request: impl FnOnce(Option<Identity>) -> F,
) -> Result<T, RequestError>
where
    T: Send + 'static,
    F: Future<Output = Result<T, RequestError>> + Send + 'static,
{
    let deadline = link.limits.timeout.saturating_sub(started.elapsed());
    wait(link, deadline, request(link.identity.clone()))
}

/// Waits `pause` for the rate limiter, out of the guest pool; ends at once at shutdown.
fn pause(link: &ClusterLink, pause: Duration) -> Result<(), RequestError> {
    // The wait's own timeout is past the pause: only shutdown ends it early.
    wait(link, pause + Duration::from_secs(1), async move {
        tokio::time::sleep(pause).await;
        Ok(())
    })
}

/// The error of a request cancelled because wink is stopping.
fn shutting_down() -> RequestError {
    RequestError::Unavailable("wink is shutting down: the request was cancelled".into())
}

/// Runs `request` on the link's runtime and blocks this (guest) thread, out of the guest
/// pool, until it answers, `timeout` passes or wink shuts down; a request still running
/// then is cancelled.
fn wait<T: Send + 'static>(
    link: &ClusterLink,
    timeout: Duration,
    request: impl Future<Output = Result<T, RequestError>> + Send + 'static,
) -> Result<T, RequestError> {
    if link.shutdown.is_cancelled() {
        return Err(shutting_down());
    }
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    let shutdown = link.shutdown.clone();
    let task = link.runtime.spawn(async move {
        let answer = tokio::select! {
            answer = request => answer,
            () = shutdown.cancelled() => Err(shutting_down()),
        };
        let _ = tx.send(answer);
    });
    // Most answers of the embedded cluster come at once: only a request still unanswered
    // after a moment takes this thread out of the guest pool.
    let quick = timeout.min(Duration::from_micros(200));
    let answer = match rx.recv_timeout(quick) {
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => block_in_place(|| rx.recv_timeout(timeout - quick)),
        answer => answer,
    };
    match answer {
        Ok(result) => result,
        Err(_) => {
            task.abort();
            Err(RequestError::TimedOut(format!("no answer within {}", humantime::format_duration(timeout))))
        }
    }
}

/// The requests of the WIT calls, built from their arguments.
pub mod requests {
    use super::*;

    /// The `(apiVersion, kind, namespace, name)` of an object's JSON.
    pub fn identify(json: &str) -> Result<(String, String, Option<String>, String), RequestError> {
        let value: serde_json::Value =
            serde_json::from_str(json).map_err(|e| RequestError::BadRequest(format!("the object is not JSON: {e}")))?;
        let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
        let api_version = value.get("apiVersion").and_then(text).unwrap_or_default();
        let kind = value.get("kind").and_then(text).unwrap_or_default();
        if api_version.is_empty() || kind.is_empty() {
            return Err(RequestError::BadRequest("the object has no apiVersion or kind".into()));
        }
        let meta = value.get("metadata");
        let namespace = meta.and_then(|m| m.get("namespace")).and_then(text).filter(|n| !n.is_empty());
        let name = meta.and_then(|m| m.get("name")).and_then(text).unwrap_or_default();
        Ok((api_version, kind, namespace, name))
    }

    /// A create, update or status update of the object `json`.
    pub fn with_body(verb: Verb, json: String, subresource: Option<Subresource>) -> Result<Request, RequestError> {
        let (api_version, kind, namespace, name) = identify(&json)?;
        if name.is_empty() && verb != Verb::Create {
            return Err(RequestError::BadRequest("the object has no metadata.name".into()));
        }
        Ok(Request::new(verb, api_version, kind, namespace, name).with_subresource(subresource).with_body(json))
    }
}

#[cfg(test)]
#[path = "cluster_tests.rs"]
mod tests;
