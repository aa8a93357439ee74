//! RBAC and `kubectl` helpers for the tests against the real control plane
//! ([`crate::control_plane`]): running the real kubectl as the admin (with a YAML document on
//! its stdin), asking the server what an identity may do (`kubectl auth can-i`), Roles and
//! their bindings for a service account, and `deploy/rbac.yaml` laid into a test's own
//! namespace.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};

use crate::control_plane::ControlPlane;

/// The repository's `deploy/` folder.
pub fn deploy_dir() -> PathBuf {
    crate::repo_root().join("deploy")
}

/// What a kubectl run printed.
#[derive(Debug)]
pub struct Output {
    /// Whether it exited 0.
    pub success: bool,
    /// Its stdout.
    pub stdout: String,
    /// Its stderr (kubectl's warnings go there).
    pub stderr: String,
}

/// Runs kubectl as the admin with `args`, `stdin` (if any) on its standard input.
pub fn kubectl(cp: &ControlPlane, args: &[&str], stdin: Option<&str>) -> Result<Output> {
    let mut command = cp.kubectl()?;
    command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = command.spawn().context("running kubectl")?;
    let mut input = child.stdin.take().context("kubectl's stdin")?;
    if let Some(text) = stdin {
        input.write_all(text.as_bytes()).context("writing to kubectl")?;
    }
    drop(input);
    let out = child.wait_with_output().context("waiting for kubectl")?;
    Ok(Output {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// Runs kubectl as the admin and returns its stdout; fails with its output if it failed.
pub fn kubectl_ok(cp: &ControlPlane, args: &[&str], stdin: Option<&str>) -> Result<String> {
    let out = kubectl(cp, args, stdin)?;
    ensure!(out.success, "kubectl {args:?} failed:\nstdout: {}\nstderr: {}", out.stdout, out.stderr);
    Ok(out.stdout)
}

/// `kubectl apply --server-side -f -` of the documents of `yaml` (separated by `---`; JSON
/// is YAML too), as the admin, sent as one `List` (kubectl reads a stream of JSON documents
/// badly).
pub fn apply(cp: &ControlPlane, yaml: &str) -> Result<String> {
    let mut items = Vec::new();
    for document in serde_norway::Deserializer::from_str(yaml) {
        let item: Value = serde::Deserialize::deserialize(document).context("a document to apply")?;
        if !item.is_null() {
            items.push(item);
        }
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string();
    kubectl_ok(cp, &["apply", "--server-side", "-f", "-"], Some(&list))
}

/// An object read back with `kubectl get -o json` (`namespace` empty for a cluster-scoped
/// one).
pub fn get(cp: &ControlPlane, resource: &str, namespace: &str, name: &str) -> Result<Value> {
    let mut args = vec!["get", resource, name, "-o", "json"];
    if !namespace.is_empty() {
        args.extend(["-n", namespace]);
    }
    let text = kubectl_ok(cp, &args, None)?;
    serde_json::from_str(&text).with_context(|| format!("kubectl's JSON of {resource} {namespace}/{name}"))
}

/// What the server answers to `kubectl auth can-i VERB RESOURCE [NAME] --as USER` with the
/// extra `flags` (`-n NS`, `-A`, `--subresource=status`).
pub fn can_i(cp: &ControlPlane, user: &str, verb: &str, resource: &str, flags: &[&str]) -> Result<bool> {
    let mut args = vec!["auth", "can-i", verb, resource, "--as", user];
    args.extend_from_slice(flags);
    let out = kubectl(cp, &args, None)?;
    match out.stdout.trim() {
        "yes" if out.success => Ok(true),
        "no" => Ok(false),
        _ => bail!("kubectl {args:?} answered neither yes nor no:\n{}{}", out.stdout, out.stderr),
    }
}

/// A Role `name` in `namespace` with `rules` (`(apiGroups, resources, verbs)`), bound to
/// ServiceAccount `namespace/account`, as YAML for [`apply`].
pub fn role_for(namespace: &str, name: &str, account: &str, rules: &[(&[&str], &[&str], &[&str])]) -> String {
    let rules: Vec<Value> = rules
        .iter()
        .map(|(groups, resources, verbs)| json!({"apiGroups": groups, "resources": resources, "verbs": verbs}))
        .collect();
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": namespace}, "rules": rules});
    let binding = binding(namespace, name, "Role", name, (namespace, account));
    format!("{role}\n---\n{binding}\n")
}

/// A RoleBinding `name` in `namespace` of `role_kind` `role` to ServiceAccount `subject`.
pub fn binding(namespace: &str, name: &str, role_kind: &str, role: &str, subject: (&str, &str)) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": subject.1, "namespace": subject.0}]})
}

/// `deploy/rbac.yaml` with its rules untouched, moved into `namespace`: `wink-system` becomes
/// `namespace` (objects and subjects), and the cluster-scoped objects' names (and the
/// references to them) get `-<namespace>` appended, so that tests sharing a control plane do
/// not overwrite each other's. Returns the YAML and the names of the two ClusterRoles (wink's
/// own, and the one to bind where it may impersonate).
pub fn deploy_rbac_in(namespace: &str) -> Result<(String, String, String)> {
    let path = deploy_dir().join("rbac.yaml");
    let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    let suffix = |name: &str| format!("{name}-{namespace}");
    let mut documents = Vec::new();
    let mut cluster_roles = Vec::new();
    for document in serde_norway::Deserializer::from_str(&text) {
        let mut object: Value = serde::Deserialize::deserialize(document).context("a document of rbac.yaml")?;
        if object.is_null() {
            continue;
        }
        let kind = object["kind"].as_str().unwrap_or_default().to_owned();
        if object["metadata"]["namespace"] == "wink-system" {
            object["metadata"]["namespace"] = namespace.into();
        }
        if kind == "ClusterRole" || kind == "ClusterRoleBinding" {
            let name = suffix(object["metadata"]["name"].as_str().context("a name")?);
            if kind == "ClusterRole" {
                cluster_roles.push(name.clone());
            }
            object["metadata"]["name"] = name.into();
        }
        if object["roleRef"]["kind"] == "ClusterRole" {
            object["roleRef"]["name"] = suffix(object["roleRef"]["name"].as_str().context("a roleRef")?).into();
        }
        let subjects = object.get_mut("subjects").and_then(Value::as_array_mut);
        for subject in subjects.into_iter().flatten() {
            if subject["namespace"] == "wink-system" {
                subject["namespace"] = namespace.into();
            }
        }
        documents.push(object.to_string());
    }
    let [wink, impersonate] = <[String; 2]>::try_from(cluster_roles)
        .map_err(|roles| anyhow::anyhow!("deploy/rbac.yaml should hold two ClusterRoles, has {roles:?}"))?;
    ensure!(impersonate.starts_with("wink-impersonate-"), "the second ClusterRole is {impersonate}");
    Ok((documents.join("\n---\n"), wink, impersonate))
}

/// Creates a namespace's ServiceAccount `name` unless it exists (no token: for RBAC subjects
/// and impersonation).
pub fn service_account_yaml(namespace: &str, name: &str) -> String {
    json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}})
        .to_string()
}

/// A `Command` for the real `wink` binary (see [`crate::binary::wink_binary`]).
pub fn wink() -> Command {
    Command::new(crate::binary::wink_binary())
}

/// A tenant's namespace with a Deployment `web` that names ConfigMap `settings` for the
/// reloader, and that ConfigMap.
pub async fn reloader_tenant(cp: &ControlPlane, prefix: &str) -> Result<String> {
    let namespace = cp.namespace(prefix).await?;
    let web = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": namespace,
                     "annotations": {"reloader.wink.dev/configmaps": "settings"}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "registry.example/web:1"}]}}}});
    let settings = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": namespace}, "data": {"currency": "EUR"}});
    apply(cp, &format!("{web}\n---\n{settings}"))?;
    Ok(namespace)
}
