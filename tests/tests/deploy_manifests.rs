//! The deploy manifests (`deploy/`): `kubectl apply -k deploy/` (the real kubectl, with its
//! built-in kustomize) against the local API server creates the CRD, the Namespace, the
//! ServiceAccount, the RBAC and the Deployment; applying again changes nothing; the
//! Deployment runs wink as the README says (probes on `/healthz` and `/readyz`, a restrictive
//! security context, a writable cache on a read-only root); and `deploy/crd.yaml` is the CRD
//! the `WinkPlugin` types generate.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;
use wink_tests::apiserver::ApiServer;
use wink_tests::kubectl::kubectl_ok;

fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy")
}

fn generations(server: &ApiServer) -> Vec<(String, Value)> {
    ["apps/v1/Deployment", "apiextensions.k8s.io/v1/CustomResourceDefinition"]
        .iter()
        .flat_map(|kind| {
            let (api_version, kind) = kind.rsplit_once('/').unwrap();
            server.objects(api_version, kind).into_iter().map(|o| {
                (o["metadata"]["name"].as_str().unwrap_or_default().to_owned(), o["metadata"]["generation"].clone())
            })
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_apply_k_deploy_creates_wink_and_again_changes_nothing() {
    let server = ApiServer::start().await.unwrap();
    let dir = deploy_dir();
    let dir = dir.to_str().unwrap();
    kubectl_ok(server.kubeconfig(), &["apply", "--validate=false", "-k", dir]);

    assert!(server.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", "winkplugins.wink.dev").is_some());
    assert!(server.get("v1", "Namespace", "wink-system").is_some());
    assert!(server.get("v1", "ServiceAccount", "wink-system/wink").is_some());
    assert!(server.get("v1", "Service", "wink-system/wink-metrics").is_some());
    let role = server.get("rbac.authorization.k8s.io/v1", "ClusterRole", "wink").expect("the ClusterRole");
    let rules = role["rules"].as_array().unwrap();
    let grants = |resource: &str, verb: &str| {
        rules.iter().any(|r| {
            r["resources"].as_array().unwrap().iter().any(|x| x == resource)
                && r["verbs"].as_array().unwrap().iter().any(|x| x == verb)
        })
    };
    assert!(grants("winkplugins/status", "patch"), "{rules:?}");
    assert!(!grants("*", "create") && !grants("*", "delete"), "wink itself writes nothing else: {rules:?}");
    assert!(
        !grants("serviceaccounts", "impersonate"),
        "impersonation is bound per namespace, not everywhere: {rules:?}"
    );
    let impersonate = server.get("rbac.authorization.k8s.io/v1", "ClusterRole", "wink-impersonate").expect("its role");
    assert_eq!(impersonate["rules"][0]["resources"][0], "serviceaccounts");
    assert_eq!(impersonate["rules"][0]["verbs"][0], "impersonate");
    let binding = server.get("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "wink").expect("the binding");
    assert_eq!(binding["subjects"][0]["namespace"], "wink-system");
    assert!(server.get("rbac.authorization.k8s.io/v1", "RoleBinding", "wink-system/wink-leases").is_some());
    // The WinkPlugin kind is served once its CRD exists.
    kubectl_ok(server.kubeconfig(), &["get", "winkplugins", "-A"]);

    let deployment = server.get("apps/v1", "Deployment", "wink-system/wink").expect("the Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "wink");
    assert_eq!(pod["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod["securityContext"]["seccompProfile"]["type"], "RuntimeDefault");
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "ghcr.io/wink-dev/wink:latest", "the kustomization's image");
    let args: Vec<&str> = container["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for arg in ["run", "--source=kube", "--winkplugins", "--listen=0.0.0.0:9090"] {
        assert!(args.contains(&arg), "{arg} in {args:?}");
    }
    assert_eq!(container["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(container["readinessProbe"]["httpGet"]["path"], "/readyz");
    let security = &container["securityContext"];
    assert_eq!(security["readOnlyRootFilesystem"], true);
    assert_eq!(security["allowPrivilegeEscalation"], false);
    assert_eq!(security["capabilities"]["drop"][0], "ALL");
    assert!(container["resources"]["requests"]["memory"].is_string());
    assert_eq!(container["volumeMounts"][0]["mountPath"], "/var/cache/wink", "the caches are writable");

    // Again: nothing changes.
    let before = generations(&server);
    kubectl_ok(server.kubeconfig(), &["apply", "--validate=false", "-k", dir]);
    assert_eq!(generations(&server), before);
}

/// The args the Deployment passes are ones `wink run` accepts.
#[test]
fn the_deployments_args_parse() {
    let text = std::fs::read_to_string(deploy_dir().join("deployment.yaml")).unwrap();
    let deployment: Value = serde_norway::from_str(text.split("\n---\n").next().unwrap()).unwrap();
    let args: Vec<String> = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a.as_str().map(str::to_owned))
        .collect();
    let out = Command::new(wink_tests::binary::wink_binary()).args(&args).arg("--help").output().unwrap();
    assert!(out.status.success(), "wink {args:?} --help: {}", String::from_utf8_lossy(&out.stderr));
}

/// The CRD `deploy/crd.yaml` holds is the one the types generate.
#[test]
fn the_deployed_crd_is_the_generated_one() {
    let written = std::fs::read_to_string(deploy_dir().join("crd.yaml")).unwrap();
    assert_eq!(written, wink::crd::crd_yaml(), "deploy/crd.yaml is stale: regenerate it with `wink crd`");
}
