//! The plugin manifest: the YAML file beside a component that says what the plugin watches,
//! what it may read, and how it is sandboxed.
//!
//! ```yaml
//! name: label-auditor                    # required; DNS label, unique per host
//! component: label-auditor.wasm          # required; relative to the manifest's folder
//! resources:                             # required; at least one
//!   - apiVersion: v1
//!     kind: Pod
//!     namespaces: [default, shop]        # optional; absent = all namespaces
//!     labelSelector: "app, tier in (web,db)"
//!     resyncPeriod: 30s                  # optional; 0 or absent = never
//! limits:
//!   memory: 64Mi                         # default 64Mi
//!   callTimeout: 1s                      # default 1s
//! failurePolicy:
//!   onError: retry                       # retry | skip; default retry
//!   quarantineAfter: 5                   # default 5; 0 = never quarantine
//! cache:                                 # optional read grants beyond `resources`
//!   - apiVersion: apps/v1
//!     kind: ReplicaSet
//!     namespaces: [shop]
//! wasi: false                            # reserved; `true` is rejected for now
//! config: {any: yaml}                    # optional; handed to `init` as JSON
//! ```
//!
//! Every struct denies unknown fields (a typo is an error, not a silently ignored setting),
//! and every error names the manifest file and the field, with the line and column when the
//! YAML parser knows them. Like Extism's manifest, limits are plain fields with written-down
//! defaults.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::plugin::manifest::permissions::{PolicyRule, RequestLimits, ServiceAccountRef};

use crate::kube::LabelSelector;

/// The file name the loader looks for in a plugin folder.
pub(crate) const MANIFEST_FILE: &str = "plugin.yaml";

/// The default memory cap: 64 MiB.
pub(crate) const DEFAULT_MEMORY: MemorySize = MemorySize(64 << 20);
/// The default per-call deadline: 1 s.
pub(crate) const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(1);
/// The default number of consecutive traps before a plugin is quarantined.
pub(crate) const DEFAULT_QUARANTINE_AFTER: u32 = 5;
/// The largest memory cap a manifest may ask for: 4 GiB, all of a 32-bit linear memory.
pub(crate) const MAX_MEMORY: u64 = 4 << 30;

/// Why a manifest could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The manifest file could not be read.
    #[error("cannot read plugin manifest {}: {source}", path.display())]
    Read {
        /// The manifest file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The YAML is malformed, a field is unknown, missing or has the wrong type or value.
    #[error("{}: field `{field}`: {source}", path.display())]
    Parse {
        /// The manifest file.
        path: PathBuf,
        /// The path of the offending field, e.g. `resources[0].labelSelector` (`.` for the
        /// top level: a missing or unknown top-level field is named in the message).
        field: String,
        /// The YAML error, with line and column when known.
        #[source]
        source: serde_norway::Error,
    },
    /// The manifest parses but a field's value breaks a rule (an empty list, a duplicate…).
    #[error("{}: field `{field}`: {message}", path.display())]
    Invalid {
        /// The manifest file.
        path: PathBuf,
        /// The path of the offending field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// `wasi: true`: WASI is reserved for a later version and not granted to any plugin yet.
    #[error("{}: field `wasi`: WASI is not supported yet; plugins run without WASI (remove `wasi: true`)", path.display())]
    WasiNotSupported {
        /// The manifest file.
        path: PathBuf,
    },
}

/// A plugin's manifest.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Manifest {
    /// The plugin's name: a DNS label (lowercase alphanumerics and `-`, at most 63
    /// characters), unique per host. Logs and metrics carry it.
    pub name: PluginName,
    /// The component file, relative to the manifest's folder.
    pub component: PathBuf,
    /// The resources the plugin watches (at least one). The plugin may also read them from the
    /// cache, in the same namespaces. A reconciler leaves it out: its `reconcile` section
    /// names them.
    #[serde(default)]
    pub resources: Vec<WatchedResource>,
    /// A reconciler's primary, owned and watched resources and work queue (the plugin
    /// implements the `reconciler-plugin` world).
    #[serde(default)]
    pub reconcile: Option<Reconcile>,
    /// Sandbox limits; each has a default.
    #[serde(default)]
    pub limits: Limits,
    /// What the host does when the plugin traps; defaults: retry, quarantine after 5.
    #[serde(default)]
    pub failure_policy: FailurePolicy,
    /// Cache read grants beyond the watched resources; default none.
    #[serde(default)]
    pub cache: Vec<CacheGrant>,
    /// Reserved: whether the plugin gets WASI. Default `false`; `true` is rejected for now.
    #[serde(default)]
    pub wasi: bool,
    /// Free-form configuration handed to the plugin's `init` as JSON; `null` when absent.
    #[serde(default)]
    pub config: Option<serde_json::Value>,
    /// What the plugin may ask of the cluster (RBAC-shaped rules); nothing when absent.
    #[serde(default)]
    pub permissions: Vec<PolicyRule>,
    /// The plugin's request budget: rate, burst, timeout, requests per call.
    #[serde(default)]
    pub requests: RequestLimits,
    /// The service account (`namespace/name`) the plugin's requests are made as on a real
    /// cluster (Kubernetes impersonation).
    #[serde(default)]
    pub service_account: Option<ServiceAccountRef>,
    /// With scale-out (`wink run --shard-group`): the plugin runs on every member, each
    /// delivering a slice of its objects, split by a hash of their namespace or of
    /// namespace/name. Absent: the plugin runs whole on one member.
    #[serde(default)]
    pub shard_by: Option<ShardBy>,
    /// The folder the manifest was read from (not a YAML field).
    #[serde(skip)]
    base_dir: PathBuf,
    /// The manifest file (not a YAML field).
    #[serde(skip)]
    path: PathBuf,
}

/// A resource the plugin watches, with its filters.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WatchedResource {
    /// `apiVersion` of the resource, e.g. `v1` or `apps/v1`.
    pub api_version: String,
    /// `kind` of the resource, e.g. `Pod`.
    pub kind: String,
    /// Only objects in these namespaces; absent = all namespaces. Must not be empty when
    /// given.
    #[serde(default)]
    pub namespaces: Option<Vec<String>>,
    /// Only objects whose labels match this selector (Kubernetes syntax, e.g.
    /// `app, tier in (web,db), !canary`); absent = all objects.
    #[serde(default)]
    pub label_selector: Option<LabelSelector>,
    /// How often every cached object is redelivered as an update with old == new
    /// (humantime, e.g. `30s`, `5m`); `0` or absent = never.
    #[serde(default, with = "humantime_serde", skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "self::schema::optional_duration_schema")]
    pub resync_period: Option<Duration>,
}

impl WatchedResource {
    /// The resync period, `None` when resync is off (absent or zero).
    pub fn resync(&self) -> Option<Duration> {
        self.resync_period.filter(|d| !d.is_zero())
    }

    /// The resource's identity.
    pub fn resource(&self) -> ResourceRef {
        ResourceRef { api_version: self.api_version.clone(), kind: self.kind.clone() }
    }
}

/// A cache read grant: the plugin may read this resource (in these namespaces).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CacheGrant {
    /// `apiVersion` of the resource, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind` of the resource, e.g. `ReplicaSet`.
    pub kind: String,
    /// Only these namespaces; absent = all namespaces. Must not be empty when given.
    #[serde(default)]
    pub namespaces: Option<Vec<String>>,
}

impl CacheGrant {
    /// The resource's identity.
    pub fn resource(&self) -> ResourceRef {
        ResourceRef { api_version: self.api_version.clone(), kind: self.kind.clone() }
    }
}

/// Sandbox limits.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Limits {
    /// The most linear memory the plugin may use (all its memories together), with a `Ki`,
    /// `Mi` or `Gi` suffix or in bytes; default `64Mi`, at most `4Gi`. Growing past it traps.
    /// The host reserves it from its plugin memory budget (per live instance, or at deploy
    /// for plugins started as they deploy) and refuses a plugin that does not fit, whose limit is above its instance pool's largest memory, or whose component needs
    /// more before its first call (memory minimums and data segments).
    #[serde(default = "default_memory")]
    pub memory: MemorySize,
    /// The deadline of each call into the plugin (humantime, e.g. `500ms`); default `1s`.
    /// A call still running then is interrupted (a trap).
    #[serde(default = "default_call_timeout", with = "humantime_serde")]
    #[schemars(schema_with = "self::schema::duration_schema")]
    pub call_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { memory: DEFAULT_MEMORY, call_timeout: DEFAULT_CALL_TIMEOUT }
    }
}

fn default_memory() -> MemorySize {
    DEFAULT_MEMORY
}

fn default_call_timeout() -> Duration {
    DEFAULT_CALL_TIMEOUT
}

fn default_quarantine_after() -> u32 {
    DEFAULT_QUARANTINE_AFTER
}

/// What the host does when a call traps.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FailurePolicy {
    /// What to do with the event whose call trapped; default `retry`.
    #[serde(default)]
    pub on_error: OnError,
    /// After this many consecutive traps the plugin is quarantined: it gets no more events
    /// until it is reloaded. Default 5; `0` = never quarantine.
    #[serde(default = "default_quarantine_after")]
    pub quarantine_after: u32,
}

impl Default for FailurePolicy {
    fn default() -> Self {
        Self { on_error: OnError::default(), quarantine_after: DEFAULT_QUARANTINE_AFTER }
    }
}

/// How a shardable plugin's objects are split across the members of a shard group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ShardBy {
    /// By namespace: each namespace's objects go to one member (cluster-scoped objects are
    /// one slice).
    Namespace,
    /// By namespace/name: objects spread evenly, one member each.
    Object,
}

/// What to do with an event whose call trapped.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OnError {
    /// Deliver the event again later, with backoff (the newest state of its key).
    #[default]
    Retry,
    /// Log it and move on to the next event.
    Skip,
}

/// A plugin name: a DNS label (`[a-z0-9]([-a-z0-9]*[a-z0-9])?`, at most 63 characters).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PluginName(String);

impl PluginName {
    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PluginName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for PluginName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        check_dns_label(s).map(|()| Self(s.to_owned())).map_err(|why| format!("invalid plugin name `{s}`: {why}"))
    }
}

impl<'de> Deserialize<'de> for PluginName {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

/// A byte size written with a binary suffix (`512Ki`, `64Mi`, `1Gi`) or in plain bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct MemorySize(pub u64);

impl MemorySize {
    /// The size in bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

impl fmt::Display for MemorySize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        match b {
            _ if b != 0 && b.is_multiple_of(1 << 30) => write!(f, "{}Gi", b >> 30),
            _ if b != 0 && b.is_multiple_of(1 << 20) => write!(f, "{}Mi", b >> 20),
            _ if b != 0 && b.is_multiple_of(1 << 10) => write!(f, "{}Ki", b >> 10),
            _ => write!(f, "{b}"),
        }
    }
}

impl FromStr for MemorySize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = parse_byte_size(s)?;
        Self::checked(bytes).map_err(|why| format!("invalid memory size `{s}`: {why}"))
    }
}

/// A byte count for people: a whole number of the largest binary unit that fits when it is
/// one (`64Mi`), else that unit with one decimal (`22.9Mi`); bytes below 1 KiB.
pub(crate) fn format_bytes(bytes: u64) -> String {
    let Some((suffix, shift)) =
        [("Ti", 40), ("Gi", 30), ("Mi", 20), ("Ki", 10)].into_iter().find(|(_, s)| bytes >> s > 0)
    else {
        return bytes.to_string();
    };
    if bytes.is_multiple_of(1 << shift) {
        return format!("{}{suffix}", bytes >> shift);
    }
    format!("{:.1}{suffix}", bytes as f64 / (1u64 << shift) as f64)
}

/// A byte size written with a binary suffix (`512Ki`, `64Mi`, `1Gi`, `2Ti`) or in plain bytes.
pub fn parse_byte_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, shift) = [("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40)]
        .iter()
        .find_map(|(suffix, shift)| t.strip_suffix(suffix).map(|d| (d, *shift)))
        .unwrap_or((t, 0));
    let n: u64 = digits.parse().map_err(|_| {
        format!("invalid memory size `{s}`: expected a whole number with a Ki, Mi or Gi suffix (e.g. 64Mi) or bytes")
    })?;
    n.checked_shl(shift).filter(|b| b >> shift == n).ok_or_else(|| format!("memory size `{s}` overflows"))
}

impl MemorySize {
    fn checked(bytes: u64) -> Result<Self, String> {
        if bytes == 0 {
            return Err("must be greater than zero".into());
        }
        if bytes > MAX_MEMORY {
            return Err("must be at most 4Gi (a 32-bit linear memory)".into());
        }
        Ok(Self(bytes))
    }
}

impl<'de> Deserialize<'de> for MemorySize {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = MemorySize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a memory size such as 64Mi, or a number of bytes")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<MemorySize, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<MemorySize, E> {
                MemorySize::checked(v).map_err(|why| E::custom(format!("invalid memory size {v}: {why}")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<MemorySize, E> {
                let v =
                    u64::try_from(v).map_err(|_| E::custom(format!("invalid memory size {v}: must be positive")))?;
                self.visit_u64(v)
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// A resource's identity: `apiVersion` and `kind`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ResourceRef {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `ReplicaSet`.
    pub kind: String,
}

impl fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.api_version, self.kind)
    }
}

impl Manifest {
    /// Reads, parses and validates a manifest file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self, ManifestError> {
        let path = path.as_ref();
        let text =
            std::fs::read_to_string(path).map_err(|source| ManifestError::Read { path: path.to_owned(), source })?;
        Self::parse(&text, path)
    }

    /// Parses and validates manifest text; `path` is the file it came from (errors name it
    /// and the component path is resolved against its folder).
    pub fn parse(text: &str, path: &Path) -> Result<Self, ManifestError> {
        // Parsed plainly first; the field path of an error (which tracking every field costs
        // a good share of a parse to find) only when there is one.
        let mut manifest: Manifest = match serde_norway::from_str(text) {
            Ok(manifest) => manifest,
            Err(_) => {
                let de = serde_norway::Deserializer::from_str(text);
                serde_path_to_error::deserialize(de).map_err(|e| ManifestError::Parse {
                    path: path.to_owned(),
                    field: e.path().to_string(),
                    source: e.into_inner(),
                })?
            }
        };
        manifest.path = path.to_owned();
        manifest.base_dir = path.parent().map(Path::to_owned).unwrap_or_default();
        if let Some(reconcile) = &manifest.reconcile {
            if !manifest.resources.is_empty() {
                let why = "a reconciler watches what `reconcile` names (for, owns, watches): remove `resources`";
                return Err(manifest.invalid("resources", why));
            }
            reconcile.validate().map_err(|(field, message)| manifest.invalid(field, message))?;
            manifest.resources = reconcile.resources();
        }
        manifest.validate()?;
        Ok(manifest)
    }

    /// The manifest file this was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The component file: `component` resolved against the manifest's folder.
    pub fn component_path(&self) -> PathBuf {
        self.base_dir.join(&self.component)
    }

    /// `config` as JSON text for `init`: `null` when absent.
    pub fn config_json(&self) -> String {
        self.config.as_ref().map_or_else(|| "null".to_owned(), serde_json::Value::to_string)
    }

    /// What may not work although the manifest is valid: permission rules partly unusable
    /// ([`permissions::check_permissions`]), owned resources a reconciler may not create.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = permissions::check_permissions(&self.permissions).unwrap_or_default();
        if let Some(reconcile) = &self.reconcile {
            warnings.extend(reconcile.owned_without_create(&self.permissions));
        }
        warnings
    }

    fn invalid(&self, field: impl Into<String>, message: impl Into<String>) -> ManifestError {
        ManifestError::Invalid { path: self.path.clone(), field: field.into(), message: message.into() }
    }

    fn validate(&self) -> Result<(), ManifestError> {
        if self.wasi {
            return Err(ManifestError::WasiNotSupported { path: self.path.clone() });
        }
        if self.component.as_os_str().is_empty() {
            return Err(self.invalid("component", "must name the component file"));
        }
        if self.component.is_absolute() {
            return Err(self.invalid("component", "must be relative to the manifest's folder"));
        }
        if self.resources.is_empty() {
            return Err(self.invalid("resources", "must list at least one resource to watch"));
        }
        if self.limits.call_timeout.is_zero() {
            return Err(self.invalid("limits.callTimeout", "must be greater than zero"));
        }
        if let Err((field, message)) = self.requests.validate() {
            return Err(self.invalid(format!("requests.{field}"), message));
        }
        permissions::check_permissions(&self.permissions).map_err(|(field, message)| self.invalid(field, message))?;
        let mut seen = BTreeSet::new();
        for (i, r) in self.resources.iter().enumerate() {
            self.validate_resource(&format!("resources[{i}]"), &r.api_version, &r.kind, r.namespaces.as_deref())?;
            if !seen.insert(r.resource()) {
                return Err(self.invalid(format!("resources[{i}]"), format!("{} is watched twice", r.resource())));
            }
        }
        let mut seen = BTreeSet::new();
        for (i, g) in self.cache.iter().enumerate() {
            self.validate_resource(&format!("cache[{i}]"), &g.api_version, &g.kind, g.namespaces.as_deref())?;
            if !seen.insert(g.resource()) {
                return Err(self.invalid(format!("cache[{i}]"), format!("{} is granted twice", g.resource())));
            }
        }
        Ok(())
    }

    fn validate_resource(
        &self,
        at: &str,
        api_version: &str,
        kind: &str,
        namespaces: Option<&[String]>,
    ) -> Result<(), ManifestError> {
        check_api_version(api_version).map_err(|why| self.invalid(format!("{at}.apiVersion"), why))?;
        if kind.is_empty() || !kind.bytes().all(|c| c.is_ascii_alphanumeric()) {
            return Err(self.invalid(format!("{at}.kind"), format!("`{kind}` is not a kind (e.g. `Pod`)")));
        }
        if let Some(namespaces) = namespaces {
            if namespaces.is_empty() {
                return Err(self.invalid(format!("{at}.namespaces"), "is empty; omit the field for all namespaces"));
            }
            for (j, ns) in namespaces.iter().enumerate() {
                check_dns_label(ns).map_err(|why| {
                    self.invalid(format!("{at}.namespaces[{j}]"), format!("`{ns}` is not a namespace name: {why}"))
                })?;
            }
        }
        Ok(())
    }
}

/// `v1` (the core group has no other version) or `group/version`, where group is a DNS
/// subdomain and version a DNS-1035 label (`v1`, `v1beta2`, a custom resource's `stable`).
/// So `deployments` or `apps` (a resource or a group, no version), `apps/v1/x` and an empty
/// string are refused.
pub(crate) fn check_api_version(s: &str) -> Result<(), String> {
    let bad = |why: &str| format!("`{s}` is not an apiVersion: {why} (e.g. `v1`, `apps/v1`)");
    let Some((group, version)) = s.split_once('/') else {
        return match s {
            "v1" => Ok(()),
            "" => Err(bad("it is empty")),
            _ => Err(bad("write `v1` for the core group, `group/version` for the others")),
        };
    };
    if group.is_empty() || !group.split('.').all(|l| check_dns_label(l).is_ok()) {
        return Err(bad("the group before `/` is not a DNS name"));
    }
    if version.contains('/') {
        return Err(bad("it has more than one `/`"));
    }
    if check_dns_label(version).is_err() || !version.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(bad("the version after `/` is not a version name"));
    }
    Ok(())
}

/// A DNS label: `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, 1 to 63 characters.
fn check_dns_label(s: &str) -> Result<(), &'static str> {
    let b = s.as_bytes();
    if b.is_empty() || b.len() > 63 {
        return Err("must be 1 to 63 characters");
    }
    if !b.iter().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-') {
        return Err("may contain only lowercase letters, digits and `-`");
    }
    if b[0] == b'-' || b[b.len() - 1] == b'-' {
        return Err("must start and end with a letter or digit");
    }
    Ok(())
}

pub(crate) mod permissions;
pub(crate) mod reconcile;

pub use reconcile::MapTo;
pub use reconcile::{Reconcile, Role};
pub(crate) mod schema;

#[cfg(test)]
mod tests;
