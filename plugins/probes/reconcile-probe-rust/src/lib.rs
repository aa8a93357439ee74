//! reconcile-probe-rust: the reconcile probe of `plugins/probes/reconcile-probe` in Rust, for
//! the tests of the reconciler machinery (`tests/tests/reconcilers.rs`), which run it and the
//! Python probe alike. Each call logs `reconcile key=<key>`, then, by the ConfigMap's `data`:
//! `enqueue: <name>` enqueues `<namespace>/<name>` once (`enqueued other=<key>`); `fail: <n>`
//! fails the first `n` calls (`fail key=<key> attempt=<i>`), then logs `recovered key=<key>`.
//! A ConfigMap that is gone logs `gone key=<key>`. A Secret maps to the ConfigMap its
//! annotation `probe/for` names (`map secret=<key> to=<key>`).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use wink_guest::{Action, HandlerError, Key, Object, Reconciler, Resource, cache, info, queue};

#[derive(Default)]
struct Probe {
    enqueued: HashSet<String>,
    failures: HashMap<String, u32>,
}

impl Reconciler for Probe {
    fn reconcile(&mut self, key: &Key) -> Result<Action, HandlerError> {
        info!("reconcile key={key}");
        let Some(config_map) = cache::get(&Resource::new("v1", "ConfigMap"), &key.to_string())? else {
            info!("gone key={key}");
            return Ok(Action::AwaitChange);
        };
        let value = config_map.json_value()?;
        let data = |field: &str| value.pointer(&format!("/data/{field}")).and_then(|v| v.as_str()).map(str::to_owned);
        if let Some(other) = data("enqueue")
            && self.enqueued.insert(key.to_string())
        {
            let other = Key { namespace: key.namespace.clone(), name: other };
            queue::enqueue(&other, Duration::ZERO);
            info!("enqueued other={other}");
        }
        if let Some(times) = data("fail").and_then(|n| n.parse::<u32>().ok()) {
            let attempt = self.failures.entry(key.to_string()).or_insert(0);
            *attempt += 1;
            if *attempt <= times {
                info!("fail key={key} attempt={attempt}");
                return Err(HandlerError::retry(format!("asked to fail {times} times")));
            }
            if *attempt == times + 1 {
                info!("recovered key={key}");
            }
        }
        Ok(Action::AwaitChange)
    }

    fn map_to_keys(&mut self, obj: &Object) -> Vec<Key> {
        let (Some(namespace), Some(target)) = (obj.namespace(), obj.annotation("probe/for")) else { return Vec::new() };
        let key = Key::new(namespace, target);
        info!("map secret={} to={key}", obj.key());
        vec![key]
    }
}

wink_guest::export_reconciler!(Probe);
