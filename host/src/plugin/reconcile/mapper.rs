//! [`KeyMapper`]: the listener a reconciler has on each informer it watches, turning every
//! event into the keys of the primary objects it concerns — controller-runtime's
//! `EnqueueRequestForObject`, `EnqueueRequestForOwner` (`OnlyControllerOwner`) and a
//! label or annotation mapping.
//!
//! Mapping is host work, done in the listener's task (an event costs a hash-set insert into
//! the plugin's work queue), except for a watched resource mapped by the plugin
//! (`mapTo: {plugin: true}`), whose events each call the plugin's `map-to-keys` export on a guest
//! thread. A mapper hears of objects created and deleted before it saw them
//! ([`EventHandler::sees_vanished_objects`]): their owner may have to act.

use std::sync::Arc;

use async_trait::async_trait;

use crate::informer::{Action, EventHandler, HandlerResult, Object, object_key};
use crate::kube::Scope;
use crate::plugin::delivery::runner::PluginHandler;
use crate::plugin::manifest::{MapTo, Role};
use crate::workqueue::WorkQueue;

/// Maps one informer's events to primary keys in a reconciler's work queue.
pub(crate) struct KeyMapper {
    role: Role,
    /// For an owned resource: whether the primary's objects live in namespaces.
    primary_namespaced: bool,
    queue: WorkQueue<String>,
    /// The plugin, for a resource it maps itself.
    plugin: Option<Arc<PluginHandler>>,
}

impl KeyMapper {
    /// A mapper enqueuing into `queue` as `role` says.
    pub fn new(role: Role, queue: WorkQueue<String>) -> Self {
        let primary_namespaced = match &role {
            // Custom kinds are taken as namespaced, as most are; a built-in kind's scope is known.
            Role::Owned { api_version, kind } => {
                crate::kube::scope::built_in(api_version, kind).is_none_or(|scope| scope == Scope::Namespaced)
            }
            Role::Primary | Role::Mapped(_) => true,
        };
        Self { role, primary_namespaced, queue, plugin: None }
    }

    /// Asks `plugin`'s `map-to-keys` export for the keys of a resource mapped by the plugin.
    #[must_use]
    pub fn with_plugin(mut self, plugin: Arc<PluginHandler>) -> Self {
        self.plugin = Some(plugin);
        self
    }

    /// The primary keys `obj` concerns, by the host's own mappings (none for the plugin's).
    pub fn keys(&self, obj: &Object) -> Vec<String> {
        match &self.role {
            Role::Primary => vec![obj.key().to_owned()],
            Role::Owned { api_version, kind } => {
                let group = crate::kube::scope::group_of(api_version);
                let controller = obj.owner_references().iter().find(|owner| {
                    owner.controller == Some(true)
                        && owner.kind == kind
                        && crate::kube::scope::group_of(owner.api_version) == group
                });
                let namespace = obj.namespace().filter(|_| self.primary_namespaced);
                controller.map(|owner| object_key(namespace, owner.name)).into_iter().collect()
            }
            Role::Mapped(map_to) => {
                let meta = obj.meta();
                let value = match map_to {
                    MapTo::Label(key) => obj.labels().get(key),
                    MapTo::Annotation(key) => meta.annotations.get(key),
                    MapTo::Plugin => None,
                };
                match value.map(str::trim).filter(|v| !v.is_empty()) {
                    Some(named) if named.contains('/') => vec![named.to_owned()],
                    Some(name) => vec![object_key(obj.namespace(), name)],
                    None => Vec::new(),
                }
            }
        }
    }

    async fn enqueue(&self, obj: &Object) {
        let keys = match (&self.role, &self.plugin) {
            (Role::Mapped(MapTo::Plugin), Some(plugin)) => plugin.map(obj.clone()).await,
            _ => self.keys(obj),
        };
        for key in keys {
            self.queue.add(key);
        }
    }
}

#[async_trait]
impl EventHandler for KeyMapper {
    async fn on_add(&self, obj: &Object, _is_initial_list: bool) -> HandlerResult {
        self.enqueue(obj).await;
        Ok(Action::AwaitChange)
    }

    /// Both states: an owner or a mapping that changed concerns the old primary too.
    async fn on_update(&self, old: &Object, new: &Object) -> HandlerResult {
        if !old.ptr_eq(new) {
            self.enqueue(old).await;
        }
        self.enqueue(new).await;
        Ok(Action::AwaitChange)
    }

    async fn on_delete(&self, obj: &Object, _final_state_unknown: bool) -> HandlerResult {
        self.enqueue(obj).await;
        Ok(Action::AwaitChange)
    }

    /// An owned object created and deleted before its events were mapped still concerns its
    /// owner: the delete is mapped (controller-runtime's handlers enqueue on each event).
    fn sees_vanished_objects(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workqueue::RateLimits;

    fn object(json: serde_json::Value) -> Object {
        Object::from_string(json.to_string()).unwrap()
    }

    fn keys(role: Role, obj: serde_json::Value) -> Vec<String> {
        KeyMapper::new(role, WorkQueue::new(RateLimits::default(), None)).keys(&object(obj))
    }

    #[test]
    fn an_owned_object_maps_to_its_controller_owner_of_the_primary_kind_only() {
        let owned = Role::Owned { api_version: "apps/v1".into(), kind: "Deployment".into() };
        let service = |owners: serde_json::Value| {
            serde_json::json!({"apiVersion": "v1", "kind": "Service",
                "metadata": {"namespace": "shop", "name": "web", "ownerReferences": owners}})
        };
        let controller = serde_json::json!([
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "1", "controller": false},
            {"apiVersion": "apps/v1beta2", "kind": "Deployment", "name": "web", "uid": "2", "controller": true}
        ]);
        assert_eq!(keys(owned.clone(), service(controller)), ["shop/web"], "any version of the primary's group");
        let not_controller =
            serde_json::json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "2"}]);
        assert!(keys(owned.clone(), service(not_controller)).is_empty(), "an owner that is not the controller");
        let other_kind =
            serde_json::json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "3", "controller": true}]);
        assert!(keys(owned, service(other_kind)).is_empty());
        let by_namespace = Role::Owned { api_version: "v1".into(), kind: "Namespace".into() };
        let quota = serde_json::json!({"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"namespace": "team-a",
            "name": "q", "ownerReferences": [{"apiVersion": "v1", "kind": "Namespace", "name": "team-a", "uid": "4", "controller": true}]}});
        assert_eq!(keys(by_namespace, quota), ["team-a"], "a cluster-scoped primary's key has no namespace");
    }

    /// The Service a reconciler created and someone deleted before its add was mapped (both
    /// events pending in the mapper's listener): the delete still reaches the work queue, so
    /// the owner re-creates it.
    #[tokio::test]
    async fn an_owned_object_added_and_deleted_before_it_was_mapped_still_enqueues_its_owner() {
        use crate::informer::{Listener, ListenerOptions, Notification};
        let queue = WorkQueue::new(RateLimits::default(), None);
        let owned = Role::Owned { api_version: "apps/v1".into(), kind: "Deployment".into() };
        let mapper = Arc::new(KeyMapper::new(owned, queue.clone()));
        let options = ListenerOptions { keep_vanished: mapper.sees_vanished_objects(), ..ListenerOptions::default() };
        let listener = Arc::new(Listener::new(1, options, std::time::Duration::ZERO, Arc::new(|| true)));
        let service = object(serde_json::json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"namespace": "shop", "name": "web", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "2", "controller": true}]}}));
        listener.add(Notification::Add { obj: service.clone(), initial: false });
        listener.add(Notification::Delete { obj: service, final_state_unknown: false });
        let cancel = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(listener.clone().run(mapper, cancel.clone()));
        let key = tokio::time::timeout(std::time::Duration::from_secs(10), queue.get()).await;
        cancel.cancel();
        task.await.unwrap();
        assert_eq!(key.ok().flatten().as_deref(), Some("shop/web"));
    }

    #[test]
    fn a_watched_object_maps_to_the_primary_its_label_or_annotation_names() {
        let config_map = |annotations: serde_json::Value| {
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"namespace": "shop", "name": "settings", "annotations": annotations, "labels": {"app": "web"}}})
        };
        let by_annotation = Role::Mapped(MapTo::Annotation("example.com/deployment".into()));
        assert_eq!(
            keys(by_annotation.clone(), config_map(serde_json::json!({"example.com/deployment": "web"}))),
            ["shop/web"]
        );
        assert_eq!(
            keys(by_annotation.clone(), config_map(serde_json::json!({"example.com/deployment": "ops/api"}))),
            ["ops/api"]
        );
        assert!(keys(by_annotation, config_map(serde_json::json!({}))).is_empty());
        assert_eq!(keys(Role::Mapped(MapTo::Label("app".into())), config_map(serde_json::json!({}))), ["shop/web"]);
    }
}
