//! Sending the corpus: each step to the real server, then to the embedded cluster.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};
use http_body_util::BodyExt;
use serde_json::Value;
use wink::kube::ResourceDef;

use super::compare::Answer;
use super::corpus::{Discovery, Step, collection_path, fixture_objects, fixture_steps};

/// One server: its client and the resource versions it last returned, by object path.
pub struct Server {
    client: kube::Client,
    versions: HashMap<String, String>,
}

impl Server {
    /// A server spoken to through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self { client, versions: HashMap::new() }
    }

    /// Sends `step`; the answer, and the raw body.
    pub async fn send(&mut self, step: &Step) -> Result<(Answer, Vec<u8>)> {
        let body = step.body.as_ref().map(|b| self.filled(b, &step.path));
        let mut request = http::Request::builder()
            .method(step.method.as_str())
            .uri(step.uri())
            .header(http::header::ACCEPT, step.accept.as_deref().unwrap_or("application/json"));
        if body.is_some() {
            request = request.header(http::header::CONTENT_TYPE, step.content.mime());
        }
        let bytes = body.map(|b| serde_json::to_vec(&b)).transpose()?.unwrap_or_default();
        let request = request.body(kube::client::Body::from(bytes))?;
        let response = self.client.send(request).await.with_context(|| format!("sending {}", step.name))?;
        let code = response.status().as_u16();
        let raw = response.into_body().collect().await.map_err(|e| anyhow!("reading {}: {e}", step.name))?;
        let raw = raw.to_bytes().to_vec();
        self.remember(step, &raw);
        Ok((Answer::new(code, &raw), raw))
    }

    /// `body` with its `"{rv}"` and `"{fill:N}"` strings replaced.
    fn filled(&self, body: &Value, path: &str) -> Value {
        match body {
            Value::String(s) if s == "{rv}" => Value::String(self.versions.get(path).cloned().unwrap_or_default()),
            Value::String(s) => match s.strip_prefix("{fill:").and_then(|n| n.strip_suffix('}')) {
                Some(n) => Value::String("x".repeat(n.parse().unwrap_or(0))),
                None => body.clone(),
            },
            Value::Array(items) => Value::Array(items.iter().map(|i| self.filled(i, path)).collect()),
            Value::Object(map) => Value::Object(map.iter().map(|(k, v)| (k.clone(), self.filled(v, path))).collect()),
            other => other.clone(),
        }
    }

    /// Keeps the resource version of an object in an answer, by the object's path.
    fn remember(&mut self, step: &Step, raw: &[u8]) {
        let Ok(body) = serde_json::from_slice::<Value>(raw) else { return };
        let (Some(name), Some(rv)) = (
            body.pointer("/metadata/name").and_then(Value::as_str),
            body.pointer("/metadata/resourceVersion").and_then(Value::as_str),
        ) else {
            return;
        };
        let path = step.path.trim_end_matches("/status").trim_end_matches("/scale");
        let path = if step.method == "POST" { format!("{path}/{name}") } else { path.to_owned() };
        self.versions.insert(path.clone(), rv.to_owned());
        self.versions.insert(format!("{path}/status"), rv.to_owned());
    }

    /// The kinds of `api_version` this server serves, from its discovery document.
    async fn discover(&self, api_version: &str, into: &mut Discovery) -> Result<()> {
        let path =
            if api_version.contains('/') { format!("/apis/{api_version}") } else { format!("/api/{api_version}") };
        let request = http::Request::get(path).body(Vec::new())?;
        let list: Value = self.client.request(request).await?;
        for resource in list["resources"].as_array().into_iter().flatten() {
            let name = resource["name"].as_str().unwrap_or_default();
            if name.contains('/') {
                continue;
            }
            let kind = resource["kind"].as_str().unwrap_or_default().to_owned();
            let served = ResourceDef::custom(api_version, &kind, name, resource["namespaced"] == true);
            into.insert((api_version.to_owned(), kind), served);
        }
        Ok(())
    }

    /// Waits until this server reports the CustomResourceDefinition `name` Established, as
    /// `kubectl wait --for=condition=Established` does: kube-apiserver establishes one a
    /// moment after creating it, and a step sent before then would find it otherwise
    /// depending on how busy the machine is.
    async fn established(&self, name: &str) -> Result<()> {
        let path = format!("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}");
        for _ in 0..300 {
            let request = http::Request::get(&path).body(Vec::new())?;
            if let Ok(crd) = self.client.request::<Value>(request).await {
                let conditions =
                    crd.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
                if conditions.iter().any(|c| c["type"] == "Established" && c["status"] == "True") {
                    return Ok(());
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(anyhow!("the CustomResourceDefinition {name} was not Established within 30 s"))
    }

    /// Waits until this server serves `api_version` (a custom resource's group just defined).
    async fn served(&self, api_version: &str) -> Result<()> {
        let mut found = Discovery::new();
        for _ in 0..300 {
            if self.discover(api_version, &mut found).await.is_ok() && !found.is_empty() {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Err(anyhow!("{api_version} was not served within 30 s"))
    }
}

/// A step and both answers.
pub struct Exchange {
    /// The step.
    pub step: Step,
    /// The real server's answer.
    pub real: Answer,
    /// The embedded cluster's answer.
    pub embedded: Answer,
}

/// Sends `steps` to both servers in order.
pub async fn exchange(real: &mut Server, embedded: &mut Server, steps: Vec<Step>) -> Result<Vec<Exchange>> {
    let mut out = Vec::with_capacity(steps.len());
    for step in steps {
        let started = std::time::Instant::now();
        let (real_answer, _) = real.send(&step).await?;
        if started.elapsed() > Duration::from_secs(5) {
            // A step that waits on the real server (its default request timeout is 60 s) is
            // what a busy machine changes; say which, for the report that then differs.
            eprintln!("step {} took {:?} on the real server: {}", step.name, started.elapsed(), real_answer.code);
        }
        let creates_definition =
            step.method == "POST" && step.body.as_ref().is_some_and(|b| b["kind"] == "CustomResourceDefinition");
        if creates_definition && real_answer.code == 201 {
            let name = step.body.as_ref().and_then(|b| b.pointer("/metadata/name")).and_then(Value::as_str);
            real.established(name.unwrap_or_default()).await?;
        }
        let (embedded_answer, _) = embedded.send(&step).await?;
        out.push(Exchange { step, real: real_answer, embedded: embedded_answer });
    }
    Ok(out)
}

/// The fixture manifests under `dir` sent to both servers: first the Namespaces and
/// CustomResourceDefinitions, then (once both serve the new kinds) everything else.
pub async fn fixtures(real: &mut Server, embedded: &mut Server, dir: &std::path::Path) -> Result<Vec<Exchange>> {
    let objects = fixture_objects(dir)?;
    let first = |o: &&Value| matches!(o["kind"].as_str(), Some("Namespace" | "CustomResourceDefinition"));
    let (early, late): (Vec<&Value>, Vec<&Value>) = objects.iter().partition(first);
    let mut discovery = Discovery::new();
    for api_version in ["v1", "apiextensions.k8s.io/v1"] {
        real.discover(api_version, &mut discovery).await?;
    }
    let mut out = exchange(real, embedded, steps_of(&early, &discovery)?).await?;
    let mut versions: Vec<&str> = late.iter().filter_map(|o| o["apiVersion"].as_str()).collect();
    versions.sort_unstable();
    versions.dedup();
    for api_version in versions {
        real.served(api_version).await?;
        embedded.served(api_version).await?;
        real.discover(api_version, &mut discovery).await?;
    }
    out.extend(exchange(real, embedded, steps_of(&late, &discovery)?).await?);
    Ok(out)
}

fn steps_of(objects: &[&Value], discovery: &Discovery) -> Result<Vec<Step>> {
    let mut steps = Vec::new();
    for object in objects {
        let key = (
            object["apiVersion"].as_str().unwrap_or_default().to_owned(),
            object["kind"].as_str().unwrap_or_default().to_owned(),
        );
        let served = discovery.get(&key).with_context(|| format!("the real server does not serve {key:?}"))?;
        steps.extend(fixture_steps(object, &collection_path(object, served)));
    }
    Ok(steps)
}
