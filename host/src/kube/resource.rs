//! [`ResourceDef`]: a kind as an API server serves it — group, version, kind, plural
//! resource name, scope, whether it has a status subresource and whether it is built in (not
//! a CustomResourceDefinition's). The one type every room describes a kind with: the
//! `wink-apiserver` crate defines it, since its write rules read it, and this room gives the
//! built-in kinds' definitions ([`built_in`]) and those discovery finds ([`discovered`]).

pub use wink_apiserver::ResourceDef;

use super::scope::{self, Scope, group_of};
use super::versions;

/// Built-in kinds with a status subresource (group, kind).
const WITH_STATUS: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "Node"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
    ("", "Pod"),
    ("", "ReplicationController"),
    ("", "ResourceQuota"),
    ("", "Service"),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("apiregistration.k8s.io", "APIService"),
    ("apps", "DaemonSet"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("batch", "CronJob"),
    ("batch", "Job"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "ServiceCIDR"),
    ("policy", "PodDisruptionBudget"),
    ("resource.k8s.io", "ResourceClaim"),
    ("storage.k8s.io", "VolumeAttachment"),
];

/// The definition of the built-in `kind` at `api_version`; `None` for a kind that is not
/// built in, or a version its group does not serve (`v2` ConfigMaps are no kind).
pub fn built_in(api_version: &str, kind: &str) -> Option<ResourceDef> {
    if versions::unserved_version(api_version).is_some() {
        return None;
    }
    let scope = scope::built_in(api_version, kind)?;
    let group = group_of(api_version);
    let (g, v) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let gvk = kube::core::GroupVersionKind::gvk(g, v, kind);
    let plural = kube::core::ApiResource::from_gvk(&gvk).plural;
    let status = WITH_STATUS.contains(&(group, kind));
    Some(ResourceDef::built_in(g, v, kind, &plural, scope == Scope::Namespaced, status))
}

/// A kind as an API server's discovery describes it (kube-rs's `ApiResource` and
/// `ApiCapabilities`); built in when this room knows it as such.
pub(crate) fn discovered(
    resource: &kube::core::ApiResource,
    capabilities: &kube::discovery::ApiCapabilities,
) -> ResourceDef {
    ResourceDef {
        group: resource.group.clone(),
        version: resource.version.clone(),
        kind: resource.kind.clone(),
        plural: resource.plural.clone(),
        namespaced: capabilities.scope == kube::discovery::Scope::Namespaced,
        status_subresource: capabilities.subresources.iter().any(|(sub, _)| sub.plural == "status"),
        built_in: scope::built_in(&resource.api_version, &resource.kind).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_kinds_have_their_plural_scope_and_status() {
        let deployment = built_in("apps/v1", "Deployment").unwrap();
        assert_eq!((deployment.plural.as_str(), deployment.namespaced), ("deployments", true));
        assert!(deployment.status_subresource && deployment.built_in);
        assert!(deployment.has_api_version("apps/v1") && !deployment.has_api_version("v1"));
        let namespace = built_in("v1", "Namespace").unwrap();
        assert_eq!(namespace.collection_path(Some("ignored")), "/api/v1/namespaces");
        assert!(!built_in("v1", "ConfigMap").unwrap().status_subresource);
        assert_eq!(built_in("v2", "ConfigMap"), None, "a version its group does not serve");
        assert_eq!(built_in("example.com/v1", "Widget"), None);
    }
}
