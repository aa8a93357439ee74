//! What the API server answers a DELETE that removes an object at once: for most kinds a
//! `Status` naming the object (with its uid), for the kinds whose storage sets
//! `ReturnDeletedObject` (kube-apiserver's `pkg/registry/*/storage`) the object as it was
//! last stored. Custom resources answer the `Status`.

/// The built-in kinds whose removal answers the object: (group, kind).
const RETURN_DELETED_OBJECT: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
    ("", "Pod"),
    ("", "PodTemplate"),
    ("", "ResourceQuota"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("resource.k8s.io", "DeviceClass"),
    ("resource.k8s.io", "ResourceClaim"),
    ("resource.k8s.io", "ResourceClaimTemplate"),
    ("resource.k8s.io", "ResourceSlice"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("storage.k8s.io", "VolumeAttributesClass"),
];

/// Whether a DELETE that removes an object of the built-in kind `kind` of `group` answers
/// with the object (else with a `Status`).
pub(crate) fn returns_deleted_object(group: &str, kind: &str) -> bool {
    RETURN_DELETED_OBJECT.iter().any(|(g, k)| *g == group && *k == kind)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_and_services_answer_the_object_configmaps_a_status() {
        assert!(returns_deleted_object("", "Pod"));
        assert!(returns_deleted_object("storage.k8s.io", "StorageClass"));
        assert!(!returns_deleted_object("", "ConfigMap"));
        assert!(!returns_deleted_object("apps", "Deployment"));
        assert!(!returns_deleted_object("example.com", "Pod"), "a custom kind of the same name");
    }

    #[test]
    fn every_kind_listed_is_built_in() {
        for (group, kind) in RETURN_DELETED_OBJECT {
            let api_version = if group.is_empty() { "v1".to_owned() } else { format!("{group}/v1") };
            assert!(super::super::scope::built_in(&api_version, kind).is_some(), "{group} {kind}");
        }
    }
}
