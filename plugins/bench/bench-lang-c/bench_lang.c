/*
 * bench-lang-c: the languages benchmark's handlers in C (plugin.yaml says which).
 */
#include <string.h>

#include "wink.h"

static volatile size_t sink;

static wink_result on_add(const wink_object *obj, bool initial_list) {
    const char *app = wink_label(obj, "app");
    sink = strlen(wink_name(obj)) + (app != NULL ? strlen(app) : 0);
    return wink_ok();
}

static wink_result on_update(const wink_object *old, const wink_object *new_) {
    const char *image = wink_json_string(wink_json_of(new_), "spec.containers.0.image");
    sink = image != NULL ? strlen(image) : 0;
    return wink_ok();
}

WINK_EXPORT_HANDLER(.on_add = on_add, .on_update = on_update);
