//! `cargo xtask openapi-spec`: vendors into `host/openapi/` the OpenAPI specification of
//! the Kubernetes release the tests' control plane pins (`tests/control-plane/go.mod`), for
//! `wink run --serve-api` to serve without Go at run time:
//!
//! - `swagger.json.zst`: `api/openapi-spec/swagger.json` (OpenAPI v2);
//! - `v3.json.zst`: every group-version's `api/openapi-spec/v3/…_openapi.json` in one object
//!   keyed by its path (`api/v1`, `apis/apps/v1`);
//! - `OpenAPIv2.proto`: gnostic's `openapi.v2` protocol (the module the same go.mod pins),
//!   which the host's build script compiles.
//!
//! Schemas stay whole. Of the paths only the PATCH operations stay, with their kind and
//! parameters but `fieldValidation`: kubectl reads nothing else of them (`dryRun` support
//! before 1.26, `fieldValidation` support since), and the embedded cluster does not enforce
//! strict field validation, so kubectl must validate on its side. zstd at level 19 makes
//! the two documents about 150 KB each.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use crate::control_plane::{find_go, required_version};

/// Regenerates `host/openapi/`.
pub fn run(repo: &Path) -> Result<()> {
    let go_mod_path = repo.join("tests/control-plane/go.mod");
    let go_mod = std::fs::read_to_string(&go_mod_path).with_context(|| format!("reading {}", go_mod_path.display()))?;
    let mut modules = Vec::new();
    for module in ["k8s.io/kubernetes", "github.com/google/gnostic-models"] {
        let version = required_version(&go_mod, module).with_context(|| format!("{module} is not in go.mod"))?;
        modules.push(format!("{module}@{version}"));
    }
    let dirs = download(repo, &modules)?;
    let (spec, gnostic) = (dirs[0].join("api/openapi-spec"), &dirs[1]);
    let out = repo.join("host/openapi");
    std::fs::create_dir_all(&out)?;

    let mut swagger = read_json(&spec.join("swagger.json"))?;
    swagger["paths"] = patches_only(&swagger["paths"]);
    write_zstd(&out.join("swagger.json.zst"), &swagger)?;

    let mut documents = Map::new();
    for entry in std::fs::read_dir(spec.join("v3"))? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let Some(group_version) = name.strip_suffix("_openapi.json").map(|n| n.replace("__", "/")) else { continue };
        if !is_group_version(&group_version) {
            continue;
        }
        let mut document = read_json(&path)?;
        document["paths"] = patches_only(&document["paths"]);
        documents.insert(group_version, document);
    }
    if !documents.contains_key("api/v1") {
        bail!("{} has no api__v1_openapi.json", spec.join("v3").display());
    }
    write_zstd(&out.join("v3.json.zst"), &Value::Object(documents))?;

    let proto = out.join("OpenAPIv2.proto");
    std::fs::copy(gnostic.join("openapiv2/OpenAPIv2.proto"), &proto)?;
    // The module cache is read-only; the copy need not be.
    let mut permissions = std::fs::metadata(&proto)?.permissions();
    #[allow(clippy::permissions_set_readonly_false, reason = "the copy is the repository's file, to be rewritten")]
    permissions.set_readonly(false);
    std::fs::set_permissions(&proto, permissions)?;
    eprintln!("xtask: wrote {} from {}", out.display(), modules.join(", "));
    Ok(())
}

/// The folders of `modules` (`path@version`) in Go's module cache, downloading them if needed.
fn download(repo: &Path, modules: &[String]) -> Result<Vec<PathBuf>> {
    let go = find_go("the vendored OpenAPI specification")?;
    let out = Command::new(go)
        .current_dir(repo.join("tests/control-plane"))
        .args(["mod", "download", "-json"])
        .args(modules)
        .output()
        .context("running go mod download")?;
    if !out.status.success() {
        bail!("go mod download failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut dirs = Vec::new();
    for module in serde_json::Deserializer::from_slice(&out.stdout).into_iter::<Value>() {
        let module = module.context("reading go mod download's answer")?;
        let dir = module["Dir"].as_str().with_context(|| format!("no folder for {module}"))?;
        dirs.push(PathBuf::from(dir));
    }
    if dirs.len() != modules.len() {
        bail!("go mod download answered {} modules for {}", dirs.len(), modules.len());
    }
    Ok(dirs)
}

/// `api/v1` or `apis/GROUP/VERSION` (not `api`, `apis`, a group, `version`, `logs`…).
fn is_group_version(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    matches!(parts.as_slice(), ["api", "v1"] | ["apis", _, _])
}

/// Of `paths`, the PATCH operations of a kind: its kind, action and parameters but
/// `fieldValidation`.
fn patches_only(paths: &Value) -> Value {
    let mut kept = Map::new();
    for (path, item) in paths.as_object().into_iter().flatten() {
        let patch = &item["patch"];
        let Some(kind) = patch.get("x-kubernetes-group-version-kind") else { continue };
        let parameters: Vec<&Value> = patch["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["name"].as_str() != Some("fieldValidation"))
            .collect();
        let operation = json!({
            "x-kubernetes-action": patch["x-kubernetes-action"],
            "x-kubernetes-group-version-kind": kind,
            "parameters": parameters,
        });
        kept.insert(path.clone(), json!({"patch": operation}));
    }
    Value::Object(kept)
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&text).with_context(|| format!("parsing {}", path.display()))
}

fn write_zstd(path: &Path, value: &Value) -> Result<()> {
    let text = serde_json::to_vec(value)?;
    let compressed = zstd::encode_all(text.as_slice(), 19)?;
    std::fs::write(path, compressed).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_group_versions_are_vendored() {
        assert!(is_group_version("api/v1") && is_group_version("apis/apps/v1"));
        assert!(!is_group_version("apis/apps") && !is_group_version("api") && !is_group_version("version"));
    }

    #[test]
    fn patches_keep_their_kind_and_every_parameter_but_field_validation() {
        let paths = json!({
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {
                "get": {"operationId": "read"},
                "patch": {"operationId": "patch", "x-kubernetes-action": "patch",
                    "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"},
                    "parameters": [{"name": "dryRun", "in": "query"}, {"name": "fieldValidation", "in": "query"}]},
            },
            "/apis/apps/v1/": {"get": {"operationId": "resources"}},
        });
        let kept = patches_only(&paths);
        assert_eq!(
            kept,
            json!({"/apis/apps/v1/namespaces/{namespace}/deployments/{name}": {"patch": {
                "x-kubernetes-action": "patch",
                "x-kubernetes-group-version-kind": {"group": "apps", "kind": "Deployment", "version": "v1"},
                "parameters": [{"name": "dryRun", "in": "query"}],
            }}})
        );
    }
}
