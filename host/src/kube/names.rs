//! The short names and categories of the built-in resources, as kube-apiserver's discovery
//! lists them (the `ShortNames()` and `Categories()` of its `pkg/registry` storages):
//! what `kubectl get deploy` and `kubectl get all` resolve through.

/// Short names by (group, kind).
const SHORT_NAMES: &[(&str, &str, &[&str])] = &[
    ("", "ComponentStatus", &["cs"]),
    ("", "ConfigMap", &["cm"]),
    ("", "Endpoints", &["ep"]),
    ("", "Event", &["ev"]),
    ("", "LimitRange", &["limits"]),
    ("", "Namespace", &["ns"]),
    ("", "Node", &["no"]),
    ("", "PersistentVolume", &["pv"]),
    ("", "PersistentVolumeClaim", &["pvc"]),
    ("", "Pod", &["po"]),
    ("", "ReplicationController", &["rc"]),
    ("", "ResourceQuota", &["quota"]),
    ("", "Service", &["svc"]),
    ("", "ServiceAccount", &["sa"]),
    ("apiextensions.k8s.io", "CustomResourceDefinition", &["crd", "crds"]),
    ("apps", "DaemonSet", &["ds"]),
    ("apps", "Deployment", &["deploy"]),
    ("apps", "ReplicaSet", &["rs"]),
    ("apps", "StatefulSet", &["sts"]),
    ("autoscaling", "HorizontalPodAutoscaler", &["hpa"]),
    ("batch", "CronJob", &["cj"]),
    ("certificates.k8s.io", "CertificateSigningRequest", &["csr"]),
    // events.k8s.io serves the same storage as the core group's Events.
    ("events.k8s.io", "Event", &["ev"]),
    ("networking.k8s.io", "IPAddress", &["ip"]),
    ("networking.k8s.io", "Ingress", &["ing"]),
    ("networking.k8s.io", "NetworkPolicy", &["netpol"]),
    ("policy", "PodDisruptionBudget", &["pdb"]),
    ("scheduling.k8s.io", "PriorityClass", &["pc"]),
    ("storage.k8s.io", "StorageClass", &["sc"]),
    ("storage.k8s.io", "VolumeAttributesClass", &["vac"]),
];

/// Categories by (group, kind).
const CATEGORIES: &[(&str, &str, &[&str])] = &[
    ("", "Pod", &["all"]),
    ("", "ReplicationController", &["all"]),
    ("", "Service", &["all"]),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicy", &["api-extensions"]),
    ("admissionregistration.k8s.io", "MutatingAdmissionPolicyBinding", &["api-extensions"]),
    ("admissionregistration.k8s.io", "MutatingWebhookConfiguration", &["api-extensions"]),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", &["api-extensions"]),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding", &["api-extensions"]),
    ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", &["api-extensions"]),
    ("apiextensions.k8s.io", "CustomResourceDefinition", &["api-extensions"]),
    ("apiregistration.k8s.io", "APIService", &["api-extensions"]),
    ("apps", "DaemonSet", &["all"]),
    ("apps", "Deployment", &["all"]),
    ("apps", "ReplicaSet", &["all"]),
    ("apps", "StatefulSet", &["all"]),
    ("autoscaling", "HorizontalPodAutoscaler", &["all"]),
    ("batch", "CronJob", &["all"]),
    ("batch", "Job", &["all"]),
];

fn lookup(table: &'static [(&str, &str, &[&str])], group: &str, kind: &str) -> &'static [&'static str] {
    table.iter().find(|(g, k, _)| *g == group && *k == kind).map_or(&[], |(_, _, names)| names)
}

/// The short names of the built-in kind `kind` of `group` (none for a kind without).
pub(crate) fn short_names(group: &str, kind: &str) -> &'static [&'static str] {
    lookup(SHORT_NAMES, group, kind)
}

/// The categories of the built-in kind `kind` of `group` (`all` for what `kubectl get all`
/// lists).
pub(crate) fn categories(group: &str, kind: &str) -> &'static [&'static str] {
    lookup(CATEGORIES, group, kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_get_all_lists_the_workloads_and_services() {
        let all: Vec<(&str, &str)> =
            CATEGORIES.iter().filter(|(_, _, c)| c.contains(&"all")).map(|(g, k, _)| (*g, *k)).collect();
        assert_eq!(all.len(), 10, "{all:?}");
        assert_eq!(categories("", "Pod"), ["all"]);
        assert!(categories("", "ConfigMap").is_empty());
    }

    #[test]
    fn short_names_are_per_group() {
        assert_eq!(short_names("apps", "Deployment"), ["deploy"]);
        assert!(short_names("example.com", "Deployment").is_empty());
    }
}
