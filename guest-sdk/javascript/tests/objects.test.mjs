// KubeObject and Key (objects.js), run by Node's test runner: a lent object reads each part
// from its handle on demand, once, and refuses to be read after its loan ended.
import assert from "node:assert/strict";
import test from "node:test";
import { ExpiredObject, Key, KubeObject } from "../objects.js";

const META = {
  apiVersion: "apps/v1",
  kind: "Deployment",
  namespace: "shop",
  name: "web",
  uid: "u-1",
  resourceVersion: "7",
  generation: 3n,
  labels: [["app", "web"]],
  annotations: [["note", "x"]],
  deletionTimestamp: undefined,
  ownerReferences: [{ apiVersion: "v1", kind: "ConfigMap", name: "c", uid: "u-2", controller: true }],
};
const JSON_TEXT = '{"apiVersion":"apps/v1","kind":"Deployment","spec":{"replicas":2}}';

/** An `event-object` handle that counts the calls of each method. */
function handle(meta = META) {
  const calls = {};
  const count = (name, value) => () => {
    calls[name] = (calls[name] ?? 0) + 1;
    return value;
  };
  return {
    calls,
    apiVersion: count("apiVersion", meta.apiVersion),
    kind: count("kind", meta.kind),
    namespace: count("namespace", meta.namespace),
    name: count("name", meta.name),
    uid: count("uid", meta.uid),
    resourceVersion: count("resourceVersion", meta.resourceVersion),
    generation: count("generation", meta.generation),
    label: (key) => {
      calls.label = (calls.label ?? 0) + 1;
      return new Map(meta.labels).get(key);
    },
    annotation: (key) => {
      calls.annotation = (calls.annotation ?? 0) + 1;
      return new Map(meta.annotations).get(key);
    },
    meta: count("meta", meta),
    json: count("json", JSON_TEXT),
  };
}

test("a lent object reads only what is used, each part once", () => {
  const h = handle();
  const obj = KubeObject.lent(h);
  assert.equal(obj.name, "web");
  assert.equal(obj.name, "web");
  assert.equal(obj.key, "shop/web");
  assert.equal(obj.label("app"), "web");
  assert.equal(obj.label("tier"), undefined);
  assert.deepEqual(h.calls, { name: 1, namespace: 1, label: 2 });
  assert.equal(obj.generation, 3);
  assert.equal(obj.body.spec.replicas, 2);
  assert.equal(obj.body.spec.replicas, 2);
  assert.equal(h.calls.json, 1);
});

test("the metadata lists are read at once, then labels come from them", () => {
  const h = handle();
  const obj = KubeObject.lent(h);
  assert.deepEqual(obj.labels, { app: "web" });
  assert.equal(obj.label("app"), "web");
  assert.equal(obj.annotation("note"), "x");
  assert.equal(obj.owner("ConfigMap").uid, "u-2");
  assert.equal(obj.deletionTimestamp, null);
  assert.deepEqual(h.calls, { meta: 1 });
});

test("a lent object read after its call throws ExpiredObject; a snapshot stays", () => {
  const obj = KubeObject.lent(handle());
  assert.equal(obj.name, "web");
  obj._expire();
  const other = KubeObject.lent(handle());
  const kept = other.snapshot();
  other._expire();
  assert.equal(obj.name, "web", "what was read stays readable");
  assert.throws(() => obj.uid, ExpiredObject);
  assert.throws(() => obj.label("app"), ExpiredObject);
  assert.equal(kept.uid, "u-1");
  assert.equal(kept.label("app"), "web");
  assert.equal(kept.body.kind, "Deployment");
});

test("a whole object (from the cache) holds every part; cluster-scoped keys have no namespace", () => {
  const obj = new KubeObject({ meta: { ...META, namespace: undefined, generation: undefined }, json: JSON_TEXT });
  assert.equal(obj.namespace, null);
  assert.equal(obj.key, "web");
  assert.equal(obj.generation, null);
  assert.equal(obj.snapshot(), obj);
  assert.equal(JSON.stringify(obj), JSON_TEXT);
  assert.equal(String(obj), "Deployment web");
});

test("a key names namespace/name, or name when cluster-scoped", () => {
  assert.equal(String(new Key("shop", "web")), "shop/web");
  assert.equal(new Key(undefined, "node-1").key, "node-1");
  assert.equal(new Key(null, "node-1").namespace, null);
  assert.deepEqual(Key.of({ namespace: "shop", name: "web" }), new Key("shop", "web"));
});
