//! The conversion checked against client-go itself: each fixture is an object as client-go's
//! protobuf serializer writes it (`NAME.pb`) and as its JSON serializer writes it
//! (`NAME.json`), both written by `tests/control-plane/protobuf-fixtures` (see there to
//! regenerate them).

use serde_json::Value;

use super::{answer_body, envelope, request_json};

/// (name, protobuf, JSON) of every fixture.
macro_rules! fixtures {
    ($($name:literal),* $(,)?) => {
        [$(($name, include_bytes!(concat!("fixtures/", $name, ".pb")).as_slice(),
            include_str!(concat!("fixtures/", $name, ".json")))),*]
    };
}

const FIXTURES: [(&str, &[u8], &str); 15] = fixtures![
    "namespace",
    "configmap",
    "secret",
    "deployment",
    "job",
    "pod",
    "lease",
    "event",
    "controllerrevision",
    "selfsubjectaccessreview",
    "subjectaccessreview",
    "selfsubjectreview",
    "deleteoptions",
    "status",
    "configmaplist",
];

#[test]
fn client_go_protobuf_reads_as_client_go_json() {
    for (name, protobuf, json) in FIXTURES {
        let read: Value = serde_json::from_slice(&request_json(protobuf, "", "").unwrap()).unwrap();
        let expected: Value = serde_json::from_str(json).unwrap();
        assert_eq!(read, expected, "{name}");
    }
}

#[test]
fn client_go_json_writes_protobuf_that_reads_back_the_same() {
    for (name, protobuf, json) in FIXTURES {
        let expected: Value = serde_json::from_str(json).unwrap();
        let written = answer_body(&expected).unwrap();
        let (ours, theirs) = (envelope::open(&written).unwrap(), envelope::open(protobuf).unwrap());
        assert_eq!((&ours.api_version, &ours.kind), (&theirs.api_version, &theirs.kind), "{name}");
        let read: Value = serde_json::from_slice(&request_json(&written, "", "").unwrap()).unwrap();
        assert_eq!(read, expected, "{name}");
    }
}

#[test]
fn a_duration_reads_and_writes_as_go_does() {
    let descriptor = super::descriptors::message(&format!("{}.Duration", super::descriptors::META_V1)).unwrap();
    let theirs = include_bytes!("fixtures/duration.pb");
    let json: Value = serde_json::from_str(include_str!("fixtures/duration.json")).unwrap();
    let message = prost_reflect::DynamicMessage::decode(descriptor.clone(), theirs.as_slice()).unwrap();
    assert_eq!(super::convert::to_json(&message).unwrap(), json);
    use prost_reflect::prost::Message as _;
    assert_eq!(super::convert::from_json(descriptor, &json).unwrap().encode_to_vec(), theirs);
}
