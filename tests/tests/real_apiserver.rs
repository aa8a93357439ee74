//! The real control plane of the tests (`wink_tests::control_plane`: kube-apiserver and etcd
//! built from their Go modules): it starts and serves, real RBAC judges the service-account
//! identities it mints, the real kubectl reads its kubeconfig and logs in with its token, and
//! a private one survives a restart of its API server with its data.
//!
//! Run with `cargo xtask test -- --test real_apiserver` (which builds the binaries on first
//! use), or `env $(cargo xtask control-plane) cargo test -p wink-tests --test real_apiserver`.

use std::collections::BTreeMap;
use std::process::Command;

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::{ListParams, ObjectMeta, PostParams};
use kube::{Api, Client};
use wink_tests::control_plane::{self, ControlPlane};
use wink_tests::kubectl::kubectl;
use wink_tests::wait::{TIMEOUT, eventually_async};

/// A ConfigMap `name` holding `data`.
fn config_map(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() },
        data: Some(data.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()),
        ..ConfigMap::default()
    }
}

/// The status code of a refused request; fails if it was not refused by the API.
fn refused_with<T: std::fmt::Debug>(result: kube::Result<T>) -> Result<(u16, String)> {
    match result {
        Err(kube::Error::Api(status)) => Ok((status.code, status.message)),
        other => anyhow::bail!("expected the API server to refuse, got {other:?}"),
    }
}

/// The control plane starts, `/readyz` says ok, it runs the release go.mod pins, and the
/// admin creates a ConfigMap and reads it back.
#[tokio::test]
async fn real_apiserver_starts_and_serves_an_admin() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let client = cp.admin_client().await?;

    let readyz = http::Request::get("/readyz?verbose").body(Vec::new())?;
    let checks = client.request_text(readyz).await?;
    ensure!(checks.contains("[+]etcd ok"), "readyz does not check etcd:\n{checks}");
    ensure!(checks.contains("[+]poststarthook/rbac/bootstrap-roles ok"), "RBAC is not bootstrapped:\n{checks}");
    ensure!(checks.trim_end().ends_with("readyz check passed"), "not ready:\n{checks}");

    let version = client.apiserver_version().await?;
    ensure!(version.git_version == control_plane::releases()?.kubernetes, "kube-apiserver reports {version:?}");

    let namespace = cp.namespace("admin").await?;
    let config_maps = Api::<ConfigMap>::namespaced(client, &namespace);
    let created = config_maps.create(&PostParams::default(), &config_map("settings", &[("mode", "real")])).await?;
    ensure!(created.metadata.uid.is_some() && created.metadata.resource_version.is_some(), "{created:?}");
    let read = config_maps.get("settings").await?;
    ensure!(read.data == Some(BTreeMap::from([("mode".to_owned(), "real".to_owned())])), "read back {read:?}");
    ensure!(read.metadata.uid == created.metadata.uid, "another object came back: {read:?}");
    Ok(())
}

/// A ServiceAccount the harness minted is refused (403) what RBAC does not grant it, is
/// allowed what a Role bound to it grants once the binding is in, and still nothing more.
#[tokio::test]
async fn real_apiserver_rbac_judges_service_account_identities() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let namespace = cp.namespace("rbac").await?;
    let reader = cp.service_account(&namespace, "reader").await?;
    ensure!(reader.username == format!("system:serviceaccount:{namespace}:reader"), "{reader:?}");
    let as_reader = reader.client().await?;
    let config_maps = Api::<ConfigMap>::namespaced(as_reader.clone(), &namespace);

    let (code, message) = refused_with(config_maps.list(&ListParams::default()).await)?;
    ensure!(code == 403, "listing before any grant answered {code}: {message}");
    ensure!(message.contains(&reader.username), "the refusal does not name the user: {message}");

    let admin = cp.admin_client().await?;
    grant_config_map_reading(&admin, &namespace, "reader").await?;
    let allowed = eventually_async(TIMEOUT, || async { config_maps.list(&ListParams::default()).await.is_ok() }).await;
    ensure!(allowed, "the reader still may not list ConfigMaps after its RoleBinding");

    let (code, message) =
        refused_with(config_maps.create(&PostParams::default(), &config_map("forbidden", &[])).await)?;
    ensure!(code == 403, "creating (not granted) answered {code}: {message}");
    let (code, message) =
        refused_with(Api::<Secret>::namespaced(as_reader.clone(), &namespace).list(&ListParams::default()).await)?;
    ensure!(code == 403, "listing Secrets (not granted) answered {code}: {message}");
    let (code, message) =
        refused_with(Api::<ConfigMap>::namespaced(as_reader, "default").list(&ListParams::default()).await)?;
    ensure!(code == 403, "listing ConfigMaps of another namespace answered {code}: {message}");
    Ok(())
}

/// Binds a Role that may get and list ConfigMaps to ServiceAccount `account` of `namespace`.
async fn grant_config_map_reading(admin: &Client, namespace: &str, account: &str) -> Result<()> {
    let meta = |name: &str| ObjectMeta { name: Some(name.to_owned()), ..ObjectMeta::default() };
    let role = Role {
        metadata: meta("config-map-reader"),
        rules: Some(vec![PolicyRule {
            api_groups: Some(vec![String::new()]),
            resources: Some(vec!["configmaps".to_owned()]),
            verbs: vec!["get".to_owned(), "list".to_owned()],
            ..PolicyRule::default()
        }]),
    };
    Api::<Role>::namespaced(admin.clone(), namespace).create(&PostParams::default(), &role).await?;
    let binding = RoleBinding {
        metadata: meta("config-map-reader"),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "Role".to_owned(),
            name: "config-map-reader".to_owned(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: account.to_owned(),
            namespace: Some(namespace.to_owned()),
            ..Subject::default()
        }]),
    };
    Api::<RoleBinding>::namespaced(admin.clone(), namespace).create(&PostParams::default(), &binding).await?;
    Ok(())
}

/// The real kubectl, given the harness's admin kubeconfig, lists the namespaces, `default`
/// among them; so does it with no kubeconfig, the CA and the admin's static token.
#[tokio::test]
async fn real_apiserver_kubectl_reads_the_admin_kubeconfig() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let names = namespaces(cp.kubectl()?.args(["get", "namespaces", "-o", "name"]))?;
    ensure!(names.contains(&"namespace/default".to_owned()), "kubectl listed {names:?}");
    ensure!(names.contains(&"namespace/kube-system".to_owned()), "kubectl listed {names:?}");

    let ca = tempfile::NamedTempFile::new()?;
    std::fs::write(ca.path(), cp.ca_pem())?;
    let mut with_token = Command::new(kubectl()?);
    with_token
        .env("KUBECONFIG", "/dev/null")
        .args(["--server", cp.url(), "--token", cp.admin_token(), "--certificate-authority"])
        .arg(ca.path())
        .args(["get", "namespaces", "-o", "name"]);
    let by_token = namespaces(&mut with_token)?;
    ensure!(by_token == names, "with the token kubectl listed {by_token:?}, with the kubeconfig {names:?}");
    Ok(())
}

/// The lines kubectl printed; fails with its output if it failed.
fn namespaces(kubectl: &mut Command) -> Result<Vec<String>> {
    let output = kubectl.output().context("running kubectl")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(output.status.success(), "kubectl failed ({}):\n{stdout}{stderr}", output.status);
    Ok(stdout.lines().map(str::to_owned).collect())
}

/// A private control plane keeps its objects across a restart of its API server (they live
/// in its etcd), and its admin kubeconfig keeps working.
#[tokio::test]
async fn real_apiserver_private_instance_survives_a_restart() -> Result<()> {
    let mut cp = ControlPlane::start().await?;
    let namespace = cp.namespace("restart").await?;
    let before = Api::<ConfigMap>::namespaced(cp.admin_client().await?, &namespace)
        .create(&PostParams::default(), &config_map("kept", &[("a", "1")]))
        .await?;

    cp.restart_apiserver().await?;

    let after = Api::<ConfigMap>::namespaced(cp.admin_client().await?, &namespace).get("kept").await?;
    ensure!(after.metadata.uid == before.metadata.uid, "before {before:?}, after {after:?}");
    ensure!(after.metadata.resource_version == before.metadata.resource_version, "after {after:?}");
    Ok(())
}
