//! The printers of workloads: Pods, Deployments, ReplicaSets, StatefulSets, DaemonSets,
//! Jobs and CronJobs, with kube-apiserver's columns (`-o wide` adds containers, images
//! and selectors).

use serde_json::{Value, json};

use super::{AGE, Column, NAME, Printer, age, col, containers, int, items, or_none, selector, since, text};

const CONTAINERS: Column = col("Containers", "string", 1, "Names of each container in the template.");
const IMAGES: Column = col("Images", "string", 1, "Images referenced by each container in the template.");
const SELECTOR: Column = col("Selector", "string", 1, "The label selector of the workload.");

pub(super) fn printer(group: &str, kind: &str) -> Option<Printer> {
    Some(match (group, kind) {
        ("", "Pod") => POD,
        ("apps", "Deployment") => DEPLOYMENT,
        ("apps", "ReplicaSet") => REPLICA_SET,
        ("apps", "StatefulSet") => STATEFUL_SET,
        ("apps", "DaemonSet") => DAEMON_SET,
        ("batch", "Job") => JOB,
        ("batch", "CronJob") => CRON_JOB,
        _ => return None,
    })
}

const POD: Printer = Printer {
    columns: &[
        NAME,
        col("Ready", "string", 0, "The aggregate readiness state of this pod for accepting traffic."),
        col("Status", "string", 0, "The aggregate status of the containers in this pod."),
        col("Restarts", "string", 0, "The number of times the containers in this pod have been restarted."),
        AGE,
        col("IP", "string", 1, "IP address allocated to the pod."),
        col("Node", "string", 1, "Name of the node this pod is scheduled to."),
        col("Nominated Node", "string", 1, "Name of the node this pod is nominated to."),
        col("Readiness Gates", "string", 1, "The readiness gates of this pod."),
    ],
    cells: |pod, now| {
        let total = items(pod, "/spec/containers").len();
        let statuses = items(pod, "/status/containerStatuses");
        let ready = statuses.iter().filter(|s| s.get("ready").and_then(Value::as_bool) == Some(true)).count();
        let restarts: i64 = statuses.iter().map(|s| int(s, "/restartCount")).sum();
        let waiting = statuses.iter().find_map(|s| s.pointer("/state/waiting/reason").and_then(Value::as_str));
        let mut status = text(pod, "/status/reason").to_owned();
        if status.is_empty() {
            status = text(pod, "/status/phase").to_owned();
        }
        if let Some(reason) = waiting {
            status = reason.to_owned();
        }
        if pod.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) {
            status = "Terminating".into();
        }
        let gates = items(pod, "/spec/readinessGates");
        let gates = if gates.is_empty() { "<none>".to_owned() } else { format!("0/{}", gates.len()) };
        vec![
            json!(super::name(pod)),
            json!(format!("{ready}/{total}")),
            json!(or_none(&status).replace("<none>", "Pending")),
            json!(restarts.to_string()),
            age(pod, now),
            json!(or_none(text(pod, "/status/podIP"))),
            json!(or_none(text(pod, "/spec/nodeName"))),
            json!(or_none(text(pod, "/status/nominatedNodeName"))),
            json!(gates),
        ]
    },
};

const DEPLOYMENT: Printer = Printer {
    columns: &[
        NAME,
        col("Ready", "string", 0, "Number of the pod with ready state"),
        col(
            "Up-to-date",
            "string",
            0,
            "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
        ),
        col(
            "Available",
            "string",
            0,
            "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |d, now| {
        let (names, images) = containers(d, "/spec/template/spec");
        vec![
            json!(super::name(d)),
            json!(format!("{}/{}", int(d, "/status/readyReplicas"), replicas(d))),
            json!(int(d, "/status/updatedReplicas")),
            json!(int(d, "/status/availableReplicas")),
            age(d, now),
            json!(names),
            json!(images),
            json!(selector(d, "/spec/selector")),
        ]
    },
};

/// `spec.replicas`, 1 when unset (the API server's default).
fn replicas(object: &Value) -> i64 {
    object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(1)
}

const REPLICA_SET: Printer = Printer {
    columns: &[
        NAME,
        col("Desired", "integer", 0, "Replicas is the number of desired replicas."),
        col("Current", "integer", 0, "Replicas is the most recently observed number of replicas."),
        col("Ready", "integer", 0, "The number of ready replicas for this replica set."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |r, now| {
        let (names, images) = containers(r, "/spec/template/spec");
        vec![
            json!(super::name(r)),
            json!(replicas(r)),
            json!(int(r, "/status/replicas")),
            json!(int(r, "/status/readyReplicas")),
            age(r, now),
            json!(names),
            json!(images),
            json!(selector(r, "/spec/selector")),
        ]
    },
};

const STATEFUL_SET: Printer = Printer {
    columns: &[NAME, col("Ready", "string", 0, "Number of the pod with ready state"), AGE, CONTAINERS, IMAGES],
    cells: |s, now| {
        let (names, images) = containers(s, "/spec/template/spec");
        vec![
            json!(super::name(s)),
            json!(format!("{}/{}", int(s, "/status/readyReplicas"), replicas(s))),
            age(s, now),
            json!(names),
            json!(images),
        ]
    },
};

const DAEMON_SET: Printer = Printer {
    columns: &[
        NAME,
        col("Desired", "integer", 0, "The total number of nodes that should be running the daemon pod."),
        col("Current", "integer", 0, "The number of nodes that are running at least 1 daemon pod."),
        col(
            "Ready",
            "integer",
            0,
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
        ),
        col("Up-to-date", "integer", 0, "The total number of nodes that are running updated daemon pod"),
        col(
            "Available",
            "integer",
            0,
            "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available.",
        ),
        col(
            "Node Selector",
            "string",
            0,
            "NodeSelector is a selector which must be true for the pod to fit on a node.",
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |d, now| {
        let (names, images) = containers(d, "/spec/template/spec");
        vec![
            json!(super::name(d)),
            json!(int(d, "/status/desiredNumberScheduled")),
            json!(int(d, "/status/currentNumberScheduled")),
            json!(int(d, "/status/numberReady")),
            json!(int(d, "/status/updatedNumberScheduled")),
            json!(int(d, "/status/numberAvailable")),
            json!(super::labels(d, "/spec/template/spec/nodeSelector")),
            age(d, now),
            json!(names),
            json!(images),
            json!(selector(d, "/spec/selector")),
        ]
    },
};

const JOB: Printer = Printer {
    columns: &[
        NAME,
        col("Status", "string", 0, "Status of the job."),
        col("Completions", "string", 0, "The desired number of successfully finished pods the job should be run with."),
        col("Duration", "string", 0, "Time required to complete the job."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |j, now| {
        let (names, images) = containers(j, "/spec/template/spec");
        let completions = j.pointer("/spec/completions").and_then(Value::as_i64).unwrap_or(1);
        let condition = |kind: &str| {
            items(j, "/status/conditions").iter().any(|c| text(c, "/type") == kind && text(c, "/status") == "True")
        };
        let status = if condition("Complete") {
            "Complete"
        } else if condition("Failed") {
            "Failed"
        } else if condition("Suspended") {
            "Suspended"
        } else {
            "Running"
        };
        let start = text(j, "/status/startTime");
        let duration = match (start.is_empty(), text(j, "/status/completionTime")) {
            (true, _) => String::new(),
            (false, "") => since(start, now),
            (false, end) => {
                let end =
                    humantime::parse_rfc3339_weak(end).ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
                end.map_or_else(String::new, |end| since(start, i64::try_from(end.as_secs()).unwrap_or(now)))
            }
        };
        vec![
            json!(super::name(j)),
            json!(status),
            json!(format!("{}/{completions}", int(j, "/status/succeeded"))),
            json!(duration),
            age(j, now),
            json!(names),
            json!(images),
            json!(selector(j, "/spec/selector")),
        ]
    },
};

const CRON_JOB: Printer = Printer {
    columns: &[
        NAME,
        col("Schedule", "string", 0, "The schedule in Cron format."),
        col("Timezone", "string", 0, "The time zone name for the given schedule."),
        col("Suspend", "boolean", 0, "This flag tells the controller to suspend subsequent executions."),
        col("Active", "integer", 0, "A list of pointers to currently running jobs."),
        col("Last Schedule", "string", 0, "Information when was the last time the job was successfully scheduled."),
        AGE,
        CONTAINERS,
        IMAGES,
        SELECTOR,
    ],
    cells: |c, now| {
        let (names, images) = containers(c, "/spec/jobTemplate/spec/template/spec");
        let last = text(c, "/status/lastScheduleTime");
        vec![
            json!(super::name(c)),
            json!(text(c, "/spec/schedule")),
            json!(or_none(text(c, "/spec/timeZone"))),
            json!(c.pointer("/spec/suspend").and_then(Value::as_bool).unwrap_or(false)),
            json!(items(c, "/status/active").len()),
            json!(if last.is_empty() { "<none>".to_owned() } else { since(last, now) }),
            age(c, now),
            json!(names),
            json!(images),
            json!(selector(c, "/spec/jobTemplate/spec/selector")),
        ]
    },
};
