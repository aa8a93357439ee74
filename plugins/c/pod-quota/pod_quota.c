/*
 * pod-quota: warns when a namespace runs more Pods than its quota.
 *
 * On every Pod event it counts the namespace's running Pods (phase not Succeeded or Failed)
 * in the host's cache, through the built-in `namespace` index, and warns when the count goes
 * over the quota, once per crossing; when it is back within the quota, it says so.
 *
 * Config (JSON):
 *   {"maxPods": 2, "namespaces": {"payments": 5}}
 *   maxPods     the quota of every namespace (required, a positive integer)
 *   namespaces  optional quotas per namespace, overriding maxPods
 *
 * Build with `cargo xtask build-plugins`.
 */
#include <stdlib.h>
#include <string.h>

#include "wink.h"

#define MAX_NAMESPACES 64

/* The config, copied out of the per-call arena by init. */
static char *config_json;
static long long default_quota;

/* The namespaces currently over their quota (each reported once per crossing). */
static char *over[MAX_NAMESPACES];

static long long quota_of(const char *ns) {
    long long q;
    if (wink_json_int(config_json, wink_sprintf("namespaces.%s", ns), &q) && q > 0) {
        return q;
    }
    return default_quota;
}

static bool is_over(const char *ns) {
    for (size_t i = 0; i < MAX_NAMESPACES; i++) {
        if (over[i] != NULL && strcmp(over[i], ns) == 0) return true;
    }
    return false;
}

static void set_over(const char *ns, bool value) {
    for (size_t i = 0; i < MAX_NAMESPACES; i++) {
        if (value && over[i] == NULL) {
            over[i] = strdup(ns);
            return;
        }
        if (!value && over[i] != NULL && strcmp(over[i], ns) == 0) {
            free(over[i]);
            over[i] = NULL;
            return;
        }
    }
}

static bool running(const wink_object *pod) {
    const char *phase = wink_json_string(wink_json_of(pod), "status.phase");
    return phase == NULL || (strcmp(phase, "Succeeded") != 0 && strcmp(phase, "Failed") != 0);
}

static wink_result init(const char *config) {
    if (wink_json_type_of(config, "") != WINK_JSON_OBJECT) {
        return wink_fatal("config must be an object with maxPods, e.g. {\"maxPods\": 10}");
    }
    if (!wink_json_int(config, "maxPods", &default_quota) || default_quota <= 0) {
        return wink_fatal("config.maxPods must be a positive integer");
    }
    free(config_json);
    config_json = strdup(config);
    for (size_t i = 0; i < MAX_NAMESPACES; i++) {
        free(over[i]);
        over[i] = NULL;
    }
    wink_debug("pod quota: %lld per namespace", default_quota);
    return wink_ok();
}

/* Counts the namespace's running Pods and reports a crossing of its quota. */
static wink_result check(const char *ns, const char *changed) {
    if (ns == NULL) return wink_ok();
    wink_objects pods;
    if (wink_cache_by_index("v1", "Pod", WINK_INDEX_NAMESPACE, ns, &pods) != WINK_CACHE_OK) {
        return wink_fatal("cannot list the Pods of %s: %s", ns, wink_cache_error());
    }
    long long count = 0;
    for (size_t i = 0; i < pods.len; i++) {
        if (running(&pods.items[i])) count++;
    }
    long long quota = quota_of(ns);
    if (count > quota && !is_over(ns)) {
        set_over(ns, true);
        wink_warn("namespace %s runs %lld Pods, over its quota of %lld (after %s)", ns, count, quota, changed);
    } else if (count <= quota && is_over(ns)) {
        set_over(ns, false);
        wink_info("namespace %s is back within its quota: %lld of %lld Pods", ns, count, quota);
    }
    return wink_ok();
}

static wink_result on_add(const wink_object *obj, bool initial_list) {
    return check(wink_namespace(obj), wink_key(obj));
}

static wink_result on_update(const wink_object *old, const wink_object *new_) {
    return check(wink_namespace(new_), wink_key(new_));
}

static wink_result on_delete(const wink_object *obj, bool final_state_unknown) {
    return check(wink_namespace(obj), wink_key(obj));
}

WINK_EXPORT_HANDLER(.init = init, .on_add = on_add, .on_update = on_update, .on_delete = on_delete);
