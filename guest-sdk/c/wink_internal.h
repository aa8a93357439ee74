/*
 * wink_internal.h — what the SDK's C files share; not part of the plugin API (wink.h).
 */
#ifndef WINK_INTERNAL_H
#define WINK_INTERNAL_H

#include "wink.h"
#include "wink_wit.h"

/* Allocates in the per-call arena (freed when the callback returns). */
void *wink_alloc(size_t size);
/* Frees the per-call arena and forgets the last errors (at the end of every export). */
void wink_arena_free(void);
/* Copies a WIT string into the arena, NUL-terminated. */
const char *wink_copy_str(const wink_wit_string *s);
/* Converts a WIT object into `out`, its strings in the arena. */
void wink_convert(const wink_plugin_types_object_t *in, wink_object *out);
/* A lent object over a borrowed handle: nothing read yet. */
void wink_lend(wink_plugin_types_borrow_event_object_t handle, wink_object *out);
/* Ends a loan: drops the borrowed handle (a lent object lives as long as its callback). */
void wink_end_loan(wink_object *obj);
/* A WIT resource record borrowing `api_version` and `kind`. */
wink_plugin_cache_resource_t wink_resource(const char *api_version, const char *kind);
/* Forgets the last request error (at the end of every callback). */
void wink_reset_request_error(void);

/* The `init` export of either world: runs `init` (NULL: succeeds) with the config. */
bool wink_init(wink_result (*init)(const char *config), wink_wit_string *config, wink_wit_string *err);
/* Whether init succeeded; if not, *refusal is the fatal error the call `call` returns. */
bool wink_initialized(const char *call, wink_result *refusal);
/* Ends an export: fills in `ret` or `err` (freed by the bindings after the call returns)
 * from `r`, frees the arena; true when `r` is a success. */
bool wink_finish(wink_result r, wink_plugin_types_action_t *ret, wink_plugin_types_handler_error_t *err);

#endif
