/*
 * wink_cluster.c — the `wink_cluster_*` functions of wink.h over the generated bindings of
 * `wink:plugin/cluster`, and the wall clock.
 *
 * Arguments are lent to the host (no copies); answers are converted into the per-call arena
 * and the generated values freed at once.
 */
#include <string.h>

#include "wink.h"
#include "wink_internal.h"

static const char *last_request_error = "";

void wink_reset_request_error(void) {
    last_request_error = "";
}

const char *wink_request_error(void) {
    return last_request_error;
}

const char *wink_request_status_name(wink_request_status status) {
    static const char *const names[] = {
        "ok",       "not-permitted", "forbidden",    "not-found", "already-exists", "conflict",
        "invalid",  "bad-request",   "rate-limited", "timed-out", "unavailable",
    };
    return (size_t)status < sizeof(names) / sizeof(names[0]) ? names[status] : "unknown";
}

/* Records the error's message and returns its status; frees the generated error. */
static wink_request_status failed(wink_plugin_cluster_request_error_t *e) {
    wink_request_status status = (wink_request_status)(e->tag + 1);
    const wink_wit_string *message;
    switch (e->tag) {
    case WINK_PLUGIN_CLUSTER_REQUEST_ERROR_INVALID:
        message = &e->val.invalid.message;
        break;
    default:
        /* Every other case carries a string at the start of the union. */
        message = &e->val.not_permitted;
        break;
    }
    last_request_error = wink_copy_str(message);
    wink_plugin_cluster_request_error_free(e);
    return status;
}

static wink_request_status answered(wink_plugin_cluster_object_t *ret, const wink_object **out) {
    last_request_error = "";
    if (out != NULL) {
        wink_object *o = wink_alloc(sizeof(wink_object));
        wink_convert(ret, o);
        *out = o;
    }
    wink_plugin_cluster_object_free(ret);
    return WINK_REQUEST_OK;
}

static wink_wit_string *optional(const char *value, wink_wit_string *slot) {
    if (value == NULL) {
        return NULL;
    }
    wink_wit_string_set(slot, value);
    return slot;
}

wink_request_status wink_cluster_get(const char *api_version, const char *kind, const char *namespace_,
                                     const char *name, const wink_object **out) {
    wink_plugin_cluster_resource_t r = wink_resource(api_version, kind);
    wink_wit_string ns, n;
    wink_wit_string_set(&n, name);
    wink_plugin_cluster_object_t ret;
    wink_plugin_cluster_request_error_t e;
    if (!wink_plugin_cluster_get(&r, optional(namespace_, &ns), &n, &ret, &e)) {
        return failed(&e);
    }
    return answered(&ret, out);
}

typedef bool (*body_call)(wink_wit_string *, wink_plugin_cluster_object_t *,
                          wink_plugin_cluster_request_error_t *);

static wink_request_status with_body(body_call call, const char *json, const wink_object **out) {
    wink_wit_string body;
    wink_wit_string_set(&body, json);
    wink_plugin_cluster_object_t ret;
    wink_plugin_cluster_request_error_t e;
    if (!call(&body, &ret, &e)) {
        return failed(&e);
    }
    return answered(&ret, out);
}

wink_request_status wink_cluster_create(const char *json, const wink_object **out) {
    return with_body(wink_plugin_cluster_create, json, out);
}

wink_request_status wink_cluster_update(const char *json, const wink_object **out) {
    return with_body(wink_plugin_cluster_update, json, out);
}

wink_request_status wink_cluster_update_status(const char *json, const wink_object **out) {
    return with_body(wink_plugin_cluster_update_status, json, out);
}

typedef bool (*patch_call)(wink_plugin_cluster_resource_t *, wink_wit_string *, wink_wit_string *,
                           wink_plugin_cluster_patch_document_t *, wink_plugin_cluster_object_t *,
                           wink_plugin_cluster_request_error_t *);

static wink_request_status patch_with(patch_call call, const char *api_version, const char *kind,
                                      const char *namespace_, const char *name, wink_patch_type type,
                                      const char *patch, const wink_object **out) {
    wink_plugin_cluster_resource_t r = wink_resource(api_version, kind);
    wink_wit_string ns, n;
    wink_wit_string_set(&n, name);
    wink_plugin_cluster_patch_document_t doc;
    switch (type) {
    case WINK_PATCH_JSON:
        doc.tag = WINK_PLUGIN_CLUSTER_PATCH_DOCUMENT_JSON;
        wink_wit_string_set(&doc.val.json, patch);
        break;
    case WINK_PATCH_STRATEGIC:
        doc.tag = WINK_PLUGIN_CLUSTER_PATCH_DOCUMENT_STRATEGIC_MERGE;
        wink_wit_string_set(&doc.val.strategic_merge, patch);
        break;
    case WINK_PATCH_APPLY:
    case WINK_PATCH_APPLY_FORCE:
        doc.tag = WINK_PLUGIN_CLUSTER_PATCH_DOCUMENT_APPLY;
        wink_wit_string_set(&doc.val.apply.body, patch);
        doc.val.apply.force = type == WINK_PATCH_APPLY_FORCE;
        break;
    default:
        doc.tag = WINK_PLUGIN_CLUSTER_PATCH_DOCUMENT_MERGE;
        wink_wit_string_set(&doc.val.merge, patch);
        break;
    }
    wink_plugin_cluster_object_t ret;
    wink_plugin_cluster_request_error_t e;
    if (!call(&r, optional(namespace_, &ns), &n, &doc, &ret, &e)) {
        return failed(&e);
    }
    return answered(&ret, out);
}

wink_request_status wink_cluster_patch(const char *api_version, const char *kind, const char *namespace_,
                                       const char *name, wink_patch_type type, const char *patch,
                                       const wink_object **out) {
    return patch_with(wink_plugin_cluster_patch, api_version, kind, namespace_, name, type, patch, out);
}

wink_request_status wink_cluster_patch_status(const char *api_version, const char *kind, const char *namespace_,
                                              const char *name, wink_patch_type type, const char *patch,
                                              const wink_object **out) {
    return patch_with(wink_plugin_cluster_patch_status, api_version, kind, namespace_, name, type, patch, out);
}

wink_request_status wink_cluster_delete(const char *api_version, const char *kind, const char *namespace_,
                                        const char *name, const wink_object **remaining) {
    wink_plugin_cluster_resource_t r = wink_resource(api_version, kind);
    wink_wit_string ns, n;
    wink_wit_string_set(&n, name);
    wink_plugin_cluster_delete_options_t options;
    memset(&options, 0, sizeof(options));
    wink_plugin_cluster_option_object_t ret;
    wink_plugin_cluster_request_error_t e;
    if (remaining != NULL) {
        *remaining = NULL;
    }
    if (!wink_plugin_cluster_delete(&r, optional(namespace_, &ns), &n, &options, &ret, &e)) {
        return failed(&e);
    }
    last_request_error = "";
    if (ret.is_some && remaining != NULL) {
        wink_object *o = wink_alloc(sizeof(wink_object));
        wink_convert(&ret.val, o);
        *remaining = o;
    }
    wink_plugin_cluster_option_object_free(&ret);
    return WINK_REQUEST_OK;
}

wink_request_status wink_cluster_record_event(const wink_object *regarding, bool warning, const char *reason,
                                              const char *action, const char *note) {
    wink_plugin_cluster_event_t event;
    memset(&event, 0, sizeof(event));
    const char *namespace_ = wink_namespace(regarding);
    wink_wit_string_set(&event.regarding.api_version, wink_api_version(regarding));
    wink_wit_string_set(&event.regarding.kind, wink_kind(regarding));
    event.regarding.namespace_.is_some = namespace_ != NULL;
    if (namespace_ != NULL) {
        wink_wit_string_set(&event.regarding.namespace_.val, namespace_);
    }
    wink_wit_string_set(&event.regarding.name, wink_name(regarding));
    wink_wit_string_set(&event.regarding.uid, wink_uid(regarding));
    event.event_type = warning ? WINK_PLUGIN_CLUSTER_EVENT_TYPE_WARNING : WINK_PLUGIN_CLUSTER_EVENT_TYPE_NORMAL;
    wink_wit_string_set(&event.reason, reason);
    wink_wit_string_set(&event.action, action);
    wink_wit_string_set(&event.note, note);
    wink_plugin_cluster_request_error_t e;
    if (!wink_plugin_cluster_record_event(&event, &e)) {
        return failed(&e);
    }
    last_request_error = "";
    return WINK_REQUEST_OK;
}

int64_t wink_now_ms(void) {
    wasi_clocks_wall_clock_datetime_t now;
    wasi_clocks_wall_clock_now(&now);
    return (int64_t)now.seconds * 1000 + (int64_t)(now.nanoseconds / 1000000);
}
