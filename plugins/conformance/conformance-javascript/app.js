// conformance-javascript: the JavaScript guest of wink's conformance suite.
//
// Implements tests/conformance/SPEC.md with the wink-guest SDK; the Rust, Python and C
// guests beside this one implement the same lines. Build with `cargo xtask build-plugins`;
// `cargo test -p wink-tests --test conformance` runs it.

import { CacheError, Fatal, Retry, cache, definePlugin, log } from "wink-guest";

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
    },
    onUpdate(old, obj) {
      log.info(`update key=${obj.key} old_rv=${old.resourceVersion} new_rv=${obj.resourceVersion}`);
      react(obj, true);
    },
    onDelete(obj, finalStateUnknown) {
      log.info(`delete key=${obj.key} rv=${obj.resourceVersion} unknown=${finalStateUnknown}`);
      react(obj, false);
    },
  };
});
