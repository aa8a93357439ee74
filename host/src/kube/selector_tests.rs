//! Tests of label selector parsing and matching: each operator, and parse errors.

use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn sel(s: &str) -> LabelSelector {
    s.parse().unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
}

#[test]
fn empty_selector_matches_everything() {
    assert!(sel("").matches(&labels(&[])));
    assert!(sel("  ").matches(&labels(&[("a", "b")])));
    assert!(sel("").is_empty());
}

#[test]
fn equals_and_double_equals() {
    for s in ["app=web", "app==web", " app = web "] {
        let s = sel(s);
        assert_eq!(s.requirements()[0].operator, Operator::Equals("web".into()));
        assert!(s.matches(&labels(&[("app", "web")])));
        assert!(!s.matches(&labels(&[("app", "db")])));
        assert!(!s.matches(&labels(&[])));
    }
}

#[test]
fn not_equals_matches_absent_keys() {
    let s = sel("app!=web");
    assert!(!s.matches(&labels(&[("app", "web")])));
    assert!(s.matches(&labels(&[("app", "db")])));
    assert!(s.matches(&labels(&[])));
}

#[test]
fn in_requires_presence() {
    let s = sel("tier in (web, db)");
    assert!(s.matches(&labels(&[("tier", "db")])));
    assert!(!s.matches(&labels(&[("tier", "cache")])));
    assert!(!s.matches(&labels(&[])));
}

#[test]
fn notin_matches_absent_keys() {
    let s = sel("tier notin (web)");
    assert!(!s.matches(&labels(&[("tier", "web")])));
    assert!(s.matches(&labels(&[("tier", "db")])));
    assert!(s.matches(&labels(&[])));
}

#[test]
fn exists_and_does_not_exist() {
    let s = sel("app");
    assert!(s.matches(&labels(&[("app", "")])));
    assert!(!s.matches(&labels(&[])));
    let s = sel("!canary");
    assert!(s.matches(&labels(&[("app", "x")])));
    assert!(!s.matches(&labels(&[("canary", "true")])));
}

#[test]
fn greater_and_less_than_compare_integers() {
    let s = sel("replicas>2,replicas<10");
    assert!(s.matches(&labels(&[("replicas", "3")])));
    assert!(!s.matches(&labels(&[("replicas", "2")])));
    assert!(!s.matches(&labels(&[("replicas", "ten")])));
    assert!(!s.matches(&labels(&[])));
}

#[test]
fn requirements_are_a_conjunction() {
    let s = sel("app, tier in (web,db), !canary, env!=prod");
    assert_eq!(s.requirements().len(), 4);
    assert!(s.matches(&labels(&[("app", "x"), ("tier", "web")])));
    assert!(!s.matches(&labels(&[("app", "x"), ("tier", "web"), ("canary", "1")])));
    assert!(!s.matches(&labels(&[("tier", "web")])));
}

#[test]
fn prefixed_keys_and_empty_values() {
    let s = sel("app.kubernetes.io/name=web,team=");
    assert!(s.matches(&labels(&[("app.kubernetes.io/name", "web"), ("team", "")])));
    assert_eq!(s.requirements()[1].operator, Operator::Equals(String::new()));
}

#[test]
fn display_round_trips() {
    for text in ["app=web,tier in (db,web),!canary,env!=prod,x notin (a),y,n>3,m<-1", ""] {
        let s = sel(text);
        assert_eq!(sel(&s.to_string()), s);
    }
    assert_eq!(sel("tier in (web, db)").to_string(), "tier in (db,web)");
}

#[test]
fn parse_errors() {
    let err = |s: &str| s.parse::<LabelSelector>().unwrap_err();
    assert_eq!(err("a=b,,c"), SelectorError::EmptyRequirement { position: 4 });
    assert_eq!(err("a=b,"), SelectorError::EmptyRequirement { position: 4 });
    assert!(matches!(err("a in (x"), SelectorError::Unexpected { expected: "`,` or `)`", .. }));
    assert!(matches!(err("a in x"), SelectorError::Unexpected { expected: "`(`", .. }));
    assert!(matches!(err("a b"), SelectorError::Unexpected { .. }));
    assert!(matches!(err("=b"), SelectorError::Unexpected { expected: "a label key", .. }));
    assert!(matches!(err("a=(b)"), SelectorError::Unexpected { expected: "a label value", .. }));
    assert_eq!(err("a in ()"), SelectorError::EmptyValueSet { key: "a".into(), operator: "in" });
    assert_eq!(err("a>b"), SelectorError::NotAnInteger { value: "b".into() });
    assert!(matches!(err("-a=b"), SelectorError::InvalidKey { .. }));
    assert!(matches!(err("Foo.Com/a=b"), SelectorError::InvalidKey { .. }));
    assert!(matches!(err("a=b$"), SelectorError::InvalidValue { .. }));
    let long = format!("a={}", "x".repeat(64));
    assert!(matches!(err(&long), SelectorError::InvalidValue { .. }));
    assert!(err("a in (x").to_string().contains("end of input"));
}

/// The label selector cases every SDK and the host agree on
/// (`tests/conformance/label-selectors.json`): each valid one read from its object form, and
/// again from the string form the API server writes for it. (The host reads selectors of
/// objects the API server accepted: the cases it refuses are the SDKs' to refuse.)
#[test]
fn the_shared_selector_corpus() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/conformance/label-selectors.json");
    let corpus: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let labels: BTreeMap<String, String> = serde_json::from_value(corpus["labels"].clone()).unwrap();
    let mut checked = 0;
    for case in corpus["cases"].as_array().unwrap() {
        let (name, selector) = (&case["name"], &case["selector"]);
        let Some(expect) = case["expect"].as_bool() else { continue };
        if selector.is_null() {
            continue; // no selector: the caller's to say (LabelSelectorAsSelector's "nothing")
        }
        let parsed = LabelSelector::of_object(selector);
        assert_eq!(parsed.matches(&labels), expect, "{name}: {parsed}");
        let again = sel(&parsed.to_string());
        assert_eq!(again.matches(&labels), expect, "{name}, as the string {parsed}");
        checked += 1;
    }
    assert!(checked >= 20, "only {checked} cases checked");
}
