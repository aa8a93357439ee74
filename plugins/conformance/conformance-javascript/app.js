// conformance-javascript: the JavaScript guest of wink's conformance suite.
//
// Implements tests/conformance/SPEC.md with the wink-guest SDK; the Rust, Python and C
// guests beside this one implement the same lines. Build with `cargo xtask build-plugins`;
// `cargo test -p wink-tests --test conformance` runs it.

import { CacheError, Fatal, RequestError, Retry, cache, cluster, definePlugin, log, requeueAfter } from "wink-guest";

/** A cache read that failed other than as the spec lists. */
function failed(what) {
  log.error(`lookup failed ${what}`);
  return new Fatal(what);
}

function lookupGet(key) {
  let cm;
  try {
    cm = cache.get("v1", "ConfigMap", key);
  } catch (e) {
    throw failed(`get ${key}: ${e.message}`);
  }
  if (cm === null) {
    log.info(`lookup get key=${key} found=false`);
    return;
  }
  const greeting = cm.body?.data?.greeting;
  if (typeof greeting !== "string") throw failed(`${key} has no data.greeting`);
  log.info(`lookup get key=${key} found=true rv=${cm.resourceVersion} greeting=${greeting}`);
}

function denied(read) {
  try {
    read();
  } catch (e) {
    if (e instanceof CacheError) return e.reason;
    throw e;
  }
  return null;
}

/** A request that failed other than as the spec lists. */
function writeFailed(what) {
  log.error(`write failed ${what}`);
  return new Fatal(what);
}

/** Runs a request; a failure is `write failed <what>`. */
function send(what, request) {
  try {
    return request();
  } catch (e) {
    throw writeFailed(`${what}: ${e instanceof RequestError ? `${e.reason}: ${e.message}` : e}`);
  }
}

/** The reason of the RequestError `request` fails with (null when it succeeds). */
function refusal(request) {
  try {
    request();
  } catch (e) {
    if (e instanceof RequestError) return e.reason;
    throw e;
  }
  return null;
}

/** Step 4 of the spec: the requests to the cluster. */
function write(obj) {
  const ns = obj.namespace ?? "";
  const madeName = `${obj.name}-made`;
  const made = `${ns}/${madeName}`;
  const configMap = (step) => ({
    apiVersion: "v1",
    kind: "ConfigMap",
    metadata: { name: madeName, namespace: ns },
    data: { step },
  });
  const created = send("create", () => cluster.create(configMap("created")));
  log.info(`write create key=${made} step=${created.body.data.step}`);
  const patched = send("patch", () => cluster.patch("v1", "ConfigMap", ns, madeName, { data: { step: "patched" } }));
  log.info(`write patch key=${made} step=${patched.body.data.step}`);
  const stale = created.body;
  stale.data.step = "stale";
  const conflict = refusal(() => cluster.update(stale));
  if (conflict !== "conflict") throw writeFailed(`a stale update ended with ${conflict}`);
  log.info(`write conflict key=${made}`);
  const live = send("get", () => cluster.get("v1", "ConfigMap", ns, madeName)).body;
  live.data.step = "updated";
  const updated = send("update", () => cluster.update(live));
  log.info(`write update key=${made} step=${updated.body.data.step}`);
  const secret = { apiVersion: "v1", kind: "Secret", metadata: { name: `${obj.name}-secret`, namespace: ns } };
  const denied = refusal(() => cluster.create(secret));
  if (denied !== "not-permitted") throw writeFailed(`creating a Secret ended with ${denied}`);
  log.info(`write denied resource=v1/Secret error=${denied}`);
  send("record-event", () => cluster.recordEvent(obj, "Normal", "Conformance", "Write", `wrote ${made}`));
  log.info("write event reason=Conformance");
  if (Date.now() > 1700000000000) log.info("write clock ok");
  return requeueAfter(1);
}

export const handler = definePlugin(() => {
  let lookupKey = "";
  const retried = new Set();

  function lookup(obj) {
    const ns = obj.namespace ?? "";
    lookupGet(lookupKey);
    lookupGet(`${ns}/absent`);
    let pods;
    try {
      pods = cache.byIndex("v1", "Pod", cache.NAMESPACE_INDEX, ns);
    } catch (e) {
      throw failed(`by-index: ${e.message}`);
    }
    log.info(`lookup index=namespace value=${ns} keys=${pods.map((p) => p.key).join(",")}`);
    const secret = denied(() => cache.get("v1", "Secret", `${ns}/token`));
    if (secret === null) throw failed("reading a Secret was not refused");
    log.info(`lookup denied resource=v1/Secret error=${secret}`);
    const index = denied(() => cache.byIndex("v1", "Pod", "no-such-index", "x"));
    if (index === null) throw failed("an unknown index was not refused");
    log.info(`lookup denied index=no-such-index error=${index}`);
  }

  function react(obj, mayLookUp) {
    if (obj.label("conformance/retry") === "once" && !retried.has(obj.key)) {
      retried.add(obj.key);
      log.info(`retry key=${obj.key}`);
      throw new Retry("asked to retry");
    }
    if (obj.label("conformance/fatal") === "true") {
      log.info(`fatal key=${obj.key}`);
      throw new Fatal("asked to fail");
    }
    if (mayLookUp && obj.label("conformance/lookup") === "true") lookup(obj);
  }

  return {
    init(config) {
      if (config === null || typeof config !== "object" || typeof config.lookupKey !== "string") {
        throw new Error("bad config: lookupKey must be a string");
      }
      lookupKey = config.lookupKey;
      log.trace("init level=trace");
      log.debug("init level=debug");
      log.info("init level=info");
      log.warn("init level=warn");
      log.error("init level=error");
    },
    onAdd(obj, initialList) {
      log.info(`add key=${obj.key} rv=${obj.resourceVersion} initial=${initialList}`);
      react(obj, true);
      if (obj.label("conformance/write") === "true") return write(obj);
      return undefined;
    },
    onUpdate(old, obj) {
      log.info(`update key=${obj.key} old_rv=${old.resourceVersion} new_rv=${obj.resourceVersion}`);
      react(obj, true);
      if (obj.label("conformance/write") === "true" && old.resourceVersion === obj.resourceVersion) {
        log.info(`requeue key=${obj.key}`);
      }
      return undefined;
    },
    onDelete(obj, finalStateUnknown) {
      log.info(`delete key=${obj.key} rv=${obj.resourceVersion} unknown=${finalStateUnknown}`);
      react(obj, false);
    },
  };
});
