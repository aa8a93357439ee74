//! The `scale` subresource (`…/deployments/NAME/scale`): an object seen as an
//! `autoscaling/v1` Scale, read with GET and written with PUT or PATCH (JSON, merge,
//! strategic merge), as `kubectl scale` and the client libraries' `*_scale` calls use it.
//! A write sets the object's desired replicas (the path its kind or its
//! CustomResourceDefinition names) through an update of the object, with the request's dry
//! run and field manager, and answers the Scale of what was stored. A Scale's
//! `resourceVersion`, when given, must be the object's (409 otherwise); without one, a write
//! that meets a concurrent change is tried again, as the API server's is.

use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use serde_json::Value;

use super::discovery::Served;
use super::options::{field_manager, patch_type, write_options};
use super::query::Query;
use super::status::{About, failure, failure_about, json_response};
use crate::cluster::{Cause, PatchType, Request, RequestError, Verb};
use crate::embedded::{Collection, EmbeddedClient};
use crate::kube::scale::{ScalePaths, scale_of, with_replicas};

/// How often a write without a resourceVersion is tried again after a conflict.
const RETRIES: usize = 5;

/// One request to an object's scale subresource.
pub(super) struct ScaleRequest<'a> {
    pub client: &'a EmbeddedClient,
    pub kind: &'a Served,
    pub collection: &'a Collection,
    pub namespace: Option<String>,
    pub name: &'a str,
}

impl ScaleRequest<'_> {
    /// Answers `method` with `body`.
    pub(super) fn answer(&self, method: &Method, headers: &HeaderMap, query: &Query, body: &[u8]) -> Response {
        let group = self.kind.def.group.as_str();
        let about = About { name: self.name, group, plural: &self.kind.def.plural, kind: &self.kind.def.kind };
        let Some(paths) = &self.collection.scale else {
            let what = format!("{}/scale", self.kind.def.plural);
            return failure(&RequestError::NotFound(format!(
                "the server could not find the requested resource ({what})"
            )));
        };
        let result = match *method {
            Method::GET => self.read(paths),
            Method::PUT => self.put(paths, headers, query, body),
            Method::PATCH => self.patch(paths, headers, query, body),
            ref other => {
                Err(RequestError::BadRequest(format!("the server does not allow {other} on a scale subresource")))
            }
        };
        match result {
            Ok(scale) => json_response(StatusCode::OK, &scale),
            Err(e) => failure_about(&e, Some(&about)),
        }
    }

    fn request(&self, verb: Verb) -> Request {
        Request::new(verb, self.kind.def.api_version(), &self.kind.def.kind, self.namespace.clone(), self.name)
    }

    fn object(&self) -> Result<Value, RequestError> {
        Ok(self.client.execute_now(self.request(Verb::Get))?.object.to_value()?)
    }

    fn read(&self, paths: &ScalePaths) -> Result<Value, RequestError> {
        Ok(scale_of(&self.object()?, paths))
    }

    fn put(&self, paths: &ScalePaths, headers: &HeaderMap, query: &Query, body: &[u8]) -> Result<Value, RequestError> {
        let scale: Value = serde_json::from_slice(body)
            .map_err(|e| RequestError::BadRequest(format!("the Scale is not valid JSON: {e}")))?;
        self.write(paths, headers, query, &Method::PUT, None, |_| Ok(scale.clone()))
    }

    fn patch(
        &self,
        paths: &ScalePaths,
        headers: &HeaderMap,
        query: &Query,
        body: &[u8],
    ) -> Result<Value, RequestError> {
        let patch = patch_type(headers, query).map_err(|_| unsupported())?;
        if matches!(patch, PatchType::Apply { .. }) {
            return Err(unsupported());
        }
        self.write(paths, headers, query, &Method::PATCH, Some(&patch), |current| {
            Ok(wink_apiserver::patch::patched(current, body, &patch)?)
        })
    }

    /// Sets the replicas of the Scale `change` makes of the current one.
    fn write(
        &self,
        paths: &ScalePaths,
        headers: &HeaderMap,
        query: &Query,
        method: &Method,
        patch: Option<&PatchType>,
        change: impl Fn(&Value) -> Result<Value, RequestError>,
    ) -> Result<Value, RequestError> {
        let options = write_options(method, query, patch).map_err(|_| {
            RequestError::BadRequest("the request's options are not valid (see the object's own endpoint)".into())
        })?;
        let manager = field_manager(headers, &options);
        let mut tries = 0;
        loop {
            let object = self.object()?;
            let current = scale_of(&object, paths);
            let wanted = change(&current)?;
            let replicas = self.replicas(&wanted)?;
            let given = wanted.pointer("/metadata/resourceVersion").and_then(Value::as_str).filter(|v| !v.is_empty());
            let mut scaled = with_replicas(&object, paths, replicas);
            if let Some(version) = given {
                scaled["metadata"]["resourceVersion"] = version.into();
            }
            let update = self
                .request(Verb::Update)
                .with_body(scaled.to_string())
                .with_dry_run(options.dry_run)
                .with_field_manager(manager.clone());
            match self.client.execute_now(update) {
                Err(RequestError::Conflict(_)) if given.is_none() && tries < RETRIES => tries += 1,
                Err(e) => return Err(e),
                Ok(outcome) => return Ok(scale_of(&outcome.object.to_value()?, paths)),
            }
        }
    }

    /// The replicas a Scale asks for, checked as `ValidateScale` checks them; its name must
    /// be the path's.
    fn replicas(&self, scale: &Value) -> Result<i64, RequestError> {
        let name = scale.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
        if !name.is_empty() && name != self.name {
            return Err(RequestError::BadRequest(format!(
                "the name of the object ({name}) does not match the name on the URL ({})",
                self.name
            )));
        }
        let replicas = match scale.pointer("/spec/replicas") {
            None | Some(Value::Null) => 0,
            Some(value) => value.as_i64().filter(|r| i32::try_from(*r).is_ok()).ok_or_else(|| {
                RequestError::BadRequest(format!(
                    "Scale.autoscaling \"{}\": spec.replicas: {value} is not an int32",
                    self.name
                ))
            })?,
        };
        if replicas < 0 {
            let message = "must be greater than or equal to 0";
            return Err(RequestError::Invalid {
                message: format!(
                    "Scale.autoscaling \"{}\" is invalid: spec.replicas: Invalid value: {replicas}: {message}",
                    self.name
                ),
                causes: vec![Cause {
                    field: "spec.replicas".into(),
                    reason: "FieldValueInvalid".into(),
                    message: format!("Invalid value: {replicas}: {message}"),
                }],
            });
        }
        Ok(replicas)
    }
}

/// The answer to a patch type the scale subresource does not take.
fn unsupported() -> RequestError {
    RequestError::BadRequest(
        "the scale subresource takes application/json-patch+json, application/merge-patch+json and \
         application/strategic-merge-patch+json patches"
            .into(),
    )
}

#[cfg(test)]
#[path = "scale_tests.rs"]
mod tests;
