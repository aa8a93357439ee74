//! Specifications of what admission adds to created Pods and Jobs.

use serde_json::{Value, json};

use super::*;
use crate::context::FixedContext;

fn pods() -> ResourceDef {
    ResourceDef::built_in("", "v1", "Pod", "pods", true, true)
}

fn jobs() -> ResourceDef {
    ResourceDef::built_in("batch", "v1", "Job", "jobs", true, true)
}

fn pod(spec: Value) -> Value {
    json!({"metadata": {"name": "p", "namespace": "shop", "uid": "u-1"}, "spec": spec})
}

#[test]
fn a_pod_gets_its_service_account_and_the_token_volume_in_every_container() {
    let mut p = pod(json!({"initContainers": [{"name": "init"}], "containers": [{"name": "main"}]}));
    admit_create(&pods(), &mut p, &FixedContext::at_unix(0));
    let spec = &p["spec"];
    assert_eq!((&spec["serviceAccountName"], &spec["serviceAccount"]), (&json!("default"), &json!("default")));
    let volume = spec["volumes"][0]["name"].as_str().unwrap();
    assert!(volume.starts_with("kube-api-access-") && volume.len() == "kube-api-access-".len() + 5, "{volume}");
    assert_eq!(spec["volumes"][0]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"], 3607);
    for container in ["initContainers", "containers"] {
        let mount = &spec[container][0]["volumeMounts"][0];
        assert_eq!(mount, &json!({"name": volume, "readOnly": true, "mountPath": TOKEN_PATH}), "{container}");
    }
}

#[test]
fn a_pod_that_opts_out_or_mounts_the_path_itself_gets_no_token_volume() {
    let mut opted_out = pod(
        json!({"automountServiceAccountToken": false, "serviceAccountName": "robot", "containers": [{"name": "c"}]}),
    );
    admit_create(&pods(), &mut opted_out, &FixedContext::at_unix(0));
    assert!(opted_out["spec"].get("volumes").is_none());
    assert_eq!(opted_out["spec"]["serviceAccount"], "robot", "the named account is kept");
    let own = json!({"containers": [{"name": "c", "volumeMounts": [{"name": "mine", "mountPath": TOKEN_PATH}]}], "volumes": [{"name": "mine", "emptyDir": {}}]});
    let mut mounted = pod(own);
    admit_create(&pods(), &mut mounted, &FixedContext::at_unix(0));
    assert_eq!(mounted["spec"]["volumes"].as_array().unwrap().len(), 1);
}

#[test]
fn a_pod_tolerates_unready_nodes_for_five_minutes_unless_it_says_otherwise() {
    let mut p = pod(
        json!({"containers": [{"name": "c"}], "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 10}]}),
    );
    admit_create(&pods(), &mut p, &FixedContext::at_unix(0));
    let tolerations = p["spec"]["tolerations"].as_array().unwrap();
    assert_eq!(tolerations.len(), 2);
    assert_eq!(tolerations[0]["tolerationSeconds"], 10, "the pod's own is kept");
    assert_eq!(
        tolerations[1],
        json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    );
    let mut everything = pod(json!({"containers": [{"name": "c"}], "tolerations": [{"operator": "Exists"}]}));
    admit_create(&pods(), &mut everything, &FixedContext::at_unix(0));
    assert_eq!(everything["spec"]["tolerations"].as_array().unwrap().len(), 1, "tolerating everything");
}

#[test]
fn a_pods_priority_is_its_classs() {
    let mut plain = pod(json!({"containers": [{"name": "c"}]}));
    admit_create(&pods(), &mut plain, &FixedContext::at_unix(0));
    assert_eq!(
        (&plain["spec"]["priority"], &plain["spec"]["preemptionPolicy"]),
        (&json!(0), &json!("PreemptLowerPriority"))
    );
    let mut critical = pod(json!({"containers": [{"name": "c"}], "priorityClassName": "system-cluster-critical"}));
    admit_create(&pods(), &mut critical, &FixedContext::at_unix(0));
    assert_eq!(critical["spec"]["priority"], 2_000_000_000);
}

#[test]
fn a_job_gets_a_selector_and_labels_from_its_uid() {
    let mut job = json!({"metadata": {"name": "once", "uid": "u-9"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
    admit_create(&jobs(), &mut job, &FixedContext::at_unix(0));
    assert_eq!(job["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-9"}}));
    assert_eq!(job["spec"]["manualSelector"], false);
    let labels = &job["spec"]["template"]["metadata"]["labels"];
    assert_eq!(labels["batch.kubernetes.io/job-name"], "once");
    assert_eq!(labels["controller-uid"], "u-9");
    assert_eq!(&job["metadata"]["labels"], labels, "a Job without labels takes its template's");

    let manual = json!({"metadata": {"name": "m", "uid": "u", "labels": {"a": "b"}}, "spec": {"manualSelector": true, "selector": {"matchLabels": {"a": "b"}}}});
    let mut kept = manual.clone();
    admit_create(&jobs(), &mut kept, &FixedContext::at_unix(0));
    assert_eq!(kept, manual, "a manual selector is the job's own");
}
