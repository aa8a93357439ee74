//! What a plugin may ask of the cluster: RBAC-shaped rules in its manifest, capped by the
//! operator's policy, and its request budget.
//!
//! ```yaml
//! permissions:                      # nothing is allowed without a rule
//!   - apiGroups: ["apps"]
//!     resources: ["deployments"]    # "deployments/status" for the status subresource
//!     verbs: ["get", "patch"]
//!     namespaces: ["shop"]          # wink's addition; absent: every namespace
//!     resourceNames: ["web"]        # optional, as in RBAC (never limits create)
//! requests: { qps: 5, burst: 10, timeout: 10s, perCall: 20 }
//! serviceAccount: team-a/reloader   # impersonated on a real cluster
//! ```
//!
//! Rules are matched as Kubernetes RBAC matches them ([`crate::kube::rbac`]). Recording an
//! Event needs `create` and `patch` on `events` in `events.k8s.io`, as client-go's recorder
//! does.
//!
//! The operator can cap every manifest with a [`Policy`] (`wink run --policy FILE`): a
//! request must then be allowed by the plugin's manifest **and** by the policy's rules for
//! that plugin, and only the service accounts the policy lists may be impersonated. A tenant
//! who writes its own manifest thus cannot grant itself more than the operator allows.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::kube::rbac::Attributes;
pub use crate::kube::rbac::{PolicyRule, allowed};
use crate::kube::rbac_check::check_rule;

/// The verbs a plugin's requests are checked as: it gets, creates, updates, patches and
/// deletes one object at a time, and never lists or watches the API (it reads lists from
/// the cache).
pub(crate) const PLUGIN_VERBS: &[&str] = &["get", "create", "update", "patch", "delete"];

/// Checks a manifest's `permissions` before its plugin runs: the first rule with an entry
/// that can never match is an error `(field, message)` (`permissions[1].verbs[0]`, with
/// what to write instead); otherwise the warnings, for rules that are valid but partly
/// unusable and for Events that could be created but not recorded again.
pub(crate) fn check_permissions(rules: &[PolicyRule]) -> Result<Vec<String>, (String, String)> {
    let mut warnings = Vec::new();
    for (i, rule) in rules.iter().enumerate() {
        let found =
            check_rule(rule, Some(PLUGIN_VERBS)).map_err(|(field, why)| (format!("permissions[{i}].{field}"), why))?;
        warnings.extend(found.into_iter().map(|why| format!("permissions[{i}]: {why}")));
    }
    warnings.extend(event_recording(rules));
    Ok(warnings)
}

/// Recording an Event creates it the first time and patches its count after, as client-go's
/// recorder does: a grant of `create` on Events without `patch` works once per Event only.
fn event_recording(rules: &[PolicyRule]) -> Option<String> {
    rules.iter().enumerate().find_map(|(i, rule)| {
        let namespace = rule.namespaces.as_ref().and_then(|list| list.first()).map_or("default", String::as_str);
        let events = |verb| Attributes {
            group: "events.k8s.io",
            resource: "events",
            verb,
            namespace: Some(namespace),
            name: "e",
        };
        (rule.allows(&events("create")) && !allowed(rules, &events("patch"))).then(|| {
            format!(
                "permissions[{i}]: allows creating Events but no rule allows `patch` on them, which recording an \
                 Event needs too (a repeated Event patches the first one's count)"
            )
        })
    })
}

/// A plugin's request budget.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestLimits {
    /// Sustained requests per second (client-go's default: 5).
    #[serde(default = "default_qps")]
    pub qps: f64,
    /// Requests allowed in a burst above the rate (client-go's default: 10).
    #[serde(default = "default_burst")]
    pub burst: u32,
    /// The longest a request may wait for its answer, rate limiting included.
    #[serde(default = "default_timeout", with = "humantime_serde")]
    #[schemars(schema_with = "super::schema::duration_schema")]
    pub timeout: Duration,
    /// The most requests one handler call may make.
    #[serde(default = "default_per_call")]
    pub per_call: u32,
}

fn default_qps() -> f64 {
    5.0
}
fn default_burst() -> u32 {
    10
}
fn default_timeout() -> Duration {
    Duration::from_secs(10)
}
fn default_per_call() -> u32 {
    20
}

impl Default for RequestLimits {
    fn default() -> Self {
        Self { qps: default_qps(), burst: default_burst(), timeout: default_timeout(), per_call: default_per_call() }
    }
}

/// The largest `requests.qps`, `requests.burst` and `requests.perCall` a manifest may ask for.
pub(crate) const MAX_REQUEST_COUNT: u32 = 1000;
/// The longest `requests.timeout` a manifest may ask for.
pub(crate) const MAX_REQUEST_TIMEOUT: Duration = Duration::from_secs(300);

impl RequestLimits {
    /// Checks that each value is within its bounds: `qps` above 0 and at most
    /// [`MAX_REQUEST_COUNT`] (so is `burst` and `perCall`, each at least 1), `timeout` from
    /// 1 ms to [`MAX_REQUEST_TIMEOUT`]. The error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let max = f64::from(MAX_REQUEST_COUNT);
        if !(self.qps.is_finite() && self.qps > 0.0 && self.qps <= max) {
            return Err(("qps", format!("must be above 0 and at most {MAX_REQUEST_COUNT}, not {}", self.qps)));
        }
        for (field, value) in [("burst", self.burst), ("perCall", self.per_call)] {
            if !(1..=MAX_REQUEST_COUNT).contains(&value) {
                return Err((field, format!("must be from 1 to {MAX_REQUEST_COUNT}, not {value}")));
            }
        }
        if self.timeout < Duration::from_millis(1) || self.timeout > MAX_REQUEST_TIMEOUT {
            let (low, high) = ("1ms", humantime::format_duration(MAX_REQUEST_TIMEOUT));
            let given = humantime::format_duration(self.timeout);
            return Err(("timeout", format!("must be from {low} to {high}, not {given}")));
        }
        Ok(())
    }

    /// Where these limits ask for more than `cap`: `(field, asked, allowed)` for each.
    pub fn over(&self, cap: &RequestCap) -> Vec<(&'static str, String, String)> {
        let mut over = Vec::new();
        if let Some(qps) = cap.qps.filter(|max| self.qps > *max) {
            over.push(("requests.qps", self.qps.to_string(), qps.to_string()));
        }
        if let Some(burst) = cap.burst.filter(|max| self.burst > *max) {
            over.push(("requests.burst", self.burst.to_string(), burst.to_string()));
        }
        if let Some(per_call) = cap.per_call.filter(|max| self.per_call > *max) {
            over.push(("requests.perCall", self.per_call.to_string(), per_call.to_string()));
        }
        if let Some(timeout) = cap.timeout.filter(|max| self.timeout > *max) {
            let show = |d: Duration| humantime::format_duration(d).to_string();
            over.push(("requests.timeout", show(self.timeout), show(timeout)));
        }
        over
    }
}

/// The most of each request limit a plugin may ask for (absent: no cap).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestCap {
    /// The highest `requests.qps`.
    pub qps: Option<f64>,
    /// The highest `requests.burst`.
    pub burst: Option<u32>,
    /// The longest `requests.timeout`.
    #[serde(default, with = "humantime_serde")]
    pub timeout: Option<Duration>,
    /// The highest `requests.perCall`.
    pub per_call: Option<u32>,
}

/// The most of its sandbox limits a plugin may ask for (absent: no cap but the host's).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LimitsCap {
    /// The largest `limits.memory`, in bytes or with a `Ki`, `Mi` or `Gi` suffix.
    pub memory: Option<super::MemorySize>,
    /// The longest `limits.callTimeout`.
    #[serde(default, with = "humantime_serde")]
    pub call_timeout: Option<Duration>,
    /// The most of its request budget.
    #[serde(default)]
    pub requests: RequestCap,
}

impl LimitsCap {
    /// Why `manifest` asks for more than this cap allows, if it does: one sentence naming
    /// every field over it.
    pub fn refuse(&self, manifest: &super::Manifest) -> Option<String> {
        let show = |d: Duration| humantime::format_duration(d).to_string();
        let mut over = manifest.requests.over(&self.requests);
        if let Some(memory) = self.memory.filter(|max| manifest.limits.memory.bytes() > max.bytes()) {
            over.push(("limits.memory", manifest.limits.memory.to_string(), memory.to_string()));
        }
        if let Some(timeout) = self.call_timeout.filter(|max| manifest.limits.call_timeout > *max) {
            over.push(("limits.callTimeout", show(manifest.limits.call_timeout), show(timeout)));
        }
        (!over.is_empty()).then(|| {
            let listed: Vec<String> =
                over.iter().map(|(field, asked, allowed)| format!("{field} {asked} (at most {allowed})")).collect();
            format!("the operator's policy caps {}", listed.join(", "))
        })
    }
}

/// A service account named `namespace/name`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceAccountRef {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

impl std::fmt::Display for ServiceAccountRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl std::str::FromStr for ServiceAccountRef {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(Self { namespace: ns.to_owned(), name: name.to_owned() })
            }
            _ => Err(format!("a service account is written `namespace/name`, not `{s}`")),
        }
    }
}

impl<'de> Deserialize<'de> for ServiceAccountRef {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// The operator's cap on what manifests may claim.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Policy {
    /// The cap of plugins not listed in `plugins`.
    #[serde(default)]
    pub default: PolicyEntry,
    /// The cap of each named plugin.
    #[serde(default)]
    pub plugins: BTreeMap<String, PolicyEntry>,
}

/// What one plugin may claim.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyEntry {
    /// The most the plugin's `permissions` may allow.
    #[serde(default)]
    pub rules: Vec<PolicyRule>,
    /// The service accounts the plugin may name.
    #[serde(default)]
    pub service_accounts: Vec<ServiceAccountRef>,
    /// The most of its sandbox limits and request budget the plugin may ask for.
    #[serde(default)]
    pub limits: LimitsCap,
}

/// A policy file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// It cannot be read.
    #[error("cannot read the policy {}: {source}", path.display())]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// It is not a valid policy.
    #[error("invalid policy {}: {message}", path.display())]
    Invalid {
        /// The file.
        path: std::path::PathBuf,
        /// What is wrong, with the field's path.
        message: String,
    },
}

impl Policy {
    /// Reads a policy file (YAML).
    pub fn load(path: &Path) -> Result<Self, PolicyError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| PolicyError::Read { path: path.to_owned(), source })?;
        let de = serde_norway::Deserializer::from_str(&text);
        let invalid = |message| PolicyError::Invalid { path: path.to_owned(), message };
        let policy: Self =
            serde_path_to_error::deserialize(de).map_err(|e| invalid(format!("{}: {}", e.path(), e.inner())))?;
        let entries = std::iter::once(("default".to_owned(), &policy.default))
            .chain(policy.plugins.iter().map(|(name, entry)| (format!("plugins.{name}"), entry)));
        for (at, entry) in entries {
            for (i, rule) in entry.rules.iter().enumerate() {
                check_rule(rule, None).map_err(|(field, why)| invalid(format!("{at}.rules[{i}].{field}: {why}")))?;
            }
        }
        Ok(policy)
    }

    /// The cap of a plugin.
    pub fn entry(&self, plugin: &str) -> &PolicyEntry {
        self.plugins.get(plugin).unwrap_or(&self.default)
    }
}

/// A plugin's effective permissions: its manifest's rules, capped by the policy if any.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Permissions {
    /// The manifest's rules.
    pub rules: Vec<PolicyRule>,
    /// The operator's cap, when a policy is in force.
    pub cap: Option<PolicyEntry>,
}

/// Why a request is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No rule of the manifest allows it.
    Manifest,
    /// The manifest allows it, the operator's policy does not.
    Policy,
}

impl Permissions {
    /// Checks one request.
    pub fn check(&self, request: &Attributes<'_>) -> Result<(), Refusal> {
        if !allowed(&self.rules, request) {
            return Err(Refusal::Manifest);
        }
        match &self.cap {
            Some(cap) if !allowed(&cap.rules, request) => Err(Refusal::Policy),
            _ => Ok(()),
        }
    }

    /// Whether any rule (and the policy's cap) could allow `verb` on some resource of
    /// `group`: asked before a kind is resolved, so that a plugin that may not use a group
    /// at all makes the host look nothing up (nor remember anything) for it.
    pub fn may_reach(&self, group: &str, verb: &str) -> bool {
        let reaches = |rules: &[PolicyRule]| rules.iter().any(|r| r.reaches(group, verb));
        reaches(&self.rules) && self.cap.as_ref().is_none_or(|cap| reaches(&cap.rules))
    }

    /// Whether the plugin may act as this service account.
    pub fn may_impersonate(&self, account: &ServiceAccountRef) -> bool {
        self.cap.as_ref().is_none_or(|cap| cap.service_accounts.contains(account))
    }
}

#[cfg(test)]
#[path = "permissions_tests.rs"]
mod tests;
