//! What a manifest file's text means: documents, lists, and what is wrong with a bad one.

use super::*;

fn parse(name: &str, text: &str) -> (Vec<String>, Vec<String>) {
    let parsed = parse_manifest_file(Path::new(name), text).unwrap();
    let names = parsed.objects.iter().map(ManifestObject::describe).collect();
    (names, parsed.refused.iter().map(ToString::to_string).collect())
}

/// A document of `kind` at `api_version` with this `metadata` (flow YAML).
fn doc(api_version: &str, kind: &str, metadata: &str) -> String {
    format!("apiVersion: {api_version}\nkind: {kind}\nmetadata: {metadata}\n")
}

fn cm(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n")
}

/// Regression: one bad document refused the whole file.
#[test]
fn one_bad_document_is_skipped_alone_and_named_with_its_line_in_the_file() {
    let text = [cm("first"), "apiVersion: v1\nkind: [unclosed\n".to_owned(), cm("last")].join("---\n");
    let (objects, refused) = parse("a.yaml", &text);
    assert_eq!(objects, ["ConfigMap first", "ConfigMap last"]);
    assert_eq!(refused.len(), 1, "{refused:?}");
    // The bad document starts on line 5 of the file; the parser finds the flow sequence
    // unclosed at the next document's marker, line 8.
    assert!(refused[0].starts_with("a.yaml: document 2: invalid YAML: "), "{refused:?}");
    assert!(refused[0].contains("line 8 column"), "{refused:?}");
    assert!(refused[0].ends_with("; skipped"), "{refused:?}");
}

#[test]
fn each_invalid_object_says_what_is_wrong_and_the_others_load() {
    let docs = [
        cm("good"),
        "kind: ConfigMap\nmetadata: {name: no-version}\n".to_owned(),
        "apiVersion: v1\nkind: ''\nmetadata: {name: empty-kind}\n".to_owned(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: 42}\n".to_owned(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {namespace: shop}\n".to_owned(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: [name]\n".to_owned(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: n7, namespace: [a]}\n".to_owned(),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad-labels, labels: {a: [1]}}\n".to_owned(),
        "just a string\n".to_owned(),
        cm("also-good"),
    ];
    let (objects, refused) = parse("m.yaml", &docs.join("---\n"));
    assert_eq!(objects, ["ConfigMap good", "ConfigMap also-good"]);
    assert_eq!(
        refused,
        [
            "m.yaml: document 2 (ConfigMap no-version): missing `apiVersion`; skipped",
            "m.yaml: document 3 (empty-kind): `kind` is empty; skipped",
            "m.yaml: document 4 (ConfigMap): `metadata.name` is a number, not a string; skipped",
            "m.yaml: document 5 (ConfigMap): missing `metadata.name`; skipped",
            "m.yaml: document 6 (ConfigMap): `metadata` is a list, not a mapping; skipped",
            "m.yaml: document 7 (ConfigMap n7): `metadata.namespace` is a list, not a string; skipped",
            "m.yaml: document 8 (ConfigMap bad-labels): `metadata.labels.a`: invalid type: sequence, \
             expected a string; skipped",
            "m.yaml: document 9: not an object: the document is a string; skipped",
        ]
    );
}

/// Regression: invalid items of a `kind: List` vanished without a word.
#[test]
fn invalid_list_items_are_named_by_index_and_the_others_load() {
    let yaml = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: a}\n\
                - apiVersion: v1\n  kind: ConfigMap\n  metadata: {}\n- 7\n";
    let (objects, refused) = parse("list.yaml", yaml);
    assert_eq!(objects, ["ConfigMap a"]);
    assert_eq!(
        refused,
        [
            "list.yaml: document 1, item 1 (ConfigMap): missing `metadata.name`; skipped",
            "list.yaml: document 1, item 2: not an object: the document is a number; skipped",
        ]
    );
    let json = r#"{"apiVersion":"v1","kind":"ConfigMapList","items":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":true}},{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}]}"#;
    let parsed = parse_manifest_file(Path::new("list.json"), json).unwrap();
    assert_eq!(parsed.objects.len(), 1);
    assert_eq!(parsed.objects[0].location, Location { document: 1, item: Some(1) });
    let refused: Vec<String> = parsed.refused.iter().map(ToString::to_string).collect();
    assert_eq!(
        refused,
        ["list.json: document 1, item 0 (ConfigMap): `metadata.name` is a boolean, not a string; skipped"]
    );
}

/// Regression: a file starting with a UTF-8 byte order mark read as two documents.
#[test]
fn a_byte_order_mark_is_not_a_document() {
    for text in [format!("\u{feff}{}", cm("bom")), format!("\u{feff}---\n{}", cm("bom"))] {
        let parsed = parse_manifest_file(Path::new("bom.yaml"), &text).unwrap();
        assert!(parsed.refused.is_empty(), "{:?}", parsed.refused);
        assert_eq!(parsed.objects.len(), 1);
        assert_eq!(parsed.objects[0].location, Location { document: 1, item: None });
    }
    let json = "\u{feff}{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"bom\"}}";
    assert_eq!(parse("bom.json", json).0, ["ConfigMap bom"]);
}

#[test]
fn yaml_merge_keys_are_applied() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: merged\n  labels:\n    <<: &common {app: shop, tier: web}\n    tier: api\n\
                data:\n  <<: [*common, {extra: 'yes'}]\n";
    let parsed = parse_manifest_file(Path::new("merge.yaml"), text).unwrap();
    assert!(parsed.refused.is_empty(), "{:?}", parsed.refused);
    let value = &parsed.objects[0].value;
    assert_eq!(value["metadata"]["labels"], serde_json::json!({"app": "shop", "tier": "api"}));
    assert_eq!(value["data"], serde_json::json!({"app": "shop", "tier": "web", "extra": "yes"}));
}

#[test]
fn documents_keep_their_numbers_around_empty_ones_and_comments() {
    let text = format!("# header\n---\n{}---\n---\n# only a comment\n---\n{}", cm("one"), cm("four"));
    let parsed = parse_manifest_file(Path::new("n.yaml"), &text).unwrap();
    let numbers: Vec<usize> = parsed.objects.iter().map(|o| o.location.document).collect();
    assert_eq!(numbers, [1, 4]);
}

#[test]
fn invalid_json_fails_the_file() {
    let err = parse_manifest_file(Path::new("bad.json"), "{\"apiVersion\": ").unwrap_err();
    assert!(err.to_string().starts_with("bad.json: invalid JSON"), "{err}");
}

#[test]
fn yaml_error_lines_are_lines_of_the_file() {
    assert_eq!(
        shift_lines("did not find key at line 2 column 3, while parsing at line 1 column 1", 10),
        "did not find key at line 11 column 3, while parsing at line 10 column 1"
    );
    assert_eq!(shift_lines("a line 2 without column", 10), "a line 2 without column");
}

/// A number or boolean as a mapping key is read as a string, as kubectl reads it; a list as
/// a key has no JSON form.
#[test]
fn scalar_mapping_keys_are_strings_and_tags_are_dropped() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata:\n  1: one\n  true: 'yes'\n  1.5: f\n  t: !custom v\n";
    let parsed = parse_manifest_file(Path::new("k.yaml"), text).unwrap();
    assert!(parsed.refused.is_empty(), "{:?}", parsed.refused);
    assert_eq!(parsed.objects[0].value["data"], serde_json::json!({"1": "one", "true": "yes", "1.5": "f", "t": "v"}));
    let (objects, refused) = parse("k.yaml", &format!("{}---\n{}data:\n  ? [a]\n  : seq\n", cm("ok"), cm("complex")));
    assert_eq!(objects, ["ConfigMap ok"]);
    assert_eq!(refused, ["k.yaml: document 2: a mapping key is a list, which JSON cannot hold; skipped"]);
}

/// After a document the parser fails on, the next ones are read, and each error's line is a
/// line of the file.
#[test]
fn parsing_goes_on_after_each_bad_document() {
    let bad = "apiVersion: v1\nkind: \"unclosed\nmetadata: {}\n";
    let text = [cm("one"), bad.to_owned(), cm("three"), "a: [\n".to_owned(), cm("five")].join("---\n");
    let (objects, refused) = parse("two-bad.yaml", &text);
    assert_eq!(objects, ["ConfigMap one", "ConfigMap three", "ConfigMap five"]);
    // The bad documents start at lines 6 and 15 of the file; each error names a line of the file.
    assert_eq!(
        refused,
        [
            "two-bad.yaml: document 2: invalid YAML: invalid indentation in quoted scalar at line 7 column 7; skipped",
            "two-bad.yaml: document 4: invalid YAML: while parsing a node, did not find expected node content at \
             line 16 column 1; skipped",
        ]
    );
}

#[test]
fn a_directive_before_the_first_document_is_read() {
    let (objects, refused) = parse("d.yaml", &format!("%YAML 1.1\n---\n{}", cm("directed")));
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(objects, ["ConfigMap directed"]);
}

/// kubectl reads YAML by YAML 1.1's rules: a volume's `defaultMode: 0644` is 420, a
/// ConfigMap's `enabled: on` is `true` (which an API server refuses in `data`), a key given
/// twice keeps its last value — where a YAML 1.2 reader sees the strings "0644" and "on" and
/// refuses the duplicate.
#[test]
fn manifests_are_read_by_yaml_1_1_rules_as_kubectl_reads_them() {
    let text = "apiVersion: v1\nkind: Pod\nmetadata: {name: mode}\nspec:\n  volumes:\n  \
                - {name: s, secret: {secretName: s, defaultMode: 0644}}\n  - {name: c, configMap: {name: c, optional: yes}}\n\
                ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: flags}\ndata: {enabled: on, quoted: 'on', a: 1, a: 2}\n";
    let parsed = parse_manifest_file(Path::new("y.yaml"), text).unwrap();
    assert!(parsed.refused.is_empty(), "{:?}", parsed.refused);
    let volumes = &parsed.objects[0].value["spec"]["volumes"];
    assert_eq!(volumes[0]["secret"]["defaultMode"], 420);
    assert_eq!(volumes[1]["configMap"]["optional"], true);
    assert_eq!(parsed.objects[1].value["data"], serde_json::json!({"enabled": true, "quoted": "on", "a": 2}));
}

/// A `.json` file holds one object after another (each a document); one that does not start
/// like JSON is read as YAML, and an empty one holds nothing — as kubectl's reader has them.
#[test]
fn json_files_hold_a_stream_of_objects_or_yaml() {
    let one = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}}"#;
    let two = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "two"}}"#;
    assert_eq!(parse("s.json", &format!("{one}\n{two}\n")).0, ["ConfigMap one", "ConfigMap two"]);
    assert_eq!(parse("y.json", &cm("yaml")).0, ["ConfigMap yaml"]);
    assert_eq!(parse("e.json", " \n"), (vec![], vec![]));
}

/// Items of a typed list, as `kubectl get -o yaml` writes one, take their `apiVersion` and
/// `kind` from it when they have neither.
#[test]
fn items_of_a_typed_list_take_its_kind() {
    let text = "apiVersion: v1\nkind: ConfigMapList\nitems:\n- metadata: {name: a}\n- apiVersion: v1\n  kind: Secret\n  metadata: {name: b}\n";
    assert_eq!(parse("l.yaml", text).0, ["ConfigMap a", "Secret b"]);
}

/// A Secret's `stringData` is served folded into its `data`, as the API server stores what
/// kubectl applies.
#[test]
fn a_secrets_string_data_is_folded_into_its_data() {
    let text = "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData: {user: admin}\n";
    let parsed = parse_manifest_file(Path::new("s.yaml"), text).unwrap();
    assert_eq!(parsed.objects[0].value["data"], serde_json::json!({"user": "YWRtaW4="}));
    assert!(parsed.objects[0].value.get("stringData").is_none());
}

/// An object at a version of a built-in group that Kubernetes no longer serves, or never
/// did, is refused as kubectl apply fails on it ("no matches for kind"); a custom group's
/// versions are the definitions' business.
#[test]
fn built_in_groups_at_versions_no_server_serves_are_refused() {
    let text = [
        doc("policy/v1beta1", "PodDisruptionBudget", "{name: old, namespace: shop}"),
        doc("apps/v42", "Deployment", "{name: invented, namespace: shop}"),
        doc("extensions/v1beta1", "Ingress", "{name: gone, namespace: shop}"),
        doc("policy/v1", "PodDisruptionBudget", "{name: current, namespace: shop}"),
        doc("example.com/v9", "Widget", "{name: custom, namespace: shop}"),
    ]
    .join("---\n");
    let (objects, refused) = parse("v.yaml", &text);
    assert_eq!(objects, ["PodDisruptionBudget shop/current", "Widget shop/custom"]);
    assert_eq!(
        refused,
        [
            "v.yaml: document 1 (PodDisruptionBudget shop/old): policy/v1beta1 is not a version Kubernetes serves \
             for policy (served: policy/v1); skipped",
            "v.yaml: document 2 (Deployment shop/invented): apps/v42 is not a version Kubernetes serves for apps \
             (served: apps/v1); skipped",
            "v.yaml: document 3 (Ingress shop/gone): extensions/v1beta1 is not served since Kubernetes 1.22: the \
             extensions group is gone (its kinds are at apps/v1, networking.k8s.io/v1 and policy/v1); skipped",
        ]
    );
}

/// Names, namespaces, labels and annotations the API server refuses are refused, with its
/// message, by the kind's own rule: a Service's name is a DNS-1123 label (it may start with a
/// digit, not hold a dot), a role's a path segment.
#[test]
fn metadata_the_api_server_refuses_is_refused() {
    let text = [
        doc("v1", "ConfigMap", "{name: Upper_Name, namespace: shop}"),
        doc("v1", "Service", "{name: svc.1, namespace: shop}"),
        doc("v1", "Service", "{name: 1svc, namespace: shop}"),
        doc("v1", "ConfigMap", "{name: ok, namespace: Team-B}"),
        doc("v1", "Pod", "{name: 'vttablet-{{uid}}', namespace: shop}"),
        doc("v1", "ConfigMap", "{name: labelled, namespace: shop, labels: {app: -bad}}"),
        doc("rbac.authorization.k8s.io/v1", "ClusterRole", "{name: 'system:metrics-server'}"),
        doc("v1", "ConfigMap", "{name: fine, namespace: shop}"),
    ]
    .join("---\n");
    let (objects, refused) = parse("n.yaml", &text);
    assert_eq!(objects, ["Service shop/1svc", "ClusterRole system:metrics-server", "ConfigMap shop/fine"]);
    let fields: Vec<&str> = refused.iter().map(|r| r.split(": ").nth(2).unwrap_or_default()).collect();
    assert_eq!(
        fields,
        ["metadata.name", "metadata.name", "metadata.namespace", "metadata.name", "metadata.labels"],
        "{refused:?}"
    );
    assert!(refused[1].contains("a lowercase RFC 1123 label must consist of"), "{refused:?}");
}

/// Metadata fields set to null are stored as absent, as the API server stores them.
#[test]
fn null_metadata_fields_are_absent() {
    let text = "apiVersion: v1\nkind: Service\nmetadata: {name: s, namespace: shop, annotations: null, labels: ~}\n";
    let parsed = parse_manifest_file(Path::new("s.yaml"), text).unwrap();
    assert_eq!(parsed.objects[0].value["metadata"], serde_json::json!({"name": "s", "namespace": "shop"}));
}
