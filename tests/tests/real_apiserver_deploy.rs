//! `deploy/` on the real control plane (kube-apiserver with its default admission plugins,
//! Pod Security among them, see `wink_tests::control_plane`), and `WinkPlugin` objects there.
//!
//! Specifies that:
//! - `kubectl apply --server-side -k deploy/`, validated by the server (no
//!   `--validate=false`), creates everything without a warning, the CRD is established and
//!   `wink-system` enforces Pod Security `restricted`; applying again changes nothing;
//! - the Deployment's pod is admitted at `restricted`: a Pod made of its template is created
//!   in a namespace enforcing it (and dry-run in `wink-system`), and a server-side dry run of
//!   the Deployment draws no Pod Security warning — while the same pod allowing privilege
//!   escalation is refused, and its Deployment warned about, so Pod Security does enforce;
//! - the `WinkPlugin` CRD's schema is the server's: a valid object is accepted, one missing
//!   `image`, with `resources` of the wrong type or an unknown `onError` is refused with the
//!   field's path;
//! - `wink run --winkplugins`, logged in as `deploy/`'s `wink` account, deploys a plugin from
//!   a `WinkPlugin` whose image is in a real OCI registry, the plugin writes as its service
//!   account (bound `wink-impersonate` in its namespace), and wink writes the object's status
//!   through the status subresource; a `WinkPlugin` of another namespace naming that account
//!   is not deployed (`Failed`).
//!
//! `deploy/` is applied once per run (`wink-system` and the cluster-scoped objects are
//! fixed); everything else is in namespaces of each test's own. Run with
//! `cargo xtask test -- --test real_apiserver_deploy`, or
//! `env $(cargo xtask control-plane) cargo test -p wink-tests --test real_apiserver_deploy`.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, ensure};
use serde_json::{Value, json};
use wink_tests::control_plane::ControlPlane;
use wink_tests::install_plugin;
use wink_tests::oci_registry::Registry;
use wink_tests::process::Running;
use wink_tests::rbac::{Output, apply, binding, deploy_dir, get, kubectl, kubectl_ok, reloader_tenant, role_for, wink};
use wink_tests::wait::eventually_async;

/// How long wink may take to deploy a plugin and its write to show: generous, for a loaded
/// machine.
const TIMEOUT: Duration = Duration::from_secs(60);

/// `kubectl apply --server-side -k deploy/`, once per run, after which the CRD is
/// established; what kubectl printed.
async fn deploy_applied(cp: &ControlPlane) -> Result<&'static Output> {
    static APPLIED: tokio::sync::OnceCell<Result<Output, String>> = tokio::sync::OnceCell::const_new();
    let applied = APPLIED
        .get_or_init(|| async {
            let dir = deploy_dir().display().to_string();
            let applied = kubectl(cp, &["apply", "--server-side", "-k", &dir], None).map_err(|e| format!("{e:#}"))?;
            if !applied.success {
                return Err(format!("kubectl apply -k deploy/ failed:\n{}{}", applied.stdout, applied.stderr));
            }
            let crd = "customresourcedefinition/winkplugins.wink.dev";
            kubectl_ok(cp, &["wait", "--for=condition=Established", "--timeout=60s", crd], None)
                .map_err(|e| format!("{e:#}"))?;
            Ok(applied)
        })
        .await;
    applied.as_ref().map_err(|e| anyhow!("{e}"))
}

/// Every object `deploy/` holds, as `kind/name` → resourceVersion.
fn versions(cp: &ControlPlane) -> Result<Vec<(String, String)>> {
    let dir = deploy_dir().display().to_string();
    let list: Value = serde_json::from_str(&kubectl_ok(cp, &["get", "-k", &dir, "-o", "json"], None)?)?;
    let items = list["items"].as_array().context("a List")?;
    Ok(items
        .iter()
        .map(|o| {
            let name = format!("{}/{}", o["kind"].as_str().unwrap_or_default(), o["metadata"]["name"]);
            (name, o["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned())
        })
        .collect())
}

#[tokio::test]
async fn real_apiserver_kubectl_apply_k_deploy_is_valid_and_applying_again_changes_nothing() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let applied = deploy_applied(cp).await?;
    ensure!(!applied.stderr.contains("Warning"), "the server warned:\n{}", applied.stderr);
    for object in [
        "customresourcedefinition.apiextensions.k8s.io/winkplugins.wink.dev",
        "namespace/wink-system",
        "serviceaccount/wink",
        "clusterrole.rbac.authorization.k8s.io/wink",
        "clusterrole.rbac.authorization.k8s.io/wink-impersonate",
        "clusterrolebinding.rbac.authorization.k8s.io/wink",
        "role.rbac.authorization.k8s.io/wink-leases",
        "rolebinding.rbac.authorization.k8s.io/wink-leases",
        "deployment.apps/wink",
        "service/wink-metrics",
    ] {
        ensure!(applied.stdout.contains(&format!("{object} serverside-applied")), "no {object}:\n{}", applied.stdout);
    }
    let namespace = get(cp, "namespace", "", "wink-system")?;
    ensure!(namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted", "{namespace}");
    // Nothing binds impersonation cluster-wide.
    let bindings: Value = serde_json::from_str(&kubectl_ok(cp, &["get", "clusterrolebindings", "-o", "json"], None)?)?;
    let impersonating: Vec<&Value> = bindings["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["roleRef"]["name"] == "wink-impersonate")
        .collect();
    ensure!(impersonating.is_empty(), "wink-impersonate is bound cluster-wide: {impersonating:?}");

    let before = versions(cp)?;
    ensure!(before.len() == 10, "deploy/ holds {before:?}");
    let dir = deploy_dir().display().to_string();
    let again = kubectl_ok(cp, &["apply", "--server-side", "-k", &dir], None)?;
    ensure!(versions(cp)? == before, "applying again changed objects:\n{again}");
    Ok(())
}

/// The pod `deploy/deployment.yaml` runs, as the server stored the Deployment (defaults
/// filled in), named `name` in `namespace`.
fn winks_pod(cp: &ControlPlane, name: &str, namespace: &str) -> Result<Value> {
    let deployment = get(cp, "deployment", "wink-system", "wink")?;
    let template = &deployment["spec"]["template"];
    Ok(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": template["metadata"]["labels"]},
        "spec": template["spec"]}))
}

/// A Deployment of `pod`'s spec, named as it, in its namespace.
fn deployment_of(pod: &Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": pod["metadata"],
        "spec": {"selector": {"matchLabels": pod["metadata"]["labels"]},
                 "template": {"metadata": {"labels": pod["metadata"]["labels"]}, "spec": pod["spec"]}}})
}

#[tokio::test]
async fn real_apiserver_the_deployments_pod_is_admitted_at_pod_security_restricted() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    deploy_applied(cp).await?;
    let namespace = cp.namespace("psa").await?;
    kubectl_ok(cp, &["label", "namespace", &namespace, "pod-security.kubernetes.io/enforce=restricted"], None)?;
    apply(
        cp,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "wink", "namespace": namespace}})
        .to_string(),
    )?;

    // wink's pod: created, with no warning.
    let pod = winks_pod(cp, "wink", &namespace)?;
    let created = kubectl(cp, &["create", "-f", "-"], Some(&pod.to_string()))?;
    ensure!(created.success && created.stderr.is_empty(), "wink's pod was refused or warned about: {created:?}");
    let stored = get(cp, "pod", &namespace, "wink")?;
    ensure!(stored["spec"]["containers"][0]["securityContext"] == pod["spec"]["containers"][0]["securityContext"]);
    let in_deploy = winks_pod(cp, "wink-dry-run", "wink-system")?;
    let dry_run = kubectl(cp, &["create", "--dry-run=server", "-f", "-"], Some(&in_deploy.to_string()))?;
    ensure!(dry_run.success && dry_run.stderr.is_empty(), "refused in wink-system: {dry_run:?}");
    let deployment = deployment_of(&winks_pod(cp, "wink", &namespace)?);
    let dry_run = kubectl(cp, &["create", "--dry-run=server", "-f", "-"], Some(&deployment.to_string()))?;
    ensure!(dry_run.success && !dry_run.stderr.contains("PodSecurity"), "the Deployment: {dry_run:?}");

    // The same pod allowing privilege escalation: refused; its Deployment warned about.
    let mut escalating = winks_pod(cp, "escalating", &namespace)?;
    escalating["spec"]["containers"][0]["securityContext"]["allowPrivilegeEscalation"] = true.into();
    let refused = kubectl(cp, &["create", "-f", "-"], Some(&escalating.to_string()))?;
    ensure!(!refused.success, "Pod Security admitted an escalating pod: {refused:?}");
    ensure!(refused.stderr.contains(r#"violates PodSecurity "restricted:latest""#), "{refused:?}");
    ensure!(refused.stderr.contains("allowPrivilegeEscalation"), "{refused:?}");
    let warned =
        kubectl(cp, &["create", "--dry-run=server", "-f", "-"], Some(&deployment_of(&escalating).to_string()))?;
    ensure!(warned.success && warned.stderr.contains("would violate PodSecurity"), "{warned:?}");
    Ok(())
}

/// A `WinkPlugin` named `name` in `namespace` with `spec`.
fn winkplugin(namespace: &str, name: &str, spec: Value) -> String {
    json!({"apiVersion": "wink.dev/v1alpha1", "kind": "WinkPlugin",
        "metadata": {"name": name, "namespace": namespace}, "spec": spec})
    .to_string()
}

#[tokio::test]
async fn real_apiserver_the_winkplugin_crds_schema_refuses_invalid_objects() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    deploy_applied(cp).await?;
    let namespace = cp.namespace("crd").await?;
    // kubectl's own check (from the server's OpenAPI document) is turned off: the server's
    // schema validation is what is specified, and it must refuse on its own.
    let dry_run = |spec: Value| {
        kubectl(
            cp,
            &["apply", "--server-side", "--dry-run=server", "--validate=false", "-f", "-"],
            Some(&winkplugin(&namespace, "p", spec)),
        )
    };
    let valid = json!({"image": "registry.example/team/p:v1", "resources": [{"apiVersion": "v1", "kind": "ConfigMap"}],
        "failurePolicy": {"onError": "skip"}, "serviceAccount": format!("{namespace}/p")});
    let accepted = dry_run(valid.clone())?;
    ensure!(accepted.success, "a valid WinkPlugin was refused: {accepted:?}");

    let mut no_image = valid.clone();
    no_image.as_object_mut().context("an object")?.remove("image");
    let mut not_a_list = valid.clone();
    not_a_list["resources"] = "ConfigMaps".into();
    let mut unknown_policy = valid;
    unknown_policy["failurePolicy"]["onError"] = "sometimes".into();
    for (spec, expected) in [
        (no_image, &["spec.image: Required value"][..]),
        (not_a_list, &["spec.resources", "expected list"][..]),
        (unknown_policy, &["spec.failurePolicy.onError: Unsupported value", "\"sometimes\""][..]),
    ] {
        let refused = dry_run(spec.clone())?;
        ensure!(!refused.success, "the server accepted {spec}: {refused:?}");
        for text in expected {
            ensure!(
                refused.stderr.contains(text),
                "refusing {spec}, the server did not say {text:?}: {}",
                refused.stderr
            );
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_wink_deploys_a_winkplugin_and_writes_its_status() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    deploy_applied(cp).await?;
    let registry = Registry::start()?;
    let namespace = reloader_tenant(cp, "team").await?;
    // The plugin's account, and wink's leave to act as it (as the deploy docs say).
    apply(
        cp,
        &json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "reloader", "namespace": namespace}})
        .to_string(),
    )?;
    let rules: [(&[&str], &[&str], &[&str]); 2] =
        [(&["apps"], &["deployments"], &["patch"]), (&["events.k8s.io"], &["events"], &["create", "patch"])];
    apply(cp, &role_for(&namespace, "reloader", "reloader", &rules))?;
    let impersonate =
        binding(&namespace, "wink-impersonate", "ClusterRole", "wink-impersonate", ("wink-system", "wink"));
    apply(cp, &impersonate.to_string())?;
    let account = cp.service_account("wink-system", "wink").await?;

    // The reloader, published.
    let work = tempfile::tempdir()?;
    let built = install_plugin("reloader", &work.path().join("src"), "reloader", None);
    let image = format!("{}/team/reloader:v1", registry.host);
    let cache = work.path().join("cache");
    let push = wink()
        .args(["push", "--insecure-registry", &registry.host, "--oci-cache-dir"])
        .arg(&cache)
        .arg(&built)
        .arg(&image)
        .output()?;
    ensure!(push.status.success(), "wink push: {}", String::from_utf8_lossy(&push.stderr));

    let mut running = Running::spawn(
        wink()
            // The status's counts are refreshed every `--plugin-ref-refresh`.
            .args(["run", "--winkplugins", "--no-cache", "--metrics-interval", "0", "--plugin-ref-refresh", "2s"])
            .arg("--insecure-registry")
            .arg(&registry.host)
            .arg("--oci-cache-dir")
            .arg(&cache)
            .arg("--source")
            .arg(format!("kube:{}", account.kubeconfig.display()))
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG"),
    );
    let stderr = running.stderr.clone();
    let spec = json!({"image": image,
        "reconcile": {"for": {"apiVersion": "apps/v1", "kind": "Deployment", "namespaces": [namespace]},
                      "watches": [{"apiVersion": "v1", "kind": "ConfigMap", "namespaces": [namespace],
                                   "mapTo": {"plugin": true}}]},
        "permissions": [{"apiGroups": ["apps"], "resources": ["deployments"], "verbs": ["patch"]},
                        {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]}],
        "serviceAccount": format!("{namespace}/reloader"),
        "limits": {"memory": "32Mi", "callTimeout": "5s"}});
    apply(cp, &winkplugin(&namespace, "reloader", spec))?;

    let status =
        || async { get(cp, "winkplugin", &namespace, "reloader").map(|o| o["status"].clone()).unwrap_or(Value::Null) };
    let deployed = eventually_async(TIMEOUT, || async { status().await["phase"] == "Deployed" }).await;
    ensure!(deployed, "not Deployed: {}\n{}", status().await, stderr.snapshot().join("\n"));
    let written = status().await;
    ensure!(written["pluginName"] == format!("{namespace}-reloader"), "{written}");
    ensure!(written["digest"].as_str().is_some_and(|d| d.starts_with("sha256:")), "{written}");
    ensure!(written["observedGeneration"] == 1, "{written}");
    // Through the status subresource: the server records the write as the status's.
    let object = get(cp, "winkplugin", &namespace, "reloader")?;
    let managed = object["metadata"]["managedFields"].as_array().context("managedFields")?;
    ensure!(
        managed.iter().any(|m| m["subresource"] == "status" && m["fieldsV1"]["f:status"].is_object()),
        "no status write through the subresource: {managed:?}"
    );

    // The plugin runs, as its account.
    let hash = || async {
        get(cp, "deployment", &namespace, "web")
            .ok()
            .and_then(|w| w.pointer("/spec/template/metadata/annotations/reloader.wink.dev~1config-hash").cloned())
    };
    let rolled = eventually_async(TIMEOUT, || async { hash().await.is_some() }).await;
    ensure!(rolled, "the reloader never patched web:\n{}", stderr.snapshot().join("\n"));
    let counted = eventually_async(TIMEOUT, || async { status().await["calls"].as_u64() > Some(0) }).await;
    ensure!(counted, "the status never counted calls: {}", status().await);

    // Another tenant's WinkPlugin naming this namespace's account: not deployed.
    let intruder = cp.namespace("intruder").await?;
    let mut foreign = get(cp, "winkplugin", &namespace, "reloader")?["spec"].clone();
    foreign["reconcile"]["for"]["namespaces"] = json!([intruder]);
    foreign["reconcile"]["watches"][0]["namespaces"] = json!([intruder]);
    apply(cp, &winkplugin(&intruder, "reloader", foreign))?;
    let foreign_status =
        || async { get(cp, "winkplugin", &intruder, "reloader").map(|o| o["status"].clone()).unwrap_or(Value::Null) };
    let refused = eventually_async(TIMEOUT, || async { foreign_status().await["phase"] == "Failed" }).await;
    let failed = foreign_status().await;
    ensure!(refused, "a WinkPlugin acting as another namespace's account: {failed}");
    ensure!(failed["message"].as_str().is_some_and(|m| m.contains("its own namespace")), "{failed}");

    running.sigterm();
    let exit = running.wait_exit().await;
    ensure!(exit.success(), "wink exited with {exit}:\n{}", stderr.snapshot().join("\n"));
    Ok(())
}
