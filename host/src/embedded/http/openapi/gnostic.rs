//! An OpenAPI v2 document (JSON) as gnostic's `openapi.v2.Document` protobuf message, the
//! form client-go's `OpenAPISchema()` reads (kubectl's validation, and `explain` before
//! 1.27). The message types come from gnostic's `OpenAPIv2.proto` (compiled by the build
//! script); the JSON is read the way gnostic's compiler reads it:
//!
//! - a field is the key in snake case (`additionalProperties` → `additional_properties`),
//!   `$ref` is `_ref`;
//! - a map (`definitions`, `properties`, `paths`, `responses`…) is a repeated `Named*`
//!   message of `name` and `value`;
//! - an `x-…` key is a `vendor_extension` (`NamedAny`) whose value is YAML text, as kubectl
//!   parses it;
//! - `default`, `example` and `enum` values are `Any`s of YAML text;
//! - `TypeItem`, `ItemsItem` and `StringArray` take one value or a list; the `oneof`
//!   wrappers (`SchemaItem`, `ParametersItem`, `Parameter`, `NonBodyParameter`,
//!   `ResponseValue`, `AdditionalPropertiesItem`, `SecurityDefinitionsItem`) pick their
//!   case from the JSON (`$ref`, `in`, `type`…).

use std::sync::OnceLock;

use prost::Message as _;
use prost_reflect::{DescriptorPool, DynamicMessage, FieldDescriptor, Kind, MessageDescriptor, Value as Proto};
use serde_json::Value;

use super::{Error, Result};

/// gnostic's `openapi.v2` descriptors, compiled by the build script.
const DESCRIPTORS: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/openapiv2.bin"));

/// The descriptors of the `openapi.v2` package.
pub fn pool() -> Result<&'static DescriptorPool> {
    static POOL: OnceLock<std::result::Result<DescriptorPool, String>> = OnceLock::new();
    let pool = POOL.get_or_init(|| DescriptorPool::decode(DESCRIPTORS).map_err(|e| e.to_string()));
    pool.as_ref().map_err(|e| Error::Descriptors(e.clone()))
}

/// The descriptor of `openapi.v2.Document`.
pub(crate) fn document_descriptor() -> Result<MessageDescriptor> {
    pool()?
        .get_message_by_name("openapi.v2.Document")
        .ok_or_else(|| Error::Descriptors("no openapi.v2.Document".into()))
}

/// `document` (an OpenAPI v2 document, or a part of one) as an encoded `Document`.
pub fn document(document: &Value) -> Result<Vec<u8>> {
    Ok(message(&document_descriptor()?, document).encode_to_vec())
}

/// `json` as a message of type `descriptor`.
fn message(descriptor: &MessageDescriptor, json: &Value) -> DynamicMessage {
    let mut message = DynamicMessage::new(descriptor.clone());
    if descriptor.full_name() == "openapi.v2.Any" {
        message.set_field_by_name("yaml", Proto::String(yaml(json)));
        return message;
    }
    if let Some(case) = oneof_case(descriptor, json)
        && let Some(field) = descriptor.get_field_by_name(case)
    {
        let value = single(&field, json);
        message.set_field(&field, value);
        return message;
    }
    let fields: Vec<FieldDescriptor> = descriptor.fields().collect();
    if let [only] = fields.as_slice()
        && only.is_list()
        && !(json.is_object() && only.name() == "additional_properties")
    {
        // TypeItem, ItemsItem, StringArray: one value or a list of them.
        message.set_field(only, list(only, json));
        return message;
    }
    let Value::Object(map) = json else { return message };
    let vendor = descriptor.get_field_by_name("vendor_extension");
    let named = fields.iter().find(|f| f.is_list() && f.name() != "vendor_extension" && is_named(f)).cloned();
    for (key, value) in map {
        if key.starts_with("x-")
            && let Some(vendor) = &vendor
        {
            push(&mut message, vendor, named_value(vendor, key, value));
        } else if let Some(named) = &named {
            push(&mut message, named, named_value(named, key, value));
        } else {
            let name = if key == "$ref" { "_ref".to_owned() } else { snake_case(key) };
            if let Some(field) = descriptor.get_field_by_name(&name) {
                let value = if field.is_list() { list(&field, value) } else { single(&field, value) };
                message.set_field(&field, value);
            }
        }
    }
    message
}

/// Whether a field holds `Named*` messages (`name` and `value`): a map's entries.
fn is_named(field: &FieldDescriptor) -> bool {
    matches!(field.kind(), Kind::Message(m) if m.name().starts_with("Named"))
}

/// A `Named*` message of `name` and `json` for the repeated `field`.
fn named_value(field: &FieldDescriptor, name: &str, json: &Value) -> Proto {
    let Kind::Message(descriptor) = field.kind() else { return Proto::String(String::new()) };
    let mut entry = DynamicMessage::new(descriptor.clone());
    entry.set_field_by_name("name", Proto::String(name.to_owned()));
    if let Some(value) = descriptor.get_field_by_name("value") {
        let converted = single(&value, json);
        entry.set_field(&value, converted);
    }
    Proto::Message(entry)
}

fn push(message: &mut DynamicMessage, field: &FieldDescriptor, value: Proto) {
    if let Proto::List(items) = message.get_field_mut(field) {
        items.push(value);
    }
}

/// `json` (a list, or one value) as the repeated `field`.
fn list(field: &FieldDescriptor, json: &Value) -> Proto {
    let items = match json {
        Value::Array(items) => items.iter().map(|item| single(field, item)).collect(),
        one => vec![single(field, one)],
    };
    Proto::List(items)
}

/// `json` as one value of `field`'s type.
fn single(field: &FieldDescriptor, json: &Value) -> Proto {
    match field.kind() {
        Kind::Message(descriptor) => Proto::Message(message(&descriptor, json)),
        Kind::String => Proto::String(json.as_str().map_or_else(|| json.to_string(), str::to_owned)),
        Kind::Bool => Proto::Bool(json.as_bool().unwrap_or_default()),
        Kind::Int64 => Proto::I64(json.as_i64().or_else(|| json.as_f64().map(|f| f as i64)).unwrap_or_default()),
        Kind::Double => Proto::F64(json.as_f64().unwrap_or_default()),
        _ => field.default_value(),
    }
}

/// The case a `oneof` wrapper takes for `json`, by what the JSON holds; `None` for a
/// message that is not one.
fn oneof_case(descriptor: &MessageDescriptor, json: &Value) -> Option<&'static str> {
    let reference = json.get("$ref").is_some();
    let text = |key: &str| json.get(key).and_then(Value::as_str).unwrap_or_default();
    Some(match descriptor.name() {
        "SchemaItem" if text("type") == "file" => "file_schema",
        "SchemaItem" => "schema",
        "ParametersItem" if reference => "json_reference",
        "ParametersItem" => "parameter",
        "ResponseValue" if reference => "json_reference",
        "ResponseValue" => "response",
        "Parameter" if text("in") == "body" => "body_parameter",
        "Parameter" => "non_body_parameter",
        "NonBodyParameter" => match text("in") {
            "header" => "header_parameter_sub_schema",
            "formData" => "form_data_parameter_sub_schema",
            "path" => "path_parameter_sub_schema",
            _ => "query_parameter_sub_schema",
        },
        "AdditionalPropertiesItem" if json.is_boolean() => "boolean",
        "AdditionalPropertiesItem" => "schema",
        "SecurityDefinitionsItem" => match (text("type"), text("flow")) {
            ("basic", _) => "basic_authentication_security",
            ("oauth2", "implicit") => "oauth2_implicit_security",
            ("oauth2", "password") => "oauth2_password_security",
            ("oauth2", "application") => "oauth2_application_security",
            ("oauth2", _) => "oauth2_access_code_security",
            _ => "api_key_security",
        },
        _ => return None,
    })
}

/// A JSON key as its proto field name: `additionalProperties` → `additional_properties`.
fn snake_case(key: &str) -> String {
    let mut name = String::with_capacity(key.len() + 4);
    for c in key.chars() {
        if c.is_ascii_uppercase() {
            name.push('_');
            name.push(c.to_ascii_lowercase());
        } else {
            name.push(c);
        }
    }
    name
}

/// A value as the YAML text gnostic keeps in an `Any`.
fn yaml(json: &Value) -> String {
    serde_norway::to_string(json).unwrap_or_else(|_| json.to_string())
}

#[cfg(test)]
#[path = "gnostic_tests.rs"]
mod tests;
