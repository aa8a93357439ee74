//! Multi-tenancy on the real control plane (kube-apiserver with RBAC, see
//! `wink_tests::control_plane`): plugins act as their service accounts, and wink's own
//! account holds exactly what `deploy/rbac.yaml` grants.
//!
//! Specifies that:
//! - `wink run --source kube`, logged in as its own ServiceAccount with `deploy/rbac.yaml`'s
//!   roles (the `wink` ClusterRole, and `wink-impersonate` bound in the tenant's namespace as
//!   the deploy docs say), runs the reloader as the tenant's account: a patch its manifest
//!   allows but the account's Role does not is refused by the server (`forbidden`, naming the
//!   account), the Deployment untouched; once the Role allows it, the same plugin's patch goes
//!   through — impersonating the account without impersonating any group;
//! - a patch the manifest does not allow is refused by wink before any request, though the
//!   account's Role would allow it (the server says so): the refusal is wink's
//!   (`NotPermitted`, naming the manifest's `permissions`), and the Deployment is untouched;
//! - `kubectl auth can-i ... --as system:serviceaccount:NS:wink` with `deploy/rbac.yaml`:
//!   wink may read what plugins watch, read WinkPlugins and write their status, keep its
//!   Leases in its own namespace, record Events, and impersonate the service accounts of the
//!   namespaces that bound `wink-impersonate` — and nothing more: no writes of Secrets,
//!   workloads, RBAC objects or WinkPlugin specs, no tokens, no Leases elsewhere, no
//!   impersonation of users, groups, or other namespaces' accounts.
//!
//! Each test works in namespaces of its own (`deploy/rbac.yaml` is moved into one, rules
//! untouched). Run with `cargo xtask test -- --test real_apiserver_tenancy`, or
//! `env $(cargo xtask control-plane) cargo test -p wink-tests --test real_apiserver_tenancy`.

use std::time::Duration;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};
use wink_tests::control_plane::{ControlPlane, Identity};
use wink_tests::install_plugin;
use wink_tests::process::Running;
use wink_tests::rbac::{apply, binding, can_i, deploy_rbac_in, reloader_tenant, role_for, service_account_yaml, wink};
use wink_tests::wait::eventually_async;

/// The reloader's pod-template annotation.
const HASH: &str = "reloader.wink.dev/config-hash";

/// How long a plugin's write may take to show on the server: generous, for a loaded machine.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// wink's own account as `deploy/rbac.yaml` makes it, in a namespace of its own, allowed to
/// impersonate the service accounts of `tenants`; its identity.
async fn wink_account(cp: &ControlPlane, tenants: &[&str]) -> Result<Identity> {
    let namespace = cp.namespace("wink").await?;
    let (rbac, _, impersonate) = deploy_rbac_in(&namespace)?;
    apply(cp, &rbac)?;
    for tenant in tenants {
        let bound = binding(tenant, "wink-impersonate", "ClusterRole", &impersonate, (&namespace, "wink"));
        apply(cp, &bound.to_string())?;
    }
    cp.service_account(&namespace, "wink").await
}

/// The reloader's manifest after `component:`: watching `namespace`, allowed `permissions`,
/// acting as `namespace/reloader`, failing an event for good on a refused write.
fn reloader_tail(namespace: &str, permissions: &str) -> String {
    format!(
        "{}permissions:\n{permissions}serviceAccount: {namespace}/reloader\nlimits: {{memory: 32Mi, callTimeout: 5s}}\nfailurePolicy: {{onError: skip}}\n",
        wink_tests::reloader_reconcile(Some(namespace))
    )
}

/// `wink run --source kube` as `account`, with the plugins of `plugins`.
fn run_wink(account: &Identity, plugins: &std::path::Path) -> Running {
    Running::spawn(
        wink()
            .args(["run", "--no-cache", "--no-watch", "--metrics-interval", "0", "--plugins"])
            .arg(plugins)
            .arg("--source")
            .arg(format!("kube:{}", account.kubeconfig.display()))
            .env("RUST_LOG", "info")
            .env_remove("KUBECONFIG"),
    )
}

/// The reloader's annotation on `web`'s pod template, and `web`'s resourceVersion.
async fn web(deployments: &Api<Deployment>) -> Result<(Option<String>, String)> {
    let web = serde_json::to_value(deployments.get("web").await?)?;
    let hash = web.pointer("/spec/template/metadata/annotations").and_then(|a| a.get(HASH)).and_then(Value::as_str);
    Ok((hash.map(str::to_owned), web["metadata"]["resourceVersion"].as_str().unwrap_or_default().to_owned()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_a_plugins_write_is_held_to_its_service_accounts_role() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let namespace = reloader_tenant(cp, "tenant").await?;
    let account = wink_account(cp, &[&namespace]).await?;
    apply(cp, &service_account_yaml(&namespace, "reloader"))?;
    // The account may record Events, not patch Deployments.
    let events: (&[&str], &[&str], &[&str]) = (&["events.k8s.io"], &["events"], &["create", "patch"]);
    apply(cp, &role_for(&namespace, "reloader", "reloader", &[events]))?;
    let user = format!("system:serviceaccount:{namespace}:reloader");
    ensure!(!can_i(cp, &user, "patch", "deployments.apps", &["-n", &namespace])?, "the Role allows the patch");

    // The manifest allows the patch.
    let plugins = tempfile::tempdir()?;
    let permissions = "  - {apiGroups: [apps], resources: [deployments], verbs: [patch]}\n  - {apiGroups: [events.k8s.io], resources: [events], verbs: [create, patch]}\n";
    install_plugin("reloader", plugins.path(), "reloader", Some(&reloader_tail(&namespace, permissions)));
    let mut running = run_wink(&account, plugins.path());
    let stderr = running.stderr.clone();

    let refusal = stderr
        .wait_for("the server to refuse the reloader's patch", |l| {
            (l.contains("reconcile failed") && l.contains("forbidden")).then(|| l.to_owned())
        })
        .await;
    ensure!(refusal.contains(&user), "the refusal names another user: {refusal}");
    ensure!(refusal.contains("cannot patch resource"), "not the server's RBAC refusal: {refusal}");
    ensure!(!refusal.contains("impersonate"), "wink itself was refused: {refusal}");
    let deployments = Api::<Deployment>::namespaced(cp.admin_client().await?, &namespace);
    ensure!(web(&deployments).await?.0.is_none(), "the Deployment was patched");

    // The tenant's admin lets the account patch Deployments; the next change goes through.
    let patch: (&[&str], &[&str], &[&str]) = (&["apps"], &["deployments"], &["patch"]);
    apply(cp, &role_for(&namespace, "reloader", "reloader", &[events, patch]))?;
    let allowed = eventually_async(WRITE_TIMEOUT, || can_i_async(cp, &user, &namespace)).await;
    ensure!(allowed, "the Role's new rule never applied");
    Api::<ConfigMap>::namespaced(cp.admin_client().await?, &namespace)
        .patch("settings", &PatchParams::default(), &Patch::Merge(json!({"data": {"currency": "USD"}})))
        .await?;
    let patched =
        eventually_async(WRITE_TIMEOUT, || async { web(&deployments).await.is_ok_and(|(h, _)| h.is_some()) }).await;
    ensure!(patched, "the reloader's patch never arrived:\n{}", stderr.snapshot().join("\n"));

    running.sigterm();
    let exit = running.wait_exit().await;
    ensure!(exit.success(), "wink exited with {exit}:\n{}", stderr.snapshot().join("\n"));
    Ok(())
}

/// Whether `user` may patch Deployments of `namespace` (for a wait).
async fn can_i_async(cp: &ControlPlane, user: &str, namespace: &str) -> bool {
    can_i(cp, user, "patch", "deployments.apps", &["-n", namespace]).unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_a_write_the_manifest_does_not_allow_never_reaches_the_server() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let namespace = reloader_tenant(cp, "tenant").await?;
    let account = wink_account(cp, &[&namespace]).await?;
    apply(cp, &service_account_yaml(&namespace, "reloader"))?;
    // The account may patch Deployments: the server would let the patch through.
    let rules: [(&[&str], &[&str], &[&str]); 2] =
        [(&["apps"], &["deployments"], &["patch"]), (&["events.k8s.io"], &["events"], &["create", "patch"])];
    apply(cp, &role_for(&namespace, "reloader", "reloader", &rules))?;
    let user = format!("system:serviceaccount:{namespace}:reloader");
    let server_allows = eventually_async(WRITE_TIMEOUT, || can_i_async(cp, &user, &namespace)).await;
    ensure!(server_allows, "the server does not allow {user} to patch Deployments");
    let deployments = Api::<Deployment>::namespaced(cp.admin_client().await?, &namespace);
    let before = web(&deployments).await?;

    // The manifest allows Events only.
    let plugins = tempfile::tempdir()?;
    let permissions = "  - {apiGroups: [events.k8s.io], resources: [events], verbs: [create, patch]}\n";
    install_plugin("reloader", plugins.path(), "reloader", Some(&reloader_tail(&namespace, permissions)));
    let mut running = run_wink(&account, plugins.path());
    let stderr = running.stderr.clone();

    let refused = stderr
        .wait_for("wink to refuse the patch", |l| {
            (l.contains("request refused") && l.contains("reloader")).then(|| l.to_owned())
        })
        .await;
    ensure!(refused.contains("no rule of its manifest's `permissions` allows it"), "{refused}");
    ensure!(refused.contains("patch Deployment (apps)") && refused.contains("named web"), "another request: {refused}");
    let failed = stderr
        .wait_for("the reconcile to fail with wink's refusal", |l| l.contains("reconcile failed").then(|| l.to_owned()))
        .await;
    ensure!(failed.contains("NotPermitted") && !failed.contains("forbidden"), "not wink's refusal: {failed}");
    // The server would have applied it: the Deployment as it was means no request arrived.
    ensure!(web(&deployments).await? == before, "the Deployment changed");

    running.sigterm();
    let exit = running.wait_exit().await;
    ensure!(exit.success(), "wink exited with {exit}:\n{}", stderr.snapshot().join("\n"));
    Ok(())
}

/// `kubectl auth can-i` for wink's account with `deploy/rbac.yaml`: each row a verb, a
/// resource, the flags (namespace, subresource) and what the server must answer.
#[tokio::test]
async fn real_apiserver_winks_own_account_may_do_its_job_and_nothing_more() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let tenant = cp.namespace("tenant").await?;
    let other = cp.namespace("other").await?;
    let account = wink_account(cp, &[&tenant]).await?;
    let own = account.namespace.as_str();
    // The WinkPlugin kind, so that kubectl resolves it (and its status subresource).
    let crd = std::fs::read_to_string(wink_tests::rbac::deploy_dir().join("crd.yaml"))?;
    apply(cp, &crd)?;
    let t = ["-n", tenant.as_str()];
    let o = ["-n", other.as_str()];
    let all = ["-A"];
    let status = ["-n", tenant.as_str(), "--subresource=status"];
    let table: &[(&str, &str, &[&str], bool)] = &[
        // The informers: what plugins watch.
        ("list", "deployments.apps", &all, true),
        ("watch", "deployments.apps", &all, true),
        ("watch", "configmaps", &all, true),
        ("watch", "pods", &all, true),
        ("watch", "namespaces", &[], true),
        // WinkPlugins, and their status.
        ("list", "winkplugins.wink.dev", &all, true),
        ("watch", "winkplugins.wink.dev", &all, true),
        ("patch", "winkplugins.wink.dev", &status, true),
        ("update", "winkplugins.wink.dev", &status, true),
        ("create", "winkplugins.wink.dev", &t, false),
        ("update", "winkplugins.wink.dev", &t, false),
        ("patch", "winkplugins.wink.dev", &t, false),
        ("delete", "winkplugins.wink.dev", &t, false),
        // Leases for scale-out: in its own namespace only.
        ("get", "leases.coordination.k8s.io", &["-n", own], true),
        ("list", "leases.coordination.k8s.io", &["-n", own], true),
        ("create", "leases.coordination.k8s.io", &["-n", own], true),
        ("update", "leases.coordination.k8s.io", &["-n", own], true),
        ("delete", "leases.coordination.k8s.io", &["-n", own], true),
        ("create", "leases.coordination.k8s.io", &t, false),
        ("update", "leases.coordination.k8s.io", &["-n", "kube-node-lease"], false),
        ("update", "leases.coordination.k8s.io", &["-n", "kube-system"], false),
        // Events, as wink.
        ("create", "events.events.k8s.io", &t, true),
        ("patch", "events.events.k8s.io", &t, true),
        // Impersonation: the accounts of namespaces that bound wink-impersonate, no others.
        ("impersonate", "serviceaccounts", &t, true),
        ("impersonate", "serviceaccounts", &o, false),
        ("impersonate", "serviceaccounts", &["-n", "kube-system"], false),
        ("impersonate", "serviceaccounts", &["-n", own], false),
        ("impersonate", "users", &[], false),
        ("impersonate", "groups", &[], false),
        ("impersonate", "uids.authentication.k8s.io", &[], false),
        ("impersonate", "userextras.authentication.k8s.io", &[], false),
        // No writes of its own.
        ("create", "secrets", &t, false),
        ("update", "secrets", &t, false),
        ("delete", "secrets", &t, false),
        ("create", "configmaps", &t, false),
        ("patch", "deployments.apps", &t, false),
        ("delete", "pods", &t, false),
        ("create", "pods", &["-n", tenant.as_str(), "--subresource=exec"], false),
        ("create", "serviceaccounts", &["-n", tenant.as_str(), "--subresource=token"], false),
        ("update", "namespaces", &[], false),
        ("create", "clusterrolebindings.rbac.authorization.k8s.io", &[], false),
        ("create", "rolebindings.rbac.authorization.k8s.io", &t, false),
        ("create", "clusterroles.rbac.authorization.k8s.io", &[], false),
        ("bind", "clusterroles.rbac.authorization.k8s.io", &[], false),
        ("escalate", "clusterroles.rbac.authorization.k8s.io", &[], false),
        ("create", "customresourcedefinitions.apiextensions.k8s.io", &[], false),
        ("create", "certificatesigningrequests.certificates.k8s.io", &[], false),
        ("*", "*", &all, false),
    ];
    let mut wrong = Vec::new();
    for (verb, resource, flags, expected) in table {
        let answer =
            can_i(cp, &account.username, verb, resource, flags).with_context(|| format!("{verb} {resource}"))?;
        if answer != *expected {
            wrong.push(format!("{verb} {resource} {flags:?}: {answer}, should be {expected}"));
        }
    }
    ensure!(wrong.is_empty(), "wink's account may do too much or too little:\n{}", wrong.join("\n"));
    Ok(())
}
