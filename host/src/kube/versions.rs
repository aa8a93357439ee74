//! The kinds a Kubernetes API server serves without any CustomResourceDefinition, for
//! `wink check`'s warning about a watched kind no server may serve (a typo such as
//! `Deploymnet`, or a group that has no such version).
//!
//! The kinds are the directory source's table of built-in kinds
//! ([`scope`]), one list for both; this module adds the versions
//! each group serves. A kind missing from it is only warned about, never refused: custom
//! resources are legitimate, and the directory source serves any kind.

use super::scope;

/// The versions current Kubernetes serves for each built-in API group (`""`: the core
/// group), the preferred first; the groups' kinds are the directory source's table
/// ([`scope`]).
const SERVED_VERSIONS: &[(&str, &[&str])] = &[
    ("", &["v1"]),
    ("admissionregistration.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("apiextensions.k8s.io", &["v1"]),
    ("apiregistration.k8s.io", &["v1"]),
    ("apps", &["v1"]),
    ("authentication.k8s.io", &["v1"]),
    ("authorization.k8s.io", &["v1"]),
    ("autoscaling", &["v2", "v1"]),
    ("batch", &["v1"]),
    ("certificates.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("coordination.k8s.io", &["v1", "v1beta1", "v1alpha2"]),
    ("discovery.k8s.io", &["v1"]),
    ("events.k8s.io", &["v1"]),
    ("flowcontrol.apiserver.k8s.io", &["v1"]),
    ("internal.apiserver.k8s.io", &["v1alpha1"]),
    ("networking.k8s.io", &["v1", "v1beta1"]),
    ("node.k8s.io", &["v1"]),
    ("policy", &["v1"]),
    ("rbac.authorization.k8s.io", &["v1"]),
    ("resource.k8s.io", &["v1", "v1beta2", "v1beta1", "v1alpha3"]),
    ("scheduling.k8s.io", &["v1"]),
    ("storage.k8s.io", &["v1", "v1beta1", "v1alpha1"]),
    ("storagemigration.k8s.io", &["v1alpha1"]),
];

/// The versions an embedded cluster serves a built-in group's kinds at, the preferred first:
/// every stable one (`autoscaling/v2` and `autoscaling/v1`), or the preferred one of a group
/// with none. (Which beta or alpha version serves which kind differs kind by kind.)
pub(crate) fn embedded_versions(group: &str) -> Vec<&'static str> {
    let Some((_, versions)) = SERVED_VERSIONS.iter().find(|(g, _)| *g == group) else { return Vec::new() };
    let stable = |v: &&str| v.strip_prefix('v').is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let served: Vec<&'static str> = versions.iter().copied().filter(stable).collect();
    if served.is_empty() { versions.first().copied().into_iter().collect() } else { served }
}

/// Why `api_version` of a built-in API group is not served (a removed version such as
/// `policy/v1beta1`, or none such as `apps/v42`), or `None` when it is, or when its group is
/// not built in. The reason is one sentence.
pub(crate) fn unserved_version(api_version: &str) -> Option<String> {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    if group == "extensions" {
        return Some(format!(
            "{api_version} is not served since Kubernetes 1.22: the extensions group is gone (its kinds are at \
             apps/v1, networking.k8s.io/v1 and policy/v1)"
        ));
    }
    let (_, versions) = SERVED_VERSIONS.iter().find(|(g, _)| *g == group)?;
    if versions.contains(&version) || scope::built_in_kinds(group).next().is_none() {
        return None;
    }
    Some(format!(
        "{api_version} is not a version Kubernetes serves for {} (served: {})",
        if group.is_empty() { "the core group" } else { group },
        versions
            .iter()
            .map(|v| if group.is_empty() { v.to_string() } else { format!("{group}/{v}") })
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Why `kind` of a well-formed `api_version` may not be served, or `None` when it is a
/// built-in kind. The reason is one sentence for a warning.
pub(crate) fn unknown_kind(api_version: &str, kind: &str) -> Option<String> {
    let (group, _) = api_version.split_once('/').unwrap_or(("", api_version));
    if let Some(why) = unserved_version(api_version) {
        return Some(why);
    }
    let kinds: Vec<&str> = scope::built_in_kinds(group).collect();
    if kinds.is_empty() || !SERVED_VERSIONS.iter().any(|(g, _)| *g == group) {
        return Some(format!(
            "{api_version} {kind} is not a built-in Kubernetes kind: an API server serves it only once its \
             CustomResourceDefinition is installed"
        ));
    }
    if let Some(release) = scope::removed_in(group, kind) {
        return Some(format!("{kind} was removed in Kubernetes {release}: no current API server serves it"));
    }
    if kinds.contains(&kind) {
        return None;
    }
    let near: Vec<&str> = kinds.iter().copied().filter(|k| k.eq_ignore_ascii_case(kind) || similar(k, kind)).collect();
    let hint = if near.is_empty() {
        format!("its kinds: {}", kinds.join(", "))
    } else {
        format!("did you mean {}?", near.join(" or "))
    };
    Some(format!("{api_version} has no built-in kind {kind} ({hint})"))
}

/// Whether two names differ by at most two single-character edits (a typo).
fn similar(a: &str, b: &str) -> bool {
    strsim::levenshtein(a, b) <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_pass_and_others_are_explained() {
        for (api_version, kind) in [("v1", "Pod"), ("apps/v1", "Deployment"), ("networking.k8s.io/v1", "Ingress")] {
            assert_eq!(unknown_kind(api_version, kind), None, "{api_version} {kind}");
        }
        let typo = unknown_kind("apps/v1", "Deploymnet").unwrap();
        assert!(typo.contains("did you mean Deployment?"), "{typo}");
        let elsewhere = unknown_kind("v1", "Deployment").unwrap();
        assert!(elsewhere.contains("no built-in kind Deployment") && elsewhere.contains("Pod"), "{elsewhere}");
        let version = unknown_kind("apps/v1beta1", "Deployment").unwrap();
        assert!(version.contains("served: apps/v1"), "{version}");
        let custom = unknown_kind("example.com/v1", "Widget").unwrap();
        assert!(custom.contains("CustomResourceDefinition"), "{custom}");
    }
}
