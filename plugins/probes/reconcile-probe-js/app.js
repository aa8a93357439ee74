// reconcile-probe-js: the reconcile probe of plugins/probes/reconcile-probe in JavaScript,
// for the tests of the reconciler machinery (tests/tests/reconcilers.rs), which run the
// probes of every language with the same outcomes (tests/conformance/SPEC.md,
// "Reconcilers").
import { Key, Retry, cache, log } from "wink-guest";
import { defineReconciler, enqueue } from "wink-guest/reconciler";

export const reconciler = defineReconciler(() => {
  const enqueued = new Set();
  const failures = new Map();
  return {
    reconcile(key) {
      log.info(`reconcile key=${key}`);
      const cm = cache.get("v1", "ConfigMap", key);
      if (cm === null) {
        log.info(`gone key=${key}`);
        return;
      }
      const data = cm.body.data ?? {};
      if (data.enqueue !== undefined && !enqueued.has(key.key)) {
        enqueued.add(key.key);
        const other = new Key(key.namespace, data.enqueue);
        enqueue(other);
        log.info(`enqueued other=${other}`);
      }
      if (data.fail !== undefined) {
        const times = Number(data.fail);
        const attempt = (failures.get(key.key) ?? 0) + 1;
        failures.set(key.key, attempt);
        if (attempt <= times) {
          log.info(`fail key=${key} attempt=${attempt}`);
          throw new Retry(`asked to fail ${times} times`);
        }
        if (attempt === times + 1) log.info(`recovered key=${key}`);
      }
    },
    mapToKeys(obj) {
      const target = obj.annotation("probe/for");
      if (!target) return [];
      const key = new Key(obj.namespace, target);
      log.info(`map secret=${obj.key} to=${key}`);
      return [key];
    },
  };
});
