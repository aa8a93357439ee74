//! The media types of bodies, where requests enter and answers leave: a protobuf request body
//! of a built-in kind becomes the JSON kube-apiserver would read (a create's or update's
//! object, a DELETE's `DeleteOptions`, a review), so the handlers and every write rule see
//! JSON only; a custom resource's is refused with 415, as kube-apiserver has no protobuf form
//! for it. An answer of a built-in kind (object, list, Status, watch stream) leaves in
//! protobuf when the client prefers it ([`protobuf::prefers_protobuf`]), else in JSON as
//! written; an answer that cannot be converted (a field the API's messages do not know how
//! to hold) leaves in JSON, which every protobuf client also reads.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::Value;

use super::protobuf;
use super::status::{failure, unsupported_media_type};
use crate::cluster::RequestError;

/// The body of a request as JSON, with `headers` saying so; or the answer refusing it.
/// `built_in`: whether the endpoint's kind has a protobuf form.
pub(super) fn json_body(
    method: &Method,
    headers: &mut HeaderMap,
    body: Bytes,
    api_version: &str,
    kind: &str,
    built_in: bool,
) -> Result<Bytes, Box<Response>> {
    // A PATCH names its patch type in its Content-Type: protobuf is none (415 there).
    if !protobuf::is_protobuf(headers) || body.is_empty() || method == Method::PATCH {
        return Ok(body);
    }
    if !built_in {
        return Err(Box::new(unsupported_media_type()));
    }
    let (api_version, kind) =
        if method == Method::DELETE { ("meta.k8s.io/v1", "DeleteOptions") } else { (api_version, kind) };
    match protobuf::request_json(&body, api_version, kind) {
        Ok(json) => {
            headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
            Ok(Bytes::from(json))
        }
        Err(e) => Err(Box::new(failure(&RequestError::BadRequest(format!("the protobuf body cannot be read: {e}"))))),
    }
}

fn is_json(response: &Response) -> bool {
    response.headers().get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(b"application/json"))
}

/// `answer` in protobuf, when it is JSON a protobuf message holds; a watch stream frame by
/// frame.
pub(super) async fn protobuf_answer(answer: Response, watching: bool) -> Response {
    if !is_json(&answer) {
        return answer;
    }
    let (mut parts, body) = answer.into_parts();
    if watching && parts.status == StatusCode::OK {
        parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(protobuf::WATCH_MEDIA_TYPE));
        return Response::from_parts(parts, Body::from_stream(watch_frames(body)));
    }
    let Ok(bytes) = axum::body::to_bytes(body, usize::MAX).await else {
        return StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let converted = serde_json::from_slice::<Value>(&bytes).ok().and_then(|json| protobuf::answer_body(&json).ok());
    match converted {
        Some(protobuf) => {
            parts.headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(protobuf::MEDIA_TYPE));
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from(protobuf))
        }
        None => Response::from_parts(parts, Body::from(bytes)),
    }
}

/// The protobuf frames of a JSON watch stream (one JSON event a line). An event that cannot
/// be converted ends the stream with an ERROR event, as a failed watch does.
fn watch_frames(body: Body) -> impl futures::Stream<Item = Result<Bytes, axum::Error>> {
    let mut pending = Vec::new();
    let mut ended = false;
    body.into_data_stream().flat_map(move |chunk| {
        let mut frames = Vec::new();
        match chunk {
            Err(e) => frames.push(Err(e)),
            Ok(_) if ended => {}
            Ok(chunk) => {
                pending.extend_from_slice(&chunk);
                while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=end).collect();
                    match event_frame(&line) {
                        Ok(frame) => frames.push(Ok(Bytes::from(frame))),
                        Err(frame) => {
                            frames.push(Ok(Bytes::from(frame)));
                            ended = true;
                            break;
                        }
                    }
                }
            }
        }
        futures::stream::iter(frames)
    })
}

/// The protobuf frame of one JSON watch event, or an ERROR frame saying why there is none.
fn event_frame(line: &[u8]) -> Result<Vec<u8>, Vec<u8>> {
    let event: Value = serde_json::from_slice(line).unwrap_or(Value::Null);
    let event_type = event["type"].as_str().unwrap_or_default();
    protobuf::watch_frame(event_type, &event["object"]).map_err(|e| {
        let status = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("the watch event cannot be written in protobuf: {e}"), "reason": "InternalError", "code": 500});
        protobuf::watch_frame("ERROR", &status).unwrap_or_default()
    })
}

#[cfg(test)]
#[path = "negotiation_tests.rs"]
mod tests;
