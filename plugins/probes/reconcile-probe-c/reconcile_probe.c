/*
 * reconcile-probe-c: the reconcile probe of plugins/probes/reconcile-probe in C, for the
 * tests of the reconciler machinery (tests/tests/reconcilers.rs), which run the probes of
 * every language with the same outcomes (tests/conformance/SPEC.md, "Reconcilers").
 */
#include <stdlib.h>
#include <string.h>

#include "wink.h"

#define MAX_KEYS 64

/* What the probe remembers per key across calls (copied out of the per-call arena). */
typedef struct seen {
    char *key;
    bool enqueued;
    long long failures;
} seen;

static seen keys[MAX_KEYS];

/* The entry of `key`, added on first use; NULL when the table is full. */
static seen *entry(const char *key) {
    for (size_t i = 0; i < MAX_KEYS; i++) {
        if (keys[i].key == NULL) {
            keys[i].key = strdup(key);
            return keys[i].key != NULL ? &keys[i] : NULL;
        }
        if (strcmp(keys[i].key, key) == 0) {
            return &keys[i];
        }
    }
    return NULL;
}

static wink_result reconcile(const wink_object_key *key) {
    const char *name = wink_key_string(key);
    wink_info("reconcile key=%s", name);
    const wink_object *config_map;
    if (wink_cache_get("v1", "ConfigMap", name, &config_map) != WINK_CACHE_OK) {
        return wink_fatal("reading the cache: %s", wink_cache_error());
    }
    if (config_map == NULL) {
        wink_info("gone key=%s", name);
        return wink_ok();
    }
    seen *state = entry(name);
    if (state == NULL) {
        return wink_fatal("more than %d keys", MAX_KEYS);
    }
    const char *json = wink_json_of(config_map);
    const char *other = wink_json_string(json, "data.enqueue");
    if (other != NULL && !state->enqueued) {
        state->enqueued = true;
        wink_object_key target = {key->namespace_, other};
        wink_enqueue(&target, 0);
        wink_info("enqueued other=%s", wink_key_string(&target));
    }
    const char *fail = wink_json_string(json, "data.fail");
    if (fail != NULL) {
        long long times = strtoll(fail, NULL, 10);
        long long attempt = ++state->failures;
        if (attempt <= times) {
            wink_info("fail key=%s attempt=%lld", name, attempt);
            return wink_retry("asked to fail %lld times", times);
        }
        if (attempt == times + 1) {
            wink_info("recovered key=%s", name);
        }
    }
    return wink_ok();
}

static wink_object_keys map_to_keys(const wink_object *obj) {
    wink_object_keys none = {NULL, 0};
    const char *target = wink_annotation(obj, "probe/for");
    if (target == NULL || target[0] == '\0') {
        return none;
    }
    wink_object_key *key = wink_alloc(sizeof *key);
    key->namespace_ = wink_namespace(obj);
    key->name = target;
    wink_info("map secret=%s to=%s", wink_key(obj), wink_key_string(key));
    wink_object_keys mapped = {key, 1};
    return mapped;
}

WINK_EXPORT_RECONCILER(.reconcile = reconcile, .map_to_keys = map_to_keys);
