/*
 * wink_json.c — reading values out of JSON text by path, without building a tree.
 *
 * Each lookup scans the text from the start, skipping what the path does not name; strings
 * it returns are unescaped into the per-call arena (wink_alloc). The scanner accepts what a
 * Kubernetes API server sends (RFC 8259 JSON); on malformed text a lookup finds nothing.
 */
#include <stdlib.h>
#include <string.h>

#include "wink.h"

static const char *skip_ws(const char *p) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
        p++;
    }
    return p;
}

/* Past the string starting at the quote `p`, or NULL. */
static const char *skip_string(const char *p) {
    for (p++; *p != '\0'; p++) {
        if (*p == '\\') {
            if (*++p == '\0') {
                return NULL;
            }
        } else if (*p == '"') {
            return p + 1;
        }
    }
    return NULL;
}

/* Past the value starting at `p` (after whitespace), or NULL. */
static const char *skip_value(const char *p) {
    p = skip_ws(p);
    if (*p == '"') {
        return skip_string(p);
    }
    if (*p == '{' || *p == '[') {
        int depth = 0;
        while (*p != '\0') {
            if (*p == '"') {
                p = skip_string(p);
                if (p == NULL) {
                    return NULL;
                }
                continue;
            }
            if (*p == '{' || *p == '[') {
                depth++;
            } else if (*p == '}' || *p == ']') {
                if (--depth == 0) {
                    return p + 1;
                }
            }
            p++;
        }
        return NULL;
    }
    const char *start = p;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || *p == '-' || *p == '+' || *p == '.' ||
           *p == 'E') {
        p++;
    }
    return p == start ? NULL : p;
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static long read_hex4(const char *p) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0) {
            return -1;
        }
        v = v * 16 + d;
    }
    return v;
}

static char *put_utf8(char *out, unsigned long cp) {
    if (cp < 0x80) {
        *out++ = (char)cp;
    } else if (cp < 0x800) {
        *out++ = (char)(0xC0 | (cp >> 6));
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        *out++ = (char)(0xE0 | (cp >> 12));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    } else {
        *out++ = (char)(0xF0 | (cp >> 18));
        *out++ = (char)(0x80 | ((cp >> 12) & 0x3F));
        *out++ = (char)(0x80 | ((cp >> 6) & 0x3F));
        *out++ = (char)(0x80 | (cp & 0x3F));
    }
    return out;
}

/* Unescapes the string starting at the quote `p` into the arena (NULL if malformed). An
 * unescaped string is never longer than its escaped form. */
static char *unescape(const char *p) {
    const char *end = skip_string(p);
    if (end == NULL) {
        return NULL;
    }
    char *s = wink_alloc((size_t)(end - p));
    char *out = s;
    for (p++; p < end - 1; p++) {
        if (*p != '\\') {
            *out++ = *p;
            continue;
        }
        p++;
        switch (*p) {
        case 'b': *out++ = '\b'; break;
        case 'f': *out++ = '\f'; break;
        case 'n': *out++ = '\n'; break;
        case 'r': *out++ = '\r'; break;
        case 't': *out++ = '\t'; break;
        case 'u': {
            long cp = read_hex4(p + 1);
            if (cp < 0) {
                return NULL;
            }
            p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && p[1] == '\\' && p[2] == 'u') {
                long low = read_hex4(p + 3);
                if (low >= 0xDC00 && low < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                    p += 6;
                }
            }
            out = put_utf8(out, (unsigned long)cp);
            break;
        }
        default: *out++ = *p; break; /* \" \\ \/ */
        }
    }
    *out = '\0';
    return s;
}

/* Whether the key string starting at the quote `p` is `seg`. Keys without escapes (all of
 * Kubernetes') are compared in place; others are unescaped first. */
static bool key_matches(const char *p, const char *seg, size_t seg_len) {
    const char *end = skip_string(p);
    if (end == NULL) {
        return false;
    }
    size_t len = (size_t)(end - p) - 2;
    if (memchr(p + 1, '\\', len) == NULL) {
        return len == seg_len && memcmp(p + 1, seg, len) == 0;
    }
    const char *key = unescape(p);
    return key != NULL && strcmp(key, seg) == 0;
}

/* Copies the next segment of `path` (unescaping "\.") into `seg`; returns the rest of the
 * path, after the dot, or NULL at the end. */
static const char *next_segment(const char *path, char *seg, size_t cap, size_t *seg_len) {
    size_t n = 0;
    while (*path != '\0' && *path != '.') {
        if (path[0] == '\\' && path[1] == '.') {
            path++;
        }
        if (n + 1 < cap) {
            seg[n++] = *path;
        }
        path++;
    }
    seg[n] = '\0';
    *seg_len = n;
    return *path == '.' ? path + 1 : NULL;
}

/* The start of the value at `path` in `json`, or NULL. */
static const char *find(const char *json, const char *path) {
    const char *p = skip_ws(json);
    if (path == NULL || *path == '\0') {
        return *p != '\0' ? p : NULL;
    }
    char seg[256];
    const char *rest = path;
    while (rest != NULL) {
        size_t seg_len;
        rest = next_segment(rest, seg, sizeof seg, &seg_len);
        p = skip_ws(p);
        if (*p == '{') {
            p = skip_ws(p + 1);
            const char *found = NULL;
            while (*p == '"') {
                bool match = key_matches(p, seg, seg_len);
                p = skip_string(p);
                if (p == NULL) {
                    return NULL;
                }
                p = skip_ws(p);
                if (*p != ':') {
                    return NULL;
                }
                p = skip_ws(p + 1);
                if (match) {
                    found = p;
                    break;
                }
                const char *after = skip_value(p);
                if (after == NULL) {
                    return NULL;
                }
                p = skip_ws(after);
                if (*p != ',') {
                    return NULL;
                }
                p = skip_ws(p + 1);
            }
            if (found == NULL) {
                return NULL;
            }
            p = found;
        } else if (*p == '[') {
            char *endp;
            long index = strtol(seg, &endp, 10);
            if (seg_len == 0 || *endp != '\0' || index < 0) {
                return NULL;
            }
            p = skip_ws(p + 1);
            for (long i = 0; i < index; i++) {
                p = skip_value(p);
                if (p == NULL) {
                    return NULL;
                }
                p = skip_ws(p);
                if (*p != ',') {
                    return NULL;
                }
                p = skip_ws(p + 1);
            }
            if (*p == ']') {
                return NULL;
            }
        } else {
            return NULL;
        }
    }
    return skip_ws(p);
}

wink_json_type wink_json_type_of(const char *json, const char *path) {
    const char *p = find(json, path);
    if (p == NULL) return WINK_JSON_MISSING;
    switch (*p) {
    case 'n': return WINK_JSON_NULL;
    case 't':
    case 'f': return WINK_JSON_BOOL;
    case '"': return WINK_JSON_STRING;
    case '[': return WINK_JSON_ARRAY;
    case '{': return WINK_JSON_OBJECT;
    default: return (*p == '-' || (*p >= '0' && *p <= '9')) ? WINK_JSON_NUMBER : WINK_JSON_MISSING;
    }
}

const char *wink_json_string(const char *json, const char *path) {
    const char *p = find(json, path);
    return p != NULL && *p == '"' ? unescape(p) : NULL;
}

bool wink_json_int(const char *json, const char *path, long long *out) {
    const char *p = find(json, path);
    if (p == NULL || !(*p == '-' || (*p >= '0' && *p <= '9'))) {
        return false;
    }
    char *endp;
    long long v = strtoll(p, &endp, 10);
    if (*endp == '.' || *endp == 'e' || *endp == 'E') {
        return false;
    }
    *out = v;
    return true;
}

bool wink_json_bool(const char *json, const char *path, bool *out) {
    const char *p = find(json, path);
    if (p != NULL && strncmp(p, "true", 4) == 0) {
        *out = true;
        return true;
    }
    if (p != NULL && strncmp(p, "false", 5) == 0) {
        *out = false;
        return true;
    }
    return false;
}

/* Calls back for each element (arrays) or member (objects, with its key) until `visit`
 * returns false; returns the number visited, or -1 if `p` is not a container. */
static long each(const char *p, bool (*visit)(const char *key_quote, const char *value, void *ctx), void *ctx) {
    if (p == NULL || (*p != '[' && *p != '{')) {
        return -1;
    }
    bool object = *p == '{';
    char close = object ? '}' : ']';
    p = skip_ws(p + 1);
    long n = 0;
    while (*p != close) {
        const char *key = NULL;
        if (object) {
            if (*p != '"') return -1;
            key = p;
            p = skip_string(p);
            if (p == NULL) return -1;
            p = skip_ws(p);
            if (*p != ':') return -1;
            p = skip_ws(p + 1);
        }
        if (visit != NULL && !visit(key, p, ctx)) {
            return n;
        }
        n++;
        p = skip_value(p);
        if (p == NULL) return -1;
        p = skip_ws(p);
        if (*p == ',') {
            p = skip_ws(p + 1);
        } else if (*p != close) {
            return -1;
        }
    }
    return n;
}

long wink_json_len(const char *json, const char *path) {
    return each(find(json, path), NULL, NULL);
}

struct key_at {
    size_t wanted;
    size_t seen;
    const char *key;
};

static bool visit_key(const char *key_quote, const char *value, void *ctx) {
    struct key_at *k = ctx;
    (void)value;
    if (k->seen++ == k->wanted) {
        k->key = key_quote;
        return false;
    }
    return true;
}

const char *wink_json_key_at(const char *json, const char *path, size_t index) {
    const char *p = find(json, path);
    if (p == NULL || *p != '{') {
        return NULL;
    }
    struct key_at k = {index, 0, NULL};
    each(p, visit_key, &k);
    return k.key != NULL ? unescape(k.key) : NULL;
}
