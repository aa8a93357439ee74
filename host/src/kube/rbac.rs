//! RBAC's vocabulary: a [`PolicyRule`] as in a `Role`, the [`Attributes`] of a request it is
//! matched against, and [`allowed`].
//!
//! Matching follows Kubernetes RBAC: a request is allowed when one rule names its API group,
//! its resource (plural, `resource/subresource` for a subresource) and its verb, `*`
//! matching anything; `resourceNames` restricts the verbs that address one object (a create,
//! whose name may be generated, never matches a rule with names). wink adds `namespaces`, a
//! list a rule is limited to, where RBAC puts a `Role` in one namespace.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One rule, as in an RBAC `Role`, plus an optional namespace restriction.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PolicyRule {
    /// API groups (`""`: the core group; `*`: any).
    pub api_groups: Vec<String>,
    /// Plural resource names, `resource/subresource`, or `*`.
    pub resources: Vec<String>,
    /// Verbs: `get`, `create`, `update`, `patch`, `delete`, or `*`.
    pub verbs: Vec<String>,
    /// Only objects with these names (empty: any). Never allows `create`.
    #[serde(default)]
    pub resource_names: Vec<String>,
    /// Only in these namespaces (absent: every namespace, and cluster-scoped objects).
    #[serde(default)]
    pub namespaces: Option<Vec<String>>,
}

/// The request a rule is matched against.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    /// The API group.
    pub group: &'a str,
    /// The resource, with `/subresource` when one is addressed.
    pub resource: &'a str,
    /// The verb.
    pub verb: &'a str,
    /// The namespace (none: cluster-scoped).
    pub namespace: Option<&'a str>,
    /// The object's name (empty for a create with `generateName`).
    pub name: &'a str,
}

impl std::fmt::Display for Attributes<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let group = if self.group.is_empty() { "core" } else { self.group };
        write!(f, "{} {} ({group})", self.verb, self.resource)?;
        if let Some(ns) = self.namespace {
            write!(f, " in namespace {ns}")?;
        }
        if !self.name.is_empty() {
            write!(f, " named {}", self.name)?;
        }
        Ok(())
    }
}

fn names(list: &[String], value: &str) -> bool {
    list.iter().any(|item| item == "*" || item == value)
}

impl PolicyRule {
    /// Whether this rule allows the request.
    pub fn allows(&self, request: &Attributes<'_>) -> bool {
        let resource = names(&self.resources, request.resource)
            || request
                .resource
                .split_once('/')
                .is_some_and(|(_, sub)| self.resources.iter().any(|r| r.strip_prefix("*/").is_some_and(|s| s == sub)));
        let name = self.resource_names.is_empty()
            || (request.verb != "create" && self.resource_names.iter().any(|n| n == request.name));
        let namespace = match (&self.namespaces, request.namespace) {
            (None, _) => true,
            (Some(list), Some(ns)) => names(list, ns),
            (Some(_), None) => false,
        };
        names(&self.api_groups, request.group) && resource && names(&self.verbs, request.verb) && name && namespace
    }

    /// Whether this rule names `group` and `verb`, whatever resources, names and namespaces
    /// it is limited to: whether it could allow the verb on some resource of the group.
    pub fn reaches(&self, group: &str, verb: &str) -> bool {
        names(&self.api_groups, group) && names(&self.verbs, verb)
    }
}

/// Whether any of `rules` allows the request.
pub fn allowed(rules: &[PolicyRule], request: &Attributes<'_>) -> bool {
    rules.iter().any(|rule| rule.allows(request))
}

#[cfg(test)]
#[path = "rbac_tests.rs"]
mod tests;
