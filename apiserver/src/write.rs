//! What a write produces, and the options and checks every write shares.
//!
//! A store calls one of the write functions ([`create`](crate::create),
//! [`update`](crate::update), [`patch`](crate::patch), [`delete`](crate::delete)) inside its
//! lock with the stored object (or none) and the request, and gets a [`Write`]: the object to
//! store, the object to remove, or nothing to do — or a [`Status`] to send back. The store
//! stamps `metadata.resourceVersion` on what it stores; the rules never pick one.

use serde_json::Value;

use crate::object::{self, ObjectError};
use crate::resource::ResourceDef;
use crate::status::Status;

/// The outcome of an accepted write.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub enum Write {
    /// Store this object (a create, or a change). The store stamps its resourceVersion and
    /// emits ADDED or MODIFIED.
    Put(Value),
    /// Remove the object. The value is its final state, for the DELETED event.
    Delete(Value),
    /// Nothing changed: no write and no watch event. The value is the stored object, the
    /// response to send.
    Unchanged(Value),
}

impl Write {
    /// The object of the outcome, whatever it is.
    pub fn object(&self) -> &Value {
        match self {
            Write::Put(v) | Write::Delete(v) | Write::Unchanged(v) => v,
        }
    }

    /// The object of the outcome, whatever it is.
    pub fn into_object(self) -> Value {
        match self {
            Write::Put(v) | Write::Delete(v) | Write::Unchanged(v) => v,
        }
    }
}

/// A subresource a write goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// `/status`: only `status` changes; everything else is kept from the stored object.
    Status,
}

impl Subresource {
    /// The subresource's name in URLs and managed fields (`status`).
    pub fn as_str(self) -> &'static str {
        match self {
            Subresource::Status => "status",
        }
    }
}

/// Options of create, update and patch requests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteOptions {
    /// The subresource written, if any (`/status`). Create ignores it.
    pub subresource: Option<Subresource>,
    /// The `fieldManager` of a non-apply write. When set, the fields the write sets or
    /// changes are recorded in `metadata.managedFields` as owned by this manager with
    /// operation `Update` (and taken from any other manager). When unset, managed fields are
    /// left as they are (the API server would derive a manager from the user agent).
    pub field_manager: Option<String>,
}

impl WriteOptions {
    /// Options for a write to the `/status` subresource.
    pub fn status() -> Self {
        Self { subresource: Some(Subresource::Status), field_manager: None }
    }

    /// These options with a field manager.
    pub fn with_manager(mut self, manager: &str) -> Self {
        self.field_manager = Some(manager.into());
        self
    }
}

/// A malformed object is a 400 Bad Request.
pub(crate) fn shape_error(err: ObjectError) -> Status {
    Status::bad_request(format!("the object provided is unrecognized: {err}"))
}

/// Checks the object's shape, and that its apiVersion and kind (when set) are the resource's;
/// fills them in when absent.
pub(crate) fn check_object(def: &ResourceDef, obj: &mut Value) -> Result<(), Status> {
    object::check_shape(obj).map_err(shape_error)?;
    let map = obj.as_object_mut().ok_or_else(|| shape_error(ObjectError::NotAnObject))?;
    let expected_version = def.api_version();
    match map.get("apiVersion").and_then(Value::as_str) {
        Some(v) if !v.is_empty() && v != expected_version => {
            return Err(Status::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected_version})"
            )));
        }
        _ => {}
    }
    match map.get("kind").and_then(Value::as_str) {
        Some(k) if !k.is_empty() && k != def.kind => {
            return Err(Status::bad_request(format!(
                "the kind in the data ({k}) does not match the expected kind ({})",
                def.kind
            )));
        }
        _ => {}
    }
    map.insert("apiVersion".into(), Value::String(expected_version));
    map.insert("kind".into(), Value::String(def.kind.clone()));
    if def.built_in && crate::secret::is_secret(&def.group, &def.kind) {
        crate::secret::fold_string_data(obj).map_err(Status::bad_request)?;
    }
    Ok(())
}

/// Sets a metadata field on an object whose shape was checked.
pub(crate) fn set(obj: &mut Value, field: &str, value: impl Into<Value>) -> Result<(), Status> {
    object::set_meta(obj, field, value).map_err(shape_error)
}
