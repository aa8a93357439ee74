//! Server-side printing: a GET or LIST whose `Accept` asks for
//! `application/json;as=Table;v=v1;g=meta.k8s.io` (as kubectl's `get` does) is answered
//! with a `Table` of the kind's columns ([`crate::kube::printers`]: kube-apiserver's for
//! built-in kinds, a CustomResourceDefinition's `additionalPrinterColumns` for its custom
//! resources), one row per object with the object's metadata (`includeObject=Metadata`, the
//! default), the whole object (`Object`) or nothing (`None`). A watch is answered as
//! objects, which kubectl prints itself.

use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde_json::{Value, json};

use super::discovery::Served;
use super::media::accepted;
use super::query::Query;
use super::status::{failure, json_response};
use crate::cluster::RequestError;
use crate::embedded::{Collection, EmbeddedCluster};
use crate::informer::Object;
use crate::kube::printers::{Printer, custom_columns, printer};

/// The cells of one object, one per column.
type Cells = dyn Fn(&Value) -> Vec<Value>;

/// What a request asks of a Table: its version, and what each row carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct TableRequest {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    api_version: &'static str,
    include: Include,
}

/// `includeObject`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Include {
    None,
    Metadata,
    Object,
}

impl TableRequest {
    /// The Table the request's `Accept` asks for, if it asks for one (the first media type
    /// that is a Table or plain JSON decides, as the API server negotiates).
    pub(super) fn of(headers: &HeaderMap, query: &Query) -> Result<Option<Self>, RequestError> {
        let mut version = None;
        for range in accepted(headers) {
            let param = |name: &str| range.params.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
            if range.mime() != "application/json" {
                continue;
            }
            match (param("as"), param("g"), param("v")) {
                (Some("Table"), Some("meta.k8s.io"), Some("v1")) => version = Some("meta.k8s.io/v1"),
                (Some("Table"), Some("meta.k8s.io"), Some("v1beta1")) => version = Some("meta.k8s.io/v1beta1"),
                (Some(_), _, _) => continue,
                (None, _, _) => break,
            }
            break;
        }
        let Some(api_version) = version else { return Ok(None) };
        let include = match query.get("includeObject") {
            None | Some("Metadata") => Include::Metadata,
            Some("None") => Include::None,
            Some("Object") => Include::Object,
            Some(other) => {
                return Err(RequestError::BadRequest(format!(
                    "unrecognized includeObject value: {other:?}, supported: None, Metadata, Object"
                )));
            }
        };
        Ok(Some(Self { api_version, include }))
    }

    /// The Table of `objects` of `kind` (a LIST's page with its list metadata, or one object).
    pub(super) fn answer(
        self,
        cluster: &dyn EmbeddedCluster,
        kind: &Served,
        collection: &Collection,
        objects: &[Object],
        metadata: Value,
    ) -> Response {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        let group = kind.def.group.as_str();
        let version = kind.def.version.as_str();
        let (definitions, cells): (Vec<Value>, Box<Cells>) = if collection.def.built_in {
            let Printer { columns, cells } = printer(group, &kind.def.kind);
            (columns.iter().map(|c| c.definition()).collect(), Box::new(move |o| cells(o, now)))
        } else {
            let definition = cluster
                .collection("apiextensions.k8s.io/v1", "CustomResourceDefinition")
                .and_then(|c| c.source.get(&format!("{}.{group}", kind.def.plural)))
                .and_then(|crd| crd.to_value().ok())
                .unwrap_or(Value::Null);
            let columns = custom_columns(&definition, version);
            (columns.definitions(), Box::new(move |o| columns.cells(o, now)))
        };
        let mut rows = Vec::with_capacity(objects.len());
        for object in objects {
            let value = match object.to_value() {
                Ok(value) => value,
                Err(e) => return failure(&RequestError::from(e)),
            };
            let mut row = json!({"cells": cells(&value)});
            match self.include {
                Include::None => {}
                Include::Metadata => {
                    row["object"] = json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": value["metadata"]});
                }
                Include::Object => row["object"] = value,
            }
            rows.push(row);
        }
        let table = json!({
            "kind": "Table", "apiVersion": self.api_version, "metadata": metadata,
            "columnDefinitions": definitions, "rows": rows,
        });
        json_response(StatusCode::OK, &table)
    }
}

#[cfg(test)]
#[path = "table_tests.rs"]
mod tests;
