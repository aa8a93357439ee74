// Kubernetes objects as the host hands them to a plugin. It makes no host call (the handle
// of a lent object is passed in), so its tests run in Node: `node --test tests/`.
//
// A handler's objects are lent by the host (wink:plugin@0.4.0's `event-object`) and read on
// demand: `obj.name` or `obj.label("app")` copies only that string into the plugin, and each
// part is read once. Objects from `cache` and `cluster` arrive whole. A lent object is valid
// during its handler call only: keep the values you need (or `obj.snapshot()`), not the
// object.

/** A lent object was read after its handler call returned. */
export class ExpiredObject extends Error {
  constructor() {
    super(
      "a KubeObject lent to a handler was read after the handler returned: keep the values " +
        "you need, or obj.snapshot(), instead of the object",
    );
    this.name = "ExpiredObject";
  }
}

// How each scalar of a lent object is read from its handle.
const LENT = {
  apiVersion: (h) => h.apiVersion(),
  kind: (h) => h.kind(),
  namespace: (h) => h.namespace() ?? null,
  name: (h) => h.name(),
  uid: (h) => h.uid(),
  resourceVersion: (h) => h.resourceVersion(),
  generation: (h) => generation(h.generation()),
  json: (h) => h.json(),
};

// The parts read from the whole metadata record at once.
const META = ["labels", "annotations", "deletionTimestamp", "ownerReferences"];

// `metadata.generation` crosses as an s64 (a BigInt), or undefined.
function generation(value) {
  return value === undefined || value === null ? null : Number(value);
}

function metaParts(m) {
  return {
    labels: Object.fromEntries(m.labels),
    annotations: Object.fromEntries(m.annotations),
    deletionTimestamp: m.deletionTimestamp ?? null,
    ownerReferences: m.ownerReferences.map((o) => ({
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.name,
      uid: o.uid,
      controller: o.controller,
    })),
  };
}

/** A Kubernetes object: its metadata (`name`, `namespace` — null when cluster-scoped —,
 * `labels`, …), parsed by the host, and the whole object as the API server sent it (`json`,
 * parsed on first use of `body`). */
export class KubeObject {
  /** A whole object, from a WIT `object` record (what `cache` and `cluster` return). */
  constructor(raw) {
    const m = raw.meta;
    this._lent = null;
    this._read = {
      apiVersion: m.apiVersion,
      kind: m.kind,
      namespace: m.namespace ?? null,
      name: m.name,
      uid: m.uid,
      resourceVersion: m.resourceVersion,
      generation: generation(m.generation),
      json: raw.json,
      ...metaParts(m),
    };
    this._body = undefined;
  }

  /** An object lent for one handler call, read on demand through `handle` (an
   * `event-object`). */
  static lent(handle) {
    const obj = Object.create(KubeObject.prototype);
    obj._lent = handle;
    obj._read = {};
    obj._body = undefined;
    return obj;
  }

  _handle() {
    if (this._lent === null) throw new ExpiredObject();
    return this._lent;
  }

  _part(name) {
    if (!(name in this._read)) {
      if (name in LENT) this._read[name] = LENT[name](this._handle());
      else Object.assign(this._read, metaParts(this._handle().meta()));
    }
    return this._read[name];
  }

  /** Ends the loan (the host drops the handle when the call returns). */
  _expire() {
    this._lent = null;
  }

  /** `apiVersion`, e.g. `apps/v1`. */
  get apiVersion() {
    return this._part("apiVersion");
  }
  /** `kind`, e.g. `Deployment`. */
  get kind() {
    return this._part("kind");
  }
  /** `metadata.namespace`; null for cluster-scoped objects. */
  get namespace() {
    return this._part("namespace");
  }
  /** `metadata.name`. */
  get name() {
    return this._part("name");
  }
  /** `metadata.uid`; empty when the object has none. */
  get uid() {
    return this._part("uid");
  }
  /** `metadata.resourceVersion`; empty when the object has none. */
  get resourceVersion() {
    return this._part("resourceVersion");
  }
  /** `metadata.generation`, or null. */
  get generation() {
    return this._part("generation");
  }
  /** `metadata.labels`, as an object. */
  get labels() {
    return this._part("labels");
  }
  /** `metadata.annotations`, as an object. */
  get annotations() {
    return this._part("annotations");
  }
  /** `metadata.deletionTimestamp` (RFC 3339) while the object is being deleted, else null. */
  get deletionTimestamp() {
    return this._part("deletionTimestamp");
  }
  /** `metadata.ownerReferences`: {apiVersion, kind, name, uid, controller}. */
  get ownerReferences() {
    return this._part("ownerReferences");
  }
  /** The object as JSON text, exactly as served. */
  get json() {
    return this._part("json");
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

  /** The value of label `key`, or undefined (one string read from a lent object). */
  label(key) {
    const read = this._read.labels;
    if (read !== undefined) return Object.hasOwn(read, key) ? read[key] : undefined;
    return this._handle().label(key) ?? undefined;
  }

  /** The value of annotation `key`, or undefined. */
  annotation(key) {
    const read = this._read.annotations;
    if (read !== undefined) return Object.hasOwn(read, key) ? read[key] : undefined;
    return this._handle().annotation(key) ?? undefined;
  }

  /** The first owner of this kind, preferring the controller, or undefined. */
  owner(kind) {
    const owners = this.ownerReferences.filter((o) => o.kind === kind);
    return owners.find((o) => o.controller) ?? owners[0];
  }

  /** This object read whole, valid after the handler returns. */
  snapshot() {
    if (this._lent === null) return this;
    const whole = Object.create(KubeObject.prototype);
    whole._lent = null;
    whole._read = {};
    for (const name of [...Object.keys(LENT), ...META]) whole._read[name] = this._part(name);
    whole._body = this._body;
    return whole;
  }

  /** `JSON.stringify(obj)` writes the whole object. */
  toJSON() {
    return this.body;
  }

  toString() {
    return `${this.kind} ${this.key}`;
  }
}

/** The key of a reconciler's primary object: its namespace (null when cluster-scoped) and
 * name. */
export class Key {
  constructor(namespace, name) {
    this.namespace = namespace ?? null;
    this.name = name;
  }

  /** The key of `obj` (a KubeObject, or anything with `namespace` and `name`). */
  static of(obj) {
    return new Key(obj.namespace, obj.name);
  }

  /** `namespace/name`, or `name`: the cache key (`cache.get(..., key.key)`). */
  get key() {
    return this.namespace === null ? this.name : `${this.namespace}/${this.name}`;
  }

  toString() {
    return this.key;
  }
}
