//! The envelope of a protobuf object on the wire (apimachinery's `protobuf.Serializer`): the
//! magic `k8s\0`, then a `runtime.Unknown` whose `typeMeta` names the object's apiVersion and
//! kind and whose `raw` is the object's own message. A watch stream frames each event
//! (`metav1.WatchEvent`, its object in this envelope) after its length, 4 bytes big-endian.

use prost_reflect::prost::Message as _;
use prost_reflect::{DynamicMessage, Value as Field};

use super::Error;
use super::descriptors::{META_V1, message};

/// What every protobuf body starts with.
pub(super) const MAGIC: &[u8; 4] = b"k8s\0";

const UNKNOWN: &str = "k8s.io.apimachinery.pkg.runtime.Unknown";

/// An object of the wire: its apiVersion and kind, and its message's bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Unknown {
    pub api_version: String,
    pub kind: String,
    pub raw: Vec<u8>,
}

fn descriptor(name: &str) -> Result<prost_reflect::MessageDescriptor, Error> {
    message(name).ok_or_else(|| Error::UnknownKind { api_version: String::new(), kind: name.to_owned() })
}

/// The object of a protobuf body.
pub(super) fn open(body: &[u8]) -> Result<Unknown, Error> {
    let inner = body.strip_prefix(MAGIC.as_slice()).ok_or(Error::NoMagic)?;
    let unknown = DynamicMessage::decode(descriptor(UNKNOWN)?, inner).map_err(|e| Error::Decode(e.to_string()))?;
    let text = |m: &DynamicMessage, name: &str| {
        m.get_field_by_name(name).and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
    };
    if !text(&unknown, "contentEncoding").is_empty() {
        return Err(Error::Decode(format!(
            "content encoding {:?} is not supported",
            text(&unknown, "contentEncoding")
        )));
    }
    let type_meta = unknown.get_field_by_name("typeMeta").and_then(|v| v.as_message().cloned());
    let (api_version, kind) = match type_meta {
        Some(meta) => (text(&meta, "apiVersion"), text(&meta, "kind")),
        None => (String::new(), String::new()),
    };
    let raw = unknown.get_field_by_name("raw").and_then(|v| v.as_bytes().map(|b| b.to_vec())).unwrap_or_default();
    Ok(Unknown { api_version, kind, raw })
}

/// The protobuf body of `object`, as Go's serializer writes it.
pub(super) fn seal(object: &Unknown) -> Result<Vec<u8>, Error> {
    let mut type_meta = DynamicMessage::new(descriptor("k8s.io.apimachinery.pkg.runtime.TypeMeta")?);
    type_meta.set_field_by_name("apiVersion", Field::String(object.api_version.clone()));
    type_meta.set_field_by_name("kind", Field::String(object.kind.clone()));
    let mut unknown = DynamicMessage::new(descriptor(UNKNOWN)?);
    unknown.set_field_by_name("typeMeta", Field::Message(type_meta));
    unknown.set_field_by_name("raw", Field::Bytes(object.raw.clone().into()));
    unknown.set_field_by_name("contentEncoding", Field::String(String::new()));
    unknown.set_field_by_name("contentType", Field::String(String::new()));
    let mut body = MAGIC.to_vec();
    body.extend(unknown.encode_to_vec());
    Ok(body)
}

/// One frame of a protobuf watch: the `WatchEvent` of `event_type` around `object`'s
/// sealed body, after its length.
pub(super) fn watch_frame(event_type: &str, object: &Unknown) -> Result<Vec<u8>, Error> {
    let mut raw = DynamicMessage::new(descriptor("k8s.io.apimachinery.pkg.runtime.RawExtension")?);
    raw.set_field_by_name("raw", Field::Bytes(seal(object)?.into()));
    let mut event = DynamicMessage::new(descriptor(&format!("{META_V1}.WatchEvent"))?);
    event.set_field_by_name("type", Field::String(event_type.to_owned()));
    event.set_field_by_name("object", Field::Message(raw));
    let event = event.encode_to_vec();
    let length = u32::try_from(event.len()).map_err(|_| Error::Decode("a watch event over 4 GiB".into()))?;
    let mut frame = length.to_be_bytes().to_vec();
    frame.extend(event);
    Ok(frame)
}
