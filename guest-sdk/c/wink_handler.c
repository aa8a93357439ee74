/*
 * wink_handler.c — the exports of the `handler-plugin` world: each wraps the borrowed
 * `event-object` handles in lent wink_objects, calls the plugin's callback from
 * `wink_plugin_handler` (WINK_EXPORT_HANDLER), ends the loans and turns the wink_result into
 * the WIT result. Compiled out of a reconciler (WINK_RECONCILER, see wink_wit.h).
 */
#ifndef WINK_RECONCILER

#include "wink.h"
#include "wink_internal.h"

/* Defined by the plugin with WINK_EXPORT_HANDLER. */
extern const wink_handler wink_plugin_handler;

bool exports_wink_plugin_handler_init(wink_wit_string *config, wink_wit_string *err) {
    return wink_init(wink_plugin_handler.init, config, err);
}

bool exports_wink_plugin_handler_on_add(exports_wink_plugin_handler_borrow_event_object_t obj, bool initial_list,
                                        exports_wink_plugin_handler_action_t *ret,
                                        exports_wink_plugin_handler_handler_error_t *err) {
    wink_object o;
    wink_lend(obj, &o);
    wink_result r = wink_ok();
    if (wink_initialized("on-add", &r) && wink_plugin_handler.on_add != NULL) {
        r = wink_plugin_handler.on_add(&o, initial_list);
    }
    wink_end_loan(&o);
    return wink_finish(r, ret, err);
}

bool exports_wink_plugin_handler_on_update(exports_wink_plugin_handler_borrow_event_object_t old,
                                           exports_wink_plugin_handler_borrow_event_object_t new_,
                                           exports_wink_plugin_handler_action_t *ret,
                                           exports_wink_plugin_handler_handler_error_t *err) {
    wink_object o, n;
    wink_lend(old, &o);
    wink_lend(new_, &n);
    wink_result r = wink_ok();
    if (wink_initialized("on-update", &r) && wink_plugin_handler.on_update != NULL) {
        r = wink_plugin_handler.on_update(&o, &n);
    }
    wink_end_loan(&o);
    wink_end_loan(&n);
    return wink_finish(r, ret, err);
}

bool exports_wink_plugin_handler_on_delete(exports_wink_plugin_handler_borrow_event_object_t obj,
                                           bool final_state_unknown, exports_wink_plugin_handler_action_t *ret,
                                           exports_wink_plugin_handler_handler_error_t *err) {
    wink_object o;
    wink_lend(obj, &o);
    wink_result r = wink_ok();
    if (wink_initialized("on-delete", &r) && wink_plugin_handler.on_delete != NULL) {
        r = wink_plugin_handler.on_delete(&o, final_state_unknown);
    }
    wink_end_loan(&o);
    return wink_finish(r, ret, err);
}

#else
/* ISO C forbids an empty translation unit. */
typedef int wink_handler_compiled_out;
#endif
