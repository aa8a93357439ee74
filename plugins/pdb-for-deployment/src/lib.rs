//! pdb-for-deployment: keeps a PodDisruptionBudget for every Deployment with two or more
//! replicas, as a controller-runtime or kube-rs controller would — written with the SDK's
//! typed API (`Api<K>`, k8s-openapi types).
//!
//! A reconciler of Deployments that owns PodDisruptionBudgets: the host calls `reconcile`
//! with a Deployment's key when the Deployment changes, and when a budget it controls
//! changes or is deleted (found through the budget's controller owner reference). Each call
//! reads the Deployment from the cache and makes the cluster match:
//! - two or more replicas: a budget of the same name, controlled by the Deployment, selecting
//!   its Pods, `maxUnavailable: 1` — created when missing, corrected when changed;
//! - fewer: its budget deleted;
//! - the Deployment gone: nothing (the budget it controlled is garbage-collected with it).
//!
//! A budget of that name that another owner controls is left alone, with a Warning Event.

use wink_guest::cluster::{self, DeleteOptions, EventType};
use wink_guest::k8s_openapi::api::apps::v1::Deployment;
use wink_guest::k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use wink_guest::k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use wink_guest::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use wink_guest::{Action, Api, HandlerError, Key, Object, Reconciler, Resource, cache, info, meta};

/// Replicas from which a Deployment gets a budget.
const MIN_REPLICAS: i32 = 2;

#[derive(Default)]
struct Budgets;

impl Reconciler for Budgets {
    fn reconcile(&mut self, key: &Key) -> Result<Action, HandlerError> {
        let Some(namespace) = key.namespace.as_deref() else { return Ok(Action::AwaitChange) };
        let Some(owner) = cache::get(&Resource::of::<Deployment>(), &key.to_string())? else {
            return Ok(Action::AwaitChange);
        };
        let deployment: Deployment = owner.typed()?;
        let budgets = Api::<PodDisruptionBudget>::namespaced(namespace);
        let current = budgets.get_opt(&key.name)?;
        let replicas = deployment.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
        if replicas < MIN_REPLICAS {
            if current.as_ref().is_some_and(|b| controlled_by(b, &owner)) {
                budgets.delete(&key.name, &DeleteOptions::default())?;
                info!("deleted budget={key} replicas={replicas}");
            }
            return Ok(Action::AwaitChange);
        }
        let desired = desired(&deployment, &owner)?;
        match current {
            None => {
                budgets.create(&desired)?;
                info!("created budget={key} replicas={replicas}");
                event(&owner, EventType::Normal, "BudgetCreated", &format!("created PodDisruptionBudget {}", key.name));
            }
            Some(current) if !controlled_by(&current, &owner) => {
                let note = format!("PodDisruptionBudget {} exists and is not controlled by this Deployment", key.name);
                info!("foreign budget={key}");
                event(&owner, EventType::Warning, "BudgetNotOwned", &note);
            }
            Some(current) if current.spec != desired.spec => {
                let metadata = ObjectMeta { resource_version: current.metadata.resource_version, ..desired.metadata };
                budgets.replace(&PodDisruptionBudget { metadata, ..desired })?;
                info!("updated budget={key}");
                event(&owner, EventType::Normal, "BudgetUpdated", &format!("updated PodDisruptionBudget {}", key.name));
            }
            Some(_) => {}
        }
        Ok(Action::AwaitChange)
    }
}

/// The budget `deployment` should have: its name and namespace, controlled by it, selecting
/// its Pods, at most one of them unavailable.
fn desired(deployment: &Deployment, owner: &Object) -> Result<PodDisruptionBudget, HandlerError> {
    let reference: OwnerReference = serde_json::from_value(meta::controller_reference(owner).map_err(fatal)?)
        .map_err(|e| HandlerError::fatal(format!("an owner reference: {e}")))?;
    Ok(PodDisruptionBudget {
        metadata: ObjectMeta {
            name: deployment.metadata.name.clone(),
            namespace: deployment.metadata.namespace.clone(),
            owner_references: Some(vec![reference]),
            ..ObjectMeta::default()
        },
        spec: Some(PodDisruptionBudgetSpec {
            max_unavailable: Some(IntOrString::Int(1)),
            selector: deployment.spec.as_ref().map(|s| s.selector.clone()),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    })
}

/// Whether `budget`'s controller is `owner` (by uid).
fn controlled_by(budget: &PodDisruptionBudget, owner: &Object) -> bool {
    let references = budget.metadata.owner_references.iter().flatten();
    references.into_iter().any(|r| r.controller == Some(true) && r.uid == owner.uid())
}

/// Records an Event about `owner`; a failure to record it fails nothing.
fn event(owner: &Object, event_type: EventType, reason: &str, note: &str) {
    if let Err(e) = cluster::record_event(owner, event_type, reason, "Reconcile", note) {
        info!("event not recorded reason={reason}: {}", e.message());
    }
}

fn fatal(e: impl std::fmt::Display) -> HandlerError {
    HandlerError::fatal(e.to_string())
}

wink_guest::export_reconciler!(Budgets);
