//! Tests of the scope table and of the kinds CustomResourceDefinitions define.

use std::any::TypeId;

use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope, Resource};
use serde_json::json;

use super::*;

fn check<K: Resource>(wrong: &mut Vec<String>)
where
    K::Scope: 'static,
{
    let scope = if TypeId::of::<K::Scope>() == TypeId::of::<NamespaceResourceScope>() {
        Namespaced
    } else {
        assert_eq!(TypeId::of::<K::Scope>(), TypeId::of::<ClusterResourceScope>(), "{}", K::KIND);
        Cluster
    };
    if built_in(K::API_VERSION, K::KIND) != Some(scope) {
        wrong.push(format!("{} {}: {scope:?}", K::API_VERSION, K::KIND));
    }
}

macro_rules! check_all {
    ($wrong:ident; $($ty:path,)*) => { $( check::<$ty>(&mut $wrong); )* };
}

/// Every kind of the Kubernetes API (as k8s-openapi generates it from the API's OpenAPI
/// document) is in the table, with its scope.
#[test]
fn the_built_in_table_has_every_kind_of_the_api_with_its_scope() {
    let mut wrong = Vec::new();
    use k8s_openapi::{api, apiextensions_apiserver, kube_aggregator};
    check_all![wrong;
        api::admissionregistration::v1::MutatingWebhookConfiguration,
        api::admissionregistration::v1::ValidatingAdmissionPolicy,
        api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        api::admissionregistration::v1::ValidatingWebhookConfiguration,
        api::admissionregistration::v1alpha1::MutatingAdmissionPolicy,
        api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding,
        api::admissionregistration::v1beta1::ValidatingAdmissionPolicy,
        api::admissionregistration::v1beta1::ValidatingAdmissionPolicyBinding,
        api::apiserverinternal::v1alpha1::StorageVersion,
        api::apps::v1::ControllerRevision,
        api::apps::v1::DaemonSet,
        api::apps::v1::Deployment,
        api::apps::v1::ReplicaSet,
        api::apps::v1::StatefulSet,
        api::authentication::v1::SelfSubjectReview,
        api::authentication::v1::TokenReview,
        api::authorization::v1::LocalSubjectAccessReview,
        api::authorization::v1::SelfSubjectAccessReview,
        api::authorization::v1::SelfSubjectRulesReview,
        api::authorization::v1::SubjectAccessReview,
        api::autoscaling::v1::HorizontalPodAutoscaler,
        api::autoscaling::v2::HorizontalPodAutoscaler,
        api::batch::v1::CronJob,
        api::batch::v1::Job,
        api::certificates::v1::CertificateSigningRequest,
        api::certificates::v1alpha1::ClusterTrustBundle,
        api::certificates::v1beta1::ClusterTrustBundle,
        api::coordination::v1::Lease,
        api::coordination::v1alpha2::LeaseCandidate,
        api::coordination::v1beta1::LeaseCandidate,
        api::core::v1::Binding,
        api::core::v1::ComponentStatus,
        api::core::v1::ConfigMap,
        api::core::v1::Endpoints,
        api::core::v1::Event,
        api::core::v1::LimitRange,
        api::core::v1::Namespace,
        api::core::v1::Node,
        api::core::v1::PersistentVolume,
        api::core::v1::PersistentVolumeClaim,
        api::core::v1::Pod,
        api::core::v1::PodTemplate,
        api::core::v1::ReplicationController,
        api::core::v1::ResourceQuota,
        api::core::v1::Secret,
        api::core::v1::Service,
        api::core::v1::ServiceAccount,
        api::discovery::v1::EndpointSlice,
        api::events::v1::Event,
        api::flowcontrol::v1::FlowSchema,
        api::flowcontrol::v1::PriorityLevelConfiguration,
        api::networking::v1::IPAddress,
        api::networking::v1::Ingress,
        api::networking::v1::IngressClass,
        api::networking::v1::NetworkPolicy,
        api::networking::v1::ServiceCIDR,
        api::networking::v1beta1::IPAddress,
        api::networking::v1beta1::ServiceCIDR,
        api::node::v1::RuntimeClass,
        api::policy::v1::PodDisruptionBudget,
        api::rbac::v1::ClusterRole,
        api::rbac::v1::ClusterRoleBinding,
        api::rbac::v1::Role,
        api::rbac::v1::RoleBinding,
        api::resource::v1alpha3::DeviceClass,
        api::resource::v1alpha3::DeviceTaintRule,
        api::resource::v1alpha3::ResourceClaim,
        api::resource::v1alpha3::ResourceClaimTemplate,
        api::resource::v1alpha3::ResourceSlice,
        api::resource::v1beta1::DeviceClass,
        api::resource::v1beta1::ResourceClaim,
        api::resource::v1beta1::ResourceClaimTemplate,
        api::resource::v1beta1::ResourceSlice,
        api::resource::v1beta2::DeviceClass,
        api::resource::v1beta2::ResourceClaim,
        api::resource::v1beta2::ResourceClaimTemplate,
        api::resource::v1beta2::ResourceSlice,
        api::scheduling::v1::PriorityClass,
        api::storage::v1::CSIDriver,
        api::storage::v1::CSINode,
        api::storage::v1::CSIStorageCapacity,
        api::storage::v1::StorageClass,
        api::storage::v1::VolumeAttachment,
        api::storage::v1alpha1::VolumeAttributesClass,
        api::storage::v1beta1::VolumeAttributesClass,
        api::storagemigration::v1alpha1::StorageVersionMigration,
        apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        kube_aggregator::pkg::apis::apiregistration::v1::APIService,
    ];
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn built_in_kinds_are_found_by_group_whatever_the_version() {
    assert_eq!(built_in("apps/v1beta2", "Deployment"), Some(Namespaced));
    assert_eq!(built_in("extensions/v1beta1", "Ingress"), Some(Namespaced));
    assert_eq!(built_in("rbac.authorization.k8s.io/v1beta1", "ClusterRole"), Some(Cluster));
    assert_eq!(built_in("v1", "Namespace"), Some(Cluster));
    // The kind in another group is not the built-in one.
    assert_eq!(built_in("example.com/v1", "Deployment"), None);
    assert_eq!(built_in("apps/v1", "Pod"), None);
}

fn crd(group: &str, kind: &str, scope: &str, versions: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}s.{group}", kind.to_lowercase())},
        "spec": {"group": group, "names": {"kind": kind, "plural": format!("{}s", kind.to_lowercase())},
                 "scope": scope, "versions": versions},
    })
}

#[test]
fn custom_resource_definitions_add_their_kind_for_every_served_version() {
    let objects = [
        crd(
            "example.com",
            "Widget",
            "Namespaced",
            json!([{"name": "v1", "served": true}, {"name": "v2", "served": true}, {"name": "v0", "served": false}]),
        ),
        crd("example.com", "Gadget", "Cluster", json!([{"name": "v1", "served": true}])),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "not-a-crd"}}),
    ];
    let scopes = Scopes::from_objects(&objects);
    assert_eq!(scopes.scope("example.com/v1", "Widget"), Some(Namespaced));
    assert_eq!(scopes.scope("example.com/v2", "Widget"), Some(Namespaced));
    assert_eq!(scopes.scope("example.com/v0", "Widget"), None, "not served");
    assert_eq!(scopes.scope("example.com/v1", "Gadget"), Some(Cluster));
    assert_eq!(scopes.scope("other.com/v1", "Gadget"), None);
    assert_eq!(scopes.scope("apps/v1", "Deployment"), Some(Namespaced));
    assert_eq!(scopes, Scopes::from_objects(&objects), "the same definitions, the same scopes");
    assert_ne!(scopes, Scopes::from_objects(&objects[1..]));
}

#[test]
fn a_v1beta1_definition_with_a_single_version_defines_it() {
    let mut old = crd("example.com", "Legacy", "Cluster", json!(null));
    old["apiVersion"] = json!("apiextensions.k8s.io/v1beta1");
    old["spec"]["version"] = json!("v1alpha1");
    let scopes = Scopes::from_objects([&old]);
    assert_eq!(scopes.scope("example.com/v1alpha1", "Legacy"), Some(Cluster));
}
