/*
 * conformance-c: the C guest of wink's conformance suite.
 *
 * Implements tests/conformance/SPEC.md with the wink C SDK (guest-sdk/c); the Rust, Python
 * and JavaScript guests beside this one implement the same lines. Build with
 * `cargo xtask build-plugins`; `cargo test -p wink-tests --test conformance` runs it.
 */
#include <stdlib.h>
#include <string.h>

#include "wink.h"

static char *lookup_key;

/* The keys already answered with a retry. */
static char **retried;
static size_t retried_len;

static bool was_retried(const char *key) {
    for (size_t i = 0; i < retried_len; i++) {
        if (strcmp(retried[i], key) == 0) return true;
    }
    return false;
}

static void remember_retry(const char *key) {
    char **grown = realloc(retried, sizeof(char *) * (retried_len + 1));
    if (grown == NULL) abort();
    retried = grown;
    retried[retried_len++] = strdup(key);
}

static const char *bool_str(bool b) {
    return b ? "true" : "false";
}

static const char *cache_error_name(wink_cache_status status) {
    return status == WINK_CACHE_NOT_PERMITTED ? "not-permitted" : "unknown-index";
}

/* A cache read that failed other than as the spec lists. */
static wink_result failed(const char *what) {
    wink_error("lookup failed %s", what);
    return wink_fatal("%s", what);
}

static wink_result init(const char *config) {
    const char *key = wink_json_string(config, "lookupKey");
    if (wink_json_type_of(config, "") != WINK_JSON_OBJECT || key == NULL) {
        return wink_fatal("bad config: lookupKey must be a string");
    }
    free(lookup_key);
    lookup_key = strdup(key);
    wink_trace("init level=trace");
    wink_debug("init level=debug");
    wink_info("init level=info");
    wink_warn("init level=warn");
    wink_error("init level=error");
    return wink_ok();
}

static wink_result lookup_get(const char *key) {
    const wink_object *cm;
    if (wink_cache_get("v1", "ConfigMap", key, &cm) != WINK_CACHE_OK) {
        return failed(wink_sprintf("get %s: %s", key, wink_cache_error()));
    }
    if (cm == NULL) {
        wink_info("lookup get key=%s found=false", key);
        return wink_ok();
    }
    const char *greeting = wink_json_string(wink_json_of(cm), "data.greeting");
    if (greeting == NULL) {
        return failed(wink_sprintf("%s has no data.greeting", key));
    }
    wink_info("lookup get key=%s found=true rv=%s greeting=%s", key, wink_resource_version(cm), greeting);
    return wink_ok();
}

static wink_result lookup(const wink_object *obj) {
    const char *ns = wink_namespace(obj) != NULL ? wink_namespace(obj) : "";
    wink_result r = lookup_get(lookup_key);
    if (r.kind != WINK_RESULT_OK) return r;
    r = lookup_get(wink_sprintf("%s/absent", ns));
    if (r.kind != WINK_RESULT_OK) return r;

    wink_objects pods;
    if (wink_cache_by_index("v1", "Pod", WINK_INDEX_NAMESPACE, ns, &pods) != WINK_CACHE_OK) {
        return failed(wink_sprintf("by-index: %s", wink_cache_error()));
    }
    size_t size = 1;
    for (size_t i = 0; i < pods.len; i++) size += strlen(wink_key(&pods.items[i])) + 1;
    char *keys = wink_alloc(size);
    keys[0] = '\0';
    for (size_t i = 0; i < pods.len; i++) {
        if (i > 0) strcat(keys, ",");
        strcat(keys, wink_key(&pods.items[i]));
    }
    wink_info("lookup index=namespace value=%s keys=%s", ns, keys);

    const wink_object *secret;
    wink_cache_status status = wink_cache_get("v1", "Secret", wink_sprintf("%s/token", ns), &secret);
    if (status == WINK_CACHE_OK) return failed("reading a Secret was not refused");
    wink_info("lookup denied resource=v1/Secret error=%s", cache_error_name(status));

    wink_objects none;
    status = wink_cache_by_index("v1", "Pod", "no-such-index", "x", &none);
    if (status == WINK_CACHE_OK) return failed("an unknown index was not refused");
    wink_info("lookup denied index=no-such-index error=%s", cache_error_name(status));
    return wink_ok();
}

/* Logs `write failed <what>` at error level and returns fatal(<what>). */
static wink_result write_failed(const char *what, wink_request_status status) {
    const char *text = wink_sprintf("%s: %s: %s", what, wink_request_status_name(status), wink_request_error());
    wink_error("write failed %s", text);
    return wink_fatal("%s", text);
}

/* A ConfigMap `name` in `ns` with data.step, at `rv` (none when NULL). */
static const char *config_map(const char *ns, const char *name, const char *step, const char *rv) {
    const char *version = rv != NULL ? wink_sprintf(",\"resourceVersion\":\"%s\"", rv) : "";
    return wink_sprintf("{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"%s\","
                        "\"namespace\":\"%s\"%s},\"data\":{\"step\":\"%s\"}}",
                        name, ns, version, step);
}

/* Step 4 of the spec: the requests to the cluster. */
static wink_result write_objects(const wink_object *obj) {
    const char *ns = wink_namespace(obj) != NULL ? wink_namespace(obj) : "";
    const char *made_name = wink_sprintf("%s-made", wink_name(obj));
    const char *made = wink_sprintf("%s/%s", ns, made_name);
    const wink_object *created, *patched, *live, *updated;
    wink_request_status status = wink_cluster_create(config_map(ns, made_name, "created", NULL), &created);
    if (status != WINK_REQUEST_OK) return write_failed("create", status);
    wink_info("write create key=%s step=%s", made, wink_json_string(wink_json_of(created), "data.step"));
    status = wink_cluster_patch("v1", "ConfigMap", ns, made_name, WINK_PATCH_MERGE, "{\"data\":{\"step\":\"patched\"}}",
                                &patched);
    if (status != WINK_REQUEST_OK) return write_failed("patch", status);
    wink_info("write patch key=%s step=%s", made, wink_json_string(wink_json_of(patched), "data.step"));
    status = wink_cluster_update(config_map(ns, made_name, "stale", wink_resource_version(created)), NULL);
    if (status != WINK_REQUEST_CONFLICT) return write_failed("a stale update", status);
    wink_info("write conflict key=%s", made);
    status = wink_cluster_get("v1", "ConfigMap", ns, made_name, &live);
    if (status != WINK_REQUEST_OK) return write_failed("get", status);
    status = wink_cluster_update(config_map(ns, made_name, "updated", wink_resource_version(live)), &updated);
    if (status != WINK_REQUEST_OK) return write_failed("update", status);
    wink_info("write update key=%s step=%s", made, wink_json_string(wink_json_of(updated), "data.step"));
    const char *secret = wink_sprintf("{\"apiVersion\":\"v1\",\"kind\":\"Secret\",\"metadata\":{\"name\":\"%s-secret\","
                                      "\"namespace\":\"%s\"}}",
                                      wink_name(obj), ns);
    status = wink_cluster_create(secret, NULL);
    if (status != WINK_REQUEST_NOT_PERMITTED) return write_failed("creating a Secret", status);
    wink_info("write denied resource=v1/Secret error=%s", wink_request_status_name(status));
    status = wink_cluster_record_event(obj, false, "Conformance", "Write", wink_sprintf("wrote %s", made));
    if (status != WINK_REQUEST_OK) return write_failed("record-event", status);
    wink_info("write event reason=Conformance");
    if (wink_now_ms() > 1700000000000LL) {
        wink_info("write clock ok");
    }
    return wink_requeue_after(1);
}

static bool labelled_true(const wink_object *obj, const char *label) {
    const char *value = wink_label(obj, label);
    return value != NULL && strcmp(value, "true") == 0;
}

/* Steps 1-3 of the spec, after the event's line. */
static wink_result react(const wink_object *obj, bool may_look_up) {
    const char *retry = wink_label(obj, "conformance/retry");
    if (retry != NULL && strcmp(retry, "once") == 0 && !was_retried(wink_key(obj))) {
        remember_retry(wink_key(obj));
        wink_info("retry key=%s", wink_key(obj));
        return wink_retry("asked to retry");
    }
    const char *fatal = wink_label(obj, "conformance/fatal");
    if (fatal != NULL && strcmp(fatal, "true") == 0) {
        wink_info("fatal key=%s", wink_key(obj));
        return wink_fatal("asked to fail");
    }
    const char *look = wink_label(obj, "conformance/lookup");
    if (may_look_up && look != NULL && strcmp(look, "true") == 0) {
        return lookup(obj);
    }
    return wink_ok();
}

static wink_result on_add(const wink_object *obj, bool initial_list) {
    wink_info("add key=%s rv=%s initial=%s", wink_key(obj), wink_resource_version(obj), bool_str(initial_list));
    wink_result r = react(obj, true);
    if (r.kind != WINK_RESULT_OK || !labelled_true(obj, "conformance/write")) return r;
    return write_objects(obj);
}

static wink_result on_update(const wink_object *old, const wink_object *new_) {
    wink_info("update key=%s old_rv=%s new_rv=%s", wink_key(new_), wink_resource_version(old), wink_resource_version(new_));
    wink_result r = react(new_, true);
    if (r.kind == WINK_RESULT_OK && labelled_true(new_, "conformance/write") &&
        strcmp(wink_resource_version(old), wink_resource_version(new_)) == 0) {
        wink_info("requeue key=%s", wink_key(new_));
    }
    return r;
}

static wink_result on_delete(const wink_object *obj, bool final_state_unknown) {
    wink_info("delete key=%s rv=%s unknown=%s", wink_key(obj), wink_resource_version(obj), bool_str(final_state_unknown));
    return react(obj, false);
}

WINK_EXPORT_HANDLER(.init = init, .on_add = on_add, .on_update = on_update, .on_delete = on_delete);
