//! The manifest's types written back and described: [`Serialize`] for the values read from
//! text (a plugin name, a memory size, a service account, a label selector) writes them as
//! that text, and their [`JsonSchema`] is a string (a memory size: an integer or a string), so
//! that the `WinkPlugin` custom resource's schema is generated from the manifest's own types.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Serialize, Serializer};

use super::permissions::ServiceAccountRef;
use super::{MemorySize, PluginName};
use crate::kube::LabelSelector;

/// Serialize and JsonSchema for a type read from, and displayed as, one string.
macro_rules! as_text {
    ($type:ty, $name:literal, $description:literal, $pattern:expr) => {
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl JsonSchema for $type {
            fn schema_name() -> Cow<'static, str> {
                Cow::Borrowed($name)
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                json_schema!({"type": "string", "description": $description, "pattern": $pattern})
            }
        }
    };
}

as_text!(
    PluginName,
    "PluginName",
    "A DNS label: lowercase alphanumerics and `-`, at most 63 characters.",
    "^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$"
);
as_text!(ServiceAccountRef, "ServiceAccountRef", "A service account, `namespace/name`.", "^[^/]+/[^/]+$");
impl JsonSchema for LabelSelector {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("LabelSelector")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "description": "A label selector in Kubernetes syntax, e.g. `app, tier in (web,db), !canary`."
        })
    }
}

impl Serialize for MemorySize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl JsonSchema for MemorySize {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed("MemorySize")
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "x-kubernetes-int-or-string": true,
            "description": "Bytes, or a size with a binary suffix: `512Ki`, `64Mi`, `1Gi`."
        })
    }
}

/// The schema of a duration written for people (`500ms`, `30s`, `5m`).
pub(crate) fn duration_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "string", "description": "A duration, e.g. `500ms`, `30s`, `5m`."})
}

/// The schema of an optional duration.
pub(crate) fn optional_duration_schema(generator: &mut SchemaGenerator) -> Schema {
    duration_schema(generator)
}

/// The schema of free-form JSON (kept as written by the API server).
pub(crate) fn any_json_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"x-kubernetes-preserve-unknown-fields": true, "description": "Free-form configuration."})
}
