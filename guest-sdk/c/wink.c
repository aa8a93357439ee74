/*
 * wink.c — the glue between wink.h and the bindings wit-bindgen generates for
 * wit/v0.2.0/ (handler_plugin.h).
 *
 * The generated exports hand us objects we own; each export copies what the plugin sees into
 * NUL-terminated strings in a per-call arena, frees the generated object, calls the plugin's
 * callback from `wink_plugin_handler`, turns its wink_result into the WIT result, and frees
 * the arena. Only memory and string functions of libc are used: nothing that needs WASI.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handler_plugin.h"
#include "wink.h"
#include "wink_internal.h"

/* Defined by the plugin with WINK_EXPORT_HANDLER. */
extern const wink_handler wink_plugin_handler;

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

static void arena_free(void) {
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

const char *wink_copy_str(const handler_plugin_string_t *s) {
    char *c = wink_alloc(s->len + 1);
    if (s->len > 0) {
        memcpy(c, s->ptr, s->len);
    }
    c[s->len] = '\0';
    return c;
}

static const wink_pair *copy_pairs(const handler_plugin_list_tuple2_string_string_t *list) {
    wink_pair *pairs = wink_alloc(sizeof(wink_pair) * (list->len ? list->len : 1));
    for (size_t i = 0; i < list->len; i++) {
        pairs[i].key = wink_copy_str(&list->ptr[i].f0);
        pairs[i].value = wink_copy_str(&list->ptr[i].f1);
    }
    return pairs;
}

void wink_convert(const wink_plugin_types_object_t *in, wink_object *out) {
    const wink_plugin_types_object_meta_t *m = &in->meta;
    out->api_version = wink_copy_str(&m->api_version);
    out->kind = wink_copy_str(&m->kind);
    out->namespace_ = m->namespace_.is_some ? wink_copy_str(&m->namespace_.val) : NULL;
    out->name = wink_copy_str(&m->name);
    out->key = out->namespace_ != NULL ? wink_sprintf("%s/%s", out->namespace_, out->name) : out->name;
    out->uid = wink_copy_str(&m->uid);
    out->resource_version = wink_copy_str(&m->resource_version);
    out->has_generation = m->generation.is_some;
    out->generation = m->generation.is_some ? m->generation.val : 0;
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
    out->json = wink_copy_str(&in->json);
    out->json_len = in->json.len;
}

static const char *find_pair(const wink_pair *pairs, size_t len, const char *key) {
    for (size_t i = 0; i < len; i++) {
        if (strcmp(pairs[i].key, key) == 0) {
            return pairs[i].value;
        }
    }
    return NULL;
}

const char *wink_label(const wink_object *obj, const char *key) {
    return find_pair(obj->labels, obj->labels_len, key);
}

const char *wink_annotation(const wink_object *obj, const char *key) {
    return find_pair(obj->annotations, obj->annotations_len, key);
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
    handler_plugin_string_t s;
    handler_plugin_string_set(&s, message);
    wink_plugin_log_log((wink_plugin_log_level_t)level, &s);
    free(message);
}

/* ---- the exports --------------------------------------------------------------------- */

static bool initialized;

/* Ends an event callback: fills in `ret` or `err` (freed by the bindings after the call
 * returns). */
static bool finish(wink_result r, exports_wink_plugin_handler_action_t *ret,
                   exports_wink_plugin_handler_handler_error_t *err) {
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
            handler_plugin_string_dup(&err->val.retry, message);
        } else {
            err->tag = WINK_PLUGIN_TYPES_HANDLER_ERROR_FATAL;
            handler_plugin_string_dup(&err->val.fatal, message);
        }
    }
    arena_free();
    return ok;
}

static wink_result not_initialized(const char *event) {
    return wink_fatal("wink: %s called before a successful init", event);
}

bool exports_wink_plugin_handler_init(handler_plugin_string_t *config, handler_plugin_string_t *err) {
    initialized = false;
    const char *text = wink_copy_str(config);
    handler_plugin_string_free(config);
    wink_result r = wink_plugin_handler.init != NULL ? wink_plugin_handler.init(text) : wink_ok();
    bool ok = r.kind == WINK_RESULT_OK || r.kind == WINK_RESULT_REQUEUE;
    if (!ok) {
        handler_plugin_string_dup(err, r.message != NULL ? r.message : "init failed");
    }
    initialized = ok;
    arena_free();
    return ok;
}

bool exports_wink_plugin_handler_on_add(exports_wink_plugin_handler_object_t *obj, bool initial_list,
                                        exports_wink_plugin_handler_action_t *ret,
                                        exports_wink_plugin_handler_handler_error_t *err) {
    wink_object o;
    wink_convert(obj, &o);
    exports_wink_plugin_handler_object_free(obj);
    if (!initialized) {
        return finish(not_initialized("on-add"), ret, err);
    }
    return finish(wink_plugin_handler.on_add != NULL ? wink_plugin_handler.on_add(&o, initial_list) : wink_ok(), ret, err);
}

bool exports_wink_plugin_handler_on_update(exports_wink_plugin_handler_object_t *old,
                                           exports_wink_plugin_handler_object_t *new_,
                                           exports_wink_plugin_handler_action_t *ret,
                                           exports_wink_plugin_handler_handler_error_t *err) {
    wink_object o, n;
    wink_convert(old, &o);
    wink_convert(new_, &n);
    exports_wink_plugin_handler_object_free(old);
    exports_wink_plugin_handler_object_free(new_);
    if (!initialized) {
        return finish(not_initialized("on-update"), ret, err);
    }
    return finish(wink_plugin_handler.on_update != NULL ? wink_plugin_handler.on_update(&o, &n) : wink_ok(), ret, err);
}

bool exports_wink_plugin_handler_on_delete(exports_wink_plugin_handler_object_t *obj, bool final_state_unknown,
                                           exports_wink_plugin_handler_action_t *ret,
                                           exports_wink_plugin_handler_handler_error_t *err) {
    wink_object o;
    wink_convert(obj, &o);
    exports_wink_plugin_handler_object_free(obj);
    if (!initialized) {
        return finish(not_initialized("on-delete"), ret, err);
    }
    return finish(
        wink_plugin_handler.on_delete != NULL ? wink_plugin_handler.on_delete(&o, final_state_unknown) : wink_ok(),
        ret, err);
}

/* ---- the cache ----------------------------------------------------------------------- */

wink_plugin_cache_resource_t wink_resource(const char *api_version, const char *kind) {
    wink_plugin_cache_resource_t r;
    handler_plugin_string_set(&r.api_version, api_version);
    handler_plugin_string_set(&r.kind, kind);
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
    handler_plugin_string_t k;
    handler_plugin_string_set(&k, key);
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
    handler_plugin_string_t ns;
    if (namespace_ != NULL) {
        handler_plugin_string_set(&ns, namespace_);
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
    handler_plugin_string_t i, v;
    handler_plugin_string_set(&i, index);
    handler_plugin_string_set(&v, value);
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
