//! Views of a store: one kind's objects served in another kind's form, as kube-apiserver
//! serves one storage under several group-versions (`events.k8s.io/v1` Events are `v1`
//! Events). A view shares its store's state, history and watches; what leaves it (lists,
//! gets, watch events, a write's result) is converted from the stored form, and what is
//! written through it is converted to the stored form before it is stamped and stored. The
//! resourceVersion is the store's: a write through either form is one change, seen once by
//! each form's watches.

use std::sync::Arc;

use serde_json::Value;

use super::memory::MemorySource;
use crate::informer::list_watch::{SourceError, WatchEvent};
use crate::informer::{Object, ObjectError};
use crate::kube::events;

/// A conversion between a store's form and a view's.
pub trait Conversion: Send + Sync + 'static {
    /// The stored form of `value`, written through the view.
    fn to_storage(&self, value: Value) -> Value;

    /// `stored` as the view shows it.
    fn shown_form(&self, stored: Value) -> Value;
}

/// `events.k8s.io/v1` Events over the store of `v1` Events.
struct EventsForm;

impl Conversion for EventsForm {
    fn to_storage(&self, value: Value) -> Value {
        events::to_core(value)
    }

    fn shown_form(&self, stored: Value) -> Value {
        events::to_events(stored)
    }
}

/// Where the objects of (`api_version`, `kind`) are stored when another kind's store holds
/// them: that kind's (apiVersion, kind) and the conversion of the view over it.
pub(crate) fn shared_storage(
    api_version: &str,
    kind: &str,
) -> Option<(&'static str, &'static str, Arc<dyn Conversion>)> {
    events::is_events_form(api_version, kind)
        .then(|| (events::CORE, "Event", Arc::new(EventsForm) as Arc<dyn Conversion>))
}

impl MemorySource {
    /// This store's objects in the form `conversion` gives them (see the module docs).
    pub fn view(&self, conversion: Arc<dyn Conversion>) -> MemorySource {
        MemorySource { view: Some(conversion), ..self.clone() }
    }

    /// `object` as this store (or view) shows it.
    pub(super) fn shown(&self, object: &Object) -> Object {
        let Some(view) = &self.view else { return object.clone() };
        let converted = object
            .to_value()
            .map(|value| view.shown_form(value))
            .and_then(|value| Object::from_string(value.to_string()));
        converted.unwrap_or_else(|e: ObjectError| {
            tracing::warn!(key = object.key(), error = %e, "a stored object does not convert; shown as stored");
            object.clone()
        })
    }

    /// A watch event as this store (or view) shows it.
    pub(super) fn shown_event(&self, event: Result<WatchEvent, SourceError>) -> Result<WatchEvent, SourceError> {
        if self.view.is_none() {
            return event;
        }
        event.map(|event| match event {
            WatchEvent::Added(o) => WatchEvent::Added(self.shown(&o)),
            WatchEvent::Modified(o) => WatchEvent::Modified(self.shown(&o)),
            WatchEvent::Deleted(o) => WatchEvent::Deleted(self.shown(&o)),
            other => other,
        })
    }

    /// The stored form of `value`, written through this store (or view).
    pub(super) fn stored_form(&self, value: Value) -> Value {
        match &self.view {
            Some(view) => view.to_storage(value),
            None => value,
        }
    }
}

#[cfg(test)]
#[path = "memory_view_tests.rs"]
mod tests;
