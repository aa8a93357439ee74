//! The local API server checked on the wire, without wink: raw HTTP/1.1 requests read byte by
//! byte (chunk boundaries included), and kube's own discovery. These pin the protocol details
//! the kube source tests rely on, so that a green kube source test means the source works
//! against the API server's protocol, not against a server bent to fit it.
//!
//! Run with `cargo test -p wink-tests --test apiserver_protocol`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use wink_tests::apiserver::{ApiServer, ResourceDef, ServerOptions, Verb, WatchListSupport};

fn cm(ns: &str, name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"namespace": ns, "name": name}, "data": {"d": data}})
}

/// A response read off the wire: status, headers, and the body's chunks as sent.
struct Wire {
    status: u16,
    headers: Vec<(String, String)>,
    reader: BufReader<TcpStream>,
}

impl Wire {
    async fn get(server: &ApiServer, path_and_query: &str) -> Self {
        let mut stream = TcpStream::connect(server.addr()).await.unwrap();
        let request = format!("GET {path_and_query} HTTP/1.1\r\nHost: localhost\r\nAccept: application/json\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut reader = BufReader::new(stream);
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        let status = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            line.clear();
            reader.read_line(&mut line).await.unwrap();
            if line.trim().is_empty() {
                break;
            }
            let (name, value) = line.trim().split_once(':').unwrap();
            headers.push((name.to_lowercase(), value.trim().to_owned()));
        }
        Self { status, headers, reader }
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// The next chunk of a chunked body (`None` at its end).
    async fn chunk(&mut self) -> Option<Vec<u8>> {
        assert_eq!(self.header("transfer-encoding"), Some("chunked"));
        let mut line = String::new();
        self.reader.read_line(&mut line).await.unwrap();
        let size = usize::from_str_radix(line.trim(), 16).unwrap();
        if size == 0 {
            return None;
        }
        let mut data = vec![0; size + 2];
        self.reader.read_exact(&mut data).await.unwrap();
        data.truncate(size);
        Some(data)
    }

    async fn json(mut self) -> Value {
        let body = if let Some(len) = self.header("content-length") {
            let mut body = vec![0; len.parse().unwrap()];
            self.reader.read_exact(&mut body).await.unwrap();
            body
        } else {
            let mut body = Vec::new();
            while let Some(chunk) = self.chunk().await {
                body.extend(chunk);
            }
            body
        };
        serde_json::from_slice(&body).unwrap()
    }
}

async fn get_json(server: &ApiServer, path: &str) -> (u16, Value) {
    let wire = Wire::get(server, path).await;
    let status = wire.status;
    (status, wire.json().await)
}

#[tokio::test]
async fn watch_is_a_chunked_stream_of_json_lines_and_split_mode_cuts_frames_anywhere() {
    let server =
        ApiServer::start_with(ServerOptions { bookmark_interval: None, ..ServerOptions::default() }).await.unwrap();
    server.set_split_frames(true);
    let mut wire = Wire::get(&server, "/api/v1/namespaces/ns/configmaps?watch=1&resourceVersion=1").await;
    assert_eq!(wire.status, 200);
    assert_eq!(wire.header("content-type"), Some("application/json"));
    for i in 0..20 {
        server.apply(cm("ns", &format!("c{i}"), "x")).unwrap();
        server.apply(cm("other", &format!("c{i}"), "x")).unwrap();
    }
    let (mut bytes, mut chunks, mut cut_mid_frame) = (Vec::new(), 0, false);
    while bytes.iter().filter(|b| **b == b'\n').count() < 20 {
        let chunk = wire.chunk().await.unwrap();
        cut_mid_frame |= chunk.last() != Some(&b'\n');
        chunks += 1;
        bytes.extend(chunk);
    }
    assert!(cut_mid_frame && chunks > 3, "frames are cut across chunks ({chunks} chunks)");
    let events: Vec<Value> =
        bytes.split(|b| *b == b'\n').filter(|l| !l.is_empty()).map(|l| serde_json::from_slice(l).unwrap()).collect();
    assert_eq!(events.len(), 20, "only namespace ns");
    for (i, event) in events.iter().enumerate() {
        assert_eq!(event["type"], "ADDED");
        assert_eq!(event["object"]["kind"], "ConfigMap", "watch events carry type fields");
        assert_eq!(event["object"]["metadata"]["name"], format!("c{i}"));
        assert_eq!(event["object"]["metadata"]["resourceVersion"], (2 + 2 * i).to_string());
    }
    // Dropping the watch breaks the connection mid-body: no terminating chunk.
    assert_eq!(server.drop_watches(), 1);
    let mut rest = Vec::new();
    // The connection closes (EOF or reset, either will do) without the terminating chunk.
    let _ = tokio::time::timeout(Duration::from_secs(5), wire.reader.read_to_end(&mut rest)).await.unwrap();
    assert!(!String::from_utf8_lossy(&rest).contains("\r\n0\r\n\r\n"), "aborted, not ended");
}

#[tokio::test]
async fn watch_timeouts_end_the_body_and_old_versions_get_a_410_event() {
    let server = ApiServer::start_with(ServerOptions { history_limit: 2, ..ServerOptions::default() }).await.unwrap();
    for i in 0..4 {
        server.apply(cm("ns", &format!("c{i}"), "x")).unwrap();
    }
    let mut wire = Wire::get(&server, "/api/v1/configmaps?watch=true&resourceVersion=2&timeoutSeconds=1").await;
    let event: Value = serde_json::from_slice(&wire.chunk().await.unwrap()).unwrap();
    assert_eq!(event["type"], "ERROR");
    assert_eq!((event["object"]["code"].clone(), event["object"]["reason"].clone()), (json!(410), json!("Expired")));
    assert!(wire.chunk().await.is_none(), "the watch ends after the error");

    let mut wire = Wire::get(&server, "/api/v1/configmaps?watch=true&resourceVersion=4&timeoutSeconds=1").await;
    let mut text = String::new();
    while let Some(chunk) = wire.chunk().await {
        text.push_str(&String::from_utf8(chunk).unwrap());
    }
    assert_eq!(text.lines().count(), 1, "the one change after 4, then the timeout ends the body: {text}");
    assert!(text.contains("\"name\":\"c3\""));
}

#[tokio::test]
async fn streaming_lists_end_their_initial_events_with_an_annotated_bookmark() {
    let server =
        ApiServer::start_with(ServerOptions { bookmark_interval: None, ..ServerOptions::default() }).await.unwrap();
    server.apply(cm("ns", "a", "x")).unwrap();
    let path =
        "/api/v1/configmaps?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut wire = Wire::get(&server, path).await;
    let mut lines = Vec::new();
    while lines.len() < 2 {
        let chunk = String::from_utf8(wire.chunk().await.unwrap()).unwrap();
        lines.extend(chunk.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()));
    }
    assert_eq!(lines[0]["type"], "ADDED");
    assert_eq!(lines[1]["type"], "BOOKMARK");
    assert_eq!(lines[1]["object"]["metadata"]["resourceVersion"], "2");
    assert_eq!(lines[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    assert_eq!(lines[1]["object"]["kind"], "ConfigMap");

    for (query, message) in [
        ("watch=1&sendInitialEvents=true&allowWatchBookmarks=true", "resourceVersionMatch"),
        ("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", "allowWatchBookmarks"),
        ("watch=1&resourceVersionMatch=NotOlderThan", "forbidden for watch unless sendInitialEvents"),
    ] {
        let (status, body) = get_json(&server, &format!("/api/v1/configmaps?{query}")).await;
        assert_eq!((status, body["reason"].as_str()), (422, Some("Invalid")), "{query}");
        assert!(body["message"].as_str().unwrap().contains(message), "{query}: {body}");
    }
    server.set_watch_list(WatchListSupport::Rejected);
    let (status, body) = get_json(&server, path).await;
    assert_eq!(status, 422);
    assert!(body["message"].as_str().unwrap().contains("WatchList feature gate"));
}

#[tokio::test]
async fn lists_page_filter_and_honour_resource_version_semantics() {
    let server = ApiServer::start().await.unwrap();
    server.register(ResourceDef::custom("example.com/v1", "Widget", "widgets", true)).unwrap();
    for i in 0..5 {
        let mut obj = cm("ns", &format!("c{i}"), "x");
        obj["metadata"]["labels"] = json!({"n": i.to_string(), "even": (i % 2 == 0).to_string()});
        server.apply(obj).unwrap();
    }
    server
        .apply(json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"namespace": "ns", "name": "w"}}))
        .unwrap();
    let (status, page) = get_json(&server, "/api/v1/namespaces/ns/configmaps?limit=2").await;
    assert_eq!(status, 200);
    assert_eq!(page["kind"], "ConfigMapList");
    assert_eq!(page["metadata"]["resourceVersion"], "7");
    assert_eq!(page["metadata"]["remainingItemCount"], 3);
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert!(
        page["items"][0].get("kind").is_none() && page["items"][0].get("apiVersion").is_none(),
        "built-in items are untyped"
    );
    let (_, widgets) = get_json(&server, "/apis/example.com/v1/widgets").await;
    assert_eq!(widgets["items"][0]["kind"], "Widget", "custom resources' items keep their type fields");

    // Exact reads of the past, "any" reads ignoring limit, too-new versions.
    server.delete("v1", "ConfigMap", "ns/c0").unwrap();
    let (_, past) = get_json(&server, "/api/v1/configmaps?resourceVersion=3&resourceVersionMatch=Exact").await;
    assert_eq!(past["items"].as_array().unwrap().len(), 2, "the state at 3: c0 and c1");
    assert_eq!(past["metadata"]["resourceVersion"], "3");
    let (_, any) = get_json(&server, "/api/v1/configmaps?resourceVersion=0&limit=1").await;
    assert_eq!(any["items"].as_array().unwrap().len(), 4);
    assert!(any["metadata"].get("continue").is_none());
    let (status, _) =
        get_json(&server, "/api/v1/configmaps?resourceVersion=99&resourceVersionMatch=NotOlderThan").await;
    assert_eq!(status, 504);

    // Selectors.
    let (_, even) = get_json(&server, "/api/v1/configmaps?labelSelector=even%3Dtrue,n%20notin%20(4)").await;
    let names: Vec<_> = even["items"].as_array().unwrap().iter().map(|o| o["metadata"]["name"].clone()).collect();
    assert_eq!(names, [json!("c2")]);
    let (_, named) = get_json(&server, "/api/v1/configmaps?fieldSelector=metadata.name%3Dc3").await;
    assert_eq!(named["items"].as_array().unwrap().len(), 1);
    for bad in ["labelSelector=n%20in%20x", "fieldSelector=spec.x%3D1", "limit=x", "watch=maybe"] {
        let (status, body) = get_json(&server, &format!("/api/v1/configmaps?{bad}")).await;
        assert_eq!((status, body["kind"].as_str()), (400, Some("Status")), "{bad}: {body}");
    }
    let (status, _) = get_json(&server, "/api/v1/namespaces/ns/nodes").await;
    assert_eq!(status, 404, "cluster-scoped kinds have no namespaced path");
    let (status, obj) = get_json(&server, "/api/v1/namespaces/ns/configmaps/c1").await;
    assert_eq!((status, obj["kind"].as_str()), (200, Some("ConfigMap")));
}

#[tokio::test]
async fn injected_faults_and_the_request_log() {
    let server = ApiServer::start().await.unwrap();
    server.set_retry_after(7);
    server.fail_next(&[Verb::List], 1, 429);
    let wire = Wire::get(&server, "/api/v1/pods?limit=5").await;
    assert_eq!((wire.status, wire.header("retry-after")), (429, Some("7")));
    assert_eq!(wire.json().await["reason"], "TooManyRequests");
    let (status, _) = get_json(&server, "/api/v1/pods").await;
    assert_eq!(status, 200, "only the next request failed");
    server.set_delay(&[Verb::Get], Some(Duration::from_millis(200)));
    let started = std::time::Instant::now();
    let (status, _) = get_json(&server, "/api/v1/namespaces/ns/pods/nope").await;
    assert_eq!(status, 404);
    assert!(started.elapsed() >= Duration::from_millis(200));
    let log = server.requests();
    assert_eq!(log.len(), 3);
    assert_eq!((log[0].verb, log[0].path.as_str(), log[0].param("limit")), (Verb::List, "/api/v1/pods", Some("5")));
    assert_eq!(log[2].verb, Verb::Get);
}

#[tokio::test]
async fn kube_discovery_finds_every_kind_with_its_scope() {
    let server = ApiServer::start().await.unwrap();
    server.register(ResourceDef::custom("example.com/v1", "Widget", "widgets", true)).unwrap();
    server.register(ResourceDef::custom("example.com/v1", "ClusterWidget", "clusterwidgets", false)).unwrap();
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::read_from(server.kubeconfig()).unwrap(),
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let mut found = Vec::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            found.push(format!("{} {} {:?}", resource.api_version, resource.plural, caps.scope));
        }
    }
    found.sort();
    for expected in [
        "apps/v1 deployments Namespaced",
        "example.com/v1 clusterwidgets Cluster",
        "example.com/v1 widgets Namespaced",
        "v1 namespaces Cluster",
        "v1 pods Namespaced",
    ] {
        assert!(found.iter().any(|f| f == expected), "{expected} in {found:#?}");
    }
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.major, "1");
}
