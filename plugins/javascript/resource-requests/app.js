// resource-requests: warns about containers that do not declare the resource requests and
// limits the cluster's policy requires (the scheduler cannot place, and the kubelet cannot
// protect, what it does not know the size of).
//
// It checks every container of every Pod, and of every Deployment's Pod template, when the
// object appears and when its containers change (not on every resync).
//
// Config:
//   requests: [cpu, memory]   # resources every container must request (default: cpu, memory)
//   limits: [memory]          # resources every container must limit (default: none)
//
// Build with `cargo xtask build-plugins`.

import { definePlugin, log } from "wink-guest";

/** The containers of a Pod, or of a workload's Pod template. */
function containers(obj) {
  const spec = obj.kind === "Pod" ? obj.body.spec : obj.body.spec?.template?.spec;
  return [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])];
}

function names(list, field) {
  if (list === undefined) return [];
  if (!Array.isArray(list) || !list.every((r) => typeof r === "string")) {
    throw new Error(`config.${field} must be a list of resource names, like [cpu, memory]`);
  }
  return list;
}

export const handler = definePlugin(() => {
  let required = { requests: ["cpu", "memory"], limits: [] };

  function check(obj) {
    let missing = 0;
    for (const c of containers(obj)) {
      const resources = c.resources ?? {};
      const lacks = [];
      for (const kind of ["requests", "limits"]) {
        for (const r of required[kind]) {
          if (resources[kind]?.[r] === undefined) lacks.push(`${kind}.${r}`);
        }
      }
      if (lacks.length > 0) {
        missing++;
        log.warn(`${obj.kind} ${obj.key}: container ${c.name} sets no ${lacks.join(", ")}`);
      }
    }
    if (missing === 0) log.debug(`${obj.kind} ${obj.key}: every container is sized`);
  }

  return {
    init(config) {
      if (config === null) return;
      if (typeof config !== "object" || Array.isArray(config)) {
        throw new Error("config must be a mapping with `requests` and `limits` lists");
      }
      required = {
        requests: config.requests === undefined ? required.requests : names(config.requests, "requests"),
        limits: names(config.limits, "limits"),
      };
      log.debug(`required: requests ${required.requests.join(",")}; limits ${required.limits.join(",")}`);
    },
    onAdd(obj) {
      check(obj);
    },
    onUpdate(old, obj) {
      if (JSON.stringify(containers(old)) !== JSON.stringify(containers(obj))) check(obj);
    },
  };
});
