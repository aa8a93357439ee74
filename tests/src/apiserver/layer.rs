//! The test's faults, layered on wink's Kubernetes API router: every request is recorded,
//! then delayed, then maybe answered with an injected error; streaming lists are rejected or
//! ignored as servers without the feature do; and every open watch body is registered, so the
//! test can break it mid-response, end it, or slip a frame into it. With frame splitting on,
//! each chunk of a watch is cut at random byte offsets into pieces sent a millisecond apart
//! (so a frame spans reads). Frames ready together go out as one chunk.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::{Bytes, BytesMut};
use futures::{FutureExt, StreamExt};
use serde_json::json;
use tokio::sync::mpsc;

use super::faults::{Verb, WatchListSupport};
use super::{RecordedRequest, Shared};

/// The most bytes of ready frames sent as one chunk.
const MAX_CHUNK: usize = 64 * 1024;

/// What the test sends an open watch.
#[derive(Clone, Debug)]
pub(crate) enum Control {
    /// Send these bytes as they are.
    Frame(Bytes),
    /// End the body normally.
    End,
    /// Break the connection mid-response.
    Abort,
}

/// An open watch, as the test reaches it.
pub(crate) struct OpenWatch {
    pub tx: mpsc::UnboundedSender<Control>,
    pub bookmarks: bool,
}

fn status(code: u16, reason: &str, message: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                      "message": message, "reason": reason, "code": code});
    let code = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    (code, [(header::CONTENT_TYPE, "application/json")], body.to_string()).into_response()
}

fn injected_error(code: u16, retry_after_secs: u64) -> Response {
    let (reason, message) = match code {
        429 => ("TooManyRequests", "Too many requests, please try again later."),
        500 => ("InternalError", "Internal error occurred: injected by the test"),
        503 => ("ServiceUnavailable", "The server is currently unable to handle the request"),
        504 => ("Timeout", "The server was unable to return a response in the time allotted"),
        410 => ("Expired", "The resourceVersion for the provided list is too old."),
        _ => ("InternalError", "injected by the test"),
    };
    let mut response = status(code, reason, message);
    if code == 429 {
        response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    }
    response
}

fn flag(value: Option<&str>) -> bool {
    matches!(value, Some("1" | "t" | "T" | "TRUE" | "true" | "True"))
}

/// What kind of request `method` on `path` is.
fn classify(method: &Method, path: &str, query: &[(String, String)]) -> Verb {
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let rest = match segments.as_slice() {
        ["version"] | ["api"] | ["apis"] | ["api", _] | ["apis", _] | ["apis", _, _] => return Verb::Discovery,
        ["api", _, rest @ ..] | ["apis", _, _, rest @ ..] => rest,
        _ => return Verb::Other,
    };
    let collection = match rest {
        [_] | ["namespaces", _, _] => true,
        [_, _] | ["namespaces", _, _, _] | ["namespaces", _, _, _, _] | [_, _, _] => false,
        _ => return Verb::Other,
    };
    let watching = flag(query.iter().find(|(k, _)| k == "watch").map(|(_, v)| v.as_str()));
    match (method, collection) {
        (&Method::GET, true) if watching => Verb::Watch,
        (&Method::GET, true) => Verb::List,
        (&Method::GET, false) => Verb::Get,
        (&Method::POST | &Method::PUT | &Method::PATCH | &Method::DELETE, _) => Verb::Write,
        _ => Verb::Other,
    }
}

/// The middleware.
pub(crate) async fn faults(State(shared): State<Arc<Shared>>, mut request: Request, next: Next) -> Response {
    let path = request.uri().path().to_owned();
    let query: Vec<(String, String)> =
        request.uri().query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
    let verb = classify(request.method(), &path, &query);
    shared.requests.lock().push(RecordedRequest {
        method: request.method().to_string(),
        path: path.clone(),
        query: query.clone(),
        verb,
    });
    let delay = shared.faults.lock().delay(verb);
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let injected = {
        let mut faults = shared.faults.lock();
        faults.take_error(verb).map(|code| (code, faults.retry_after_secs))
    };
    if let Some((code, retry_after)) = injected {
        return injected_error(code, retry_after);
    }
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    if verb == Verb::Watch && param("sendInitialEvents").is_some() {
        let support = shared.faults.lock().watch_list;
        match support {
            WatchListSupport::Supported => {}
            WatchListSupport::Rejected => {
                return status(
                    422,
                    "Invalid",
                    "ListOptions.meta.k8s.io \"\" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                );
            }
            WatchListSupport::Ignored => {
                // A server predating the parameters drops them: a plain watch.
                let kept: Vec<_> =
                    query.iter().filter(|(k, _)| k != "sendInitialEvents" && k != "resourceVersionMatch").collect();
                let mut serializer = form_urlencoded::Serializer::new(String::new());
                for (k, v) in kept {
                    serializer.append_pair(k, v);
                }
                let uri = format!("{path}?{}", serializer.finish());
                if let Ok(uri) = uri.parse() {
                    *request.uri_mut() = uri;
                }
            }
        }
    }
    let response = next.run(request).await;
    if verb != Verb::Watch || response.status() != StatusCode::OK {
        return response;
    }
    let bookmarks = flag(param("allowWatchBookmarks"));
    let (parts, body) = response.into_parts();
    Response::from_parts(parts, watch_body(shared, body, bookmarks))
}

struct WatchBody {
    shared: Arc<Shared>,
    data: axum::body::BodyDataStream,
    control: mpsc::UnboundedReceiver<Control>,
    pieces: VecDeque<Bytes>,
    split: bool,
    done: bool,
    abort: bool,
}

/// A watch body the test can reach, with frames split when it asks.
fn watch_body(shared: Arc<Shared>, body: Body, bookmarks: bool) -> Body {
    let (tx, control) = mpsc::unbounded_channel();
    shared.watches.lock().push(OpenWatch { tx, bookmarks });
    let state = WatchBody {
        shared,
        data: body.into_data_stream(),
        control,
        pieces: VecDeque::new(),
        split: false,
        done: false,
        abort: false,
    };
    let aborted = || Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "watch dropped"));
    let frames = futures::stream::unfold(state, move |mut st| async move {
        loop {
            if let Some(piece) = st.pieces.pop_front() {
                if st.split {
                    // A separate write, so the client sees the frame split across reads.
                    tokio::time::sleep(Duration::from_millis(1)).await;
                }
                return Some((Ok(piece), st));
            }
            if st.done {
                return std::mem::take(&mut st.abort).then(|| (aborted(), st));
            }
            let chunk = tokio::select! {
                data = st.data.next() => match data {
                    Some(Ok(bytes)) => Some(bytes),
                    Some(Err(_)) => {
                        (st.done, st.abort) = (true, true);
                        None
                    }
                    None => {
                        st.done = true;
                        None
                    }
                },
                control = st.control.recv() => match control {
                    Some(Control::Frame(bytes)) => Some(bytes),
                    Some(Control::End) | None => {
                        st.done = true;
                        None
                    }
                    Some(Control::Abort) => {
                        (st.done, st.abort) = (true, true);
                        None
                    }
                },
            };
            let Some(first) = chunk else { continue };
            // Frames ready together are joined; a frame alone goes out as it is.
            let mut joined: Option<BytesMut> = None;
            while joined.as_ref().map_or(first.len(), BytesMut::len) < MAX_CHUNK {
                match st.data.next().now_or_never() {
                    Some(Some(Ok(more))) => joined
                        .get_or_insert_with(|| {
                            let mut chunk = BytesMut::with_capacity(MAX_CHUNK + more.len());
                            chunk.extend_from_slice(&first);
                            chunk
                        })
                        .extend_from_slice(&more),
                    Some(None) => {
                        st.done = true;
                        break;
                    }
                    Some(Some(Err(_))) => {
                        (st.done, st.abort) = (true, true);
                        break;
                    }
                    None => break,
                }
            }
            let mut chunk = joined.map_or(first, BytesMut::freeze);
            let points = st.shared.faults.lock().split_points(&chunk);
            st.split = !points.is_empty();
            let mut offset = 0;
            for point in points {
                st.pieces.push_back(chunk.split_to(point - offset));
                offset = point;
            }
            st.pieces.push_back(chunk);
        }
    });
    Body::from_stream(frames)
}
