// Requests to the cluster: live reads, writes and Events, within the plugin's permissions and
// request budget.

import * as raw from "wink:plugin/cluster@0.4.0";

import { RequestError, variantOf } from "./errors.js";
import { KubeObject } from "./objects.js";

function requested(call) {
  try {
    return call();
  } catch (e) {
    const failed = variantOf(e);
    if (failed === null) throw e;
    if (failed.tag === "invalid") throw new RequestError("invalid", failed.val.message, failed.val.causes);
    throw new RequestError(failed.tag, String(failed.val));
  }
}

const object = (answer) => new KubeObject(answer);
const jsonText = (value) => (typeof value === "string" ? value : JSON.stringify(value));

function patchDocument(patch, type, force) {
  if (type === "apply") return { tag: "apply", val: { body: jsonText(patch), force: Boolean(force) } };
  const tags = { merge: "merge", json: "json", strategic: "strategic-merge", "strategic-merge": "strategic-merge" };
  if (!tags[type]) throw new TypeError(`unknown patch type ${type}: merge, json, strategic or apply`);
  return { tag: tags[type], val: jsonText(patch) };
}

/** Requests to the cluster. Objects are plain objects (or JSON text); answers are
 * KubeObjects. A failure throws a RequestError. */
export const cluster = {
  /** The object, read live from the API server. */
  get(apiVersion, kind, namespace, name) {
    return object(requested(() => raw.get({ apiVersion, kind }, namespace ?? undefined, name)));
  },
  /** Creates `obj` (its namespace is metadata.namespace). */
  create(obj) {
    return object(requested(() => raw.create(jsonText(obj))));
  },
  /** Replaces `obj`; its metadata.resourceVersion is the version it was read at. */
  update(obj) {
    return object(requested(() => raw.update(jsonText(obj))));
  },
  /** Replaces the status of `obj`. */
  updateStatus(obj) {
    return object(requested(() => raw.updateStatus(jsonText(obj))));
  },
  /** Patches an object: `type` is "merge" (default), "json", "strategic" or "apply". */
  patch(apiVersion, kind, namespace, name, patch, type = "merge", { force = false } = {}) {
    const doc = patchDocument(patch, type, force);
    return object(requested(() => raw.patch({ apiVersion, kind }, namespace ?? undefined, name, doc)));
  },
  /** Patches the status subresource of an object. */
  patchStatus(apiVersion, kind, namespace, name, patch, type = "merge") {
    const doc = patchDocument(patch, type, false);
    return object(requested(() => raw.patchStatus({ apiVersion, kind }, namespace ?? undefined, name, doc)));
  },
  /** Server-side applies `obj`, with the plugin's name as field manager. */
  apply(obj, { force = false } = {}) {
    const m = obj.metadata ?? {};
    return cluster.patch(obj.apiVersion, obj.kind, m.namespace, m.name, obj, "apply", { force });
  },
  /** Deletes an object; returns it while its finalizers run, else null. `options`:
   * {uid, resourceVersion, propagation: "orphan"|"background"|"foreground", gracePeriodSeconds}. */
  delete(apiVersion, kind, namespace, name, options = {}) {
    const grace = options.gracePeriodSeconds;
    const opts = {
      uid: options.uid ?? undefined,
      resourceVersion: options.resourceVersion ?? undefined,
      propagation: options.propagation ?? undefined,
      gracePeriodSeconds: grace === undefined || grace === null ? undefined : BigInt(grace),
    };
    const answer = requested(() => raw.delete({ apiVersion, kind }, namespace ?? undefined, name, opts));
    return answer == null ? null : object(answer);
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
        uid: regarding.uid ?? "",
      },
      eventType: type === "Warning" ? "warning" : "normal",
      reason,
      action,
      note,
    };
    requested(() => raw.recordEvent(event));
  },
};
