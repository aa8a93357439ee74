//! What every controller does with metadata: controller owner references and label
//! selectors, as apimachinery's `metav1.GetControllerOf` and `LabelSelectorAsSelector` and
//! controller-runtime's `SetControllerReference` do them.
//!
//! ```no_run
//! # fn f(deployment: &wink_guest::Object, service: &wink_guest::Object) -> Result<(), Box<dyn std::error::Error>> {
//! use wink_guest::meta;
//! let mut wanted = serde_json::json!({"apiVersion": "v1", "kind": "Service",
//!     "metadata": {"name": deployment.name(), "namespace": deployment.namespace()}});
//! meta::set_controller_reference(deployment, &mut wanted)?;   // controller, blockOwnerDeletion
//! let ours = service.is_controlled_by(deployment);              // by uid
//! let selector = deployment.json_value()?.pointer("/spec/selector").cloned();
//! let selects = meta::selector_matches(selector.as_ref(), |key| service.label(key))?;
//! # Ok(()) }
//! ```

use serde_json::{Value, json};

use crate::object::{Object, OwnerReference};

impl Object {
    /// The owner reference with `controller: true`, if any (`metav1.GetControllerOf`).
    pub fn controller(&self) -> Option<&OwnerReference> {
        self.owner_references().iter().find(|o| o.controller)
    }

    /// Whether `owner` is this object's controller, matched by uid.
    pub fn is_controlled_by(&self, owner: &Object) -> bool {
        !owner.uid().is_empty() && self.controller().is_some_and(|c| c.uid == owner.uid())
    }
}

/// Why an owner reference cannot be set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OwnerError {
    /// The owner has no uid yet (it was never created).
    #[error("{kind} {name} has no uid: it cannot own anything yet")]
    NoUid {
        /// The owner's kind.
        kind: String,
        /// The owner's name.
        name: String,
    },
    /// Another object is the controller already (controller-runtime's `AlreadyOwnedError`).
    #[error("already controlled by {kind} {name}")]
    AlreadyOwned {
        /// The controller's kind.
        kind: String,
        /// The controller's name.
        name: String,
    },
    /// A namespaced owner in another namespace: the garbage collector would never find it.
    #[error("{owner} cannot own an object in namespace {namespace}")]
    OtherNamespace {
        /// The owner, `namespace/name`.
        owner: String,
        /// The object's namespace.
        namespace: String,
    },
    /// The object to own is not a JSON object.
    #[error("the object to own is not a JSON object")]
    NotAnObject,
}

/// The owner reference naming `owner` as controller, for `metadata.ownerReferences`
/// (`blockOwnerDeletion` set, as controller-runtime sets it).
pub fn controller_reference(owner: &Object) -> Result<Value, OwnerError> {
    if owner.uid().is_empty() {
        return Err(OwnerError::NoUid { kind: owner.kind().to_owned(), name: owner.name().to_owned() });
    }
    Ok(json!({
        "apiVersion": owner.api_version(), "kind": owner.kind(), "name": owner.name(), "uid": owner.uid(),
        "controller": true, "blockOwnerDeletion": true,
    }))
}

/// Makes `owner` the controller of `obj` (an object about to be written): a reference to the
/// same owner (by uid) is replaced, other owners are kept; another controller is refused.
pub fn set_controller_reference(owner: &Object, obj: &mut Value) -> Result<(), OwnerError> {
    let reference = controller_reference(owner)?;
    let meta = obj.as_object_mut().ok_or(OwnerError::NotAnObject)?.entry("metadata").or_insert_with(|| json!({}));
    let meta = meta.as_object_mut().ok_or(OwnerError::NotAnObject)?;
    if let (Some(theirs), Some(namespace)) = (owner.namespace(), meta.get("namespace").and_then(Value::as_str))
        && theirs != namespace
    {
        let owner = format!("{theirs}/{}", owner.name());
        return Err(OwnerError::OtherNamespace { owner, namespace: namespace.to_owned() });
    }
    let mut refs: Vec<Value> = meta
        .get("ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| refs.iter().filter(|r| r["uid"] != reference["uid"]).cloned().collect())
        .unwrap_or_default();
    if let Some(other) = refs.iter().find(|r| r["controller"] == true) {
        let field = |f: &str| other[f].as_str().unwrap_or_default().to_owned();
        return Err(OwnerError::AlreadyOwned { kind: field("kind"), name: field("name") });
    }
    refs.push(reference);
    meta.insert("ownerReferences".into(), Value::Array(refs));
    Ok(())
}

/// A `LabelSelector` the API server would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid label selector: {0}")]
pub struct InvalidSelector(String);

/// Whether the labels `label` looks up match `selector` (a `LabelSelector` as JSON:
/// `matchLabels`, `matchExpressions` with `In`, `NotIn`, `Exists`, `DoesNotExist`). An empty
/// selector matches everything, a missing one (`None`) nothing, as `LabelSelectorAsSelector`
/// has it.
pub fn selector_matches<'l>(
    selector: Option<&Value>,
    label: impl Fn(&str) -> Option<&'l str>,
) -> Result<bool, InvalidSelector> {
    let Some(selector) = selector else { return Ok(false) };
    let invalid = |why: String| InvalidSelector(why);
    let mut matches = true;
    if let Some(wanted) = selector.get("matchLabels").and_then(Value::as_object) {
        matches &= wanted.iter().all(|(key, value)| label(key).is_some_and(|v| Some(v) == value.as_str()));
    }
    for e in selector.get("matchExpressions").and_then(Value::as_array).into_iter().flatten() {
        let key =
            e["key"].as_str().filter(|k| !k.is_empty()).ok_or_else(|| invalid("an expression has no key".into()))?;
        let values: Vec<&str> = e["values"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
        let operator = e["operator"].as_str().unwrap_or_default();
        let found = label(key);
        matches &= match (operator, values.is_empty()) {
            ("In", false) => found.is_some_and(|v| values.contains(&v)),
            ("NotIn", false) => found.is_none_or(|v| !values.contains(&v)),
            ("Exists", true) => found.is_some(),
            ("DoesNotExist", true) => found.is_none(),
            ("In" | "NotIn", true) => return Err(invalid(format!("operator {operator} on {key} needs values"))),
            ("Exists" | "DoesNotExist", false) => {
                return Err(invalid(format!("operator {operator} on {key} takes no values")));
            }
            _ => return Err(invalid(format!("operator {operator:?} is not In, NotIn, Exists or DoesNotExist"))),
        };
    }
    Ok(matches)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Object {
        Object::from_json(value.to_string()).unwrap()
    }

    fn deployment(uid: &str) -> Object {
        object(
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop", "uid": uid}}),
        )
    }

    fn owned_by(refs: Value) -> Object {
        object(
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop", "ownerReferences": refs}}),
        )
    }

    #[test]
    fn the_controller_is_the_reference_marked_controller_and_matched_by_uid() {
        let service = owned_by(json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "u-3"},
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-9", "controller": true}
        ]));
        assert_eq!(service.controller().map(|c| c.uid.as_str()), Some("u-9"));
        assert!(service.is_controlled_by(&deployment("u-9")));
        assert!(!service.is_controlled_by(&deployment("u-8")), "the same name, another object");
        let not_controller =
            owned_by(json!([{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-9"}]));
        assert!(not_controller.controller().is_none() && !not_controller.is_controlled_by(&deployment("u-9")));
    }

    #[test]
    fn setting_the_controller_keeps_other_owners_and_refuses_a_second_controller() {
        let mut service = json!({"metadata": {"name": "web", "namespace": "shop",
            "ownerReferences": [{"kind": "ConfigMap", "name": "c", "uid": "u-3"}]}});
        set_controller_reference(&deployment("u-9"), &mut service).unwrap();
        set_controller_reference(&deployment("u-9"), &mut service).unwrap();
        let refs = service["metadata"]["ownerReferences"].as_array().unwrap();
        assert_eq!(refs.len(), 2, "the same owner is replaced, not added");
        assert_eq!(
            refs[1],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-9",
            "controller": true, "blockOwnerDeletion": true})
        );
        let err = set_controller_reference(&deployment("u-7"), &mut service).unwrap_err();
        assert_eq!(err, OwnerError::AlreadyOwned { kind: "Deployment".into(), name: "web".into() });
        let mut elsewhere = json!({"metadata": {"name": "x", "namespace": "ops"}});
        let err = set_controller_reference(&deployment("u-9"), &mut elsewhere);
        assert!(matches!(err, Err(OwnerError::OtherNamespace { .. })));
        assert!(matches!(controller_reference(&deployment("")), Err(OwnerError::NoUid { .. })));
    }

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = [("app", "web"), ("tier", "front")];
        let label = |k: &str| labels.iter().find(|(key, _)| *key == k).map(|(_, v)| *v);
        let matches = |selector: Value| selector_matches(Some(&selector), label);
        assert_eq!(matches(json!({})), Ok(true), "empty: everything");
        assert_eq!(selector_matches(None, label), Ok(false), "missing: nothing");
        assert_eq!(matches(json!({"matchLabels": {"app": "web"}})), Ok(true));
        assert_eq!(matches(json!({"matchLabels": {"app": "web", "tier": "back"}})), Ok(false));
        let expression = |key: &str, operator: &str, values: Value| {
            matches(json!({"matchExpressions": [{"key": key, "operator": operator, "values": values}]}))
        };
        assert_eq!(expression("tier", "In", json!(["front", "edge"])), Ok(true));
        assert_eq!(expression("zone", "In", json!(["front"])), Ok(false), "In needs the key");
        assert_eq!(expression("zone", "NotIn", json!(["a"])), Ok(true), "NotIn holds without the key");
        assert_eq!(expression("tier", "NotIn", json!(["front"])), Ok(false));
        assert_eq!(expression("tier", "Exists", json!([])), Ok(true));
        assert_eq!(expression("zone", "DoesNotExist", json!(null)), Ok(true));
        for (operator, values) in [("Equals", json!(["a"])), ("In", json!([])), ("Exists", json!(["a"]))] {
            assert!(expression("tier", operator, values).is_err(), "{operator}");
        }
    }

    /// The label selector cases every SDK and the host agree on
    /// (`tests/conformance/label-selectors.json` of the repository).
    #[test]
    fn the_shared_selector_corpus() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/conformance/label-selectors.json");
        let corpus: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let labels = corpus["labels"].as_object().unwrap();
        let label = |key: &str| labels.get(key).and_then(Value::as_str);
        for case in corpus["cases"].as_array().unwrap() {
            let selector = Some(&case["selector"]).filter(|s| !s.is_null());
            let got = selector_matches(selector, label);
            match case["expect"].as_bool() {
                Some(expect) => assert_eq!(got, Ok(expect), "{}", case["name"]),
                None => assert!(got.is_err(), "{}: {got:?}, want refused", case["name"]),
            }
        }
    }
}
