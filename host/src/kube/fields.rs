//! Selectable fields: the fields a LIST or WATCH of a built-in kind can be selected by
//! (`fieldSelector`) besides `metadata.name` and `metadata.namespace`, as the API server's
//! field label conversion functions accept them. Custom resources declare theirs in their
//! CRD's `selectableFields`.

/// A selectable field: its label and the JSON pointer it reads.
type Field = (&'static str, &'static str);

/// The fields built-in kinds can be selected by, besides `metadata.*`: (group, kind,
/// [(field label, JSON pointer)]), as the API server's field label conversion functions
/// accept them.
const BUILT_IN_FIELDS: &[(&str, &str, &[Field])] = &[
    (
        "",
        "Pod",
        &[
            ("spec.nodeName", "/spec/nodeName"),
            ("spec.restartPolicy", "/spec/restartPolicy"),
            ("spec.schedulerName", "/spec/schedulerName"),
            ("spec.serviceAccountName", "/spec/serviceAccountName"),
            ("spec.hostNetwork", "/spec/hostNetwork"),
            ("status.phase", "/status/phase"),
            ("status.podIP", "/status/podIP"),
            ("status.nominatedNodeName", "/status/nominatedNodeName"),
        ],
    ),
    ("", "Namespace", &[("status.phase", "/status/phase")]),
    ("", "Node", &[("spec.unschedulable", "/spec/unschedulable")]),
    ("", "Secret", &[("type", "/type")]),
    ("", "ReplicationController", &[("status.replicas", "/status/replicas")]),
    (
        "",
        "Event",
        &[
            ("involvedObject.kind", "/involvedObject/kind"),
            ("involvedObject.namespace", "/involvedObject/namespace"),
            ("involvedObject.name", "/involvedObject/name"),
            ("involvedObject.uid", "/involvedObject/uid"),
            ("involvedObject.apiVersion", "/involvedObject/apiVersion"),
            ("involvedObject.resourceVersion", "/involvedObject/resourceVersion"),
            ("involvedObject.fieldPath", "/involvedObject/fieldPath"),
            ("reason", "/reason"),
            ("reportingComponent", "/reportingComponent"),
            ("source", "/source/component"),
            ("type", "/type"),
        ],
    ),
    // The same objects' fields, by their events.k8s.io names (AddFieldLabelConversionsForEvent).
    (
        "events.k8s.io",
        "Event",
        &[
            ("regarding.kind", "/regarding/kind"),
            ("regarding.namespace", "/regarding/namespace"),
            ("regarding.name", "/regarding/name"),
            ("regarding.uid", "/regarding/uid"),
            ("regarding.apiVersion", "/regarding/apiVersion"),
            ("regarding.resourceVersion", "/regarding/resourceVersion"),
            ("regarding.fieldPath", "/regarding/fieldPath"),
            ("reason", "/reason"),
            ("reportingController", "/reportingController"),
            ("type", "/type"),
        ],
    ),
    ("apps", "ReplicaSet", &[("status.replicas", "/status/replicas")]),
    ("batch", "Job", &[("status.successful", "/status/succeeded")]),
    ("certificates.k8s.io", "CertificateSigningRequest", &[("spec.signerName", "/spec/signerName")]),
];

/// The selectable fields of a built-in kind (besides `metadata.name` and
/// `metadata.namespace`), as (label, JSON pointer).
pub(crate) fn built_in_fields(group: &str, kind: &str) -> Vec<(String, String)> {
    BUILT_IN_FIELDS
        .iter()
        .find(|(g, k, _)| *g == group && *k == kind)
        .map(|(_, _, fields)| fields.iter().map(|(l, p)| ((*l).to_owned(), (*p).to_owned())).collect())
        .unwrap_or_default()
}
