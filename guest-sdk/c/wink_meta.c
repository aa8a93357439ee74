/*
 * wink_meta.c — what every controller does with metadata: controller owner references and
 * label selectors, with the rules of apimachinery's metav1.GetControllerOf and
 * LabelSelectorAsSelector and controller-runtime's SetControllerReference. It reads objects
 * through the SDK's accessors and JSON helpers only, so tests/meta_test.c runs it natively.
 */
#include <stdio.h>
#include <string.h>

#include "wink.h"

const wink_owner_ref *wink_controller_of(const wink_object *obj) {
    const wink_meta *meta = wink_meta_of(obj);
    for (size_t i = 0; meta != NULL && i < meta->owner_refs_len; i++) {
        if (meta->owner_refs[i].controller) {
            return &meta->owner_refs[i];
        }
    }
    return NULL;
}

bool wink_is_controlled_by(const wink_object *obj, const wink_object *owner) {
    const wink_owner_ref *controller = wink_controller_of(obj);
    const char *uid = wink_uid(owner);
    return controller != NULL && uid != NULL && uid[0] != '\0' && strcmp(controller->uid, uid) == 0;
}

/* `s` as a JSON string literal (quotes included), in the callback's arena. */
static const char *quoted(const char *s) {
    size_t n = 2;
    for (const char *p = s; *p; p++) {
        n += (*p == '"' || *p == '\\') ? 2 : ((unsigned char)*p < 0x20 ? 6 : 1);
    }
    char *out = wink_alloc(n + 1), *w = out;
    *w++ = '"';
    for (const char *p = s; *p; p++) {
        if (*p == '"' || *p == '\\') {
            *w++ = '\\';
            *w++ = *p;
        } else if ((unsigned char)*p < 0x20) {
            w += snprintf(w, 7, "\\u%04x", (unsigned char)*p);
        } else {
            *w++ = *p;
        }
    }
    *w++ = '"';
    *w = '\0';
    return out;
}

const char *wink_controller_reference(const wink_object *owner) {
    const char *uid = wink_uid(owner);
    if (uid == NULL || uid[0] == '\0') {
        return NULL;
    }
    return wink_sprintf("{\"apiVersion\":%s,\"kind\":%s,\"name\":%s,\"uid\":%s,\"controller\":true,"
                        "\"blockOwnerDeletion\":true}",
                        quoted(wink_api_version(owner)), quoted(wink_kind(owner)), quoted(wink_name(owner)),
                        quoted(uid));
}

static const char *selector_error = "";

const char *wink_selector_error(void) {
    return selector_error;
}

static int invalid(const char *why) {
    selector_error = why;
    return -1;
}

/* The path of `field` under `path` ("" is the document). */
static const char *under(const char *path, const char *field) {
    return path[0] == '\0' ? field : wink_sprintf("%s.%s", path, field);
}

/* The path of member `key` of the object at `path`: a dot inside the key written "\\.". */
static const char *member(const char *path, const char *key) {
    size_t dots = 0;
    for (const char *p = key; *p; p++) {
        dots += *p == '.';
    }
    char *escaped = wink_alloc(strlen(key) + dots + 1), *w = escaped;
    for (const char *p = key; *p; p++) {
        if (*p == '.') {
            *w++ = '\\';
        }
        *w++ = *p;
    }
    *w = '\0';
    return under(path, escaped);
}

/* Whether string `value` is one of the strings of the array at `values`. */
static bool one_of(const char *json, const char *values, const char *value) {
    long n = wink_json_len(json, values);
    for (long i = 0; value != NULL && i < n; i++) {
        const char *v = wink_json_string(json, wink_sprintf("%s.%ld", values, i));
        if (v != NULL && strcmp(v, value) == 0) {
            return true;
        }
    }
    return false;
}

int wink_selector_matches(const char *json, const char *path, const wink_object *obj) {
    selector_error = "";
    if (wink_json_type_of(json, path) != WINK_JSON_OBJECT) {
        return 0; /* missing (or not a selector): nothing */
    }
    int matches = 1;
    const char *labels = under(path, "matchLabels");
    long n = wink_json_len(json, labels);
    for (long i = 0; i < n; i++) {
        const char *key = wink_json_key_at(json, labels, (size_t)i);
        const char *want = key == NULL ? NULL : wink_json_string(json, member(labels, key));
        const char *got = key == NULL ? NULL : wink_label(obj, key);
        if (want == NULL || got == NULL || strcmp(want, got) != 0) {
            matches = 0;
        }
    }
    const char *expressions = under(path, "matchExpressions");
    n = wink_json_len(json, expressions);
    for (long i = 0; i < n; i++) {
        const char *e = wink_sprintf("%s.%ld", expressions, i);
        const char *key = wink_json_string(json, under(e, "key"));
        const char *op = wink_json_string(json, under(e, "operator"));
        const char *values = under(e, "values");
        long count = wink_json_len(json, values);
        if (key == NULL || key[0] == '\0') {
            return invalid("an expression has no key");
        }
        if (op == NULL) {
            return invalid("an expression has no operator");
        }
        bool in = strcmp(op, "In") == 0, not_in = strcmp(op, "NotIn") == 0;
        bool exists = strcmp(op, "Exists") == 0, absent = strcmp(op, "DoesNotExist") == 0;
        if (!in && !not_in && !exists && !absent) {
            return invalid("an operator is not In, NotIn, Exists or DoesNotExist");
        }
        if ((in || not_in) && count <= 0) {
            return invalid("In and NotIn need values");
        }
        if ((exists || absent) && count > 0) {
            return invalid("Exists and DoesNotExist take no values");
        }
        const char *got = wink_label(obj, key);
        bool holds = in ? one_of(json, values, got)
                   : not_in ? !one_of(json, values, got)
                   : exists ? got != NULL
                   : got == NULL;
        if (!holds) {
            matches = 0;
        }
    }
    return matches;
}
