//! Decoding API server responses for the kube source, once and from the raw bytes.
//!
//! - A LIST body is parsed for its envelope only (`metadata.resourceVersion`,
//!   `metadata.continue`); each item is taken as a [`RawValue`] slice of the body and handed
//!   to [`Object::from_str`], which copies its text once and parses its metadata.
//! - A WATCH body is a stream of newline-delimited JSON frames that the transport cuts
//!   anywhere: a [`FrameSplitter`] buffers the bytes and yields whole lines, however they were
//!   chunked (a frame split across reads, several frames in one read, a frame of megabytes).
//!   Each line is parsed as `{"type": ..., "object": <raw>}` and the object decoded once.
//! - Error bodies are `Status` objects; [`status_from_body`] reads what it can and falls back
//!   to the HTTP code.
//!
//! Built-in kinds' LIST items come without `apiVersion` and `kind` (the API server only sets
//! them on the list), while watch events carry them. So that handlers always see them, a list
//! item missing them gets them spliced in front of its first member: a text insertion, no
//! re-encoding of the object.

use std::borrow::Cow;
use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::errors::Cause;
use crate::informer::list_watch::{ObjectList, SourceError, Status, WatchEvent};
use crate::informer::object::Object;

/// The annotation that marks the bookmark ending a streaming list's initial events.
pub(crate) const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

#[derive(Deserialize)]
struct ListEnvelope<'a> {
    #[serde(default)]
    metadata: ListMeta,
    #[serde(borrow, default)]
    items: Option<Vec<&'a RawValue>>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Decodes a LIST response body. Items lacking `apiVersion`/`kind` get `api_version`/`kind`.
pub(crate) fn decode_list(body: &[u8], api_version: &str, kind: &str) -> Result<ObjectList, SourceError> {
    let envelope: ListEnvelope<'_> =
        serde_json::from_slice(body).map_err(|e| SourceError::Decode(Cause::with_source("list response", e)))?;
    let raw_items = envelope.items.unwrap_or_default();
    let mut items = Vec::with_capacity(raw_items.len());
    for (index, raw) in raw_items.into_iter().enumerate() {
        let obj = decode_list_item(raw.get(), api_version, kind)
            .map_err(|e| SourceError::Decode(format!("list item {index}: {e}").into()))?;
        items.push(obj);
    }
    Ok(ObjectList {
        items,
        resource_version: envelope.metadata.resource_version.unwrap_or_default(),
        continue_token: envelope.metadata.continue_token.filter(|t| !t.is_empty()),
    })
}

/// Decodes one list item, adding the type fields the API server leaves out of built-in kinds'
/// list items.
fn decode_list_item(text: &str, api_version: &str, kind: &str) -> Result<Object, String> {
    Ok(Object::from_str(text).map_err(|e| e.to_string())?.with_type(api_version, kind))
}

/// Splits a byte stream into newline-delimited frames, whatever the chunking.
#[derive(Debug, Default)]
pub(crate) struct FrameSplitter {
    buf: BytesMut,
    /// Bytes of `buf` already searched for a newline (so huge frames arriving in many small
    /// chunks are scanned once, not once per chunk).
    scanned: usize,
}

impl FrameSplitter {
    /// Appends bytes read from the stream.
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.buf.extend_from_slice(data);
    }

    /// The next complete, non-blank frame (without its line end), if one is buffered.
    pub(crate) fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            let newline = memchr::memchr(b'\n', &self.buf[self.scanned..]);
            let Some(offset) = newline else {
                self.scanned = self.buf.len();
                return None;
            };
            let mut line = self.buf.split_to(self.scanned + offset + 1);
            self.scanned = 0;
            line.truncate(line.len() - 1);
            if line.last() == Some(&b'\r') {
                line.truncate(line.len() - 1);
            }
            if !line.iter().all(u8::is_ascii_whitespace) {
                return Some(line.freeze());
            }
        }
    }

    /// What is left once the stream ended: a final frame without a line end, if any.
    pub(crate) fn finish(&mut self) -> Option<Bytes> {
        let rest = self.buf.split().freeze();
        self.scanned = 0;
        (!rest.iter().all(u8::is_ascii_whitespace)).then_some(rest)
    }

    /// Bytes buffered that are not yet a whole frame.
    #[cfg(test)]
    pub(crate) fn buffered(&self) -> usize {
        self.buf.len()
    }
}

#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    object: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct BookmarkObject {
    #[serde(default)]
    metadata: BookmarkMeta,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct BookmarkMeta {
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Default, Deserialize)]
struct StatusBody {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    code: Option<u16>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Decodes one watch frame.
pub(crate) fn decode_event(line: &[u8]) -> Result<WatchEvent, SourceError> {
    if let Some(event) = decode_object_event(line) {
        return Ok(event);
    }
    let frame: Frame<'_> = serde_json::from_slice(line).map_err(|e| malformed(line, &e.to_string()))?;
    let Some(kind) = frame.kind else {
        // Not an event: some servers and proxies end a watch with a bare Status.
        if let Ok(status) = serde_json::from_slice::<StatusBody>(line)
            && status.kind.as_deref() == Some("Status")
        {
            return Ok(WatchEvent::Error(to_status(status, 500)));
        }
        return Err(malformed(line, "no `type`"));
    };
    let object = frame.object.ok_or_else(|| malformed(line, "no `object`"))?;
    let decode_object = || Object::from_str(object.get()).map_err(|e| malformed(line, &e.to_string()));
    match kind.as_ref() {
        "ADDED" => Ok(WatchEvent::Added(decode_object()?)),
        "MODIFIED" => Ok(WatchEvent::Modified(decode_object()?)),
        "DELETED" => Ok(WatchEvent::Deleted(decode_object()?)),
        "BOOKMARK" => {
            let bookmark: BookmarkObject =
                serde_json::from_str(object.get()).map_err(|e| malformed(line, &e.to_string()))?;
            let resource_version = bookmark
                .metadata
                .resource_version
                .filter(|rv| !rv.is_empty())
                .ok_or_else(|| malformed(line, "bookmark without metadata.resourceVersion"))?;
            let initial_events_end = bookmark
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(INITIAL_EVENTS_END))
                .is_some_and(|v| v == "true");
            Ok(WatchEvent::Bookmark { resource_version, initial_events_end })
        }
        "ERROR" => {
            let status: StatusBody = serde_json::from_str(object.get()).map_err(|e| malformed(line, &e.to_string()))?;
            Ok(WatchEvent::Error(to_status(status, 500)))
        }
        other => Err(malformed(line, &format!("unknown event type `{other}`"))),
    }
}

/// The fast way for the frames that carry an object, laid out as the API server writes them:
/// `{"type":"ADDED","object":{…}}`, nothing else. The object's text is found by that layout
/// instead of by scanning it as part of the frame, so it is parsed (and validated) once, by
/// [`Object`]. `None` for anything else, including an object that does not decode: the
/// general way then decodes the frame, or says what is wrong with it.
fn decode_object_event(line: &[u8]) -> Option<WatchEvent> {
    let rest = line.strip_prefix(br#"{"type":""#)?;
    let (event, object): (fn(Object) -> WatchEvent, _) = if let Some(rest) = rest.strip_prefix(br#"MODIFIED""#) {
        (WatchEvent::Modified, rest)
    } else if let Some(rest) = rest.strip_prefix(br#"ADDED""#) {
        (WatchEvent::Added, rest)
    } else {
        (WatchEvent::Deleted, rest.strip_prefix(br#"DELETED""#)?)
    };
    let object = object.strip_prefix(br#","object":"#)?.strip_suffix(b"}")?;
    Object::from_slice(object).ok().map(event)
}

fn malformed(line: &[u8], why: &str) -> SourceError {
    const SHOWN: usize = 120;
    let text = String::from_utf8_lossy(&line[..line.len().min(SHOWN)]);
    let more = if line.len() > SHOWN { "…" } else { "" };
    SourceError::Decode(format!("malformed watch frame ({why}): {text}{more}").into())
}

fn to_status(body: StatusBody, http_code: u16) -> Status {
    Status {
        code: body.code.filter(|c| *c != 0).unwrap_or(http_code),
        reason: body.reason.unwrap_or_default(),
        message: body.message.unwrap_or_default(),
    }
}

/// The `Status` of an error response: from its body when it holds one, else from the HTTP
/// code and whatever text the body has.
pub(crate) fn status_from_body(http_code: u16, body: &[u8]) -> Status {
    match serde_json::from_slice::<StatusBody>(body) {
        Ok(status) if status.kind.as_deref() == Some("Status") || status.message.is_some() => {
            to_status(status, http_code)
        }
        _ => {
            let text = String::from_utf8_lossy(&body[..body.len().min(512)]).trim().to_owned();
            let reason = http::StatusCode::from_u16(http_code)
                .ok()
                .and_then(|c| c.canonical_reason())
                .unwrap_or_default()
                .replace(' ', "");
            Status { code: http_code, message: if text.is_empty() { reason.clone() } else { text }, reason }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str, rv: u64) -> String {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}},"data":{{"k":"v"}}}}"#
        )
    }

    fn event(kind: &str, object: &str) -> String {
        format!(r#"{{"type":"{kind}","object":{object}}}"#)
    }

    #[test]
    fn list_takes_items_raw_and_adds_missing_type_fields() {
        let body = r#"{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"7","continue":"abc","remainingItemCount":3},
            "items":[{"metadata":{"name":"p","namespace":"ns","resourceVersion":"5"},"spec":{"x":[1, 2]}},
                     {"apiVersion":"v1","kind":"Pod","metadata":{"name":"q","namespace":"ns"}}]}"#;
        let list = decode_list(body.as_bytes(), "v1", "Pod").unwrap();
        assert_eq!(list.resource_version, "7");
        assert_eq!(list.continue_token.as_deref(), Some("abc"));
        assert_eq!(list.items.len(), 2);
        let p = &list.items[0];
        assert_eq!((p.meta().api_version, p.meta().kind, p.key()), ("v1", "Pod", "ns/p"));
        assert_eq!(
            p.json(),
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","resourceVersion":"5"},"spec":{"x":[1, 2]}}"#,
            "the item's own text follows the spliced type fields verbatim"
        );
        assert_eq!(
            list.items[1].json(),
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q","namespace":"ns"}}"#
        );
    }

    #[test]
    fn list_without_items_or_continue_is_an_empty_last_page() {
        let list =
            decode_list(br#"{"metadata":{"resourceVersion":"3","continue":""},"items":null}"#, "v1", "Pod").unwrap();
        assert!(list.items.is_empty());
        assert_eq!(list.continue_token, None);
        assert!(matches!(decode_list(b"{\"items\":[{]}", "v1", "Pod"), Err(SourceError::Decode(_))));
        assert!(matches!(decode_list(br#"{"items":[{"metadata":{}}]}"#, "v1", "Pod"), Err(SourceError::Decode(_))));
    }

    #[test]
    fn splitter_yields_whole_frames_whatever_the_chunking() {
        let frames: Vec<String> = (0..5).map(|i| event("ADDED", &cm(&format!("c{i}"), i))).collect();
        let stream = frames.iter().map(|f| format!("{f}\n")).collect::<String>().replace("\n\n", "\n");
        for chunk in [1, 2, 3, 7, 64, 1000, stream.len()] {
            let mut splitter = FrameSplitter::default();
            let mut got = Vec::new();
            for piece in stream.as_bytes().chunks(chunk) {
                splitter.push(piece);
                while let Some(frame) = splitter.next_frame() {
                    got.push(String::from_utf8(frame.to_vec()).unwrap());
                }
            }
            assert_eq!(got, frames, "chunk size {chunk}");
            assert_eq!(splitter.buffered(), 0);
            assert_eq!(splitter.finish(), None);
        }
    }

    #[test]
    fn splitter_skips_blank_lines_handles_crlf_and_returns_an_unterminated_tail() {
        let mut splitter = FrameSplitter::default();
        splitter.push(b"\n  \r\n{\"a\":1}\r\n{\"b\"");
        assert_eq!(splitter.next_frame().as_deref(), Some(&b"{\"a\":1}"[..]));
        assert_eq!(splitter.next_frame(), None);
        splitter.push(b":2}");
        assert_eq!(splitter.next_frame(), None);
        assert_eq!(splitter.finish().as_deref(), Some(&b"{\"b\":2}"[..]));
    }

    #[test]
    fn a_multi_megabyte_frame_in_small_chunks_is_reassembled() {
        let big = "x".repeat(3 << 20);
        let object = format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big","namespace":"ns","resourceVersion":"9"}},"data":{{"blob":"{big}"}}}}"#
        );
        let line = format!("{}\n", event("MODIFIED", &object));
        let mut splitter = FrameSplitter::default();
        let mut frames = Vec::new();
        for piece in line.as_bytes().chunks(16 * 1024) {
            splitter.push(piece);
            frames.extend(std::iter::from_fn(|| splitter.next_frame()));
        }
        assert_eq!(frames.len(), 1);
        let WatchEvent::Modified(obj) = decode_event(&frames[0]).unwrap() else { panic!("not MODIFIED") };
        assert_eq!(obj.json(), object);
    }

    #[test]
    fn decodes_every_event_type() {
        let added = decode_event(event("ADDED", &cm("a", 2)).as_bytes()).unwrap();
        assert!(matches!(&added, WatchEvent::Added(o) if o.key() == "ns/a" && o.resource_version() == "2"));
        assert!(matches!(decode_event(event("MODIFIED", &cm("a", 3)).as_bytes()), Ok(WatchEvent::Modified(_))));
        assert!(matches!(decode_event(event("DELETED", &cm("a", 4)).as_bytes()), Ok(WatchEvent::Deleted(_))));
        let bookmark = event(
            "BOOKMARK",
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"12","creationTimestamp":null}}"#,
        );
        assert!(matches!(
            decode_event(bookmark.as_bytes()),
            Ok(WatchEvent::Bookmark { resource_version, initial_events_end: false }) if resource_version == "12"
        ));
        let end = event(
            "BOOKMARK",
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"13","annotations":{"k8s.io/initial-events-end":"true"}}}"#,
        );
        assert!(matches!(decode_event(end.as_bytes()), Ok(WatchEvent::Bookmark { initial_events_end: true, .. })));
        let error = event(
            "ERROR",
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 5 (9)","reason":"Expired","code":410}"#,
        );
        let Ok(WatchEvent::Error(status)) = decode_event(error.as_bytes()) else { panic!("not ERROR") };
        assert_eq!((status.code, status.reason.as_str()), (410, "Expired"));
        assert!(status.is_gone());
        let bare = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"boom","reason":"InternalError","code":500}"#;
        assert!(matches!(decode_event(bare.as_bytes()), Ok(WatchEvent::Error(s)) if s.code == 500));
    }

    #[test]
    fn frames_in_any_layout_decode_alike() {
        let object = cm("a", 2);
        let layouts = [
            event("ADDED", &object),
            format!(r#"{{"object":{object},"type":"ADDED"}}"#),
            format!(r#"{{ "type": "ADDED", "object": {object} }}"#),
            format!(r#"{{"type":"ADDED","object":{object},"extra":{{"metadata":{{"name":"b"}}}}}}"#),
        ];
        for frame in &layouts {
            let Ok(WatchEvent::Added(decoded)) = decode_event(frame.as_bytes()) else { panic!("{frame}") };
            assert_eq!(decoded.json(), object, "{frame}");
        }
        assert!(decode_object_event(layouts[0].as_bytes()).is_some(), "the API server's layout takes the fast way");
        assert!(decode_object_event(layouts[3].as_bytes()).is_none(), "a trailing member does not");
        let truncated = format!(r#"{{"type":"MODIFIED","object":{}}}"#, &object[..object.len() - 1]);
        assert!(decode_event(truncated.as_bytes()).is_err());
    }

    #[test]
    fn malformed_frames_are_decode_errors_not_panics() {
        for bad in [
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":",
            "not json",
            "{\"type\":\"ADDED\"}",
            "{\"type\":\"ADDED\",\"object\":{\"metadata\":{}}}",
            "{\"type\":\"SURPRISE\",\"object\":{}}",
            "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{}}}",
            "{\"object\":{}}",
            "\u{0}\u{1}",
        ] {
            assert!(matches!(decode_event(bad.as_bytes()), Err(SourceError::Decode(_))), "{bad}");
        }
        assert!(matches!(decode_event(&[0xff, 0xfe, b'\n']), Err(SourceError::Decode(_))));
    }

    #[test]
    fn status_bodies_and_plain_text_errors() {
        let body = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"slow down","reason":"TooManyRequests","code":429}"#;
        assert_eq!(
            status_from_body(429, body),
            Status { code: 429, reason: "TooManyRequests".into(), message: "slow down".into() }
        );
        let plain = status_from_body(502, b"upstream connect error");
        assert_eq!(
            (plain.code, plain.reason.as_str(), plain.message.as_str()),
            (502, "BadGateway", "upstream connect error")
        );
        assert_eq!(status_from_body(500, b"").message, "InternalServerError");
    }
}
