//! Scale-out on a real kube-apiserver and etcd (`wink_tests::control_plane`): `wink run
//! --source kube --shard-group` replicas keep their Leases (`coordination.k8s.io/v1`, in the
//! test's own namespace) on the real server — its validation, optimistic concurrency and
//! RBAC — and share 30 recording plugins and one shardable plugin watching the test's
//! ConfigMaps (the helpers are `wink_tests::shard_group`'s, as `tests/scale_out.rs` uses them
//! on the local API server). Specifies that:
//!
//! - three replicas (as the admin): every plugin runs on exactly one, the one rendezvous
//!   hashing picks; the shardable plugin runs on all three and sees every object exactly once
//!   in total; every view converges to a LIST of the server; every Lease write is accepted
//!   (no refused renewal), and `kubectl get leases -n NS` shows one Lease per replica,
//!   `wink-{group}-{identity}`, held by it, with the Lease duration asked for;
//! - SIGKILL one: its plugins move to the others within a Lease duration plus a renew period
//!   (plus the test's slack), though its Lease stays on the server (nobody deletes it: it is
//!   dead because it stopped changing); the views converge again, no object delivered twice;
//! - SIGTERM another: it drains and deletes its Lease (gone from `kubectl get leases`), and
//!   its plugins move within a renew period of its exit; the views converge again;
//! - a replica logged in as wink's own ServiceAccount with `deploy/rbac.yaml`'s roles (moved
//!   into the test's namespace) keeps its Lease by that RBAC alone; when the `wink-leases`
//!   RoleBinding is deleted the real server refuses its renewals (`forbidden`) while reads
//!   still work, and it stops every plugin before its Lease, as last renewed, expires
//!   (fencing); bound again, it renews, runs its plugins again, and they see the state the
//!   cluster reached meanwhile; SIGTERM deletes its Lease through that Role.
//!
//! The figures (handover times) are printed: `env $(cargo xtask control-plane) cargo test -p
//! wink-tests --test real_apiserver_scale_out -- --nocapture`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, ensure};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use wink_tests::control_plane::ControlPlane;
use wink_tests::rbac::{apply, deploy_rbac_in, kubectl_ok};
use wink_tests::shard_group::{
    Group, LEASE, RENEW, Replica, SLACK, converged, install_plugins, last_stop, ok_if, owners, running, settled, wait,
};

/// The replicas' group (`--shard-group`).
const GROUP: &str = "test";

/// How long replicas may take to start and compile their plugins on a loaded machine.
const START: Duration = Duration::from_secs(120);

/// How long views may take to converge once the plugins run.
const CONVERGE: Duration = Duration::from_secs(60);

/// A test's namespace with ConfigMaps `cm-0`…`cm-23`, its ConfigMaps' API (as the admin),
/// and the plugins installed (watching that namespace's ConfigMaps) with a cache beside:
/// (the folder's guard, the namespace, the API, the group's settings with the admin's
/// kubeconfig).
async fn fixture(cp: &ControlPlane, prefix: &str) -> Result<(tempfile::TempDir, String, Api<ConfigMap>, Group)> {
    let namespace = cp.namespace(prefix).await?;
    let api = Api::<ConfigMap>::namespaced(cp.admin_client().await?, &namespace);
    for i in 0..24 {
        create(&api, &format!("cm-{i}")).await?;
    }
    let work = tempfile::tempdir()?;
    let plugins = work.path().join("plugins");
    let tail = format!(
        "resources:\n  - {{apiVersion: v1, kind: ConfigMap, namespaces: [{namespace}]}}\nlimits: {{memory: 32Mi, callTimeout: 1s}}\n"
    );
    install_plugins(&plugins, Some(&tail));
    let group = Group {
        plugins,
        cache: work.path().join("cache"),
        kubeconfig: cp.kubeconfig().to_owned(),
        name: GROUP.into(),
        namespace: namespace.clone(),
    };
    Ok((work, namespace, api, group))
}

async fn create(api: &Api<ConfigMap>, name: &str) -> Result<()> {
    let object: ConfigMap = serde_json::from_value(json!({"metadata": {"name": name}, "data": {"generation": "1"}}))?;
    api.create(&PostParams::default(), &object).await.with_context(|| format!("creating ConfigMap {name}"))?;
    Ok(())
}

/// Changes while the group runs: an update, a delete and a create.
async fn change(api: &Api<ConfigMap>, updated: &str, deleted: &str, created: &str) -> Result<()> {
    let patch = Patch::Merge(json!({"data": {"generation": "2"}}));
    api.patch(updated, &PatchParams::default(), &patch).await?;
    api.delete(deleted, &DeleteParams::default()).await?;
    create(api, created).await
}

/// `namespace/name` → resourceVersion of the namespace's ConfigMaps, as a LIST shows them.
async fn truth(api: &Api<ConfigMap>) -> Result<BTreeMap<String, String>> {
    let list = api.list(&ListParams::default()).await?;
    Ok(list
        .items
        .into_iter()
        .map(|c| {
            let key = format!("{}/{}", c.metadata.namespace.unwrap_or_default(), c.metadata.name.unwrap_or_default());
            (key, c.metadata.resource_version.unwrap_or_default())
        })
        .collect())
}

/// Waits until every view is a LIST of the server (taken now: the test's writes are done).
async fn converges(what: &str, api: &Api<ConfigMap>, replicas: &[Replica]) -> Result<()> {
    let truth = truth(api).await?;
    wait(what, CONVERGE, || converged(&truth, replicas)).await;
    Ok(())
}

/// The group's Leases as `kubectl get leases -n NS -o json` shows them: name → the Lease.
fn leases(cp: &ControlPlane, namespace: &str) -> Result<BTreeMap<String, Value>> {
    let selector = format!("wink.dev/shard-group={GROUP}");
    let text = kubectl_ok(cp, &["get", "leases", "-n", namespace, "-l", &selector, "-o", "json"], None)?;
    let list: Value = serde_json::from_str(&text).context("kubectl's JSON of the Leases")?;
    let items = list["items"].as_array().context("a list of Leases")?;
    Ok(items.iter().map(|l| (l["metadata"]["name"].as_str().unwrap_or_default().to_owned(), l.clone())).collect())
}

/// Each Lease's holder (`spec.holderIdentity`), by Lease name.
fn holders(leases: &BTreeMap<String, Value>) -> BTreeMap<String, String> {
    leases
        .iter()
        .map(|(name, l)| (name.clone(), l["spec"]["holderIdentity"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// What `kubectl get leases -n NS` prints (its table: name, holder, age).
fn lease_table(cp: &ControlPlane, namespace: &str) -> Result<String> {
    kubectl_ok(cp, &["get", "leases", "-n", namespace], None)
}

/// Whether the table has a row naming `lease` held by `holder`.
fn has_row(table: &str, lease: &str, holder: &str) -> bool {
    table.lines().any(|row| row.split_whitespace().take(2).eq([lease, holder]))
}

/// Fails if a replica logged a refused or failed Lease write or group listing.
fn no_lease_trouble(replicas: &[Replica]) -> Result<()> {
    for replica in replicas {
        let trouble: Vec<String> = ["cannot renew", "renewing this member's Lease timed out", "cannot list the shard"]
            .iter()
            .flat_map(|w| replica.lines_with(&[w]))
            .collect();
        ensure!(trouble.is_empty(), "{} had trouble with its Lease:\n{}", replica.name, trouble.join("\n"));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_replicas_share_plugins_through_leases_and_hand_them_over_without_loss() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let (_work, namespace, api, group) = fixture(cp, "scale-out").await?;

    // Three replicas, one Lease each, shown by kubectl.
    let mut replicas: Vec<Replica> = ["a", "b", "c"].iter().map(|n| group.spawn(n)).collect();
    wait("three replicas to share the plugins", START, || settled(&replicas)).await;
    converges("every view to converge", &api, &replicas).await?;
    let shown = leases(cp, &namespace)?;
    let expected: BTreeMap<String, String> =
        ["a", "b", "c"].iter().map(|m| (format!("wink-{GROUP}-{m}"), (*m).to_owned())).collect();
    ensure!(holders(&shown) == expected, "the Leases kubectl shows: {:?}", holders(&shown));
    for (name, lease) in &shown {
        ensure!(lease["spec"]["leaseDurationSeconds"] == LEASE.as_secs(), "{name}'s duration: {lease}");
        ensure!(lease["spec"]["renewTime"].is_string(), "{name} has no renewTime: {lease}");
    }
    let table = lease_table(cp, &namespace)?;
    ensure!(expected.iter().all(|(l, h)| has_row(&table, l, h)), "kubectl get leases printed:\n{table}");

    // Changes while stable: seen once, by the plugins that run.
    change(&api, "cm-0", "cm-1", "late").await?;
    converges("the changes to be seen", &api, &replicas).await?;
    no_lease_trouble(&replicas)?;

    // SIGKILL b: its plugins move to a and c, though its Lease stays on the server.
    let before = owners(&replicas);
    replicas.remove(1).child.kill();
    let crash_handover = wait("b's plugins to move after SIGKILL", LEASE + RENEW + SLACK, || settled(&replicas)).await;
    let moved_by_crash = before.values().filter(|o| o.iter().any(|m| m == "b")).count() - 1;
    let after_crash = holders(&leases(cp, &namespace)?);
    ensure!(after_crash == expected, "the dead member's Lease stays on the server: {after_crash:?}");
    create(&api, "after-crash").await?;
    converges("views to converge after the crash", &api, &replicas).await?;

    // SIGTERM a: it drains and deletes its Lease; its plugins move within a renew period.
    replicas.remove(0).leave().await;
    let left = Instant::now();
    let orderly_handover = wait("a's plugins to move after SIGTERM", RENEW + SLACK, || settled(&replicas)).await;
    let after_leave: BTreeSet<String> = leases(cp, &namespace)?.into_keys().collect();
    ensure!(!after_leave.contains(&format!("wink-{GROUP}-a")), "a's Lease is still there: {after_leave:?}");
    ensure!(!has_row(&lease_table(cp, &namespace)?, &format!("wink-{GROUP}-a"), "a"), "kubectl still shows a's Lease");
    create(&api, "after-leave").await?;
    converges("views to converge after a left", &api, &replicas).await?;
    no_lease_trouble(&replicas)?;
    println!(
        "real-apiserver scale-out: SIGKILL handover {crash_handover:?} (bound {:?}) moving {moved_by_crash} plugins; SIGTERM handover {:?} after the drain",
        LEASE + RENEW,
        left.elapsed().min(orderly_handover),
    );
    for replica in replicas {
        replica.leave().await;
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_apiserver_a_member_whose_renewals_rbac_refuses_fences_itself_and_comes_back() -> Result<()> {
    let cp = ControlPlane::shared().await?;
    let (_work, namespace, api, mut group) = fixture(cp, "fencing").await?;
    // wink's own account, with deploy/rbac.yaml's roles moved into this namespace.
    let (rbac, _, _) = deploy_rbac_in(&namespace)?;
    apply(cp, &rbac)?;
    group.kubeconfig = cp.service_account(&namespace, "wink").await?.kubeconfig;
    let solo = group.spawn("solo");
    let replicas = std::slice::from_ref(&solo);
    wait("the member to run every plugin", START, || settled(replicas)).await;
    converges("every view to converge", &api, replicas).await?;
    no_lease_trouble(replicas)?;
    let lease_name = format!("wink-{GROUP}-solo");
    ensure!(leases(cp, &namespace)?.contains_key(&lease_name), "no Lease {lease_name}");

    // The Role letting it keep its Lease is unbound: renewals are refused, reads still work.
    kubectl_ok(cp, &["delete", "rolebinding", "wink-leases", "-n", &namespace], None)?;
    wait("the member to stop its plugins", LEASE + SLACK, || {
        ok_if(running(&solo).is_empty(), || format!("still running {:?}", running(&solo)))
    })
    .await;
    let refusals = solo.lines_with(&["cannot renew this member's Lease"]);
    ensure!(refusals.iter().any(|l| l.contains("forbidden")), "not refused by RBAC: {refusals:?}");
    let lease = leases(cp, &namespace)?.remove(&lease_name).context("the member's Lease")?;
    let renewed = lease["spec"]["renewTime"].as_str().context("a renewTime")?;
    let expires = humantime::parse_rfc3339(renewed).context("an RFC 3339 renewTime")? + LEASE;
    let stopped = last_stop(&solo).context("plugins stopped")?;
    // As on the local API server (tests/scale_out.rs): at least half a renew period is left.
    ensure!(
        stopped + RENEW / 2 <= expires,
        "the last plugin stopped at {} but the Lease renewed at {renewed} expired at {}",
        humantime::format_rfc3339_micros(stopped),
        humantime::format_rfc3339_micros(expires)
    );

    // The cluster changes meanwhile; bound again, the member renews, runs its plugins again,
    // and they see the current state.
    change(&api, "cm-0", "cm-1", "while-fenced").await?;
    apply(cp, &rbac)?;
    let replicas = std::slice::from_ref(&solo);
    wait("the member to run its plugins again", START, || settled(replicas)).await;
    converges("every view to converge again", &api, replicas).await?;
    solo.leave().await;
    ensure!(!leases(cp, &namespace)?.contains_key(&lease_name), "the Lease was not released through the Role");
    Ok(())
}
