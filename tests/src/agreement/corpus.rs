//! The corpus: the requests both servers answer, in order.
//!
//! Hand-written steps come from `tests/api-agreement/corpus.yaml`; the real-world manifests
//! of `tests/fixtures/manifests` add theirs ([`fixture_steps`]): each object created,
//! created again, applied server-side, applied again unchanged, and read back.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;
use wink::kube::ResourceDef;

/// How a step's body is sent (its `Content-Type`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Content {
    /// `application/json`.
    #[default]
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/json-patch+json`.
    JsonPatch,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
    /// `text/plain`: a type no API server accepts for a write.
    Text,
}

impl Content {
    /// The `Content-Type` header.
    pub fn mime(self) -> &'static str {
        match self {
            Content::Json => "application/json",
            Content::Merge => "application/merge-patch+json",
            Content::Strategic => "application/strategic-merge-patch+json",
            Content::JsonPatch => "application/json-patch+json",
            Content::Apply => "application/apply-patch+yaml",
            Content::Text => "text/plain",
        }
    }
}

/// What of two answers is compared.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Compare {
    /// Status code, reason and the normalised body.
    #[default]
    All,
    /// Status code and reason only (documents that describe the server itself: versions,
    /// discovery, OpenAPI).
    Status,
}

/// One request of the corpus.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The group of the report the step counts in.
    pub category: String,
    /// What the step does, unique in the corpus.
    pub name: String,
    /// The HTTP method.
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query, as sent (`dryRun=All&fieldManager=me`).
    #[serde(default)]
    pub query: String,
    /// How the body is sent.
    #[serde(default)]
    pub content: Content,
    /// The `Accept` header, when not JSON.
    #[serde(default)]
    pub accept: Option<String>,
    /// The body. A string `"{rv}"` in it becomes the `resourceVersion` the same server last
    /// returned for the object at `path`; `"{fill:N}"` becomes N letters `x`.
    #[serde(default)]
    pub body: Option<Value>,
    /// What is compared.
    #[serde(default)]
    pub compare: Compare,
}

impl Step {
    /// The request's path and query.
    pub fn uri(&self) -> String {
        if self.query.is_empty() { self.path.clone() } else { format!("{}?{}", self.path, self.query) }
    }
}

/// The hand-written steps of `file`.
pub fn load(file: &Path) -> Result<Vec<Step>> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let steps: Vec<Step> = serde_norway::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    let mut seen = std::collections::BTreeSet::new();
    for step in &steps {
        if !seen.insert(step.name.as_str()) {
            bail!("{}: two steps are named {:?}", file.display(), step.name);
        }
    }
    Ok(steps)
}

/// The collection path of `object` as `def` serves it
/// (`/apis/apps/v1/namespaces/shop/deployments`); a namespaced object naming none is in
/// `default`.
pub fn collection_path(object: &Value, def: &ResourceDef) -> String {
    let namespace = object.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("default");
    def.collection_path(Some(namespace))
}

/// The objects of the manifests under `dir`, in file order, files sorted by path; `List`s
/// are flattened by the manifest reader.
pub fn fixture_objects(dir: &Path) -> Result<Vec<Value>> {
    let mut files = Vec::new();
    let mut folders = vec![dir.to_path_buf()];
    while let Some(folder) = folders.pop() {
        for entry in std::fs::read_dir(&folder).with_context(|| format!("reading {}", folder.display()))? {
            let path = entry?.path();
            if path.is_dir() {
                folders.push(path);
            } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut objects = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let parsed = wink::source::parse_manifest_file(&file, &text)?;
        objects.extend(parsed.objects.into_iter().map(|o| o.value));
    }
    Ok(objects)
}

/// The steps of one fixture object at `collection`: create, create again, apply, apply
/// again, read.
pub fn fixture_steps(object: &Value, collection: &str) -> Vec<Step> {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default();
    let what = match object.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    };
    let item = format!("{collection}/{name}");
    let step = |verb: &str, method: &str, path: &str, query: &str, content: Content| Step {
        category: "real-world manifests".into(),
        name: format!("{verb} {what}"),
        method: method.into(),
        path: path.into(),
        query: query.into(),
        content,
        accept: None,
        body: (method != "GET").then(|| object.clone()),
        compare: Compare::All,
    };
    let apply = "fieldManager=agreement&force=true";
    vec![
        step("create", "POST", collection, "", Content::Json),
        step("create again", "POST", collection, "", Content::Json),
        step("apply", "PATCH", &item, apply, Content::Apply),
        step("apply again", "PATCH", &item, apply, Content::Apply),
        step("read", "GET", &item, "", Content::Json),
    ]
}

/// Kinds by `apiVersion` and `kind`, as a server's discovery documents list them.
pub type Discovery = BTreeMap<(String, String), ResourceDef>;
