//! The local API server's HTTP/1.1 side (hyper): routing, discovery documents, LIST, GET,
//! and WATCH as a chunked stream of JSON lines, with the faults the test armed applied to
//! each request (recorded first, then delayed, then maybe answered with an error).
//!
//! A watch body is fed by its channel in the store. Frames that are ready together go out in
//! one chunk (so a client read may hold several frames); with frame splitting on, each chunk
//! is cut at random byte offsets into pieces sent a millisecond apart (so a frame spans
//! reads). `timeoutSeconds` ends the response normally; a drop aborts the connection
//! mid-response.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc::{self, error::TryRecvError};
use tokio_util::sync::CancellationToken;

use super::faults::{Verb, WatchListSupport};
use super::selector::{FieldSelector, LabelSelector};
use super::store::{ApiError, ListRequest, Selection, WatchMsg, WatchRequest};
use super::{RecordedRequest, Shared};

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

/// The most bytes of ready frames sent as one chunk.
const MAX_CHUNK: usize = 64 * 1024;

/// Accepts connections until `cancel` fires.
pub(crate) async fn serve(listener: TcpListener, shared: Arc<Shared>, cancel: CancellationToken) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    tracing::warn!(error = %err, "accept failed");
                    continue;
                }
            },
            () = cancel.cancelled() => return,
        };
        let _ = stream.set_nodelay(true);
        let shared = shared.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(shared.clone(), req));
            let connection = http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::select! {
                result = connection => if let Err(err) = result {
                    tracing::debug!(error = %err, "connection ended with an error");
                },
                () = cancel.cancelled() => {}
            }
        });
    }
}

fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).map_err(|never| match never {}).boxed_unsync());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

fn json_response(value: &Value) -> Response<Body> {
    full(StatusCode::OK, value.to_string())
}

fn error_response(error: &ApiError) -> Response<Body> {
    let status = StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    full(status, error.status().to_string())
}

fn injected_error(code: u16, retry_after_secs: u64) -> Response<Body> {
    let (reason, message) = match code {
        429 => ("TooManyRequests", "Too many requests, please try again later."),
        500 => ("InternalError", "Internal error occurred: injected by the test"),
        503 => ("ServiceUnavailable", "The server is currently unable to handle the request"),
        504 => ("Timeout", "The server was unable to return a response in the time allotted"),
        410 => ("Expired", "The resourceVersion for the provided list is too old."),
        _ => ("InternalError", "injected by the test"),
    };
    let mut response = error_response(&ApiError::new(code, reason, message));
    if code == 429 {
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(retry_after_secs));
    }
    response
}

/// Go's `strconv.ParseBool`, which the API server uses for query flags.
fn parse_bool(name: &str, value: &str) -> Result<bool, ApiError> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(ApiError::bad_request(format!("{name}: invalid boolean value \"{value}\""))),
    }
}

enum Route {
    Document(Value),
    Collection { resource: usize, namespace: Option<String> },
    Object { resource: usize, namespace: Option<String>, name: String },
    NotFound,
}

fn route(shared: &Shared, path: &str) -> Route {
    let store = shared.store.lock();
    let registry = &store.registry;
    let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
    let document = |doc: Option<Value>| doc.map_or(Route::NotFound, Route::Document);
    let resource_route = |group: &str, version: &str, rest: &[&str]| -> Route {
        let find = |plural: &str| registry.by_path(group, version, plural);
        match *rest {
            [plural] => {
                find(plural).map_or(Route::NotFound, |resource| Route::Collection { resource, namespace: None })
            }
            [plural, name] => match find(plural) {
                Some(resource) if !registry.get(resource).namespaced => {
                    Route::Object { resource, namespace: None, name: name.to_owned() }
                }
                _ => Route::NotFound,
            },
            ["namespaces", ns, plural, ref name @ ..] if name.len() <= 1 => match find(plural) {
                Some(resource) if registry.get(resource).namespaced => match name.first() {
                    Some(name) => Route::Object { resource, namespace: Some(ns.to_owned()), name: (*name).to_owned() },
                    None => Route::Collection { resource, namespace: Some(ns.to_owned()) },
                },
                _ => Route::NotFound,
            },
            _ => Route::NotFound,
        }
    };
    match segments.as_slice() {
        ["version"] => Route::Document(json!({
            "major": "1", "minor": "33", "gitVersion": "v1.33.0-wink-test", "gitCommit": "", "gitTreeState": "clean",
            "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24", "compiler": "gc", "platform": "linux/amd64",
        })),
        ["api"] => Route::Document(registry.core_versions(&shared.addr.to_string())),
        ["api", version] => document(registry.resource_list("", version)),
        ["apis"] => Route::Document(registry.group_list()),
        ["apis", group] => document(registry.group(group)),
        ["apis", group, version] => document(registry.resource_list(group, version)),
        ["api", version, rest @ ..] => resource_route("", version, rest),
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest),
        _ => Route::NotFound,
    }
}

struct Query(Vec<(String, String)>);

impl Query {
    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    fn flag(&self, name: &str) -> Result<Option<bool>, ApiError> {
        self.get(name).map(|v| parse_bool(name, v)).transpose()
    }
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_owned();
    let query = Query(
        req.uri().query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default(),
    );
    let route = route(&shared, &path);
    let watch = query.flag("watch");
    let verb = match (&route, &watch) {
        (_, Err(_)) | (Route::NotFound, _) => Verb::Other,
        (Route::Document(_), _) => Verb::Discovery,
        (Route::Collection { .. }, Ok(Some(true))) => Verb::Watch,
        (Route::Collection { .. }, _) => Verb::List,
        (Route::Object { .. }, _) => Verb::Get,
    };
    shared.requests.lock().push(RecordedRequest {
        method: req.method().to_string(),
        path: path.clone(),
        query: query.0.clone(),
        verb,
    });
    if req.method() != Method::GET {
        return Ok(error_response(&ApiError::new(405, "MethodNotAllowed", "the local API server only serves GET")));
    }
    let delay = shared.faults.lock().delay(verb);
    if let Some(delay) = delay {
        tokio::time::sleep(delay).await;
    }
    let injected = {
        let mut faults = shared.faults.lock();
        faults.take_error(verb).map(|code| (code, faults.retry_after_secs))
    };
    if let Some((code, retry_after)) = injected {
        return Ok(injected_error(code, retry_after));
    }
    let response = match route {
        Route::Document(doc) => Ok(json_response(&doc)),
        Route::NotFound => Err(ApiError::new(404, "NotFound", "the server could not find the requested resource")),
        Route::Object { resource, namespace, name } => get(&shared, resource, namespace, &name),
        Route::Collection { resource, namespace } => match watch {
            Err(err) => Err(err),
            Ok(Some(true)) => watch_collection(&shared, resource, namespace, &query),
            Ok(_) => list(&shared, resource, namespace, &query),
        },
    };
    Ok(response.unwrap_or_else(|err| error_response(&err)))
}

fn get(shared: &Shared, resource: usize, namespace: Option<String>, name: &str) -> Result<Response<Body>, ApiError> {
    let store = shared.store.lock();
    let key = match &namespace {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_owned(),
    };
    match store.get(resource, &key) {
        Some(obj) => Ok(full(StatusCode::OK, obj.json.clone())),
        None => {
            let def = store.registry.get(resource);
            Err(ApiError::new(404, "NotFound", format!("{} \"{name}\" not found", def.plural)))
        }
    }
}

fn selection(
    shared: &Shared,
    resource: usize,
    namespace: Option<String>,
    query: &Query,
) -> Result<Selection, ApiError> {
    let def = shared.store.lock().registry.get(resource).clone();
    let labels = LabelSelector::parse(query.get("labelSelector").unwrap_or_default())
        .map_err(|e| ApiError::bad_request(format!("unable to parse requirement: {e}")))?;
    let fields = FieldSelector::parse(query.get("fieldSelector").unwrap_or_default(), &def)
        .map_err(|e| ApiError::bad_request(format!("fieldSelector: {e}")))?;
    Ok(Selection { resource, namespace, labels, fields })
}

fn list(
    shared: &Shared,
    resource: usize,
    namespace: Option<String>,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let selection = selection(shared, resource, namespace, query)?;
    let limit = match query.get("limit") {
        Some(text) => {
            Some(text.parse::<i64>().map_err(|_| ApiError::bad_request(format!("limit: invalid value {text}")))?)
        }
        None => None,
    };
    let request = ListRequest {
        selection,
        resource_version: query.get("resourceVersion").map(str::to_owned),
        resource_version_match: query.get("resourceVersionMatch").map(str::to_owned),
        limit: limit.filter(|l| *l > 0).map(|l| usize::try_from(l).unwrap_or(usize::MAX)),
        continue_token: query.get("continue").map(str::to_owned),
    };
    let store = shared.store.lock();
    let page = store.list(&request)?;
    let def = store.registry.get(request.selection.resource);
    let mut metadata = json!({"resourceVersion": page.resource_version.to_string()});
    if let Some(token) = &page.continue_token {
        metadata["continue"] = json!(token);
    }
    if let Some(remaining) = page.remaining {
        metadata["remainingItemCount"] = json!(remaining);
    }
    let mut body = String::with_capacity(page.items.iter().map(|o| o.list_json.len() + 1).sum::<usize>() + 256);
    body.push_str(&format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{metadata},\"items\":[",
        json!(def.list_kind()),
        json!(def.api_version())
    ));
    for (i, obj) in page.items.iter().enumerate() {
        if i > 0 {
            body.push(',');
        }
        body.push_str(&obj.list_json);
    }
    body.push_str("]}");
    Ok(full(StatusCode::OK, body))
}

fn watch_collection(
    shared: &Arc<Shared>,
    resource: usize,
    namespace: Option<String>,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let selection = selection(shared, resource, namespace, query)?;
    let bookmarks = query.flag("allowWatchBookmarks")?.unwrap_or(false);
    let send_initial = query.flag("sendInitialEvents")?;
    let rv_match = query.get("resourceVersionMatch").filter(|m| !m.is_empty());
    let invalid = |what: &str| ApiError::invalid(format!("ListOptions.meta.k8s.io \"\" is invalid: {what}"));
    let mode = shared.faults.lock().watch_list;
    let send_initial_events = match mode {
        WatchListSupport::Ignored => false,
        WatchListSupport::Rejected if send_initial.is_some() => {
            return Err(invalid(
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
        WatchListSupport::Rejected | WatchListSupport::Supported => match send_initial {
            None if rv_match.is_some() => {
                return Err(invalid(
                    "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
            None => false,
            Some(_) if rv_match != Some("NotOlderThan") => {
                return Err(invalid(
                    "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            Some(_) if !bookmarks => {
                return Err(invalid(
                    "allowWatchBookmarks: Forbidden: sendInitialEvents requires setting allowWatchBookmarks to true",
                ));
            }
            Some(send) => send,
        },
    };
    let timeout = match query.get("timeoutSeconds") {
        Some(text) => Duration::from_secs(
            text.parse().map_err(|_| ApiError::bad_request(format!("timeoutSeconds: invalid value {text}")))?,
        ),
        None => shared.options.default_watch_timeout,
    };
    let rx = shared.store.lock().watch(WatchRequest {
        selection,
        resource_version: query.get("resourceVersion").map(str::to_owned),
        bookmarks,
        send_initial_events,
    })?;
    let mut response = Response::new(watch_body(shared.clone(), rx, timeout));
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    Ok(response)
}

struct WatchBody {
    shared: Arc<Shared>,
    rx: mpsc::UnboundedReceiver<WatchMsg>,
    deadline: Pin<Box<tokio::time::Sleep>>,
    pieces: VecDeque<Bytes>,
    done: bool,
    abort: bool,
}

fn watch_body(shared: Arc<Shared>, rx: mpsc::UnboundedReceiver<WatchMsg>, timeout: Duration) -> Body {
    let state = WatchBody {
        shared,
        rx,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        pieces: VecDeque::new(),
        done: false,
        abort: false,
    };
    let frames = futures::stream::unfold(state, |mut st| async move {
        if let Some(piece) = st.pieces.pop_front() {
            // A separate write, so the client sees the frame split across reads.
            tokio::time::sleep(Duration::from_millis(1)).await;
            return Some((Ok(Frame::data(piece)), st));
        }
        if st.done {
            if std::mem::take(&mut st.abort) {
                return Some((Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "watch dropped")), st));
            }
            return None;
        }
        let mut next = tokio::select! {
            msg = st.rx.recv() => msg,
            () = &mut st.deadline => None,
        };
        let mut chunk = BytesMut::new();
        loop {
            match next {
                Some(WatchMsg::Frame(frame)) => chunk.extend_from_slice(&frame),
                Some(WatchMsg::End) | None => {
                    st.done = true;
                    break;
                }
                Some(WatchMsg::Abort) => {
                    st.done = true;
                    st.abort = true;
                    break;
                }
            }
            if chunk.len() >= MAX_CHUNK {
                break;
            }
            next = match st.rx.try_recv() {
                Ok(msg) => Some(msg),
                Err(TryRecvError::Empty) => break,
                Err(TryRecvError::Disconnected) => None,
            };
        }
        if chunk.is_empty() {
            if std::mem::take(&mut st.abort) {
                return Some((Err(std::io::Error::new(std::io::ErrorKind::ConnectionAborted, "watch dropped")), st));
            }
            return None;
        }
        let mut chunk = chunk.freeze();
        let frames = chunk.iter().filter(|b| **b == b'\n').count();
        let points = st.shared.faults.lock().split_points(chunk.len(), frames);
        let mut offset = 0;
        for point in points {
            st.pieces.push_back(chunk.split_to(point - offset));
            offset = point;
        }
        st.pieces.push_back(chunk);
        let first = st.pieces.pop_front().unwrap_or_default();
        Some((Ok(Frame::data(first)), st))
    });
    StreamBody::new(frames.boxed()).boxed_unsync()
}
