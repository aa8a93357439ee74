//! What a LIST or WATCH selects: a namespace (from the path), labels (`labelSelector`) and
//! fields (`fieldSelector`). Every kind supports `metadata.name` and `metadata.namespace`;
//! built-in kinds add the fields the API server indexes for them (a Pod's `spec.nodeName`,
//! a Secret's `type`, ...), custom resources their CRD's `selectableFields`. Any other field
//! is refused, as the API server refuses it ("field label not supported").

use std::sync::Arc;

use serde_json::Value;

use crate::cluster::RequestError;
use crate::embedded::Collection;
use crate::embedded::Selects;
use crate::informer::Object;
use crate::kube::LabelSelector;

/// One `fieldSelector` term: the field's JSON pointer, `=` or `!=`, and the value.
#[derive(Clone, Debug)]
struct FieldTerm {
    pointer: String,
    equal: bool,
    value: String,
}

/// A LIST's or WATCH's selection.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    namespace: Option<String>,
    labels: Option<LabelSelector>,
    fields: Vec<FieldTerm>,
}

fn bad(message: String) -> RequestError {
    RequestError::BadRequest(message)
}

impl Selection {
    /// The selection of a request on `collection`.
    pub fn parse(
        collection: &Collection,
        namespace: Option<String>,
        label_selector: Option<&str>,
        field_selector: Option<&str>,
    ) -> Result<Self, RequestError> {
        let labels = match label_selector.filter(|s| !s.trim().is_empty()) {
            Some(text) => {
                Some(text.parse::<LabelSelector>().map_err(|e| bad(format!("unable to parse requirement: {e}")))?)
            }
            None => None,
        };
        let mut fields = Vec::new();
        for term in field_selector.unwrap_or_default().split(',').filter(|t| !t.trim().is_empty()) {
            let (field, equal, value) = if let Some((f, v)) = term.split_once("!=") {
                (f, false, v)
            } else if let Some((f, v)) = term.split_once("==").or_else(|| term.split_once('=')) {
                (f, true, v)
            } else {
                return Err(bad(format!("invalid selector: '{term}'; can't understand '{term}'")));
            };
            let field = field.trim();
            let pointer = match field {
                "metadata.name" => "/metadata/name".to_owned(),
                "metadata.namespace" => "/metadata/namespace".to_owned(),
                other => collection
                    .fields
                    .iter()
                    .find(|(label, _)| label == other)
                    .map(|(_, pointer)| pointer.clone())
                    .ok_or_else(|| bad(format!("field label not supported: {other}")))?,
            };
            fields.push(FieldTerm { pointer, equal, value: value.trim().to_owned() });
        }
        Ok(Self { namespace, labels, fields })
    }

    /// Whether the selection is more than a namespace (the API server then leaves
    /// `remainingItemCount` out of lists).
    pub fn filters(&self) -> bool {
        self.labels.is_some() || !self.fields.is_empty()
    }

    /// Whether `obj` is selected.
    pub fn selects(&self, obj: &Object) -> bool {
        self.namespace.as_deref().is_none_or(|ns| obj.namespace() == Some(ns))
            && self.labels.as_ref().is_none_or(|s| s.matches(&obj.labels()))
            && (self.fields.is_empty() || self.fields_match(obj))
    }

    fn fields_match(&self, obj: &Object) -> bool {
        let value = obj.to_value().unwrap_or(Value::Null);
        self.fields.iter().all(|term| {
            let actual = match value.pointer(&term.pointer) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            (actual == term.value) == term.equal
        })
    }

    /// The selection as a [`Selects`] for a watch, or `None` when it selects everything.
    pub fn into_selects(self) -> Option<Selects> {
        if self.namespace.is_none() && !self.filters() {
            return None;
        }
        Some(Arc::new(move |obj: &Object| self.selects(obj)))
    }
}
