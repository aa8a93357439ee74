//! Kubernetes RBAC for impersonated requests: the Roles, ClusterRoles and their bindings in
//! the cluster decide whether the user (and groups) a request impersonates may make it, as
//! the API server's RBAC authorizer does. Requests that impersonate no one are the
//! endpoint's operator's own (it has no authentication) and are allowed.

use serde_json::Value;

use crate::kube::{Attributes, PolicyRule};

use super::ServedCluster;

const RBAC: &str = "rbac.authorization.k8s.io/v1";

/// Who a request is made as.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    /// The user name, e.g. `system:serviceaccount:team-a:reloader`.
    pub name: String,
    /// Its groups.
    pub groups: Vec<String>,
}

fn objects(cluster: &dyn ServedCluster, kind: &str) -> Vec<Value> {
    cluster
        .collection(RBAC, kind)
        .map(|c| c.source.objects().iter().filter_map(|o| o.to_value().ok()).collect())
        .unwrap_or_default()
}

fn subject_matches(subject: &Value, user: &User) -> bool {
    let name = subject["name"].as_str().unwrap_or_default();
    match subject["kind"].as_str().unwrap_or_default() {
        "User" => name == user.name,
        "Group" => user.groups.iter().any(|g| g == name),
        "ServiceAccount" => {
            let namespace = subject["namespace"].as_str().unwrap_or_default();
            user.name == format!("system:serviceaccount:{namespace}:{name}")
        }
        _ => false,
    }
}

fn rules_of(role: &Value) -> Vec<PolicyRule> {
    role["rules"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|rule| {
            let list = |field: &str| -> Vec<String> {
                rule[field].as_array().into_iter().flatten().filter_map(|v| v.as_str().map(str::to_owned)).collect()
            };
            // Rules for non-resource URLs grant no resource.
            rule.get("resources")?;
            Some(PolicyRule {
                api_groups: list("apiGroups"),
                resources: list("resources"),
                verbs: list("verbs"),
                resource_names: list("resourceNames"),
                namespaces: None,
            })
        })
        .collect()
}

/// The rules of the role a binding refers to (a Role in `namespace`, or a ClusterRole).
fn bound_rules(cluster: &dyn ServedCluster, binding: &Value, namespace: Option<&str>) -> Vec<PolicyRule> {
    let role_ref = &binding["roleRef"];
    let name = role_ref["name"].as_str().unwrap_or_default();
    let role = match (role_ref["kind"].as_str(), namespace) {
        (Some("ClusterRole"), _) => objects(cluster, "ClusterRole").into_iter().find(|r| r["metadata"]["name"] == name),
        (Some("Role"), Some(ns)) => objects(cluster, "Role")
            .into_iter()
            .find(|r| r["metadata"]["name"] == name && r["metadata"]["namespace"] == ns),
        _ => None,
    };
    role.map(|r| rules_of(&r)).unwrap_or_default()
}

/// Every rule that applies to `user` in `namespace` (none: at the cluster scope): those of
/// the ClusterRoles bound to it cluster-wide, and of the roles bound to it in the namespace.
pub(crate) fn rules_for(cluster: &dyn ServedCluster, user: &User, namespace: Option<&str>) -> Vec<PolicyRule> {
    let bound = |binding: &Value| {
        binding["subjects"].as_array().into_iter().flatten().any(|subject| subject_matches(subject, user))
    };
    let mut rules: Vec<PolicyRule> = objects(cluster, "ClusterRoleBinding")
        .into_iter()
        .filter(|b| bound(b))
        .flat_map(|b| bound_rules(cluster, &b, None))
        .collect();
    if let Some(ns) = namespace {
        rules.extend(
            objects(cluster, "RoleBinding")
                .into_iter()
                .filter(|b| b["metadata"]["namespace"] == ns && bound(b))
                .flat_map(|b| bound_rules(cluster, &b, Some(ns))),
        );
    }
    rules
}

/// Whether `user` may make the request `attributes` describes. The error is the API
/// server's message.
pub(crate) fn authorize(cluster: &dyn ServedCluster, user: &User, attributes: &Attributes<'_>) -> Result<(), String> {
    let allowed = rules_for(cluster, user, attributes.namespace).iter().any(|rule| rule.allows(attributes));
    if allowed {
        return Ok(());
    }
    let (resource, group) = (attributes.resource, attributes.group);
    let object = if attributes.name.is_empty() { String::new() } else { format!(" \"{}\"", attributes.name) };
    let scope = match attributes.namespace {
        Some(ns) => format!(" in the namespace \"{ns}\""),
        None => " at the cluster scope".to_owned(),
    };
    Err(format!(
        "{resource}{object} is forbidden: User \"{}\" cannot {} resource \"{resource}\" in API group \"{group}\"{scope}",
        user.name, attributes.verb
    ))
}
