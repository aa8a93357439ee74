//! One test per rule of Kubernetes' JSON that proto3's JSON does not follow, in both
//! directions, and the negotiation of media types.

use axum::http::{HeaderMap, HeaderValue, header};
use prost_reflect::prost::Message as _;
use prost_reflect::{DynamicMessage, Value as Field};
use serde_json::{Value, json};

use super::convert::{from_json, to_json};
use super::descriptors::{META_V1, message, message_of};
use super::special::{duration_text, parse_duration};
use super::{Error, answer_body, envelope, prefers_protobuf, request_json};

/// `json` as the message `name`, and back: the message, and the JSON it converts to.
fn round_trip(name: &str, json: &Value) -> (DynamicMessage, Value) {
    let descriptor = message(name).unwrap_or_else(|| panic!("no message {name}"));
    let message = from_json(descriptor.clone(), json).unwrap();
    // Through the wire, as a client would read it.
    let decoded = DynamicMessage::decode(descriptor, message.encode_to_vec().as_slice()).unwrap();
    let back = to_json(&decoded).unwrap();
    (decoded, back)
}

fn field(message: &DynamicMessage, path: &[&str]) -> Field {
    let (last, parents) = path.split_last().unwrap();
    let mut current = message.clone();
    for name in parents {
        current = current.get_field_by_name(name).unwrap().as_message().unwrap().clone();
    }
    current.get_field_by_name(last).unwrap().into_owned()
}

#[test]
fn time_is_rfc3339_in_whole_seconds() {
    let json = json!({"creationTimestamp": "2026-01-01T01:02:03Z"});
    let (message, back) = round_trip(&format!("{META_V1}.ObjectMeta"), &json);
    assert_eq!(field(&message, &["creationTimestamp", "seconds"]), Field::I64(1_767_229_323));
    assert_eq!(back, json);
    // A numeric offset is the same instant in UTC.
    let (_, back) =
        round_trip(&format!("{META_V1}.ObjectMeta"), &json!({"creationTimestamp": "2026-01-01T03:02:03+02:00"}));
    assert_eq!(back, json);
}

#[test]
fn a_zero_time_is_absent_or_null_as_its_field_says() {
    let zero = json!({"creationTimestamp": null});
    // ObjectMeta's creationTimestamp is `omitzero`: a zero time is left out.
    let meta = message(&format!("{META_V1}.ObjectMeta")).unwrap();
    let mut message = DynamicMessage::new(meta.clone());
    message.set_field_by_name("creationTimestamp", Field::Message(DynamicMessage::new(message_time())));
    assert_eq!(to_json(&message).unwrap(), json!({}));
    assert_eq!(from_json(meta, &zero).unwrap().fields().count(), 0);
    // events.k8s.io Event's deprecatedLastTimestamp is not: Go writes `null`.
    let event = message_of("events.k8s.io/v1", "Event").unwrap();
    let mut message = DynamicMessage::new(event);
    message.set_field_by_name("deprecatedLastTimestamp", Field::Message(DynamicMessage::new(message_time())));
    assert_eq!(to_json(&message).unwrap(), json!({"deprecatedLastTimestamp": null}));
}

fn message_time() -> prost_reflect::MessageDescriptor {
    message(&format!("{META_V1}.Time")).unwrap()
}

#[test]
fn micro_time_keeps_six_fractional_digits() {
    let json = json!({"spec": {"renewTime": "2026-01-01T00:00:00.123456Z"}});
    let (message, back) = round_trip("k8s.io.api.coordination.v1.Lease", &json);
    assert_eq!(field(&message, &["spec", "renewTime", "nanos"]), Field::I32(123_456_000));
    assert_eq!(back, json);
}

#[test]
fn duration_is_go_duration_text() {
    for (nanos, text) in
        [(0, "0s"), (1_500, "1.5µs"), (2_000_000, "2ms"), (90_000_000_000, "1m30s"), (5_401_500_000_000, "1h30m1.5s")]
    {
        assert_eq!(duration_text(nanos), text);
        assert_eq!(parse_duration(text), Some(nanos), "{text}");
    }
    assert_eq!(parse_duration("-1h"), Some(-3_600_000_000_000));
    assert_eq!(parse_duration("1x"), None);
    let (message, back) = round_trip(&format!("{META_V1}.Duration"), &json!("1m30s"));
    assert_eq!(field(&message, &["duration"]), Field::I64(90_000_000_000));
    assert_eq!(back, json!("1m30s"));
}

#[test]
fn quantity_is_its_string() {
    let json = json!({"limits": {"cpu": "500m", "memory": "1Gi"}});
    let (message, back) = round_trip("k8s.io.api.core.v1.ResourceRequirements", &json);
    let Field::Map(limits) = field(&message, &["limits"]) else { panic!("limits are a map") };
    assert_eq!(limits.len(), 2);
    assert_eq!(back, json);
}

#[test]
fn int_or_string_is_an_int_or_a_string() {
    for port in [json!(8080), json!("http")] {
        let json = json!({"port": port});
        let (message, back) = round_trip("k8s.io.api.core.v1.TCPSocketAction", &json);
        let string = port.is_string();
        assert_eq!(field(&message, &["port", "type"]), Field::I64(i64::from(string)));
        assert_eq!(back, json);
    }
}

#[test]
fn raw_extension_and_fields_v1_embed_json() {
    let data = json!({"data": {"spec": {"a": [1, "b"]}}, "revision": 2});
    let (revision, back) = round_trip("k8s.io.api.apps.v1.ControllerRevision", &data);
    assert_eq!(field(&revision, &["data", "raw"]).as_bytes().unwrap().as_ref(), br#"{"spec":{"a":[1,"b"]}}"#);
    assert_eq!(back, data);
    let managed = json!({"fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}});
    let (_, back) = round_trip(&format!("{META_V1}.ManagedFieldsEntry"), &managed);
    assert_eq!(back, managed);
    // Raw bytes that are not JSON cannot be embedded.
    let descriptor = message(&format!("{META_V1}.FieldsV1")).unwrap();
    let mut raw = DynamicMessage::new(descriptor);
    raw.set_field_by_name("Raw", Field::Bytes(b"k8s\0".to_vec().into()));
    assert!(matches!(to_json(&raw), Err(Error::RawNotJson(_))));
}

#[test]
fn int64_is_a_json_number() {
    let json = json!({"generation": 9_007_199_254_740_993_i64});
    let (_, back) = round_trip(&format!("{META_V1}.ObjectMeta"), &json);
    assert_eq!(back, json, "not a string as proto3 JSON writes int64");
}

#[test]
fn bytes_are_base64() {
    let json = json!({"data": {"k": "AAEC/w=="}});
    let (message, back) = round_trip("k8s.io.api.core.v1.Secret", &json);
    let Field::Map(data) = field(&message, &["data"]) else { panic!("data is a map") };
    assert_eq!(data.values().next().unwrap().as_bytes().unwrap().as_ref(), [0, 1, 2, 0xff]);
    assert_eq!(back, json);
}

#[test]
fn unset_fields_are_absent_and_zeros_follow_go() {
    let spec = message("k8s.io.api.apps.v1.DeploymentSpec").unwrap();
    let mut message = DynamicMessage::new(spec);
    // Written by Go's encoder whatever their value: minReadySeconds (not a pointer,
    // omitempty) and paused; replicas is a pointer, set to 0.
    message.set_field_by_name("minReadySeconds", Field::I32(0));
    message.set_field_by_name("paused", Field::Bool(false));
    message.set_field_by_name("replicas", Field::I32(0));
    assert_eq!(to_json(&message).unwrap(), json!({"replicas": 0}));
    // Container's name has no omitempty: Go writes it even empty.
    let container = super::descriptors::message("k8s.io.api.core.v1.Container").unwrap();
    let mut message = DynamicMessage::new(container);
    message.set_field_by_name("name", Field::String(String::new()));
    message.set_field_by_name("image", Field::String(String::new()));
    assert_eq!(to_json(&message).unwrap(), json!({"name": ""}));
}

#[test]
fn wrapper_messages_are_arrays() {
    let extra = json!({"extra": {"scopes": ["a", "b"]}, "user": "jane"});
    let (message, back) = round_trip("k8s.io.api.authorization.v1.SubjectAccessReviewSpec", &extra);
    let Field::Map(map) = field(&message, &["extra"]) else { panic!("extra is a map") };
    let items = map.values().next().unwrap().as_message().unwrap().get_field_by_name("items").unwrap().into_owned();
    assert_eq!(items, Field::List(vec![Field::String("a".into()), Field::String("b".into())]));
    assert_eq!(back, extra);
    let verbs = json!({"name": "pods", "verbs": ["get", "list"]});
    let (_, back) = round_trip(&format!("{META_V1}.APIResource"), &verbs);
    assert_eq!(back["verbs"], verbs["verbs"]);
}

#[test]
fn a_body_without_the_envelope_or_of_an_unknown_kind_is_refused() {
    assert!(matches!(request_json(br#"{"kind":"Namespace"}"#, "v1", "Namespace"), Err(Error::NoMagic)));
    let custom = envelope::seal(&envelope::Unknown {
        api_version: "example.com/v1".into(),
        kind: "Widget".into(),
        raw: Vec::new(),
    })
    .unwrap();
    assert!(matches!(request_json(&custom, "example.com/v1", "Widget"), Err(Error::UnknownKind { .. })));
    assert!(matches!(
        answer_body(&json!({"apiVersion": "example.com/v1", "kind": "Widget"})),
        Err(Error::UnknownKind { .. })
    ));
}

#[test]
fn an_envelope_without_a_type_is_the_endpoint_kind() {
    let namespace = message_of("v1", "Namespace").unwrap();
    let raw = from_json(namespace, &json!({"metadata": {"name": "x"}})).unwrap().encode_to_vec();
    let body = envelope::seal(&envelope::Unknown { api_version: String::new(), kind: String::new(), raw }).unwrap();
    let read: Value = serde_json::from_slice(&request_json(&body, "v1", "Namespace").unwrap()).unwrap();
    assert_eq!(read, json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}));
}

#[test]
fn a_watch_frame_is_a_length_then_an_event_around_the_object() {
    let frame =
        super::watch_frame("ADDED", &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}))
            .unwrap();
    let length = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(length, frame.len() - 4);
    let event = DynamicMessage::decode(message(&format!("{META_V1}.WatchEvent")).unwrap(), &frame[4..]).unwrap();
    assert_eq!(event.get_field_by_name("type").unwrap().as_str(), Some("ADDED"));
    let object = event.get_field_by_name("object").unwrap();
    let raw = object.as_message().unwrap().get_field_by_name("raw").unwrap();
    let read: Value = serde_json::from_slice(&request_json(raw.as_bytes().unwrap(), "", "").unwrap()).unwrap();
    assert_eq!(read["metadata"]["name"], "x");
}

fn accept(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, HeaderValue::from_str(value).unwrap());
    headers
}

#[test]
fn protobuf_is_answered_when_the_client_prefers_it() {
    assert!(prefers_protobuf(&accept("application/vnd.kubernetes.protobuf,application/json")));
    assert!(prefers_protobuf(&accept("application/vnd.kubernetes.protobuf;stream=watch")));
    assert!(!prefers_protobuf(&accept("application/json,application/vnd.kubernetes.protobuf")));
    assert!(!prefers_protobuf(&accept("application/json;q=0.5,application/vnd.kubernetes.protobuf;q=0.4")));
    assert!(prefers_protobuf(&accept("application/json;q=0.5,application/vnd.kubernetes.protobuf")));
    // A Table (kubectl get) is not the object.
    assert!(!prefers_protobuf(&accept("application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io")));
    assert!(!prefers_protobuf(&accept("*/*")));
    assert!(!prefers_protobuf(&HeaderMap::new()));
}

#[test]
fn an_embedded_struct_is_inlined() {
    let volume = json!({"name": "config", "configMap": {"name": "settings", "optional": true}});
    let (message, back) = round_trip("k8s.io.api.core.v1.Volume", &volume);
    let config_map = field(&message, &["volumeSource", "configMap", "localObjectReference", "name"]);
    assert_eq!(config_map, Field::String("settings".into()));
    assert_eq!(back, volume);
}
