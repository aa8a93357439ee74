/*
 * wink_reconciler.c — the exports and the queue of the `reconciler-plugin` world (built
 * with WINK_RECONCILER, see wink_wit.h): `reconcile` turns the WIT key into a wink_object_key and
 * calls the plugin's callback from `wink_plugin_reconciler` (WINK_EXPORT_RECONCILER);
 * `map-to-keys` lends the object and copies the keys the callback returns into the WIT list.
 */
#ifdef WINK_RECONCILER

#include <stdlib.h>
#include <string.h>

#include "wink.h"
#include "wink_internal.h"

/* Defined by the plugin with WINK_EXPORT_RECONCILER. */
extern const wink_reconciler wink_plugin_reconciler;

const char *wink_key_string(const wink_object_key *key) {
    return key->namespace_ != NULL ? wink_sprintf("%s/%s", key->namespace_, key->name) : key->name;
}

wink_object_key wink_key_of(const wink_object *obj) {
    wink_object_key key = {wink_namespace(obj), wink_name(obj)};
    return key;
}

void wink_enqueue(const wink_object_key *key, uint64_t after_ms) {
    wink_plugin_queue_object_key_t k;
    k.namespace_.is_some = key->namespace_ != NULL;
    if (k.namespace_.is_some) {
        wink_wit_string_set(&k.namespace_.val, key->namespace_);
    }
    wink_wit_string_set(&k.name, key->name);
    wink_plugin_queue_enqueue(&k, after_ms);
}

bool exports_wink_plugin_reconciler_init(wink_wit_string *config, wink_wit_string *err) {
    return wink_init(wink_plugin_reconciler.init, config, err);
}

bool exports_wink_plugin_reconciler_reconcile(exports_wink_plugin_reconciler_object_key_t *key,
                                              exports_wink_plugin_reconciler_action_t *ret,
                                              exports_wink_plugin_reconciler_handler_error_t *err) {
    wink_object_key k = {key->namespace_.is_some ? wink_copy_str(&key->namespace_.val) : NULL, wink_copy_str(&key->name)};
    wink_plugin_types_object_key_free(key);
    wink_result r = wink_ok();
    if (wink_initialized("reconcile", &r)) {
        r = wink_plugin_reconciler.reconcile != NULL
                ? wink_plugin_reconciler.reconcile(&k)
                : wink_fatal("wink: no reconcile callback: set .reconcile in WINK_EXPORT_RECONCILER");
    }
    return wink_finish(r, ret, err);
}

void exports_wink_plugin_reconciler_map_to_keys(exports_wink_plugin_reconciler_borrow_event_object_t obj,
                                                exports_wink_plugin_reconciler_list_object_key_t *ret) {
    wink_object o;
    wink_lend(obj, &o);
    wink_object_keys keys = {NULL, 0};
    wink_result refusal;
    if (wink_initialized("map-to-keys", &refusal) && wink_plugin_reconciler.map_to_keys != NULL) {
        keys = wink_plugin_reconciler.map_to_keys(&o);
    }
    wink_end_loan(&o);
    /* The list and its strings are the bindings' to free (after the call returns). */
    ret->len = keys.len;
    ret->ptr = keys.len > 0 ? malloc(sizeof(wink_plugin_types_object_key_t) * keys.len) : NULL;
    if (keys.len > 0 && ret->ptr == NULL) {
        abort(); /* over the plugin's memory limit: trap */
    }
    for (size_t i = 0; i < keys.len; i++) {
        wink_plugin_types_object_key_t *k = &ret->ptr[i];
        k->namespace_.is_some = keys.items[i].namespace_ != NULL;
        if (k->namespace_.is_some) {
            wink_wit_string_dup(&k->namespace_.val, keys.items[i].namespace_);
        }
        wink_wit_string_dup(&k->name, keys.items[i].name);
    }
    wink_arena_free();
}

#else
/* ISO C forbids an empty translation unit. */
typedef int wink_reconciler_compiled_out;
#endif
