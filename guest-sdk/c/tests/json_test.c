/*
 * json_test.c — the JSON helpers of wink_json.c, tested natively (no WebAssembly needed):
 *
 *     cc -std=c11 -Wall -Wextra -Werror -I guest-sdk/c guest-sdk/c/tests/json_test.c guest-sdk/c/wink_json.c && ./a.out
 *
 * xtask's tests run it (`cargo test -p xtask`).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wink.h"

/* The SDK's per-call arena, reduced to what the helpers need. */
void *wink_alloc(size_t n) {
    return malloc(n);
}

static bool eq(const char *got, const char *want) {
    return got != NULL && strcmp(got, want) == 0;
}

#define CHECK(c) do { if (!(c)) { printf("FAIL line %d: %s\n", __LINE__, #c); fails++; } } while (0)
int main(void) {
    int fails = 0;
    const char *j = "{\"metadata\":{\"name\":\"a\",\"labels\":{\"app.kubernetes.io/name\":\"x\",\"b\":\"y\"}},"
                    "\"spec\":{\"containers\":[{\"name\":\"c1\",\"image\":\"i1\"},{\"name\":\"c2\",\"image\":\"i\\\"2\\u00e9\\ud83d\\ude00\"}]},"
                    "\"data\":{\"checkout.timeout\":\"30s\",\"n\":-42,\"f\":1.5,\"t\":true,\"z\":null,\"e\":[],\"o\":{}}}";
    CHECK(wink_json_type_of(j, "") == WINK_JSON_OBJECT);
    CHECK(eq(wink_json_string(j, "metadata.name"), "a"));
    CHECK(eq(wink_json_string(j, "metadata.labels.app\\.kubernetes\\.io/name"), "x"));
    CHECK(eq(wink_json_string(j, "spec.containers.1.image"), "i\"2\xc3\xa9\xf0\x9f\x98\x80"));
    CHECK(wink_json_string(j, "spec.containers.2.image") == NULL);
    CHECK(wink_json_len(j, "spec.containers") == 2);
    CHECK(wink_json_len(j, "data.e") == 0);
    CHECK(wink_json_len(j, "data.o") == 0);
    CHECK(wink_json_len(j, "data") == 7);
    CHECK(eq(wink_json_key_at(j, "data", 0), "checkout.timeout"));
    CHECK(eq(wink_json_key_at(j, "data", 6), "o"));
    CHECK(wink_json_key_at(j, "data", 7) == NULL);
    CHECK(eq(wink_json_string(j, "data.checkout\\.timeout"), "30s"));
    long long n; bool b;
    CHECK(wink_json_int(j, "data.n", &n) && n == -42);
    CHECK(!wink_json_int(j, "data.f", &n));
    CHECK(wink_json_bool(j, "data.t", &b) && b);
    CHECK(wink_json_type_of(j, "data.z") == WINK_JSON_NULL);
    CHECK(wink_json_type_of(j, "data.f") == WINK_JSON_NUMBER);
    CHECK(wink_json_type_of(j, "data.missing") == WINK_JSON_MISSING);
    CHECK(wink_json_type_of("null", "") == WINK_JSON_NULL);
    CHECK(wink_json_string("null", "x") == NULL);
    CHECK(wink_json_type_of("{\"lookupKey\": 7}", "lookupKey") == WINK_JSON_NUMBER);
    CHECK(wink_json_string("{\"lookupKey\": 7}", "lookupKey") == NULL);
    CHECK(wink_json_type_of("{\"a\": [1, {\"b\": 2}] , \"c\" : 3 }", "a.1.b") == WINK_JSON_NUMBER);
    CHECK(wink_json_int("{\"a\": [1, {\"b\": 2}] , \"c\" : 3 }", "c", &n) && n == 3);
    CHECK(wink_json_type_of("{\"a\": ", "a") == WINK_JSON_MISSING);
    CHECK(wink_json_string("{\"a\":\"unterminated", "a") == NULL);
    printf("%d failures\n", fails);
    return fails != 0;
}
