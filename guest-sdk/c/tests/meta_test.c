/*
 * meta_test.c — owner references and label selectors (wink_meta.c), tested natively with
 * the object accessors reduced to reading the struct:
 *
 *     cc -std=c11 -Wall -Wextra -Werror -I guest-sdk/c guest-sdk/c/tests/meta_test.c \
 *         guest-sdk/c/wink_meta.c guest-sdk/c/wink_json.c && ./a.out
 *
 * xtask's tests run it (`cargo test -p xtask`).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wink.h"

void *wink_alloc(size_t n) {
    return malloc(n);
}

char *wink_sprintf(const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(NULL, 0, fmt, args);
    va_end(args);
    char *out = malloc((size_t)n + 1);
    va_start(args, fmt);
    vsnprintf(out, (size_t)n + 1, fmt, args);
    va_end(args);
    return out;
}

const wink_meta *wink_meta_of(const wink_object *obj) { return &obj->_meta; }
const char *wink_uid(const wink_object *obj) { return obj->_uid; }
const char *wink_api_version(const wink_object *obj) { return obj->_api_version; }
const char *wink_kind(const wink_object *obj) { return obj->_kind; }
const char *wink_name(const wink_object *obj) { return obj->_name; }
const char *wink_label(const wink_object *obj, const char *key) {
    for (size_t i = 0; i < obj->_meta.labels_len; i++) {
        if (strcmp(obj->_meta.labels[i].key, key) == 0) return obj->_meta.labels[i].value;
    }
    return NULL;
}

#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); fails++; } } while (0)

int main(void) {
    int fails = 0;
    static const wink_pair labels[] = {{"app.kubernetes.io/name", "web"}, {"tier", "front"}};
    static const wink_owner_ref refs[] = {{"v1", "ConfigMap", "c", "u-3", false},
                                          {"apps/v1", "Deployment", "web", "u-9", true}};
    wink_object pod = {0};
    pod._meta.labels = labels;
    pod._meta.labels_len = 2;
    pod._meta.owner_refs = refs;
    pod._meta.owner_refs_len = 2;
    wink_object web = {0}, other = {0}, unborn = {0};
    web._api_version = "apps/v1", web._kind = "Deployment", web._name = "we\"b", web._uid = "u-9";
    other._uid = "u-8";
    unborn._uid = "";

    CHECK(wink_controller_of(&pod) != NULL && strcmp(wink_controller_of(&pod)->uid, "u-9") == 0);
    CHECK(wink_is_controlled_by(&pod, &web));
    CHECK(!wink_is_controlled_by(&pod, &other));
    CHECK(!wink_is_controlled_by(&pod, &unborn));
    const char *ref = wink_controller_reference(&web);
    CHECK(ref != NULL && strcmp(ref, "{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"name\":\"we\\\"b\",\"uid\":\"u-9\","
                                     "\"controller\":true,\"blockOwnerDeletion\":true}") == 0);
    CHECK(wink_controller_reference(&unborn) == NULL);

    const char *sel = "{\"empty\":{},"
                      "\"labels\":{\"matchLabels\":{\"app.kubernetes.io/name\":\"web\"}},"
                      "\"both\":{\"matchLabels\":{\"app.kubernetes.io/name\":\"web\",\"tier\":\"back\"}},"
                      "\"in\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"edge\",\"front\"]}]},"
                      "\"inMissing\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"In\",\"values\":[\"a\"]}]},"
                      "\"notIn\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"NotIn\",\"values\":[\"a\"]}]},"
                      "\"notInHit\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"NotIn\",\"values\":[\"front\"]}]},"
                      "\"exists\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\"}]},"
                      "\"absent\":{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"DoesNotExist\"}]},"
                      "\"badOp\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Equals\",\"values\":[\"a\"]}]},"
                      "\"noValues\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[]}]},"
                      "\"extraValues\":{\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"Exists\",\"values\":[\"a\"]}]}}";
    CHECK(wink_selector_matches(sel, "empty", &pod) == 1);
    CHECK(wink_selector_matches(sel, "missing", &pod) == 0);
    CHECK(wink_selector_matches(sel, "labels", &pod) == 1);
    CHECK(wink_selector_matches(sel, "both", &pod) == 0);
    CHECK(wink_selector_matches(sel, "in", &pod) == 1);
    CHECK(wink_selector_matches(sel, "inMissing", &pod) == 0);
    CHECK(wink_selector_matches(sel, "notIn", &pod) == 1);
    CHECK(wink_selector_matches(sel, "notInHit", &pod) == 0);
    CHECK(wink_selector_matches(sel, "exists", &pod) == 1);
    CHECK(wink_selector_matches(sel, "absent", &pod) == 1);
    CHECK(wink_selector_matches(sel, "badOp", &pod) == -1 && strstr(wink_selector_error(), "operator") != NULL);
    CHECK(wink_selector_matches(sel, "noValues", &pod) == -1);
    CHECK(wink_selector_matches(sel, "extraValues", &pod) == -1);
    if (fails == 0) printf("ok\n");
    return fails == 0 ? 0 : 1;
}
