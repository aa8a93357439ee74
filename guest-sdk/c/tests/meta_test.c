/*
 * meta_test.c — owner references and label selectors (wink_meta.c), tested natively with
 * the object accessors reduced to reading the struct:
 *
 *     cc -std=c11 -Wall -Wextra -Werror -I guest-sdk/c guest-sdk/c/tests/meta_test.c \
 *         guest-sdk/c/wink_meta.c guest-sdk/c/wink_json.c && ./a.out .
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

/* The text of the file at `path`, or NULL. */
static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)size + 1);
    size_t read = fread(text, 1, (size_t)size, f);
    fclose(f);
    text[read] = '\0';
    return text;
}

/* The label selector cases every SDK and the host agree on
 * (tests/conformance/label-selectors.json under `repo`); the number of failures. */
static int shared_corpus(const char *repo) {
    int fails = 0;
    const char *json = read_file(wink_sprintf("%s/tests/conformance/label-selectors.json", repo));
    CHECK(json != NULL);
    if (json == NULL) return fails;
    long n = wink_json_len(json, "labels");
    wink_pair *pairs = malloc(sizeof(wink_pair) * (size_t)(n > 0 ? n : 1));
    for (long i = 0; i < n; i++) {
        pairs[i].key = wink_json_key_at(json, "labels", (size_t)i);
        pairs[i].value = wink_json_string(json, wink_sprintf("labels.%s", pairs[i].key));
    }
    wink_object obj = {0};
    obj._meta.labels = pairs;
    obj._meta.labels_len = (size_t)n;
    long cases = wink_json_len(json, "cases");
    CHECK(cases > 0);
    for (long i = 0; i < cases; i++) {
        const char *name = wink_json_string(json, wink_sprintf("cases.%ld.name", i));
        const char *invalid = wink_json_string(json, wink_sprintf("cases.%ld.expect", i));
        bool expect = false;
        int want = invalid != NULL ? -1 : (wink_json_bool(json, wink_sprintf("cases.%ld.expect", i), &expect), expect);
        int got = wink_selector_matches(json, wink_sprintf("cases.%ld.selector", i), &obj);
        if (got != want) {
            printf("FAIL corpus case \"%s\": %d, want %d\n", name, got, want);
            fails++;
        }
    }
    return fails;
}

int main(int argc, char **argv) {
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
    /* The repository's root, where the shared corpus is (xtask passes it). */
    CHECK(argc > 1);
    if (argc > 1) fails += shared_corpus(argv[1]);
    if (fails == 0) printf("ok\n");
    return fails == 0 ? 0 : 1;
}
