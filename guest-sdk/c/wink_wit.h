/*
 * wink_wit.h — the bindings of the world a plugin is built for; not part of the plugin API.
 *
 * wit-bindgen's C generator names the world's own helpers after the world
 * (handler_plugin_string_t, reconciler_plugin_string_t); the interfaces' types
 * (wink_plugin_types_*, wink_plugin_cache_*, ...) are the same in both worlds.
 * `cargo xtask build-plugins` defines WINK_RECONCILER for a plugin whose manifest has a
 * `reconcile` section, and links that world's bindings; the SDK names the world's helpers
 * through the aliases below, so one source serves both.
 */
#ifndef WINK_WIT_H
#define WINK_WIT_H

#ifdef WINK_RECONCILER
#include "reconciler_plugin.h"
typedef reconciler_plugin_string_t wink_wit_string;
typedef reconciler_plugin_list_tuple2_string_string_t wink_wit_pairs;
#define wink_wit_string_set reconciler_plugin_string_set
#define wink_wit_string_dup reconciler_plugin_string_dup
#define wink_wit_string_free reconciler_plugin_string_free
#else
#include "handler_plugin.h"
typedef handler_plugin_string_t wink_wit_string;
typedef handler_plugin_list_tuple2_string_string_t wink_wit_pairs;
#define wink_wit_string_set handler_plugin_string_set
#define wink_wit_string_dup handler_plugin_string_dup
#define wink_wit_string_free handler_plugin_string_free
#endif

#endif
