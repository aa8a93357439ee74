//! kubectl's reading of YAML (go-yaml v2 under `sigs.k8s.io/yaml`), case by case.

use serde_json::json;

use super::*;

/// The one document of `text`.
fn read(text: &str) -> Value {
    let mut docs = documents(text);
    let value = docs.next().expect("a document").expect("readable");
    assert!(docs.next().is_none(), "one document");
    value
}

/// Plain scalars resolve by YAML 1.1's rules, as kubectl sends them to the API server.
#[test]
fn plain_scalars_resolve_as_yaml_1_1() {
    let cases = [
        ("0644", json!(420)),
        ("0755", json!(493)),
        ("0", json!(0)),
        ("-017", json!(-15)),
        ("0x1F", json!(31)),
        ("0o17", json!(15)),
        ("0b101", json!(5)),
        ("1_000", json!(1000)),
        ("+12", json!(12)),
        ("08", json!(8)),
        ("1.0", json!(1)),
        ("1.5", json!(1.5)),
        ("-2.5e3", json!(-2500)),
        (".5", json!(0.5)),
        ("18446744073709551615", json!(18_446_744_073_709_551_615_u64)),
        ("yes", json!(true)),
        ("Yes", json!(true)),
        ("on", json!(true)),
        ("ON", json!(true)),
        ("y", json!(true)),
        ("True", json!(true)),
        ("no", json!(false)),
        ("off", json!(false)),
        ("N", json!(false)),
        ("FALSE", json!(false)),
        ("~", json!(null)),
        ("null", json!(null)),
        ("", json!(null)),
        ("2001-12-14", json!("2001-12-14")),
        ("1.2.3", json!("1.2.3")),
        ("0x", json!("0x")),
        ("0o9", json!("0o9")),
        ("1e", json!("1e")),
        ("yess", json!("yess")),
        ("busybox:1.36", json!("busybox:1.36")),
        ("12:30", json!("12:30")),
    ];
    for (text, want) in cases {
        assert_eq!(read(&format!("v: {text}\n"))["v"], want, "{text:?}");
    }
}

/// Quoted and block scalars stay strings; a tag decides for a scalar that has one.
#[test]
fn quoted_block_and_tagged_scalars() {
    let value = read(
        "a: '0644'\nb: \"yes\"\nc: |\n  on\nd: !!str 0644\ne: !custom 12\nf: !!int \"0644\"\ng: !!bool 'off'\nh: ! 12\n",
    );
    assert_eq!(
        value,
        json!({"a": "0644", "b": "yes", "c": "on\n", "d": "0644", "e": "12", "f": 420, "g": false, "h": "12"})
    );
}

/// Mapping keys resolve the same way, then are written as strings; a key given twice keeps
/// its last value.
#[test]
fn keys_resolve_and_the_last_duplicate_wins() {
    let value = read("on: 1\n'on': 2\n0644: 3\n1.5: 4\nnull: 5\na: first\na: second\n");
    assert_eq!(value, json!({"true": 1, "on": 2, "420": 3, "1.5": 4, "null": 5, "a": "second"}));
}

/// A merge key sets the merged keys where it stands: keys after it override them, the
/// earlier of two merged mappings wins, and a quoted `<<` is an ordinary key.
#[test]
fn merge_keys_merge_in_place() {
    let value = read(
        "base: &base {a: 1, b: 1}\nother: &other {b: 2, c: 2}\n\
         after: {<<: *base, b: 3}\nbefore: {b: 3, <<: *base}\nlist: {<<: [*base, *other]}\nquoted: {'<<': x}\n",
    );
    assert_eq!(value["after"], json!({"a": 1, "b": 3}));
    assert_eq!(value["before"], json!({"b": 1, "a": 1}));
    assert_eq!(value["list"], json!({"a": 1, "b": 1, "c": 2}));
    assert_eq!(value["quoted"], json!({"<<": "x"}));
    let mut docs = documents("m: {<<: 5}\n");
    assert_eq!(
        docs.next(),
        Some(Err(Yaml11Error::NotJson("a merge key's value must be a mapping or a list of mappings".into())))
    );
}

/// Aliases are expanded; aliases of aliases that stand for millions of nodes are refused,
/// and the stream's next document is still read.
#[test]
fn aliases_expand_within_a_bound() {
    assert_eq!(read("a: &x [1, {b: 2}]\nc: *x\n"), json!({"a": [1, {"b": 2}], "c": [1, {"b": 2}]}));
    let mut bomb = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..9 {
        let prev = format!("*a{}", i - 1);
        bomb.push_str(&format!("a{i}: &a{i} [{}]\n", [prev.as_str(); 10].join(", ")));
    }
    bomb.push_str("---\nafter: 1\n");
    let mut docs = documents(&bomb);
    assert!(matches!(docs.next(), Some(Err(Yaml11Error::NotJson(why))) if why.contains("excessive aliasing")));
    assert_eq!(docs.next(), Some(Ok(json!({"after": 1}))));
}

/// A collection as a mapping key has no JSON form; a parse error ends the stream with its
/// line and column.
#[test]
fn complex_keys_are_refused_and_parse_errors_say_where() {
    let mut docs = documents("? [a]\n: seq\n---\nok: 1\n---\na: [\n");
    assert_eq!(docs.next(), Some(Err(Yaml11Error::NotJson("a mapping key is a list, which JSON cannot hold".into()))));
    assert_eq!(docs.next(), Some(Ok(json!({"ok": 1}))));
    match docs.next() {
        Some(Err(Yaml11Error::Parse(message))) => assert!(message.ends_with(" at line 7 column 1"), "{message}"),
        other => panic!("expected a parse error, got {other:?}"),
    }
    assert_eq!(docs.next(), None);
}

/// Nesting past the object limit is refused as the document is read.
#[test]
fn nesting_past_the_limit_is_refused() {
    let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
    let mut docs = documents(&deep);
    assert_eq!(docs.next(), Some(Err(Yaml11Error::NotJson(format!("nested deeper than {MAX_DEPTH} levels")))));
}

/// A request's body holds one document.
#[test]
fn a_request_body_is_one_document() {
    assert_eq!(one_document("mode: 0644\n"), Ok(json!({"mode": 420})));
    assert_eq!(one_document(""), Ok(Value::Null));
    assert_eq!(one_document("a: 1\n---\nb: 2\n"), Err("more than one document".to_owned()));
}
