// wink-guest/reconciler: reconcilers, the controller-runtime model (wink:plugin@0.4.0's
// `reconciler-plugin` world).
//
// A reconciler's manifest names its primary resource, the resources it owns and those it
// watches (`reconcile:`); the host turns every event on them into the key of a primary
// object and calls `reconcile(key)` with it, one key at a time, never one key twice at once.
// It reads the current state from the cache and makes the cluster match what the object
// asks for:
//
//     import { cache, log } from "wink-guest";
//     import { defineReconciler } from "wink-guest/reconciler";
//
//     export const reconciler = defineReconciler({
//       reconcile(key) {
//         const deployment = cache.get("apps/v1", "Deployment", key);
//         if (deployment === null) return; // deleted: what it owned goes with it
//         ...
//       },
//     });
//
// Throwing `Retry` (or any unexpected exception) retries the key with exponential backoff
// while other keys proceed; `Fatal` drops it until its next change; returning
// `requeueAfter(ms)` reconciles it again later; `enqueue(key)` adds any key. This module
// imports the reconciler world's `queue`: a handler plugin does not import it.

import * as rawQueue from "wink:plugin/queue@0.4.0";

import { Key, KubeObject } from "./objects.js";
import { logThrown, outcome, start } from "./outcome.js";

export { Key } from "./objects.js";

/** Reconciles `key` (a Key, or `{namespace, name}`, of the primary resource) after `ms`
 * milliseconds, or as soon as possible. A key that already waits keeps the earlier time. */
export function enqueue(key, ms = 0) {
  rawQueue.enqueue({ namespace: key.namespace ?? undefined, name: key.name }, BigInt(Math.max(0, Math.floor(ms))));
}

/**
 * Turns a reconciler into the component's `reconciler` export: `export const reconciler =
 * defineReconciler({...})`. `reconciler` is an object, or a class or factory function making
 * one on every init (with `workers` above 1 in the manifest, several instances run at once,
 * each with its own state), with:
 *
 * - `init(config)` (optional): the manifest's `config`, parsed (null when absent); throw to
 *   refuse it.
 * - `reconcile(key)`: brings the primary object `key` (a Key) names to the state it asks for;
 *   it may have been deleted (`cache.get` returns null). Throw `Retry` or `Fatal` to fail, or
 *   return `requeueAfter(ms)`.
 * - `mapToKeys(obj)` (optional): for a watched resource mapped by the plugin (`mapTo: {plugin:
 *   true}`), the keys (Keys, or `{namespace, name}`) of the primaries an event on `obj` (lent
 *   for the call) concerns. Keep it quick and free of requests; a throw is logged and maps to
 *   no key.
 */
export function defineReconciler(reconciler) {
  let current = null;
  return {
    init(config) {
      current = null;
      current = start(reconciler, config);
    },
    reconcile(key) {
      if (current === null) throw { tag: "fatal", val: "wink: reconcile called before a successful init" };
      return outcome("reconcile", current.reconcile, current, new Key(key.namespace, key.name));
    },
    mapToKeys(handle) {
      if (current === null || typeof current.mapToKeys !== "function") return [];
      const obj = KubeObject.lent(handle);
      try {
        const keys = current.mapToKeys(obj) ?? [];
        return keys.map((k) => ({ namespace: k.namespace ?? undefined, name: k.name }));
      } catch (e) {
        logThrown("mapToKeys", e);
        return [];
      } finally {
        obj._expire();
      }
    },
  };
}
