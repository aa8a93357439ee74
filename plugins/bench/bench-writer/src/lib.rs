//! bench-writer: one request to the cluster per call, for the write benchmark.
//!
//! `on-update(old, new)` JSON-merge-patches `new` (a ConfigMap) with `data.seen` set to
//! `new`'s resourceVersion; `on-add(obj)` creates a ConfigMap named after `obj` with
//! `generateName`. Nothing else: what is measured is the request's round trip through the
//! host.

use wink_guest::cluster;
use wink_guest::serde_json::json;
use wink_guest::{Action, Handler, HandlerError, Object};

#[derive(Default)]
struct BenchWriter;

impl Handler for BenchWriter {
    fn on_add(&mut self, obj: &Object, _initial_list: bool) -> Result<Action, HandlerError> {
        let made = json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"generateName": format!("{}-", obj.name()), "namespace": obj.namespace()},
            "data": {"from": obj.name()},
        });
        cluster::create(&made)?;
        Ok(Action::AwaitChange)
    }

    fn on_update(&mut self, _old: &Object, new: &Object) -> Result<Action, HandlerError> {
        let patch = json!({"data": {"seen": new.resource_version()}});
        cluster::merge_patch(&new.resource(), new.namespace(), new.name(), &patch)?;
        Ok(Action::AwaitChange)
    }
}

wink_guest::export_handler!(BenchWriter);
