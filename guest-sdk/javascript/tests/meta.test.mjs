// Controller owner references and label selectors (meta.js), run by Node's test runner:
// the rules of apimachinery's GetControllerOf and LabelSelectorAsSelector, and
// controller-runtime's SetControllerReference.
import assert from "node:assert/strict";
import test from "node:test";
import * as meta from "../meta.js";

const deployment = (uid) => ({ apiVersion: "apps/v1", kind: "Deployment", namespace: "shop", name: "web", uid });

test("the controller is the reference marked controller, matched by uid", () => {
  const svc = { ownerReferences: [{ kind: "ConfigMap", uid: "u-3" }, { kind: "Deployment", uid: "u-9", controller: true }] };
  assert.equal(meta.controllerOf(svc).uid, "u-9");
  assert.ok(meta.isControlledBy(svc, deployment("u-9")));
  assert.ok(!meta.isControlledBy(svc, deployment("u-8")));
  assert.equal(meta.controllerOf({ ownerReferences: [] }), undefined);
});

test("setting the controller keeps other owners and refuses a second controller", () => {
  const svc = { metadata: { name: "web", namespace: "shop", ownerReferences: [{ kind: "ConfigMap", name: "c", uid: "u-3" }] } };
  meta.setControllerReference(deployment("u-9"), svc);
  meta.setControllerReference(deployment("u-9"), svc);
  assert.equal(svc.metadata.ownerReferences.length, 2);
  assert.deepEqual(svc.metadata.ownerReferences[1], {
    apiVersion: "apps/v1", kind: "Deployment", name: "web", uid: "u-9", controller: true, blockOwnerDeletion: true,
  });
  assert.throws(() => meta.setControllerReference(deployment("u-7"), svc), meta.AlreadyOwned);
  assert.throws(() => meta.setControllerReference(deployment("u-9"), { metadata: { namespace: "ops" } }));
  assert.throws(() => meta.controllerReference(deployment("")));
});

test("selectors", () => {
  const labels = { app: "web", tier: "front" };
  const expr = (key, operator, values) => ({ matchExpressions: [{ key, operator, values }] });
  assert.ok(meta.selectorMatches({}, labels));
  assert.ok(!meta.selectorMatches(null, labels));
  assert.ok(meta.selectorMatches({ matchLabels: { app: "web" } }, labels));
  assert.ok(!meta.selectorMatches({ matchLabels: { app: "web", tier: "back" } }, labels));
  assert.ok(meta.selectorMatches(expr("tier", "In", ["front", "edge"]), labels));
  assert.ok(!meta.selectorMatches(expr("zone", "In", ["a"]), labels));
  assert.ok(meta.selectorMatches(expr("zone", "NotIn", ["a"]), labels));
  assert.ok(!meta.selectorMatches(expr("tier", "NotIn", ["front"]), labels));
  assert.ok(meta.selectorMatches(expr("tier", "Exists"), labels));
  assert.ok(meta.selectorMatches(expr("zone", "DoesNotExist"), labels));
  for (const bad of [expr("tier", "Equals", ["a"]), expr("tier", "In", []), expr("tier", "Exists", ["a"]), expr("", "Exists")]) {
    assert.throws(() => meta.selectorMatches(bad, labels), meta.InvalidSelector);
  }
});

test("every case of the label selector corpus every SDK and the host agree on", async () => {
  const { readFile } = await import("node:fs/promises");
  const url = new URL("../../../tests/conformance/label-selectors.json", import.meta.url);
  const corpus = JSON.parse(await readFile(url, "utf8"));
  for (const c of corpus.cases) {
    if (c.expect === "invalid") {
      assert.throws(() => meta.selectorMatches(c.selector, corpus.labels), meta.InvalidSelector, c.name);
    } else {
      assert.equal(meta.selectorMatches(c.selector, corpus.labels), c.expect, c.name);
    }
  }
});
