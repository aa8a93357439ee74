// What a handler or reconcile call returns to the host: an `action`, or a thrown
// `handler-error`.

import { Fatal, RequestError, Retry } from "./errors.js";
import { log } from "./log.js";
import { Key } from "./objects.js";

const REQUEUE = Symbol("requeue");

/** What a handler (or reconcile) returns to be called again after `ms` milliseconds, with the
 * newest state (controller-runtime's RequeueAfter). */
export function requeueAfter(ms) {
  return { [REQUEUE]: Math.max(0, Math.floor(ms)) };
}

// The action of a handler that returned nothing: one object, never changed.
const AWAIT_CHANGE = Object.freeze({ tag: "await-change" });

/** The WIT `action` of what a handler returned. */
export function action(result) {
  if (result && typeof result === "object" && REQUEUE in result) {
    return { tag: "requeue-after", val: BigInt(result[REQUEUE]) };
  }
  return AWAIT_CHANGE;
}

export function describe(e) {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

/** Logs an exception no SDK error type explains, with its stack, as thrown by `where`. */
export function logThrown(where, e) {
  log.error(`${where} threw ${describe(e)}${e && e.stack ? `\n${e.stack}` : ""}`);
}

/** Calls `method` on `self` with `a` and `b` (a handler, or reconcile) and turns its outcome
 * into the WIT result: an `action`, or a thrown `handler-error`. `what` names the call in
 * the log, with `a` when it is a key. (No closure per call: the engine interprets.) */
export function outcome(what, method, self, a, b) {
  try {
    return action(method.call(self, a, b));
  } catch (e) {
    if (e instanceof Retry) throw { tag: "retry", val: e.message };
    if (e instanceof Fatal) throw { tag: "fatal", val: e.message };
    if (e instanceof RequestError) throw { tag: e.transient ? "retry" : "fatal", val: `${e.reason}: ${e.message}` };
    // A bug, or a failure not foreseen: say where, then retry (as controller-runtime and
    // kopf do), so that a new version's bug leaves its work waiting rather than dropped.
    logThrown(a instanceof Key ? `${what} ${a}` : what, e);
    throw { tag: "retry", val: describe(e) };
  }
}

const isClass = (f) => /^class[\s{]/.test(Function.prototype.toString.call(f));

/** Starts a plugin: `plugin` is an object, or a class or factory called on every init; its `init` gets
 * the manifest's config parsed (null when absent). A throw refuses the config (the WIT error
 * is a string). */
export function start(plugin, config) {
  try {
    const instance = typeof plugin !== "function" ? plugin : isClass(plugin) ? new plugin() : plugin();
    if (typeof instance.init === "function") instance.init(config.trim() ? JSON.parse(config) : null);
    return instance;
  } catch (e) {
    throw e instanceof Error ? e.message : String(e);
  }
}
