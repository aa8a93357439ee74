//! A CustomResourceDefinition's status, as the API server's controllers set it once they
//! accept its names: the `NamesAccepted` and `Established` conditions true, `acceptedNames`
//! the spec's names, `storedVersions` every storage version so far. That is what
//! `kubectl wait --for=condition=Established crd/NAME` (the step install scripts take between
//! a CRD and its custom resources) waits for. A condition keeps the time it became true.

use serde_json::{Value, json};

/// Whether an object of this group and kind is a CustomResourceDefinition.
pub fn is_crd(group: &str, kind: &str) -> bool {
    group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition"
}

/// Sets `crd`'s status from its spec; `previous` is the stored definition, if any, whose
/// stored versions and conditions' times are kept; `now` the time a new condition gets.
pub fn establish(crd: &mut Value, previous: Option<&Value>, now: &str) {
    let mut stored: Vec<Value> = previous
        .and_then(|p| p.pointer("/status/storedVersions"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for version in crd.pointer("/spec/versions").and_then(Value::as_array).into_iter().flatten() {
        if version["storage"].as_bool() == Some(true)
            && let Some(name) = version["name"].as_str()
            && !stored.iter().any(|s| s.as_str() == Some(name))
        {
            stored.push(name.into());
        }
    }
    let since = |kind: &str| {
        previous
            .and_then(|p| p.pointer("/status/conditions"))
            .and_then(Value::as_array)
            .and_then(|conditions| conditions.iter().find(|c| c["type"] == kind && c["status"] == "True"))
            .and_then(|c| c["lastTransitionTime"].as_str())
            .unwrap_or(now)
            .to_owned()
    };
    let status = json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "lastTransitionTime": since("NamesAccepted"),
             "reason": "NoConflicts", "message": "no conflicts found"},
            {"type": "Established", "status": "True", "lastTransitionTime": since("Established"),
             "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"},
        ],
        "acceptedNames": crd.pointer("/spec/names").cloned().unwrap_or_else(|| json!({})),
        "storedVersions": stored,
    });
    if let Some(map) = crd.as_object_mut() {
        map.insert("status".to_owned(), status);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(storage: &str) -> Value {
        json!({"spec": {"names": {"kind": "Widget", "plural": "widgets"},
               "versions": [{"name": "v1", "storage": storage == "v1"}, {"name": "v2", "storage": storage == "v2"}]}})
    }

    #[test]
    fn a_definition_is_established_with_its_names_and_keeps_its_times_and_stored_versions() {
        let mut first = crd("v1");
        establish(&mut first, None, "2024-01-01T00:00:00Z");
        assert_eq!(first["status"]["conditions"][1]["type"], "Established");
        assert_eq!(first["status"]["conditions"][1]["status"], "True");
        assert_eq!(first["status"]["acceptedNames"], json!({"kind": "Widget", "plural": "widgets"}));
        assert_eq!(first["status"]["storedVersions"], json!(["v1"]));
        let mut next = crd("v2");
        establish(&mut next, Some(&first), "2024-02-02T00:00:00Z");
        assert_eq!(next["status"]["storedVersions"], json!(["v1", "v2"]));
        assert_eq!(next["status"]["conditions"][1]["lastTransitionTime"], "2024-01-01T00:00:00Z");
    }
}
