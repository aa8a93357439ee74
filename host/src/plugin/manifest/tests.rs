//! Tests of manifest parsing and validation.

use super::*;

const FULL: &str = r#"
name: label-auditor
component: label-auditor.wasm
resources:
  - apiVersion: v1
    kind: Pod
    namespaces: [default, shop]
    labelSelector: "app, tier in (web,db)"
    resyncPeriod: 30s
  - apiVersion: apps/v1
    kind: Deployment
    resyncPeriod: 0s
limits:
  memory: 32Mi
  callTimeout: 250ms
failurePolicy:
  onError: skip
  quarantineAfter: 3
cache:
  - apiVersion: apps/v1
    kind: ReplicaSet
    namespaces: [shop]
config:
  required: [team, owner]
  dryRun: true
"#;

fn parse(text: &str) -> Result<Manifest, ManifestError> {
    Manifest::parse(text, Path::new("/plugins/auditor/plugin.yaml"))
}

fn minimal(extra: &str) -> String {
    format!("name: p\ncomponent: p.wasm\nresources:\n  - apiVersion: v1\n    kind: Pod\n{extra}")
}

/// The error's message, which must name the file.
fn message(err: ManifestError) -> String {
    let text = err.to_string();
    assert!(text.contains("/plugins/auditor/plugin.yaml"), "no file in: {text}");
    text
}

#[test]
fn parses_the_full_example() {
    let m = parse(FULL).unwrap();
    assert_eq!(m.name.as_str(), "label-auditor");
    assert_eq!(m.component_path(), Path::new("/plugins/auditor/label-auditor.wasm"));
    assert_eq!(m.resources.len(), 2);
    let pod = &m.resources[0];
    assert_eq!(pod.namespaces.as_deref(), Some(&["default".to_owned(), "shop".to_owned()][..]));
    assert_eq!(pod.label_selector.as_ref().unwrap().to_string(), "app,tier in (db,web)");
    assert_eq!(pod.resync(), Some(Duration::from_secs(30)));
    assert_eq!(m.resources[1].resync(), None);
    assert_eq!(m.limits.memory, MemorySize(32 << 20));
    assert_eq!(m.limits.call_timeout, Duration::from_millis(250));
    assert_eq!(m.failure_policy.on_error, OnError::Skip);
    assert_eq!(m.failure_policy.quarantine_after, 3);
    assert_eq!(m.cache[0].resource().to_string(), "apps/v1 ReplicaSet");
    assert_eq!(m.config_json(), r#"{"dryRun":true,"required":["team","owner"]}"#);
    assert_eq!(m.path(), Path::new("/plugins/auditor/plugin.yaml"));
}

#[test]
fn defaults() {
    let m = parse(&minimal("")).unwrap();
    assert_eq!(m.limits.memory, DEFAULT_MEMORY);
    assert_eq!(m.limits.memory.to_string(), "64Mi");
    assert_eq!(m.limits.call_timeout, Duration::from_secs(1));
    assert_eq!(m.failure_policy.on_error, OnError::Retry);
    assert_eq!(m.failure_policy.quarantine_after, 5);
    assert!(m.cache.is_empty());
    assert!(!m.wasi);
    assert_eq!(m.config_json(), "null");
    assert_eq!(m.resources[0].namespaces, None);
    assert_eq!(m.resources[0].label_selector, None);
    assert_eq!(m.resources[0].resync(), None);
    // Partial sections keep the defaults of the fields they omit.
    let m = parse(&minimal("limits:\n  memory: 1Gi\nfailurePolicy:\n  onError: skip\n")).unwrap();
    assert_eq!(m.limits.call_timeout, DEFAULT_CALL_TIMEOUT);
    assert_eq!(m.failure_policy.quarantine_after, DEFAULT_QUARANTINE_AFTER);
}

#[test]
fn unknown_top_level_field_is_named() {
    let text = message(parse(&minimal("colour: red\n")).unwrap_err());
    assert!(text.contains("unknown field `colour`"), "{text}");
    assert!(text.contains("line 6"), "{text}");
}

#[test]
fn unknown_nested_field_is_named_with_its_path() {
    let err = parse(&minimal("    labelSelectr: app\n")).unwrap_err();
    let ManifestError::Parse { ref field, .. } = err else { panic!("{err:?}") };
    assert_eq!(field, "resources[0].labelSelectr");
    let text = message(err);
    assert!(text.contains("unknown field `labelSelectr`, expected one of"), "{text}");
    let text = message(parse(&minimal("limits:\n  cpu: 1\n")).unwrap_err());
    assert!(text.contains("field `limits.cpu`") && text.contains("unknown field `cpu`"), "{text}");
}

#[test]
fn missing_field_is_named() {
    let text = message(parse("name: p\nresources:\n  - {apiVersion: v1, kind: Pod}\n").unwrap_err());
    assert!(text.contains("missing field `component`"), "{text}");
    let err = parse("name: p\ncomponent: p.wasm\nresources:\n  - apiVersion: v1\n").unwrap_err();
    let ManifestError::Parse { ref field, .. } = err else { panic!("{err:?}") };
    assert_eq!(field, "resources[0]");
    assert!(message(err).contains("missing field `kind`"));
}

#[test]
fn bad_memory_size() {
    for bad in ["64MB", "lots", "0", "5Gi", "-1"] {
        let err = parse(&minimal(&format!("limits:\n  memory: {bad}\n"))).unwrap_err();
        let ManifestError::Parse { ref field, .. } = err else { panic!("{bad}: {err:?}") };
        assert_eq!(field, "limits.memory", "{bad}");
        let text = message(err);
        assert!(text.contains("memory size"), "{text}");
    }
    let m = parse(&minimal("limits:\n  memory: 1048576\n")).unwrap();
    assert_eq!(m.limits.memory, MemorySize(1 << 20));
    assert_eq!("512Ki".parse::<MemorySize>().unwrap().bytes(), 512 << 10);
    assert_eq!("4Gi".parse::<MemorySize>().unwrap().to_string(), "4Gi");
}

#[test]
fn bad_selector() {
    let err = parse(&minimal("    labelSelector: \"tier in (web\"\n")).unwrap_err();
    let ManifestError::Parse { ref field, .. } = err else { panic!("{err:?}") };
    assert_eq!(field, "resources[0].labelSelector");
    let text = message(err);
    assert!(text.contains("expected `,` or `)`"), "{text}");
}

#[test]
fn bad_durations_and_policy() {
    let err = parse(&minimal("limits:\n  callTimeout: soon\n")).unwrap_err();
    assert!(matches!(err, ManifestError::Parse { ref field, .. } if field == "limits.callTimeout"), "{err}");
    let err = parse(&minimal("limits:\n  callTimeout: 0s\n")).unwrap_err();
    assert!(matches!(err, ManifestError::Invalid { ref field, .. } if field == "limits.callTimeout"), "{err}");
    let err = parse(&minimal("failurePolicy:\n  onError: panic\n")).unwrap_err();
    assert!(matches!(err, ManifestError::Parse { ref field, .. } if field == "failurePolicy.onError"), "{err}");
    assert!(message(err).contains("unknown variant `panic`"));
}

#[test]
fn validation_errors_name_the_field() {
    let invalid_field = |text: &str| match parse(text).unwrap_err() {
        ManifestError::Invalid { field, message, .. } => (field, message),
        other => panic!("{other:?}"),
    };
    let (field, _) = invalid_field("name: p\ncomponent: p.wasm\nresources: []\n");
    assert_eq!(field, "resources");
    let (field, msg) = invalid_field(&minimal("    namespaces: []\n"));
    assert_eq!(field, "resources[0].namespaces");
    assert!(msg.contains("omit the field"));
    let (field, _) = invalid_field(&minimal("    namespaces: [Shop]\n"));
    assert_eq!(field, "resources[0].namespaces[0]");
    let (field, _) = invalid_field(&minimal("  - {apiVersion: v1, kind: Pod}\n"));
    assert_eq!(field, "resources[1]");
    let (field, _) = invalid_field(&minimal("cache:\n  - {apiVersion: 'apps/', kind: ReplicaSet}\n"));
    assert_eq!(field, "cache[0].apiVersion");
    let (field, _) = invalid_field("name: p\ncomponent: /abs/p.wasm\nresources:\n  - {apiVersion: v1, kind: Pod}\n");
    assert_eq!(field, "component");
}

#[test]
fn bad_name() {
    for bad in ["Label_Auditor", "-x", "", &"a".repeat(64)] {
        let err = parse(&format!("name: '{bad}'\ncomponent: p.wasm\nresources:\n  - {{apiVersion: v1, kind: Pod}}\n"))
            .unwrap_err();
        assert!(matches!(err, ManifestError::Parse { ref field, .. } if field == "name"), "{bad}: {err}");
    }
}

#[test]
fn wasi_is_rejected_clearly() {
    let err = parse(&minimal("wasi: true\n")).unwrap_err();
    assert!(matches!(err, ManifestError::WasiNotSupported { .. }));
    assert!(message(err).contains("WASI is not supported"));
    assert!(parse(&minimal("wasi: false\n")).is_ok());
}

#[test]
fn malformed_yaml_reports_the_location() {
    let text = message(parse("name: [unclosed\n").unwrap_err());
    assert!(text.contains("line"), "{text}");
}

#[test]
fn load_reads_the_file_and_names_it_on_error() {
    let dir = std::env::temp_dir().join(format!("wink-manifest-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(MANIFEST_FILE);
    std::fs::write(&path, minimal("")).unwrap();
    let m = Manifest::load(&path).unwrap();
    assert_eq!(m.component_path(), dir.join("p.wasm"));
    let err = Manifest::load(dir.join("missing.yaml")).unwrap_err();
    assert!(matches!(err, ManifestError::Read { .. }));
    assert!(err.to_string().contains("missing.yaml"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn byte_sizes_parse_beyond_a_memory_cap_and_format_for_people() {
    assert_eq!(parse_byte_size("8Gi"), Ok(8 << 30));
    assert_eq!(parse_byte_size("2Ti"), Ok(2 << 40));
    assert!(parse_byte_size("lots").is_err());
    assert_eq!(format_bytes(64 << 20), "64Mi");
    assert_eq!(format_bytes(23_981_119), "22.9Mi");
    assert_eq!(format_bytes(12_342_048 << 10), "11.8Gi");
    assert_eq!(format_bytes(1023), "1023");
}

#[test]
fn an_api_version_is_v1_or_group_slash_version() {
    for good in ["v1", "apps/v1", "batch/v1", "networking.k8s.io/v1", "example.com/v1alpha1", "example.com/stable"] {
        assert_eq!(check_api_version(good), Ok(()), "{good}");
    }
    for (bad, why) in [
        ("deployments", "core group"),
        ("apps", "core group"),
        ("v2", "core group"),
        ("apps/v1/x", "more than one `/`"),
        ("", "empty"),
        ("apps/", "version after"),
        ("/v1", "group before"),
        ("Apps/v1", "group before"),
        ("apps/1", "version after"),
    ] {
        let err = check_api_version(bad).unwrap_err();
        assert!(err.contains(why) && err.contains(&format!("`{bad}`")), "{bad}: {err}");
    }
    let err = parse(&minimal("").replace("apiVersion: v1", "apiVersion: deployments")).unwrap_err();
    assert!(matches!(&err, ManifestError::Invalid { field, .. } if field == "resources[0].apiVersion"), "{err}");
}

#[test]
fn request_limits_out_of_their_bounds_are_refused_naming_the_field() {
    for (requests, field) in [
        ("{qps: 0}", "requests.qps"),
        ("{qps: 1000000}", "requests.qps"),
        ("{burst: 0}", "requests.burst"),
        ("{perCall: 100000}", "requests.perCall"),
        ("{timeout: 1h}", "requests.timeout"),
    ] {
        let err = parse(&minimal(&format!("requests: {requests}\n"))).unwrap_err();
        assert!(matches!(&err, ManifestError::Invalid { field: f, .. } if f == field), "{requests}: {err}");
    }
    parse(&minimal("requests: {qps: 50, burst: 100, timeout: 30s, perCall: 50}\n")).expect("within bounds");
}

const RECONCILER: &str = r#"
name: service-for-deployment
component: s.wasm
reconcile:
  for: {apiVersion: apps/v1, kind: Deployment, namespaces: [shop]}
  owns: [{apiVersion: v1, kind: Service}]
  watches:
    - {apiVersion: v1, kind: ConfigMap, mapTo: {annotation: example.com/deployment}}
  workers: 2
"#;

#[test]
fn a_reconciler_watches_its_primary_owned_and_watched_resources_in_that_order() {
    let m = parse(RECONCILER).unwrap();
    let watched: Vec<String> = m.resources.iter().map(|r| format!("{}/{}", r.api_version, r.kind)).collect();
    assert_eq!(watched, ["apps/v1/Deployment", "v1/Service", "v1/ConfigMap"]);
    assert_eq!(m.resources[0].namespaces.as_deref(), Some(&["shop".to_owned()][..]));
    let reconcile = m.reconcile.as_ref().unwrap();
    assert_eq!(reconcile.roles()[1], Role::Owned { api_version: "apps/v1".into(), kind: "Deployment".into() });
    assert_eq!(reconcile.roles()[2], Role::Mapped(MapTo::Annotation("example.com/deployment".into())));
    assert_eq!(reconcile.rate_limits.limits(), crate::workqueue::RateLimits::default(), "controller-runtime's");
    assert_eq!(
        crate::plugin::runtime::budget::reservation_of(&m),
        2 * m.limits.memory.bytes(),
        "an instance per worker"
    );
}

#[test]
fn a_reconciler_is_refused_with_resources_too_many_workers_or_an_empty_mapping() {
    let with = |extra: &str| parse(&format!("{RECONCILER}{extra}")).unwrap_err().to_string();
    assert!(with("resources: [{apiVersion: v1, kind: Pod}]\n").contains("remove `resources`"));
    let workers = parse(&RECONCILER.replace("workers: 2", "workers: 0")).unwrap_err().to_string();
    assert!(workers.contains("reconcile.workers"), "{workers}");
    let unmapped = parse(&RECONCILER.replace("{annotation: example.com/deployment}", "{label: \"\"}")).unwrap_err();
    assert!(unmapped.to_string().contains("reconcile.watches[0].mapTo"), "{unmapped}");
    let no_map = parse(&RECONCILER.replace(", mapTo: {annotation: example.com/deployment}", "")).unwrap_err();
    assert!(no_map.to_string().contains("mapTo"), "{no_map}");
    let both =
        parse(&RECONCILER.replace("{annotation: example.com/deployment}", "{label: a, plugin: true}")).unwrap_err();
    assert!(both.to_string().contains("reconcile.watches[0].mapTo"), "{both}");
    let by_plugin = parse(&RECONCILER.replace("{annotation: example.com/deployment}", "{plugin: true}")).unwrap();
    assert_eq!(by_plugin.reconcile.unwrap().roles()[2], Role::Mapped(MapTo::Plugin));
}
