//! A message of the API to its JSON and back, by the message's descriptor, with
//! Kubernetes' JSON rules rather than proto3 JSON's: field names as Go's JSON writes them
//! (go-to-protobuf names fields after their JSON tags), 64-bit integers as numbers, bytes
//! in base64, a proto2 field that is unset absent, a scalar at its zero value absent unless
//! Go's JSON keeps it ([`zero_kept`]), an embedded struct's fields as the message's own
//! ([`inlined`]), and the [`Special`] messages in their own forms.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use prost_reflect::{
    DynamicMessage, FieldDescriptor, Kind, MapKey, MessageDescriptor, ReflectMessage as _, Value as Field,
};
use serde_json::{Map, Value, json};

use super::Error;
use super::descriptors::{inlined, zero_kept};
use super::special::Special;

/// The JSON of `message`, as Go's JSON writes the object its protobuf decodes to.
pub(super) fn to_json(message: &DynamicMessage) -> Result<Value, Error> {
    if let Some(special) = Special::of(&message.descriptor()) {
        return Ok(special.to_json(message)?.unwrap_or(Value::Null));
    }
    let name = message.descriptor().full_name().to_owned();
    let mut object = Map::new();
    for (field, value) in message.fields() {
        match field_to_json(&name, &field, value)? {
            Some(Value::Object(fields)) if inlined(&name, field.name()) => object.extend(fields),
            Some(json) => {
                object.insert(field.name().to_owned(), json);
            }
            None => {}
        }
    }
    Ok(Value::Object(object))
}

fn field_to_json(message: &str, field: &FieldDescriptor, value: &Field) -> Result<Option<Value>, Error> {
    if field.is_map() {
        let Field::Map(entries) = value else { return Ok(None) };
        if entries.is_empty() {
            return Ok(None);
        }
        let kind = field.kind();
        let value_kind = kind.as_message().map(|entry| entry.map_entry_value_field().kind());
        let mut object = Map::new();
        for (key, entry) in entries {
            let key = match key {
                MapKey::String(s) => s.clone(),
                MapKey::Bool(b) => b.to_string(),
                MapKey::I32(i) => i.to_string(),
                MapKey::I64(i) => i.to_string(),
                MapKey::U32(i) => i.to_string(),
                MapKey::U64(i) => i.to_string(),
            };
            let value = match &value_kind {
                Some(kind) => single(kind, entry)?.unwrap_or(Value::Null),
                None => Value::Null,
            };
            object.insert(key, value);
        }
        return Ok(Some(Value::Object(object)));
    }
    if field.is_list() {
        let Field::List(items) = value else { return Ok(None) };
        if items.is_empty() {
            return Ok(None);
        }
        let kind = field.kind();
        let items =
            items.iter().map(|i| single(&kind, i).map(|v| v.unwrap_or(Value::Null))).collect::<Result<_, _>>()?;
        return Ok(Some(Value::Array(items)));
    }
    // A zero Time is `null` in Go's JSON, or nothing when its field is `omitzero`.
    if let Field::Message(m) = value
        && let Some(special) = Special::of(&m.descriptor())
    {
        return Ok(match special.to_json(m)? {
            None if zero_kept(message, field.name()) => Some(Value::Null),
            written => written,
        });
    }
    // A scalar at its zero value is what Go's encoder writes for a field it always writes;
    // Go's JSON leaves it out unless the field is a pointer or not `omitempty`.
    if !matches!(field.kind(), Kind::Message(_)) && is_zero(value) && !zero_kept(message, field.name()) {
        return Ok(None);
    }
    single(&field.kind(), value)
}

fn is_zero(value: &Field) -> bool {
    match value {
        Field::Bool(b) => !b,
        Field::I32(i) | Field::EnumNumber(i) => *i == 0,
        Field::I64(i) => *i == 0,
        Field::U32(i) => *i == 0,
        Field::U64(i) => *i == 0,
        Field::F32(f) => *f == 0.0,
        Field::F64(f) => *f == 0.0,
        Field::String(s) => s.is_empty(),
        Field::Bytes(b) => b.is_empty(),
        Field::Message(_) | Field::List(_) | Field::Map(_) => false,
    }
}

/// One value (not a list or map) of a field of `kind`.
fn single(kind: &Kind, value: &Field) -> Result<Option<Value>, Error> {
    Ok(Some(match value {
        Field::Bool(b) => json!(b),
        Field::I32(i) | Field::EnumNumber(i) => json!(i),
        Field::I64(i) => json!(i),
        Field::U32(i) => json!(i),
        Field::U64(i) => json!(i),
        Field::F32(f) => json!(f),
        Field::F64(f) => json!(f),
        Field::String(s) => json!(s),
        Field::Bytes(b) => json!(BASE64.encode(b)),
        Field::Message(m) => match Special::of(&m.descriptor()) {
            Some(special) => return special.to_json(m),
            None => to_json(m)?,
        },
        Field::List(_) | Field::Map(_) => {
            return Err(Error::Shape { expected: format!("{kind:?}"), found: "a list".into() });
        }
    }))
}

/// The message `descriptor` of `value`, as Go's JSON reads it (fields it does not know are
/// left out, as Go's decoder leaves them; `null` is an unset field).
pub(super) fn from_json(descriptor: MessageDescriptor, value: &Value) -> Result<DynamicMessage, Error> {
    if let Some(special) = Special::of(&descriptor) {
        return special.message_of_json(descriptor, value);
    }
    let Value::Object(object) = value else {
        return Err(Error::Shape { expected: format!("an object ({})", descriptor.name()), found: value.to_string() });
    };
    let mut message = DynamicMessage::new(descriptor.clone());
    // An inlined field reads its fields from the message's own object.
    for field in descriptor.fields().filter(|f| inlined(descriptor.full_name(), f.name())) {
        if let Kind::Message(inner) = field.kind() {
            let value = from_json(inner, value).map_err(|e| e.at(field.name()))?;
            if value.fields().next().is_some() {
                message.set_field(&field, Field::Message(value));
            }
        }
    }
    for (name, value) in object {
        let Some(field) = descriptor.get_field_by_name(name) else { continue };
        if value.is_null() {
            // A zero Time Go writes as `null` it encodes as an empty message.
            if let Kind::Message(inner) = field.kind()
                && matches!(Special::of(&inner), Some(Special::Time | Special::MicroTime))
                && zero_kept(descriptor.full_name(), field.name())
            {
                message.set_field(&field, Field::Message(DynamicMessage::new(inner)));
            }
            continue;
        }
        let value = field_from_json(&field, value).map_err(|e| e.at(name))?;
        message.set_field(&field, value);
    }
    Ok(message)
}

fn field_from_json(field: &FieldDescriptor, value: &Value) -> Result<Field, Error> {
    let kind = field.kind();
    if field.is_map() {
        let Value::Object(entries) = value else {
            return Err(Error::Shape { expected: "an object".into(), found: value.to_string() });
        };
        let entry = kind.as_message().ok_or_else(|| Error::Shape { expected: "a map".into(), found: String::new() })?;
        let value_kind = entry.map_entry_value_field().kind();
        let mut map = std::collections::HashMap::new();
        for (key, entry) in entries {
            if entry.is_null() {
                continue;
            }
            map.insert(MapKey::String(key.clone()), scalar_from_json(&value_kind, entry).map_err(|e| e.at(key))?);
        }
        return Ok(Field::Map(map));
    }
    if field.is_list() {
        let Value::Array(items) = value else {
            return Err(Error::Shape { expected: "an array".into(), found: value.to_string() });
        };
        let items = items.iter().map(|i| scalar_from_json(&kind, i)).collect::<Result<_, _>>()?;
        return Ok(Field::List(items));
    }
    scalar_from_json(&kind, value)
}

fn scalar_from_json(kind: &Kind, value: &Value) -> Result<Field, Error> {
    let wrong = |expected: &str| Error::Shape { expected: expected.to_owned(), found: value.to_string() };
    let int = || value.as_i64().or_else(|| value.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64));
    Ok(match kind {
        Kind::Message(descriptor) => Field::Message(from_json(descriptor.clone(), value)?),
        Kind::String => Field::String(value.as_str().ok_or_else(|| wrong("a string"))?.to_owned()),
        Kind::Bool => Field::Bool(value.as_bool().ok_or_else(|| wrong("a boolean"))?),
        Kind::Bytes => {
            let text = value.as_str().ok_or_else(|| wrong("base64"))?;
            Field::Bytes(BASE64.decode(text).map_err(|_| wrong("base64"))?.into())
        }
        Kind::Int32 | Kind::Sint32 | Kind::Sfixed32 => {
            Field::I32(int().and_then(|i| i32::try_from(i).ok()).ok_or_else(|| wrong("an int32"))?)
        }
        Kind::Int64 | Kind::Sint64 | Kind::Sfixed64 => Field::I64(int().ok_or_else(|| wrong("an int64"))?),
        Kind::Uint32 | Kind::Fixed32 => {
            Field::U32(int().and_then(|i| u32::try_from(i).ok()).ok_or_else(|| wrong("a uint32"))?)
        }
        Kind::Uint64 | Kind::Fixed64 => Field::U64(value.as_u64().ok_or_else(|| wrong("a uint64"))?),
        #[allow(clippy::cast_possible_truncation, reason = "a float field holds what its JSON number says")]
        Kind::Float => Field::F32(value.as_f64().ok_or_else(|| wrong("a number"))? as f32),
        Kind::Double => Field::F64(value.as_f64().ok_or_else(|| wrong("a number"))?),
        Kind::Enum(_) => Field::EnumNumber(int().and_then(|i| i32::try_from(i).ok()).ok_or_else(|| wrong("an enum"))?),
    })
}
