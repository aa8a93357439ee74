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

import { Fatal, definePlugin, log } from "wink-guest";

/** The error of an object whose containers cannot be read: reported, never skipped, so that
 * an ill-formed workload cannot hide from the check. */
function malformed(obj, path, what) {
  return new Fatal(`${obj.kind} ${obj.key} is malformed: ${path} is not ${what}; its containers cannot be checked`);
}

const isMapping = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** The containers of a Pod, or of a workload's Pod template; throws a Fatal naming the field
 * when they cannot be read. */
function containers(obj) {
  const path = obj.kind === "Pod" ? "spec" : "spec.template.spec";
  const spec = obj.kind === "Pod" ? obj.body.spec : obj.body.spec?.template?.spec;
  if (spec === undefined || spec === null) return [];
  if (!isMapping(spec)) throw malformed(obj, path, "a mapping");
  const all = [];
  for (const field of ["initContainers", "containers"]) {
    const listed = spec[field] ?? [];
    if (!Array.isArray(listed)) throw malformed(obj, `${path}.${field}`, "a list");
    listed.forEach((c, i) => {
      if (!isMapping(c)) throw malformed(obj, `${path}.${field}[${i}]`, "a mapping");
      all.push(c);
    });
  }
  return all;
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
