/*
 * wink.c — the glue between wink.h and the bindings wit-bindgen generates for
 * wit/v0.4.0/ (wink_wit.h picks the world: handler_plugin.h or reconciler_plugin.h).
 *
 * The generated exports (wink_handler.c, wink_reconciler.c) hand us borrowed `event-object`
 * handles; each export wraps them in lent wink_objects, whose parts the accessors here read
 * from the host on first use into NUL-terminated strings in a per-call arena; it calls the
 * plugin's callback, drops the borrowed handles, turns its wink_result into the WIT result
 * (wink_finish), and frees the arena. Only memory and string functions of libc are used:
 * nothing that needs WASI.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wink.h"
#include "wink_internal.h"

/* ---- the per-call arena -------------------------------------------------------------- */

typedef struct arena_block {
    struct arena_block *next;
    max_align_t data[];
} arena_block;

static arena_block *arena;
static const char *last_cache_error = "";

void *wink_alloc(size_t size) {
    arena_block *block = malloc(sizeof(arena_block) + size);
    if (block == NULL) {
        abort(); /* over the plugin's memory limit: trap */
    }
    block->next = arena;
    arena = block;
    return block->data;
}

void wink_arena_free(void) {
    while (arena != NULL) {
        arena_block *next = arena->next;
        free(arena);
        arena = next;
    }
    last_cache_error = "";
    wink_reset_request_error();
}

/* Formats into a string from `alloc` (the arena, or malloc for log lines). */
static char *vformat(void *(*alloc)(size_t), const char *fmt, va_list ap) {
    va_list copy;
    va_copy(copy, ap);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0) {
        n = 0;
    }
    char *s = alloc((size_t)n + 1);
    if (s == NULL) {
        abort();
    }
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    return s;
}

char *wink_sprintf(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *s = vformat(wink_alloc, fmt, ap);
    va_end(ap);
    return s;
}

/* ---- objects ------------------------------------------------------------------------- */

const char *wink_copy_str(const wink_wit_string *s) {
    char *c = wink_alloc(s->len + 1);
    if (s->len > 0) {
        memcpy(c, s->ptr, s->len);
    }
    c[s->len] = '\0';
    return c;
}

static const wink_pair *copy_pairs(const wink_wit_pairs *list) {
    wink_pair *pairs = wink_alloc(sizeof(wink_pair) * (list->len ? list->len : 1));
    for (size_t i = 0; i < list->len; i++) {
        pairs[i].key = wink_copy_str(&list->ptr[i].f0);
        pairs[i].value = wink_copy_str(&list->ptr[i].f1);
    }
    return pairs;
}

/* The parts of an object, read from a lent object one by one. */
enum {
    PART_API_VERSION = 1 << 0,
    PART_KIND = 1 << 1,
    PART_NAMESPACE = 1 << 2,
    PART_NAME = 1 << 3,
    PART_KEY = 1 << 4,
    PART_UID = 1 << 5,
    PART_RESOURCE_VERSION = 1 << 6,
    PART_GENERATION = 1 << 7,
    PART_META = 1 << 8,
    PART_JSON = 1 << 9,
    PART_ALL = (1 << 10) - 1,
};

static void copy_meta(const wink_plugin_types_object_meta_t *m, wink_meta *out) {
    out->labels = copy_pairs(&m->labels);
    out->labels_len = m->labels.len;
    out->annotations = copy_pairs(&m->annotations);
    out->annotations_len = m->annotations.len;
    out->deletion_timestamp = m->deletion_timestamp.is_some ? wink_copy_str(&m->deletion_timestamp.val) : NULL;
    size_t owners = m->owner_references.len;
    wink_owner_ref *refs = wink_alloc(sizeof(wink_owner_ref) * (owners ? owners : 1));
    for (size_t i = 0; i < owners; i++) {
        const wink_plugin_types_owner_reference_t *r = &m->owner_references.ptr[i];
        refs[i].api_version = wink_copy_str(&r->api_version);
        refs[i].kind = wink_copy_str(&r->kind);
        refs[i].name = wink_copy_str(&r->name);
        refs[i].uid = wink_copy_str(&r->uid);
        refs[i].controller = r->controller;
    }
    out->owner_refs = refs;
    out->owner_refs_len = owners;
}

void wink_convert(const wink_plugin_types_object_t *in, wink_object *out) {
    const wink_plugin_types_object_meta_t *m = &in->meta;
    memset(out, 0, sizeof *out);
    out->_api_version = wink_copy_str(&m->api_version);
    out->_kind = wink_copy_str(&m->kind);
    out->_namespace = m->namespace_.is_some ? wink_copy_str(&m->namespace_.val) : NULL;
    out->_name = wink_copy_str(&m->name);
    out->_key = out->_namespace != NULL ? wink_sprintf("%s/%s", out->_namespace, out->_name) : out->_name;
    out->_uid = wink_copy_str(&m->uid);
    out->_resource_version = wink_copy_str(&m->resource_version);
    out->_has_generation = m->generation.is_some;
    out->_generation = m->generation.is_some ? m->generation.val : 0;
    copy_meta(m, &out->_meta);
    out->_json = wink_copy_str(&in->json);
    out->_json_len = in->json.len;
    out->_read = PART_ALL;
}

/* A lent object over a borrowed handle: nothing read yet. */
void wink_lend(wink_plugin_types_borrow_event_object_t handle, wink_object *out) {
    memset(out, 0, sizeof *out);
    out->_handle = handle.__handle;
    out->_lent = true;
}

/* Ends a loan: drops the borrowed handle (a lent object lives as long as its callback). */
void wink_end_loan(wink_object *obj) {
    if (obj->_lent) {
        wink_plugin_types_borrow_event_object_t handle = {obj->_handle};
        wink_plugin_types_event_object_drop_borrow(handle);
        obj->_lent = false;
    }
}

/* The lent object's handle, for reading a part not read yet. */
static wink_plugin_types_borrow_event_object_t handle_of(const wink_object *obj) {
    if (!obj->_lent) {
        /* Only a lent object has parts left to read: this one's loan has ended. */
        wink_log(WINK_ERROR, "wink: an object lent to a callback was read after the callback returned");
        abort();
    }
    wink_plugin_types_borrow_event_object_t handle = {obj->_handle};
    return handle;
}

/* Reads one string part of a lent object with `method`, once. */
static const char *lent_string(const wink_object *obj, unsigned part, const char **slot,
                               void (*method)(wink_plugin_types_borrow_event_object_t, wink_wit_string *)) {
    wink_object *o = (wink_object *)obj; /* the SDK's own memory: parts are kept as read */
    if (!(o->_read & part)) {
        wink_wit_string s;
        method(handle_of(o), &s);
        *slot = wink_copy_str(&s);
        wink_wit_string_free(&s);
        o->_read |= part;
    }
    return *slot;
}

const char *wink_api_version(const wink_object *obj) {
    return lent_string(obj, PART_API_VERSION, &((wink_object *)obj)->_api_version,
                       wink_plugin_types_method_event_object_api_version);
}

const char *wink_kind(const wink_object *obj) {
    return lent_string(obj, PART_KIND, &((wink_object *)obj)->_kind, wink_plugin_types_method_event_object_kind);
}

const char *wink_name(const wink_object *obj) {
    return lent_string(obj, PART_NAME, &((wink_object *)obj)->_name, wink_plugin_types_method_event_object_name);
}

const char *wink_uid(const wink_object *obj) {
    return lent_string(obj, PART_UID, &((wink_object *)obj)->_uid, wink_plugin_types_method_event_object_uid);
}

const char *wink_resource_version(const wink_object *obj) {
    return lent_string(obj, PART_RESOURCE_VERSION, &((wink_object *)obj)->_resource_version,
                       wink_plugin_types_method_event_object_resource_version);
}

const char *wink_json_of(const wink_object *obj) {
    return lent_string(obj, PART_JSON, &((wink_object *)obj)->_json, wink_plugin_types_method_event_object_json);
}

const char *wink_namespace(const wink_object *obj) {
    wink_object *o = (wink_object *)obj;
    if (!(o->_read & PART_NAMESPACE)) {
        wink_wit_string s;
        o->_namespace = NULL;
        if (wink_plugin_types_method_event_object_namespace(handle_of(o), &s)) {
            o->_namespace = wink_copy_str(&s);
            wink_wit_string_free(&s);
        }
        o->_read |= PART_NAMESPACE;
    }
    return o->_namespace;
}

const char *wink_key(const wink_object *obj) {
    wink_object *o = (wink_object *)obj;
    if (!(o->_read & PART_KEY)) {
        const char *ns = wink_namespace(o);
        o->_key = ns != NULL ? wink_sprintf("%s/%s", ns, wink_name(o)) : wink_name(o);
        o->_read |= PART_KEY;
    }
    return o->_key;
}

bool wink_generation(const wink_object *obj, int64_t *out) {
    wink_object *o = (wink_object *)obj;
    if (!(o->_read & PART_GENERATION)) {
        o->_has_generation = wink_plugin_types_method_event_object_generation(handle_of(o), &o->_generation);
        o->_read |= PART_GENERATION;
    }
    if (o->_has_generation && out != NULL) {
        *out = o->_generation;
    }
    return o->_has_generation;
}

const wink_meta *wink_meta_of(const wink_object *obj) {
    wink_object *o = (wink_object *)obj;
    if (!(o->_read & PART_META)) {
        wink_plugin_types_object_meta_t m;
        wink_plugin_types_method_event_object_meta(handle_of(o), &m);
        copy_meta(&m, &o->_meta);
        wink_plugin_types_object_meta_free(&m);
        o->_read |= PART_META;
    }
    return &o->_meta;
}

static const char *find_pair(const wink_pair *pairs, size_t len, const char *key) {
    for (size_t i = 0; i < len; i++) {
        if (strcmp(pairs[i].key, key) == 0) {
            return pairs[i].value;
        }
    }
    return NULL;
}

/* One label or annotation: from the metadata when it was read, else one call. */
static const char *lent_value(const wink_object *obj, const char *key, bool annotation) {
    if (obj->_read & PART_META) {
        const wink_meta *m = &obj->_meta;
        return annotation ? find_pair(m->annotations, m->annotations_len, key)
                          : find_pair(m->labels, m->labels_len, key);
    }
    wink_wit_string k, v;
    wink_wit_string_set(&k, key);
    bool found = annotation ? wink_plugin_types_method_event_object_annotation(handle_of(obj), &k, &v)
                            : wink_plugin_types_method_event_object_label(handle_of(obj), &k, &v);
    if (!found) {
        return NULL;
    }
    const char *value = wink_copy_str(&v);
    wink_wit_string_free(&v);
    return value;
}

const char *wink_label(const wink_object *obj, const char *key) {
    return lent_value(obj, key, false);
}

const char *wink_annotation(const wink_object *obj, const char *key) {
    return lent_value(obj, key, true);
}

/* ---- results ------------------------------------------------------------------------- */

wink_result wink_ok(void) {
    wink_result r = {WINK_RESULT_OK, NULL, 0};
    return r;
}

wink_result wink_retry(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wink_result r = {WINK_RESULT_RETRY, vformat(wink_alloc, fmt, ap), 0};
    va_end(ap);
    return r;
}

wink_result wink_fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    wink_result r = {WINK_RESULT_FATAL, vformat(wink_alloc, fmt, ap), 0};
    va_end(ap);
    return r;
}

wink_result wink_requeue_after(uint64_t milliseconds) {
    wink_result r = {WINK_RESULT_REQUEUE, NULL, milliseconds};
    return r;
}

/* ---- logging ------------------------------------------------------------------------- */

void wink_log(wink_level level, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *message = vformat(malloc, fmt, ap);
    va_end(ap);
    wink_wit_string s;
    wink_wit_string_set(&s, message);
    wink_plugin_log_log((wink_plugin_log_level_t)level, &s);
    free(message);
}

/* ---- what every export does ---------------------------------------------------------- */

static bool initialized;

bool wink_finish(wink_result r, wink_plugin_types_action_t *ret, wink_plugin_types_handler_error_t *err) {
    bool ok = r.kind == WINK_RESULT_OK || r.kind == WINK_RESULT_REQUEUE;
    if (r.kind == WINK_RESULT_REQUEUE) {
        ret->tag = WINK_PLUGIN_TYPES_ACTION_REQUEUE_AFTER;
        ret->val.requeue_after = r.requeue_after_ms;
    } else if (ok) {
        ret->tag = WINK_PLUGIN_TYPES_ACTION_AWAIT_CHANGE;
    }
    if (!ok) {
        const char *message = r.message != NULL ? r.message : "";
        if (r.kind == WINK_RESULT_RETRY) {
            err->tag = WINK_PLUGIN_TYPES_HANDLER_ERROR_RETRY;
            wink_wit_string_dup(&err->val.retry, message);
        } else {
            err->tag = WINK_PLUGIN_TYPES_HANDLER_ERROR_FATAL;
            wink_wit_string_dup(&err->val.fatal, message);
        }
    }
    wink_arena_free();
    return ok;
}

bool wink_init(wink_result (*init)(const char *config), wink_wit_string *config, wink_wit_string *err) {
    initialized = false;
    const char *text = wink_copy_str(config);
    wink_wit_string_free(config);
    wink_result r = init != NULL ? init(text) : wink_ok();
    bool ok = r.kind == WINK_RESULT_OK || r.kind == WINK_RESULT_REQUEUE;
    if (!ok) {
        wink_wit_string_dup(err, r.message != NULL ? r.message : "init failed");
    }
    initialized = ok;
    wink_arena_free();
    return ok;
}

bool wink_initialized(const char *call, wink_result *refusal) {
    if (!initialized) {
        *refusal = wink_fatal("wink: %s called before a successful init", call);
    }
    return initialized;
}

/* ---- the cache ----------------------------------------------------------------------- */

wink_plugin_cache_resource_t wink_resource(const char *api_version, const char *kind) {
    wink_plugin_cache_resource_t r;
    wink_wit_string_set(&r.api_version, api_version);
    wink_wit_string_set(&r.kind, kind);
    return r;
}

static wink_cache_status refused(wink_plugin_cache_cache_error_t *e) {
    wink_cache_status status;
    if (e->tag == WINK_PLUGIN_CACHE_CACHE_ERROR_NOT_PERMITTED) {
        status = WINK_CACHE_NOT_PERMITTED;
        last_cache_error = wink_copy_str(&e->val.not_permitted);
    } else {
        status = WINK_CACHE_UNKNOWN_INDEX;
        last_cache_error = wink_copy_str(&e->val.unknown_index);
    }
    wink_plugin_cache_cache_error_free(e);
    return status;
}

static void convert_list(wink_plugin_cache_list_object_t *list, wink_objects *out) {
    wink_object *items = wink_alloc(sizeof(wink_object) * (list->len ? list->len : 1));
    for (size_t i = 0; i < list->len; i++) {
        wink_convert(&list->ptr[i], &items[i]);
    }
    out->items = items;
    out->len = list->len;
    wink_plugin_cache_list_object_free(list);
}

wink_cache_status wink_cache_get(const char *api_version, const char *kind, const char *key,
                                 const wink_object **found) {
    wink_plugin_cache_resource_t r = wink_resource(api_version, kind);
    wink_wit_string k;
    wink_wit_string_set(&k, key);
    wink_plugin_cache_option_object_t ret;
    wink_plugin_cache_cache_error_t e;
    *found = NULL;
    if (!wink_plugin_cache_get(&r, &k, &ret, &e)) {
        return refused(&e);
    }
    last_cache_error = "";
    if (ret.is_some) {
        wink_object *o = wink_alloc(sizeof(wink_object));
        wink_convert(&ret.val, o);
        *found = o;
    }
    wink_plugin_cache_option_object_free(&ret);
    return WINK_CACHE_OK;
}

wink_cache_status wink_cache_list(const char *api_version, const char *kind, const char *namespace_,
                                  wink_objects *out) {
    wink_plugin_cache_resource_t r = wink_resource(api_version, kind);
    wink_wit_string ns;
    if (namespace_ != NULL) {
        wink_wit_string_set(&ns, namespace_);
    }
    wink_plugin_cache_list_object_t ret;
    wink_plugin_cache_cache_error_t e;
    out->items = NULL;
    out->len = 0;
    if (!wink_plugin_cache_list(&r, namespace_ != NULL ? &ns : NULL, &ret, &e)) {
        return refused(&e);
    }
    last_cache_error = "";
    convert_list(&ret, out);
    return WINK_CACHE_OK;
}

wink_cache_status wink_cache_by_index(const char *api_version, const char *kind, const char *index,
                                      const char *value, wink_objects *out) {
    wink_plugin_cache_resource_t r = wink_resource(api_version, kind);
    wink_wit_string i, v;
    wink_wit_string_set(&i, index);
    wink_wit_string_set(&v, value);
    wink_plugin_cache_list_object_t ret;
    wink_plugin_cache_cache_error_t e;
    out->items = NULL;
    out->len = 0;
    if (!wink_plugin_cache_by_index(&r, &i, &v, &ret, &e)) {
        return refused(&e);
    }
    last_cache_error = "";
    convert_list(&ret, out);
    return WINK_CACHE_OK;
}

const char *wink_cache_error(void) {
    return last_cache_error;
}
