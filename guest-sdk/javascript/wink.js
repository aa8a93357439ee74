// wink-guest: write wink plugins in JavaScript.
//
// A handler plugin is an ES module `app.js` that exports its handler:
//
//     import { definePlugin, log } from "wink-guest";
//
//     export const handler = definePlugin({
//       onAdd(obj, initialList) {
//         log.info(`hello, ${obj.kind} ${obj.key}`);
//       },
//     });
//
// A reconciler imports `defineReconciler` from "wink-guest/reconciler" (reconciler.js).
// `cargo xtask build-plugins` bundles the module with the SDK (esbuild) and turns it into a
// WebAssembly component with ComponentizeJS (SpiderMonkey). This module hides the generated
// bindings of wit/v0.4.0/ (WIT_VERSION): handlers get lent `KubeObject`s read on demand,
// `throw new Retry(...)` / `throw new Fatal(...)` are the handler errors, a handler may
// `return requeueAfter(ms)`, and `log`, `cache` and `cluster` wrap the host's imports. See
// README.md beside this file.
//
// The sandbox gives the clocks (`Date` works) and randomness, nothing else: no files, no
// environment, no console (the SDK routes `console.*` to the host's log).

import { KubeObject } from "./objects.js";
import { action, outcome, start } from "./outcome.js";

export { cache } from "./cache.js";
export { cluster } from "./cluster.js";
export { CacheError, Fatal, RequestError, Retry } from "./errors.js";
export { log } from "./log.js";
// Owner references and label selectors (meta.js: no host call, tested in Node).
export {
  AlreadyOwned,
  InvalidSelector,
  controllerOf,
  controllerReference,
  isControlledBy,
  selectorMatches,
  setControllerReference,
} from "./meta.js";
export { ExpiredObject, Key, KubeObject } from "./objects.js";
export { requeueAfter } from "./outcome.js";

/** The version of the WIT package (`wink:plugin`) this SDK implements. */
export const WIT_VERSION = "0.4.0";

/** The version of this SDK (semver; see CHANGELOG.md). */
export const SDK_VERSION = "0.4.0";

/**
 * Turns a plugin into the component's `handler` export: `export const handler =
 * definePlugin({...})`. `plugin` is an object, or a class or factory function making one on
 * every init, with any of:
 *
 * - `init(config)`: the manifest's `config`, parsed (null when absent); throw to refuse it.
 * - `onAdd(obj, initialList)`, `onUpdate(old, obj)`, `onDelete(obj, finalStateUnknown)`:
 *   `obj` is a KubeObject lent for the call; throw `Retry` or `Fatal` to fail the event (a
 *   RequestError that escapes is a retry when transient, else fatal; anything else thrown is
 *   logged and retried); return `requeueAfter(ms)` to be called again later.
 */
export function definePlugin(plugin) {
  let current = null;
  const started = (event) => {
    if (current === null) throw { tag: "fatal", val: `wink: ${event} called before a successful init` };
    return current;
  };
  // Lends `handle` as a KubeObject for the call of `method`, then ends the loan (the host
  // drops the handle when the call returns).
  const lendOne = (event, name, handle, arg) => {
    const self = started(event);
    const method = self[name];
    if (typeof method !== "function") return action();
    const obj = KubeObject.lent(handle);
    try {
      return outcome(event, method, self, obj, arg);
    } finally {
      obj._expire();
    }
  };
  return {
    init(config) {
      current = null;
      current = start(plugin, config);
    },
    onAdd(obj, initialList) {
      return lendOne("on-add", "onAdd", obj, initialList);
    },
    onUpdate(oldHandle, newHandle) {
      const self = started("on-update");
      const method = self.onUpdate;
      if (typeof method !== "function") return action();
      const old = KubeObject.lent(oldHandle);
      const obj = KubeObject.lent(newHandle);
      try {
        return outcome("on-update", method, self, old, obj);
      } finally {
        old._expire();
        obj._expire();
      }
    },
    onDelete(obj, finalStateUnknown) {
      return lendOne("on-delete", "onDelete", obj, finalStateUnknown);
    },
  };
}
