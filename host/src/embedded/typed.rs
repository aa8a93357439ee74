//! The types of built-in kinds, checked as the API server's decoder checks them.
//!
//! The API server decodes every object of a built-in kind into its Go type before anything
//! else: a ConfigMap whose `data` holds a number, a Deployment whose `replicas` is `"many"`,
//! a Pod whose `initContainers` is a string never reach storage, and so never reach the
//! plugins that watch them (a policy plugin that skips what it cannot read would otherwise
//! let a hostile tenant hide a workload from it). The embedded cluster does the same with
//! the [`k8s_openapi`] types: [`check`] decodes an object of a built-in kind at a version
//! those types describe, and refuses it with the field's path when it does not decode.
//! Fields the types do not know are left alone, as the API server's default (non-strict)
//! field validation leaves them; custom resources are their definitions' business.
//!
//! Two readings of Go's decoder are kept: quantities (`cpu: 1`, `storage: 10`) may be JSON
//! numbers, which the [`k8s_openapi`] type would refuse (it takes strings), so numbers in
//! quantity fields are read as strings first; and a `null` field or map value is its type's
//! zero value for Go, so such entries are left out first.

use k8s_openapi::api;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::cluster::RequestError;

/// Maps whose values are all quantities (`resources.limits`, `spec.hard`, `capacity`, …).
const QUANTITY_MAPS: &[&str] = &[
    "limits",
    "requests",
    "capacity",
    "allocatable",
    "allocatedResources",
    "hard",
    "used",
    "overhead",
    "max",
    "min",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];
/// Fields that are one quantity.
const QUANTITY_FIELDS: &[&str] = &["sizeLimit", "capacity", "maximumVolumeSize", "storage"];

/// Decodes `value` as `T`; the error names the field at fault.
fn decode<T: DeserializeOwned>(value: &Value) -> Result<(), String> {
    match serde_path_to_error::deserialize::<_, T>(value) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!("{}: {}", e.path(), e.inner())),
    }
}

macro_rules! typed_kinds {
    ($(($api_version:literal, $kind:literal) => $type:ty),* $(,)?) => {
        /// Decodes `value` as the type of `api_version` `kind`; `None` for a kind without one.
        fn decode_kind(api_version: &str, kind: &str, value: &Value) -> Option<Result<(), String>> {
            match (api_version, kind) {
                $(($api_version, $kind) => Some(decode::<$type>(value)),)*
                _ => None,
            }
        }
    };
}

typed_kinds! {
    ("v1", "ConfigMap") => api::core::v1::ConfigMap,
    ("v1", "Endpoints") => api::core::v1::Endpoints,
    ("v1", "Event") => api::core::v1::Event,
    ("v1", "LimitRange") => api::core::v1::LimitRange,
    ("v1", "Namespace") => api::core::v1::Namespace,
    ("v1", "Node") => api::core::v1::Node,
    ("v1", "PersistentVolume") => api::core::v1::PersistentVolume,
    ("v1", "PersistentVolumeClaim") => api::core::v1::PersistentVolumeClaim,
    ("v1", "Pod") => api::core::v1::Pod,
    ("v1", "PodTemplate") => api::core::v1::PodTemplate,
    ("v1", "ReplicationController") => api::core::v1::ReplicationController,
    ("v1", "ResourceQuota") => api::core::v1::ResourceQuota,
    ("v1", "Secret") => api::core::v1::Secret,
    ("v1", "Service") => api::core::v1::Service,
    ("v1", "ServiceAccount") => api::core::v1::ServiceAccount,
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration") =>
        api::admissionregistration::v1::MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration") =>
        api::admissionregistration::v1::ValidatingWebhookConfiguration,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") =>
        api::admissionregistration::v1::ValidatingAdmissionPolicy,
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") =>
        api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => apiextensions::CustomResourceDefinition,
    ("apiregistration.k8s.io/v1", "APIService") => apiregistration::APIService,
    ("apps/v1", "ControllerRevision") => api::apps::v1::ControllerRevision,
    ("apps/v1", "DaemonSet") => api::apps::v1::DaemonSet,
    ("apps/v1", "Deployment") => api::apps::v1::Deployment,
    ("apps/v1", "ReplicaSet") => api::apps::v1::ReplicaSet,
    ("apps/v1", "StatefulSet") => api::apps::v1::StatefulSet,
    ("autoscaling/v1", "HorizontalPodAutoscaler") => api::autoscaling::v1::HorizontalPodAutoscaler,
    ("autoscaling/v2", "HorizontalPodAutoscaler") => api::autoscaling::v2::HorizontalPodAutoscaler,
    ("batch/v1", "CronJob") => api::batch::v1::CronJob,
    ("batch/v1", "Job") => api::batch::v1::Job,
    ("certificates.k8s.io/v1", "CertificateSigningRequest") => api::certificates::v1::CertificateSigningRequest,
    ("coordination.k8s.io/v1", "Lease") => api::coordination::v1::Lease,
    ("discovery.k8s.io/v1", "EndpointSlice") => api::discovery::v1::EndpointSlice,
    ("events.k8s.io/v1", "Event") => api::events::v1::Event,
    ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema") => api::flowcontrol::v1::FlowSchema,
    ("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration") =>
        api::flowcontrol::v1::PriorityLevelConfiguration,
    ("networking.k8s.io/v1", "Ingress") => api::networking::v1::Ingress,
    ("networking.k8s.io/v1", "IngressClass") => api::networking::v1::IngressClass,
    ("networking.k8s.io/v1", "NetworkPolicy") => api::networking::v1::NetworkPolicy,
    ("node.k8s.io/v1", "RuntimeClass") => api::node::v1::RuntimeClass,
    ("policy/v1", "PodDisruptionBudget") => api::policy::v1::PodDisruptionBudget,
    ("rbac.authorization.k8s.io/v1", "ClusterRole") => api::rbac::v1::ClusterRole,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => api::rbac::v1::ClusterRoleBinding,
    ("rbac.authorization.k8s.io/v1", "Role") => api::rbac::v1::Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding") => api::rbac::v1::RoleBinding,
    ("scheduling.k8s.io/v1", "PriorityClass") => api::scheduling::v1::PriorityClass,
    ("storage.k8s.io/v1", "CSIDriver") => api::storage::v1::CSIDriver,
    ("storage.k8s.io/v1", "CSINode") => api::storage::v1::CSINode,
    ("storage.k8s.io/v1", "CSIStorageCapacity") => api::storage::v1::CSIStorageCapacity,
    ("storage.k8s.io/v1", "StorageClass") => api::storage::v1::StorageClass,
    ("storage.k8s.io/v1", "VolumeAttachment") => api::storage::v1::VolumeAttachment,
}

/// Whether `value` holds a number where a quantity is read, or a `null` entry (see the
/// module docs): then it is read as Go reads it, from a copy.
fn needs_go_reading(value: &Value) -> bool {
    match value {
        Value::Object(map) => map.iter().any(|(key, v)| {
            v.is_null()
                || (QUANTITY_FIELDS.contains(&key.as_str()) && v.is_number())
                || (QUANTITY_MAPS.contains(&key.as_str())
                    && v.as_object().is_some_and(|m| m.values().any(Value::is_number)))
                || needs_go_reading(v)
        }),
        Value::Array(items) => items.iter().any(needs_go_reading),
        _ => false,
    }
}

/// Reads `value` as Go's decoder would: numbers where quantities are read become strings,
/// `null` entries are left out.
fn go_reading(value: &mut Value) {
    let text = |v: &mut Value| {
        if v.is_number() {
            *v = Value::String(v.to_string());
        }
    };
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            for (key, v) in map.iter_mut() {
                if QUANTITY_FIELDS.contains(&key.as_str()) {
                    text(v);
                }
                if QUANTITY_MAPS.contains(&key.as_str())
                    && let Some(m) = v.as_object_mut()
                {
                    m.values_mut().for_each(text);
                }
                go_reading(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(go_reading),
        _ => {}
    }
}

/// Checks that `value`, an object of `api_version` `kind`, decodes as its kind's type (when
/// it is a built-in kind at a version with one); the refusal is the API server's `400`
/// with the field's path.
pub fn check(api_version: &str, kind: &str, value: &Value) -> Result<(), RequestError> {
    let decoded = if needs_go_reading(value) {
        let mut copy = value.clone();
        go_reading(&mut copy);
        decode_kind(api_version, kind, &copy)
    } else {
        decode_kind(api_version, kind, value)
    };
    match decoded {
        None | Some(Ok(())) => Ok(()),
        Some(Err(at)) => {
            let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
            Err(RequestError::BadRequest(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: {at}"
            )))
        }
    }
}

#[cfg(test)]
#[path = "typed_tests.rs"]
mod tests;
