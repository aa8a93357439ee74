/*
 * wink.h — write wink plugins in C: handlers and reconcilers.
 *
 * A handler plugin fills in a `wink_handler` with the events it handles and exports it:
 *
 *     #include "wink.h"
 *
 *     static wink_result on_add(const wink_object *obj, bool initial_list) {
 *         wink_info("%s %s appeared", wink_kind(obj), wink_key(obj));
 *         return wink_ok();
 *     }
 *
 *     WINK_EXPORT_HANDLER(.on_add = on_add);
 *
 * A reconciler (a manifest with `reconcile:`) exports a `wink_reconciler` instead:
 *
 *     static wink_result reconcile(const wink_object_key *key) {
 *         const wink_object *deployment;
 *         wink_cache_get("apps/v1", "Deployment", wink_key_string(key), &deployment);
 *         ...
 *     }
 *
 *     WINK_EXPORT_RECONCILER(.reconcile = reconcile);
 *
 * This header hides the bindings wit-bindgen generates for wit/v0.4.0/ (WINK_WIT_VERSION):
 * objects are read with functions (`wink_name(obj)`, `wink_label(obj, "app")`,
 * `wink_json_of(obj)`) that return NUL-terminated strings and, for the objects a callback is
 * lent, ask the host for only that part, once; logging is printf-style, errors are `wink_retry` /
 * `wink_fatal`, `wink_requeue_after` asks to be called again later, and the `wink_cluster_*`
 * functions send requests to the cluster (objects and patches as JSON strings).
 *
 * Memory: everything the SDK hands you (objects, their strings, cache results, strings from
 * the JSON helpers and `wink_sprintf`) lives until your callback returns, then the SDK frees
 * it. Never free it yourself; copy what you keep across calls.
 *
 * Build with `cargo xtask build-plugins` (guest-sdk/c/README.md says how).
 */
#ifndef WINK_H
#define WINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The version of the WIT package (`wink:plugin`) this SDK implements. */
#define WINK_WIT_VERSION "0.4.0"

/* The version of this SDK (semver; see CHANGELOG.md). */
#define WINK_SDK_VERSION "0.5.0"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- objects ------------------------------------------------------------------------- */

/* A label or annotation. */
typedef struct wink_pair {
    const char *key;
    const char *value;
} wink_pair;

/* One entry of metadata.ownerReferences. */
typedef struct wink_owner_ref {
    const char *api_version;
    const char *kind;
    const char *name;
    const char *uid;
    bool controller;
} wink_owner_ref;

/* The metadata beyond an object's identity. */
typedef struct wink_meta {
    const wink_pair *labels; /* sorted by key */
    size_t labels_len;
    const wink_pair *annotations; /* sorted by key */
    size_t annotations_len;
    const char *deletion_timestamp; /* NULL unless the object is being deleted */
    const wink_owner_ref *owner_refs;
    size_t owner_refs_len;
} wink_meta;

/*
 * A Kubernetes object. Read it with the functions below. The objects a callback receives are
 * lent by the host: each function asks the host for its part on first use and keeps it, so a
 * callback that reads a name pays for the name only. Objects from the cache and the cluster
 * arrive whole. The fields are the SDK's own.
 */
typedef struct wink_object {
    int32_t _handle; /* the lent handle, while lent */
    bool _lent;
    unsigned _read; /* the parts read so far (bits) */
    const char *_api_version, *_kind, *_namespace, *_name, *_key, *_uid, *_resource_version, *_json;
    size_t _json_len;
    bool _has_generation;
    int64_t _generation;
    wink_meta _meta;
} wink_object;

/* A list of objects, from the cache. */
typedef struct wink_objects {
    const wink_object *items;
    size_t len;
} wink_objects;

/* "v1", "apps/v1". */
const char *wink_api_version(const wink_object *obj);
/* "Pod". */
const char *wink_kind(const wink_object *obj);
/* metadata.namespace, or NULL for cluster-scoped objects. */
const char *wink_namespace(const wink_object *obj);
/* metadata.name. */
const char *wink_name(const wink_object *obj);
/* "namespace/name", or "name" when cluster-scoped. */
const char *wink_key(const wink_object *obj);
/* metadata.uid ("" when the object has none). */
const char *wink_uid(const wink_object *obj);
/* metadata.resourceVersion ("" when the object has none). */
const char *wink_resource_version(const wink_object *obj);
/* metadata.generation into *out; false when it is not set. */
bool wink_generation(const wink_object *obj, int64_t *out);
/* The value of the label `key`, or NULL (one string read from a lent object). */
const char *wink_label(const wink_object *obj, const char *key);
/* The value of the annotation `key`, or NULL. */
const char *wink_annotation(const wink_object *obj, const char *key);
/* Labels, annotations, owner references and the deletion timestamp, read at once. */
const wink_meta *wink_meta_of(const wink_object *obj);
/* The whole object as the API server served it (JSON), for the wink_json_* readers. */
const char *wink_json_of(const wink_object *obj);

/* ---- results ------------------------------------------------------------------------- */

typedef enum wink_result_kind {
    WINK_RESULT_OK = 0,
    /* A transient failure: the host calls again later, with backoff, with the newest state. */
    WINK_RESULT_RETRY = 1,
    /* A permanent failure for this event: the host records it and moves on. */
    WINK_RESULT_FATAL = 2,
    /* Success; call again for this object after `requeue_after_ms`, with its newest state. */
    WINK_RESULT_REQUEUE = 3,
} wink_result_kind;

/* What a callback returns. Make one with wink_ok(), wink_retry() or wink_fatal(). */
typedef struct wink_result {
    wink_result_kind kind;
    const char *message;
    uint64_t requeue_after_ms;
} wink_result;

wink_result wink_ok(void);
wink_result wink_retry(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
wink_result wink_fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Success, and a request to be called again for this object after `milliseconds` with its
 * newest state (controller-runtime's RequeueAfter): for a handler's callbacks and reconcile. */
wink_result wink_requeue_after(uint64_t milliseconds);

/* ---- the handler --------------------------------------------------------------------- */

/* A plugin's callbacks; leave out (NULL) the ones you do not need: they succeed. */
typedef struct wink_handler {
    /* Called with the manifest's `config` as JSON ("null" when absent) after every
     * (re)start. Return wink_fatal("what is wrong") to refuse the configuration. */
    wink_result (*init)(const char *config);
    /* An object was added; `initial_list` is true for the informer's initial list. */
    wink_result (*on_add)(const wink_object *obj, bool initial_list);
    /* An object changed; on a periodic resync `old` and `new_` are the same object. */
    wink_result (*on_update)(const wink_object *old, const wink_object *new_);
    /* An object was deleted; when `final_state_unknown`, `obj` is its last known state. */
    wink_result (*on_delete)(const wink_object *obj, bool final_state_unknown);
} wink_handler;

/* Exports the plugin's callbacks: WINK_EXPORT_HANDLER(.init = my_init, .on_add = my_add); */
#define WINK_EXPORT_HANDLER(...) const wink_handler wink_plugin_handler = {__VA_ARGS__}

/* ---- the reconciler (wink_reconciler.c) --------------------------------------------------- */
/*
 * A plugin whose manifest has a `reconcile:` section is a reconciler, as controller-runtime's:
 * it exports WINK_EXPORT_RECONCILER instead of WINK_EXPORT_HANDLER (`cargo xtask
 * build-plugins` builds it for the reconciler world, defining WINK_RECONCILER), and the host
 * calls `reconcile` with the key of a primary object whenever the object, an object it
 * controls (`owns:`) or a watched object mapped to it (`watches:`) changes.
 */

/* A key of the primary resource: its namespace (NULL for a cluster-scoped kind) and name. */
typedef struct wink_object_key {
    const char *namespace_;
    const char *name;
} wink_object_key;

/* Keys, for map_to_keys to return: `items` from wink_alloc (or NULL when `len` is 0). */
typedef struct wink_object_keys {
    const wink_object_key *items;
    size_t len;
} wink_object_keys;

typedef struct wink_reconciler {
    /* As wink_handler's init. */
    wink_result (*init)(const char *config);
    /*
     * Brings the primary object `key` names to the state it asks for, reading it (and what
     * it owns) from the cache: wink_cache_get(api_version, kind, wink_key_string(key), &obj),
     * where obj is NULL once it is deleted. Never called for one key twice at once (a change
     * during the call reconciles it once more after). wink_retry: again with exponential
     * backoff for this key while the other keys proceed; wink_fatal: logged, the key waits
     * for its next change; wink_requeue_after: again after that long.
     */
    wink_result (*reconcile)(const wink_object_key *key);
    /*
     * For a watched resource whose manifest entry says `mapTo: {plugin: true}`: the keys of
     * the primaries an event on `obj` (lent for the call) concerns. Runs for every event of
     * the resource: keep it quick and send no requests. NULL: such events concern nothing.
     */
    wink_object_keys (*map_to_keys)(const wink_object *obj);
} wink_reconciler;

/* Exports the reconciler: WINK_EXPORT_RECONCILER(.reconcile = my_reconcile); */
#define WINK_EXPORT_RECONCILER(...) const wink_reconciler wink_plugin_reconciler = {__VA_ARGS__}

/* The cache key `key` names: "namespace/name", or "name" (lives until the callback returns). */
const char *wink_key_string(const wink_object_key *key);
/* The key of an object (its strings live as long as the object). */
wink_object_key wink_key_of(const wink_object *obj);
/* Reconciles `key` (any key of the primary resource) after `after_ms` milliseconds, or as
 * soon as possible when 0. A key that already waits keeps the earlier of its two times. */
void wink_enqueue(const wink_object_key *key, uint64_t after_ms);

/* ---- logging ------------------------------------------------------------------------- */

typedef enum wink_level {
    WINK_TRACE = 0,
    WINK_DEBUG = 1,
    WINK_INFO = 2,
    WINK_WARN = 3,
    WINK_ERROR = 4,
} wink_level;

/* Writes one record to the host's log, tagged with the plugin's name. printf-style. */
void wink_log(wink_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define wink_trace(...) wink_log(WINK_TRACE, __VA_ARGS__)
#define wink_debug(...) wink_log(WINK_DEBUG, __VA_ARGS__)
#define wink_info(...) wink_log(WINK_INFO, __VA_ARGS__)
#define wink_warn(...) wink_log(WINK_WARN, __VA_ARGS__)
#define wink_error(...) wink_log(WINK_ERROR, __VA_ARGS__)

/* ---- the host's cache ---------------------------------------------------------------- */

typedef enum wink_cache_status {
    WINK_CACHE_OK = 0,
    /* The manifest does not grant this resource or namespace. */
    WINK_CACHE_NOT_PERMITTED = 1,
    /* The resource has no index with this name. */
    WINK_CACHE_UNKNOWN_INDEX = 2,
} wink_cache_status;

/* The built-in indexes, for wink_cache_by_index. */
#define WINK_INDEX_NAMESPACE "namespace"
#define WINK_INDEX_OWNER_UID "owner-uid"

/* The object of (api_version, kind) with this key ("namespace/name" or "name"): *found is
 * set to it, or to NULL when it is not cached. */
wink_cache_status wink_cache_get(const char *api_version, const char *kind, const char *key,
                                 const wink_object **found);
/* Every cached object of the resource, or those in `namespace_` unless it is NULL. */
wink_cache_status wink_cache_list(const char *api_version, const char *kind, const char *namespace_,
                                  wink_objects *out);
/* The objects whose index `index` yields `value`. */
wink_cache_status wink_cache_by_index(const char *api_version, const char *kind, const char *index,
                                      const char *value, wink_objects *out);
/* Why the last cache read was refused (the host's message), or "" after a successful one. */
const char *wink_cache_error(void);

/* ---- the cluster -------------------------------------------------------------------- */

/*
 * Requests to the cluster, checked by the host against the manifest's `permissions:` and
 * budgeted by its `requests:`. Objects and patches are JSON strings; an answer is a
 * wink_object (living until the callback returns), set through `out` when it is not NULL.
 * On failure the status says why and wink_request_error() gives the host's message.
 */
typedef enum wink_request_status {
    WINK_REQUEST_OK = 0,
    WINK_REQUEST_NOT_PERMITTED = 1,  /* refused by wink, before any request */
    WINK_REQUEST_FORBIDDEN = 2,      /* refused by the API server (403) */
    WINK_REQUEST_NOT_FOUND = 3,
    WINK_REQUEST_ALREADY_EXISTS = 4,
    WINK_REQUEST_CONFLICT = 5,       /* stale resourceVersion or failed precondition */
    WINK_REQUEST_INVALID = 6,
    WINK_REQUEST_BAD_REQUEST = 7,
    WINK_REQUEST_RATE_LIMITED = 8,
    WINK_REQUEST_TIMED_OUT = 9,
    WINK_REQUEST_UNAVAILABLE = 10,
} wink_request_status;

typedef enum wink_patch_type {
    WINK_PATCH_MERGE = 0,       /* JSON merge patch (RFC 7386) */
    WINK_PATCH_JSON = 1,        /* JSON patch (RFC 6902) */
    WINK_PATCH_STRATEGIC = 2,   /* strategic merge patch (built-in kinds) */
    WINK_PATCH_APPLY = 3,       /* server-side apply, the plugin's name as field manager */
    WINK_PATCH_APPLY_FORCE = 4, /* server-side apply taking over conflicting fields */
} wink_patch_type;

/* The object, read live from the API server. */
wink_request_status wink_cluster_get(const char *api_version, const char *kind, const char *namespace_,
                                     const char *name, const wink_object **out);
/* Creates the object `json` (its namespace is metadata.namespace). */
wink_request_status wink_cluster_create(const char *json, const wink_object **out);
/* Replaces the object `json`; its metadata.resourceVersion is the version it was read at. */
wink_request_status wink_cluster_update(const char *json, const wink_object **out);
/* Replaces the status of the object `json` (its status subresource). */
wink_request_status wink_cluster_update_status(const char *json, const wink_object **out);
/* Patches an object. */
wink_request_status wink_cluster_patch(const char *api_version, const char *kind, const char *namespace_,
                                       const char *name, wink_patch_type type, const char *patch,
                                       const wink_object **out);
/* Patches the status subresource of an object. */
wink_request_status wink_cluster_patch_status(const char *api_version, const char *kind, const char *namespace_,
                                              const char *name, wink_patch_type type, const char *patch,
                                              const wink_object **out);
/* Deletes an object; `*remaining` is set to it while its finalizers run, else to NULL. */
wink_request_status wink_cluster_delete(const char *api_version, const char *kind, const char *namespace_,
                                        const char *name, const wink_object **remaining);
/* Records an Event about `regarding` (Normal, or Warning when `warning`). Identical Events are
 * aggregated by the host. */
wink_request_status wink_cluster_record_event(const wink_object *regarding, bool warning, const char *reason,
                                              const char *action, const char *note);
/* The host's message about the last failed request, or "" after a successful one. */
const char *wink_request_error(void);
/* The name of a status: "ok", "not-permitted", "conflict", ... */
const char *wink_request_status_name(wink_request_status status);

/* ---- clocks -------------------------------------------------------------------------- */

/* The wall clock: milliseconds since 1970-01-01T00:00:00Z. */
int64_t wink_now_ms(void);

/* ---- JSON ---------------------------------------------------------------------------- */
/*
 * Read values out of an object's JSON (or the config) by path: keys and array indexes
 * separated by dots, e.g. "spec.containers.0.image". Write "\\." for a dot inside a key
 * ("data.checkout\\.timeout"). The empty path "" is the whole document.
 */

typedef enum wink_json_type {
    WINK_JSON_MISSING = 0, /* no such path (or malformed JSON) */
    WINK_JSON_NULL,
    WINK_JSON_BOOL,
    WINK_JSON_NUMBER,
    WINK_JSON_STRING,
    WINK_JSON_ARRAY,
    WINK_JSON_OBJECT,
} wink_json_type;

/* The type of the value at `path`. */
wink_json_type wink_json_type_of(const char *json, const char *path);
/* The string at `path`, unescaped, or NULL when there is none (or it is not a string). */
const char *wink_json_string(const char *json, const char *path);
/* The integer at `path` into *out; false when there is none (or it is not an integer). */
bool wink_json_int(const char *json, const char *path, long long *out);
/* The boolean at `path` into *out; false when there is none. */
bool wink_json_bool(const char *json, const char *path, bool *out);
/* The number of elements of the array (or members of the object) at `path`, or -1. */
long wink_json_len(const char *json, const char *path);
/* The key of member `index` of the object at `path` (to iterate over a map), or NULL. */
const char *wink_json_key_at(const char *json, const char *path, size_t index);

/* ---- owners and selectors (wink_meta.c) ---------------------------------------------- */

/* The owner reference of `obj` with controller: true, or NULL (metav1.GetControllerOf). */
const wink_owner_ref *wink_controller_of(const wink_object *obj);
/* Whether `owner` is the controller of `obj`, matched by uid. */
bool wink_is_controlled_by(const wink_object *obj, const wink_object *owner);
/*
 * The owner reference naming `owner` as controller, as JSON for an object's
 * metadata.ownerReferences ({"apiVersion":…,"controller":true,"blockOwnerDeletion":true}, as
 * controller-runtime sets it), living until the callback returns; NULL when `owner` has no
 * uid (it was never created).
 */
const char *wink_controller_reference(const wink_object *owner);
/*
 * Whether the labels of `obj` match the LabelSelector at `path` of `json` (e.g. a
 * Deployment's JSON and "spec.selector"): 1 or 0, or -1 for a selector the API server would
 * refuse (wink_selector_error() says why). matchLabels and matchExpressions (In, NotIn,
 * Exists, DoesNotExist); an empty selector matches everything, a missing one nothing.
 */
int wink_selector_matches(const char *json, const char *path, const wink_object *obj);
/* Why the last wink_selector_matches returned -1. */
const char *wink_selector_error(void);

/* ---- memory -------------------------------------------------------------------------- */

/* printf into a string that lives until the callback returns (for building JSON paths). */
char *wink_sprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* `size` bytes that live until the callback returns. */
void *wink_alloc(size_t size);

#ifdef __cplusplus
}
#endif

#endif /* WINK_H */
