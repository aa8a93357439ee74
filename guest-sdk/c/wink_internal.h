/*
 * wink_internal.h — what the SDK's C files share; not part of the plugin API (wink.h).
 */
#ifndef WINK_INTERNAL_H
#define WINK_INTERNAL_H

#include "handler_plugin.h"
#include "wink.h"

/* Allocates in the per-call arena (freed when the callback returns). */
void *wink_alloc(size_t size);
/* Copies a WIT string into the arena, NUL-terminated. */
const char *wink_copy_str(const handler_plugin_string_t *s);
/* Converts a WIT object into `out`, its strings in the arena. */
void wink_convert(const wink_plugin_types_object_t *in, wink_object *out);
/* A WIT resource record borrowing `api_version` and `kind`. */
wink_plugin_cache_resource_t wink_resource(const char *api_version, const char *kind);
/* Forgets the last request error (at the end of every callback). */
void wink_reset_request_error(void);

#endif
