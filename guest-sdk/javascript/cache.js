// Read-only access to the host's informer cache, limited to what the manifest watches or
// grants.

import * as raw from "wink:plugin/cache@0.4.0";

import { CacheError, variantOf } from "./errors.js";
import { KubeObject } from "./objects.js";

function read(call) {
  try {
    return call();
  } catch (e) {
    const refused = variantOf(e);
    throw refused ? new CacheError(refused.tag, String(refused.val)) : e;
  }
}

/** Reads of the host's cache. Refused reads throw a CacheError. Results are sorted by key. */
export const cache = {
  /** The built-in index of objects by namespace. */
  NAMESPACE_INDEX: "namespace",
  /** The built-in index of objects by the uid of each of their ownerReferences. */
  OWNER_UID_INDEX: "owner-uid",

  /** The object of (apiVersion, kind) with this key ("namespace/name" or "name"; a Key
   * works too), or null. */
  get(apiVersion, kind, key) {
    const found = read(() => raw.get({ apiVersion, kind }, String(key)));
    return found == null ? null : new KubeObject(found);
  },

  /** Every cached object of the resource, or those in `namespace`. */
  list(apiVersion, kind, namespace = null) {
    return read(() => raw.list({ apiVersion, kind }, namespace ?? undefined)).map((o) => new KubeObject(o));
  },

  /** The objects whose index `index` yields `value`. */
  byIndex(apiVersion, kind, index, value) {
    return read(() => raw.byIndex({ apiVersion, kind }, index, value)).map((o) => new KubeObject(o));
  },
};
