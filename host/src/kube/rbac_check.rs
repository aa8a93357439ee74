//! What can be known of an RBAC rule before any request is matched against it: entries that
//! can never match anything, each with what was probably meant.
//!
//! Kubernetes accepts any string in a `Role`'s lists and the rule then silently allows
//! nothing: `verbs: [Get]`, `apiGroups: [policy/v1]` (a version), `resources:
//! [PodDisruptionBudget]` (a kind where RBAC wants the plural resource) or `resources: [pdb]`
//! (a short name). A wink manifest is read before its plugin runs, so such a rule is refused
//! there with a suggestion rather than found out at the first refused request.
//!
//! Besides the entries that are mistakes whatever asks, [`check_rule`] is told which verbs
//! the rule's user can ever send: a plugin never lists or watches (it reads lists from the
//! cache), so a rule of a plugin's whose verbs are all such is refused, and one that merely
//! includes them is warned about.

use std::sync::LazyLock;

use super::rbac::PolicyRule;
use super::scope::built_ins;
use super::versions::embedded_versions;

/// The verbs Kubernetes RBAC knows: the API's own and the special ones of some resources.
const KNOWN_VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "use",
    "bind",
    "escalate",
    "impersonate",
    "approve",
    "sign",
    "proxy",
];

/// Words written for a verb that RBAC spells otherwise, with what to write.
const VERB_SYNONYMS: &[(&str, &str)] = &[
    ("read", "`get` (lists and watches are read from the cache)"),
    ("write", "`create`, `update`, `patch` or `delete`"),
    ("edit", "`update` or `patch`"),
    ("modify", "`update` or `patch`"),
    ("put", "`update`"),
    ("post", "`create`"),
    ("apply", "`patch` (server-side apply), with `create` when the apply may create the object"),
    ("remove", "`delete`"),
    ("all", "`*`"),
];

/// A rule entry that can never match, as `(field, message)`: `field` is the rule's list
/// and index (`verbs[1]`), `message` says why and what to write instead.
pub(crate) type RuleError = (String, String);

/// Checks one rule. `sendable` lists the verbs its user can send (`None`: any verb, as on
/// an API server). Returns the warnings (entries that are valid but can never be used by
/// this user), or the first entry that can never match.
pub(crate) fn check_rule(rule: &PolicyRule, sendable: Option<&[&str]>) -> Result<Vec<String>, RuleError> {
    for (field, list) in [("apiGroups", &rule.api_groups), ("resources", &rule.resources), ("verbs", &rule.verbs)] {
        if list.is_empty() {
            return Err((field.to_owned(), "is empty, so the rule matches nothing".to_owned()));
        }
    }
    for (i, group) in rule.api_groups.iter().enumerate() {
        check_group(group).map_err(|why| (format!("apiGroups[{i}]"), why))?;
    }
    for (i, resource) in rule.resources.iter().enumerate() {
        check_resource(resource, &rule.api_groups).map_err(|why| (format!("resources[{i}]"), why))?;
    }
    for (i, verb) in rule.verbs.iter().enumerate() {
        check_verb(verb).map_err(|why| (format!("verbs[{i}]"), why))?;
    }
    if let Some(list) = &rule.namespaces
        && list.is_empty()
    {
        return Err((
            "namespaces".to_owned(),
            "is empty, so the rule matches nothing; omit it for every namespace".to_owned(),
        ));
    }
    let mut warnings = Vec::new();
    if let Some(sendable) = sendable {
        let unused: Vec<&str> =
            rule.verbs.iter().map(String::as_str).filter(|v| *v != "*" && !sendable.contains(v)).collect();
        if unused.len() == rule.verbs.len() {
            return Err((
                "verbs".to_owned(),
                format!(
                    "{} can never be asked for here, so the rule allows nothing; the verbs are {}{}",
                    quote_all(&unused),
                    quote_all(sendable),
                    read_hint(&unused)
                ),
            ));
        }
        if !unused.is_empty() {
            warnings.push(format!("verbs {} are never asked for here{}", quote_all(&unused), read_hint(&unused)));
        }
    }
    warnings.extend(misplaced_resources(rule));
    Ok(warnings)
}

fn quote_all<S: AsRef<str>>(list: &[S]) -> String {
    list.iter().map(|s| format!("`{}`", s.as_ref())).collect::<Vec<_>>().join(", ")
}

fn read_hint(verbs: &[&str]) -> &'static str {
    if verbs.iter().any(|v| matches!(*v, "list" | "watch")) {
        " (lists and watches are read from the cache: grant them with `resources` or `cache`)"
    } else {
        ""
    }
}

fn check_group(group: &str) -> Result<(), String> {
    if group == "*" || group.is_empty() {
        return Ok(());
    }
    if let Some((name, version)) = group.split_once('/') {
        let name = if name.is_empty() { "\"\"" } else { name };
        return Err(format!(
            "`{group}` is a group and a version; apiGroups names groups only, for every version: `{name}`{}",
            if version.is_empty() { "" } else { " (the version is not part of RBAC)" }
        ));
    }
    if matches!(group, "core" | "v1" | "legacy") {
        return Err(format!(
            "`{group}` is no API group; the core group (Pods, Secrets, ConfigMaps…) is written `\"\"`"
        ));
    }
    if group.bytes().any(|c| c.is_ascii_uppercase()) {
        return Err(format!("`{group}` is not an API group: groups are lowercase DNS names (e.g. `apps`, `policy`)"));
    }
    let label = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if !group.split('.').all(label) {
        return Err(format!("`{group}` is not an API group: groups are DNS names (e.g. `apps`, `example.com`)"));
    }
    Ok(())
}

fn check_verb(verb: &str) -> Result<(), String> {
    if verb == "*" || KNOWN_VERBS.contains(&verb) {
        return Ok(());
    }
    let lower = verb.to_ascii_lowercase();
    if KNOWN_VERBS.contains(&lower.as_str()) {
        return Err(format!("`{verb}` is not a verb: verbs are lowercase, write `{lower}`"));
    }
    if let Some((_, meant)) = VERB_SYNONYMS.iter().find(|(word, _)| *word == lower) {
        return Err(format!("`{verb}` is not an RBAC verb: write {meant}"));
    }
    Err(format!("`{verb}` is not an RBAC verb; the verbs are {}, or `*`", quote_all(KNOWN_VERBS)))
}

/// A kind's plural resource name, as the API server serves it.
fn plural_of(group: &str, kind: &str) -> String {
    let gvk = kube::core::GroupVersionKind::gvk(group, "v1", kind);
    kube::core::ApiResource::from_gvk(&gvk).plural
}

/// Every built-in kind with its plural: `(group, kind, plural)`, made once (every manifest
/// parse checks its rules against it, and plugins start by the thousand).
fn built_in_plurals() -> &'static [(&'static str, &'static str, String)] {
    static TABLE: LazyLock<Vec<(&'static str, &'static str, String)>> =
        LazyLock::new(|| built_ins().map(|(group, kind, _)| (group, kind, plural_of(group, kind))).collect());
    &TABLE
}

/// The built-in resource of one of `groups` that `word` names, by its plural or otherwise
/// (its kind, singular or short name, in any case): `(group, plural)`. A word with capitals
/// is looked up in every group.
fn built_in_named(word: &str, groups: &[String]) -> Option<(&'static str, String)> {
    let lower = word.to_ascii_lowercase();
    let any_group = lower != word || groups.iter().any(|g| g == "*");
    let in_groups = move |group: &str| any_group || groups.iter().any(|g| g == group);
    built_in_plurals().iter().filter(move |(group, _, _)| in_groups(group)).find_map(|(group, kind, plural)| {
        let short = super::names::short_names(group, kind);
        let named = kind.eq_ignore_ascii_case(word) || *plural == lower || short.contains(&lower.as_str());
        named.then(|| (*group, plural.clone()))
    })
}

fn check_resource(resource: &str, groups: &[String]) -> Result<(), String> {
    if resource == "*" {
        return Ok(());
    }
    let (name, sub) = match resource.split_once('/') {
        Some((name, sub)) => (name, Some(sub)),
        None => (resource, None),
    };
    let with_sub = |plural: &str| sub.map_or(plural.to_owned(), |s| format!("{plural}/{s}"));
    if let Some(sub) = sub
        && (sub.is_empty() || sub.contains('/') || sub.bytes().any(|c| c.is_ascii_uppercase()))
    {
        return Err(format!("`{resource}` is not `resource/subresource` (e.g. `deployments/status`)"));
    }
    if name == "*" {
        return Ok(());
    }
    match built_in_named(name, groups) {
        Some((group, plural)) if plural != name => {
            let group = if group.is_empty() { "\"\"".to_owned() } else { format!("`{group}`") };
            return Err(format!(
                "`{resource}` is not a resource name: RBAC names resources by their lowercase plural, write `{}` (in group {group})",
                with_sub(&plural)
            ));
        }
        Some(_) => return Ok(()),
        None => {}
    }
    if name.bytes().any(|c| c.is_ascii_uppercase()) {
        let guess = plural_of("", name);
        return Err(format!(
            "`{resource}` looks like a kind: RBAC names resources by their lowercase plural (a custom resource's `spec.names.plural`), e.g. `{}`",
            with_sub(&guess)
        ));
    }
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'.')
    {
        return Err(format!("`{resource}` is not a resource name (a lowercase plural, e.g. `deployments`)"));
    }
    Ok(())
}

/// Built-in resources named with only built-in groups none of which serves them (`pods` in
/// `apps`): valid, since a custom resource could share the plural, but probably a mistake.
fn misplaced_resources(rule: &PolicyRule) -> Vec<String> {
    let built_in_group = |g: &str| g.is_empty() || !embedded_versions(g).is_empty();
    if rule.api_groups.iter().any(|g| g == "*" || !built_in_group(g)) {
        return Vec::new();
    }
    let served_in = |group: &str, plural: &str| {
        built_in_plurals().iter().any(|(g, _, p)| *g == group && p == plural)
            // events.k8s.io serves the core group's Events.
            || (group == "events.k8s.io" && plural == "events")
    };
    let mut warnings = Vec::new();
    for resource in &rule.resources {
        let plural = resource.split_once('/').map_or(resource.as_str(), |(name, _)| name);
        if plural == "*" || rule.api_groups.iter().any(|g| served_in(g, plural)) {
            continue;
        }
        if let Some((group, _, _)) = built_in_plurals().iter().find(|(_, _, p)| p == plural) {
            let group = if group.is_empty() { "the core group (\"\")".to_owned() } else { format!("`{group}`") };
            warnings.push(format!("`{plural}` is served by {group}, which the rule's apiGroups do not name"));
        }
    }
    warnings
}

#[cfg(test)]
#[path = "rbac_check_tests.rs"]
mod tests;
