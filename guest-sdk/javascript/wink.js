// wink-guest: write wink handler plugins in JavaScript.
//
// A plugin is an ES module `app.js` that exports its handler:
//
//     import { definePlugin, log } from "wink-guest";
//
//     export const handler = definePlugin({
//       onAdd(obj, initialList) {
//         log.info(`hello, ${obj.kind} ${obj.key}`);
//       },
//     });
//
// `cargo xtask build-plugins` turns it into a WebAssembly component with componentize-qjs
// (QuickJS). This module hides the generated bindings of wit/v0.2.0/ (WIT_VERSION): objects
// are `KubeObject`s, `throw new Retry(...)` / `throw new Fatal(...)` are the handler errors, a
// handler may `return requeueAfter(ms)`, and `log`, `cache` and `cluster` wrap the host's
// imports. See README.md beside this file.
//
// The sandbox gives the clocks (`Date` works) and randomness, nothing else: no files, no
// environment, no console (the SDK routes `console.*` to the host's log).

import rawCache from "wink:plugin/cache@0.2.0";
import rawCluster from "wink:plugin/cluster@0.2.0";
import rawLog from "wink:plugin/log@0.2.0";

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

/** The version of the WIT package (`wink:plugin`) this SDK implements. */
export const WIT_VERSION = "0.2.0";

/** The version of this SDK (semver; see CHANGELOG.md). */
export const SDK_VERSION = "0.3.0";

// ---- errors --------------------------------------------------------------------------

/** A transient failure: the host calls again later, with backoff, with the newest state. */
export class Retry extends Error {
  constructor(message) {
    super(message);
    this.name = "Retry";
  }
}

/** A permanent failure for this event: the host records it and moves on. */
export class Fatal extends Error {
  constructor(message) {
    super(message);
    this.name = "Fatal";
  }
}

/** A refused cache read: `reason` is "not-permitted" or "unknown-index". */
export class CacheError extends Error {
  constructor(reason, message) {
    super(message);
    this.name = "CacheError";
    this.reason = reason;
  }
}

// ---- logging -------------------------------------------------------------------------

function text(args) {
  return args
    .map((a) => {
      if (typeof a === "string") return a;
      if (a instanceof Error) return a.stack ? `${a}\n${a.stack}` : String(a);
      try {
        return JSON.stringify(a) ?? String(a);
      } catch (_) {
        return String(a);
      }
    })
    .join(" ");
}

/** Writes records to the host's log, tagged with the plugin's name. Arguments are joined by
 * spaces; non-strings are written as JSON. */
export const log = {
  trace: (...args) => rawLog.log("trace", text(args)),
  debug: (...args) => rawLog.log("debug", text(args)),
  info: (...args) => rawLog.log("info", text(args)),
  warn: (...args) => rawLog.log("warn", text(args)),
  error: (...args) => rawLog.log("error", text(args)),
};

// There is no terminal: console.* goes to the host's log.
globalThis.console = {
  trace: log.trace,
  debug: log.debug,
  log: log.info,
  info: log.info,
  warn: log.warn,
  error: log.error,
};

// ---- objects -------------------------------------------------------------------------

/** A Kubernetes object: its metadata, parsed once by the host, and the whole object as JSON
 * (`json`, parsed on first use of `body`). */
export class KubeObject {
  constructor(raw) {
    const m = raw.meta;
    this.apiVersion = m.apiVersion;
    this.kind = m.kind;
    /** null for cluster-scoped objects. */
    this.namespace = m.namespace ?? null;
    this.name = m.name;
    this.uid = m.uid;
    this.resourceVersion = m.resourceVersion;
    this.generation = m.generation ?? null;
    this.labels = Object.fromEntries(m.labels);
    this.annotations = Object.fromEntries(m.annotations);
    this.deletionTimestamp = m.deletionTimestamp ?? null;
    this.ownerReferences = m.ownerReferences.map((o) => ({ ...o }));
    /** The object as JSON text, exactly as served. */
    this.json = raw.json;
    this._body = undefined;
  }

  /** `namespace/name`, or `name` for a cluster-scoped object. */
  get key() {
    return this.namespace === null ? this.name : `${this.namespace}/${this.name}`;
  }

  /** The whole object, parsed from `json` once. */
  get body() {
    if (this._body === undefined) this._body = JSON.parse(this.json);
    return this._body;
  }

  /** The value of label `key`, or undefined. */
  label(key) {
    return Object.hasOwn(this.labels, key) ? this.labels[key] : undefined;
  }

  /** The value of annotation `key`, or undefined. */
  annotation(key) {
    return Object.hasOwn(this.annotations, key) ? this.annotations[key] : undefined;
  }

  /** The first owner of this kind, preferring the controller, or undefined. */
  owner(kind) {
    const owners = this.ownerReferences.filter((o) => o.kind === kind);
    return owners.find((o) => o.controller) ?? owners[0];
  }

  toString() {
    return `${this.kind} ${this.key}`;
  }
}

// ---- the cache -----------------------------------------------------------------------

function refused(e) {
  const payload = e && e.payload;
  if (payload && typeof payload.tag === "string") return new CacheError(payload.tag, String(payload.val));
  return e;
}

function read(call) {
  try {
    return call();
  } catch (e) {
    throw refused(e);
  }
}

/** Read-only access to the host's cache, limited to what the manifest watches or grants.
 * Refused reads throw a CacheError. Results are sorted by key. */
export const cache = {
  /** The built-in index of objects by namespace. */
  NAMESPACE_INDEX: "namespace",
  /** The built-in index of objects by the uid of each of their ownerReferences. */
  OWNER_UID_INDEX: "owner-uid",

  /** The object of (apiVersion, kind) with this key ("namespace/name" or "name"), or null. */
  get(apiVersion, kind, key) {
    const raw = read(() => rawCache.get({ apiVersion, kind }, key));
    return raw == null ? null : new KubeObject(raw);
  },

  /** Every cached object of the resource, or those in `namespace`. */
  list(apiVersion, kind, namespace = null) {
    return read(() => rawCache.list({ apiVersion, kind }, namespace)).map((o) => new KubeObject(o));
  },

  /** The objects whose index `index` yields `value`. */
  byIndex(apiVersion, kind, index, value) {
    return read(() => rawCache.byIndex({ apiVersion, kind }, index, value)).map((o) => new KubeObject(o));
  },
};

// ---- the cluster ---------------------------------------------------------------------

/** A failed request to the cluster. `reason` is one of "not-permitted" (refused by wink, before
 * any request), "forbidden", "not-found", "already-exists", "conflict", "invalid",
 * "bad-request", "rate-limited", "timed-out", "unavailable"; `causes` lists the fields at
 * fault of an "invalid" one ({field, reason, message}). */
export class RequestError extends Error {
  constructor(reason, message, causes = []) {
    super(message);
    this.name = "RequestError";
    this.reason = reason;
    this.causes = causes;
  }

  /** Whether trying again later may succeed. */
  get transient() {
    return ["conflict", "rate-limited", "timed-out", "unavailable"].includes(this.reason);
  }
}

function requested(call) {
  try {
    return call();
  } catch (e) {
    const payload = e && e.payload;
    if (payload && typeof payload.tag === "string") {
      if (payload.tag === "invalid") throw new RequestError("invalid", payload.val.message, payload.val.causes);
      throw new RequestError(payload.tag, String(payload.val));
    }
    throw e;
  }
}

const object = (raw) => new KubeObject(raw);
const jsonText = (value) => (typeof value === "string" ? value : JSON.stringify(value));

function patchDocument(patch, type, force) {
  if (type === "apply") return { tag: "apply", val: { body: jsonText(patch), force: Boolean(force) } };
  const tags = { merge: "merge", json: "json", strategic: "strategic-merge", "strategic-merge": "strategic-merge" };
  if (!tags[type]) throw new TypeError(`unknown patch type ${type}: merge, json, strategic or apply`);
  return { tag: tags[type], val: jsonText(patch) };
}

/** Requests to the cluster, within the plugin's permissions and budget. Objects are plain
 * objects (or JSON text); answers are KubeObjects. A failure throws a RequestError. */
export const cluster = {
  /** The object, read live from the API server. */
  get(apiVersion, kind, namespace, name) {
    return object(requested(() => rawCluster.get({ apiVersion, kind }, namespace ?? undefined, name)));
  },
  /** Creates `obj` (its namespace is metadata.namespace). */
  create(obj) {
    return object(requested(() => rawCluster.create(jsonText(obj))));
  },
  /** Replaces `obj`; its metadata.resourceVersion is the version it was read at. */
  update(obj) {
    return object(requested(() => rawCluster.update(jsonText(obj))));
  },
  /** Replaces the status of `obj`. */
  updateStatus(obj) {
    return object(requested(() => rawCluster.updateStatus(jsonText(obj))));
  },
  /** Patches an object: `type` is "merge" (default), "json", "strategic" or "apply". */
  patch(apiVersion, kind, namespace, name, patch, type = "merge", { force = false } = {}) {
    const doc = patchDocument(patch, type, force);
    return object(requested(() => rawCluster.patch({ apiVersion, kind }, namespace ?? undefined, name, doc)));
  },
  /** Patches the status subresource of an object. */
  patchStatus(apiVersion, kind, namespace, name, patch, type = "merge") {
    const doc = patchDocument(patch, type, false);
    return object(requested(() => rawCluster.patchStatus({ apiVersion, kind }, namespace ?? undefined, name, doc)));
  },
  /** Server-side applies `obj`, with the plugin's name as field manager. */
  apply(obj, { force = false } = {}) {
    const m = obj.metadata ?? {};
    return cluster.patch(obj.apiVersion, obj.kind, m.namespace, m.name, obj, "apply", { force });
  },
  /** Deletes an object; returns it while its finalizers run, else null. `options`:
   * {uid, resourceVersion, propagation: "orphan"|"background"|"foreground", gracePeriodSeconds}. */
  delete(apiVersion, kind, namespace, name, options = {}) {
    const opts = {
      uid: options.uid ?? undefined,
      resourceVersion: options.resourceVersion ?? undefined,
      propagation: options.propagation ?? undefined,
      gracePeriodSeconds: options.gracePeriodSeconds ?? undefined,
    };
    const raw = requested(() => rawCluster.delete({ apiVersion, kind }, namespace ?? undefined, name, opts));
    return raw == null ? null : object(raw);
  },
  /** Records an Event about `regarding` (a KubeObject); `type` is "Normal" or "Warning" (any
   * other throws a TypeError). Identical Events are aggregated by the host. The manifest
   * must allow `create` and `patch` on `events` in group `events.k8s.io`. */
  recordEvent(regarding, type, reason, action, note) {
    if (type !== "Normal" && type !== "Warning") {
      throw new TypeError(`an Event's type is "Normal" or "Warning", not ${JSON.stringify(type)}`);
    }
    const event = {
      regarding: {
        apiVersion: regarding.apiVersion,
        kind: regarding.kind,
        namespace: regarding.namespace ?? undefined,
        name: regarding.name,
        uid: regarding.uid,
      },
      eventType: type === "Warning" ? "warning" : "normal",
      reason,
      action,
      note,
    };
    requested(() => rawCluster.recordEvent(event));
  },
};

// ---- the handler ---------------------------------------------------------------------

const REQUEUE = Symbol("requeue");

/** What a handler returns to be called again for the same object after `ms` milliseconds,
 * with its newest state (controller-runtime's RequeueAfter). */
export function requeueAfter(ms) {
  return { [REQUEUE]: Math.max(0, Math.floor(ms)) };
}

function action(result) {
  if (result && typeof result === "object" && REQUEUE in result) return { tag: "requeue-after", val: result[REQUEUE] };
  return { tag: "await-change" };
}

function describe(e) {
  return e instanceof Error ? `${e.name}: ${e.message}` : String(e);
}

/** Runs an event handler and turns its outcome into the WIT result: an `action`, or a thrown
 * `handler-error`. */
function call(event, fn) {
  try {
    return action(fn());
  } catch (e) {
    if (e instanceof Retry) throw { tag: "retry", val: e.message };
    if (e instanceof Fatal) throw { tag: "fatal", val: e.message };
    if (e instanceof RequestError) throw { tag: e.transient ? "retry" : "fatal", val: `${e.reason}: ${e.message}` };
    // A bug, or a failure not foreseen: say where, then retry (as controller-runtime and
    // kopf do), so that a new version's bug leaves its events waiting rather than dropped.
    log.error(`${event} threw ${describe(e)}${e && e.stack ? `\n${e.stack}` : ""}`);
    throw { tag: "retry", val: describe(e) };
  }
}

/**
 * Turns a plugin into the component's `handler` export: `export const handler =
 * definePlugin({...})`. `plugin` is an object (or a factory function returning one, called on
 * every init) with any of:
 *
 * - `init(config)`: the manifest's `config`, parsed (null when absent); throw to refuse it.
 * - `onAdd(obj, initialList)`, `onUpdate(old, obj)`, `onDelete(obj, finalStateUnknown)`:
 *   `obj` is a KubeObject; throw `Retry` or `Fatal` to fail the event (a RequestError that
 *   escapes is a retry when transient, else fatal; anything else thrown is logged and
 *   retried); return `requeueAfter(ms)` to be called again later.
 */
export function definePlugin(plugin) {
  let current = null;
  const handlerOf = (event, name) => {
    if (current === null) throw { tag: "fatal", val: `wink: ${event} called before a successful init` };
    return typeof current[name] === "function" ? current[name].bind(current) : null;
  };
  return {
    init(config) {
      current = null;
      try {
        const instance = typeof plugin === "function" ? plugin() : plugin;
        if (typeof instance.init === "function") instance.init(config.trim() ? JSON.parse(config) : null);
        current = instance;
      } catch (e) {
        throw e instanceof Error ? e.message : String(e);
      }
    },
    onAdd(obj, initialList) {
      const h = handlerOf("on-add", "onAdd");
      return h ? call("on-add", () => h(new KubeObject(obj), initialList)) : action();
    },
    onUpdate(old, obj) {
      const h = handlerOf("on-update", "onUpdate");
      return h ? call("on-update", () => h(new KubeObject(old), new KubeObject(obj))) : action();
    },
    onDelete(obj, finalStateUnknown) {
      const h = handlerOf("on-delete", "onDelete");
      return h ? call("on-delete", () => h(new KubeObject(obj), finalStateUnknown)) : action();
    },
  };
}
