/* SPDX-License-Identifier: MIT
 *
 * The JSON pull reader (see json.h): a scanner for the tokens and a small
 * state machine for where each may stand.
 */
#include "prof/json.h"

#include <string.h>

#include "core/util.h"

/* What may come next. */
enum expect {
    EX_VALUE,          /* the top value, after ':' or ',' in an array */
    EX_KEY_OR_END,     /* after '{' */
    EX_KEY,            /* after ',' in an object */
    EX_VALUE_OR_END,   /* after '[' */
    EX_COMMA_OR_END    /* after a member's or an element's value */
};

/* The reader keeps its expectation in need_value/first: encoded here to
 * keep the struct's fields plain. */
static enum expect
expect_of(const struct ha_json *j)
{
    char ctx = j->depth > 0 ? j->stack[j->depth - 1] : 0;

    if (j->need_value)
        return EX_VALUE;
    if (ctx == '{')
        return j->first ? EX_KEY_OR_END : EX_COMMA_OR_END;
    if (ctx == '[')
        return j->first ? EX_VALUE_OR_END : EX_COMMA_OR_END;
    return EX_VALUE;
}

void
ha_json_init(struct ha_json *j, const char *buf, size_t len, char *err,
             size_t errlen)
{
    memset(j, 0, sizeof(*j));
    j->buf = buf != NULL ? buf : "";
    j->len = buf != NULL ? len : 0;
    j->need_value = true;
    j->err = err;
    j->errlen = errlen;
}

static int
fail_at(struct ha_json *j, size_t at, const char *what)
{
    ha_err_set(j->err, j->errlen, "byte %zu: expected %s", at, what);
    return -1;
}

int
ha_json_fail(struct ha_json *j, const char *what)
{
    return fail_at(j, j->tok_at, what);
}

static void
skip_ws(struct ha_json *j)
{
    while (j->pos < j->len) {
        char c = j->buf[j->pos];

        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        j->pos++;
    }
}

/* A string at pos ('"'): sets tok to its inside. Returns 0 or -1. */
static int
scan_string(struct ha_json *j)
{
    size_t p = j->pos + 1;

    j->tok_at = j->pos;
    while (p < j->len) {
        unsigned char c = (unsigned char)j->buf[p];

        if (c == '"') {
            j->tok = j->buf + j->pos + 1;
            j->tok_len = p - j->pos - 1;
            j->pos = p + 1;
            return 0;
        }
        if (c < 0x20)
            return fail_at(j, p, "a control character escaped in a "
                                 "string");
        if (c == '\\') {
            if (++p >= j->len)
                break;
            switch (j->buf[p]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n':
            case 'r': case 't':
                break;
            case 'u':
                if (j->len - p < 5 || ha_hex_digit(j->buf[p + 1]) < 0 ||
                    ha_hex_digit(j->buf[p + 2]) < 0 ||
                    ha_hex_digit(j->buf[p + 3]) < 0 ||
                    ha_hex_digit(j->buf[p + 4]) < 0)
                    return fail_at(j, p, "four hex digits after \\u");
                p += 4;
                break;
            default:
                return fail_at(j, p, "an escape of \" \\ / b f n r t or u");
            }
        }
        p++;
    }
    return fail_at(j, j->pos, "a closing '\"' of a string");
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* A number at pos (RFC 8259's grammar). Returns 0 or -1. */
static int
scan_number(struct ha_json *j)
{
    size_t p = j->pos, start = p;

    j->tok_at = p;
    if (p < j->len && j->buf[p] == '-')
        p++;
    if (p >= j->len || !is_digit(j->buf[p]))
        return fail_at(j, p, "a digit");
    if (j->buf[p] == '0')
        p++;
    else
        while (p < j->len && is_digit(j->buf[p]))
            p++;
    if (p < j->len && j->buf[p] == '.') {
        if (++p >= j->len || !is_digit(j->buf[p]))
            return fail_at(j, p, "a digit after '.'");
        while (p < j->len && is_digit(j->buf[p]))
            p++;
    }
    if (p < j->len && (j->buf[p] == 'e' || j->buf[p] == 'E')) {
        if (++p < j->len && (j->buf[p] == '+' || j->buf[p] == '-'))
            p++;
        if (p >= j->len || !is_digit(j->buf[p]))
            return fail_at(j, p, "a digit in the exponent");
        while (p < j->len && is_digit(j->buf[p]))
            p++;
    }
    j->tok = j->buf + start;
    j->tok_len = p - start;
    j->pos = p;
    return 0;
}

/* A value is complete: what may follow it. */
static void
after_value(struct ha_json *j)
{
    j->need_value = false;
    j->first = false;
    if (j->depth == 0)
        j->done = true;
}

static enum ha_json_tok
open_container(struct ha_json *j, char c)
{
    if (j->depth == HA_JSON_MAX_DEPTH) {
        fail_at(j, j->pos, "at most 32 nested objects and arrays");
        return HA_JSON_ERROR;
    }
    j->stack[j->depth++] = c;
    j->pos++;
    j->need_value = false;
    j->first = true;
    return c == '{' ? HA_JSON_OBJECT : HA_JSON_ARRAY;
}

static enum ha_json_tok
close_container(struct ha_json *j)
{
    char c = j->stack[--j->depth];

    j->pos++;
    after_value(j);
    return c == '{' ? HA_JSON_OBJECT_END : HA_JSON_ARRAY_END;
}

/* A value at pos. */
static enum ha_json_tok
read_value(struct ha_json *j)
{
    char c;

    if (j->pos >= j->len) {
        fail_at(j, j->pos, "a value, not the end of the document");
        return HA_JSON_ERROR;
    }
    c = j->buf[j->pos];
    j->tok_at = j->pos;
    switch (c) {
    case '{':
    case '[':
        return open_container(j, c);
    case '"':
        if (scan_string(j) != 0)
            return HA_JSON_ERROR;
        after_value(j);
        return HA_JSON_STRING;
    case 't':
    case 'f':
    case 'n': {
        static const char *const lits[] = {"true", "false", "null"};
        static const enum ha_json_tok toks[] = {HA_JSON_TRUE, HA_JSON_FALSE,
                                                HA_JSON_NULL};
        int k = c == 't' ? 0 : c == 'f' ? 1 : 2;
        size_t n = strlen(lits[k]);

        if (j->len - j->pos < n || memcmp(j->buf + j->pos, lits[k], n) != 0) {
            fail_at(j, j->pos, "a value (true, false or null)");
            return HA_JSON_ERROR;
        }
        j->pos += n;
        after_value(j);
        return toks[k];
    }
    default:
        if (c == '-' || is_digit(c)) {
            if (scan_number(j) != 0)
                return HA_JSON_ERROR;
            after_value(j);
            return HA_JSON_NUMBER;
        }
        fail_at(j, j->pos, "a value (object, array, string, number, true, "
                           "false or null)");
        return HA_JSON_ERROR;
    }
}

/* A member's name and its ':' at pos. */
static enum ha_json_tok
read_key(struct ha_json *j)
{
    if (j->pos >= j->len || j->buf[j->pos] != '"') {
        fail_at(j, j->pos, "a member name in quotes");
        return HA_JSON_ERROR;
    }
    if (scan_string(j) != 0)
        return HA_JSON_ERROR;
    skip_ws(j);
    if (j->pos >= j->len || j->buf[j->pos] != ':') {
        fail_at(j, j->pos, "':' after a member name");
        return HA_JSON_ERROR;
    }
    j->pos++;
    j->need_value = true;
    j->first = false;
    return HA_JSON_KEY;
}

enum ha_json_tok
ha_json_next(struct ha_json *j)
{
    for (;;) {
        char ctx = j->depth > 0 ? j->stack[j->depth - 1] : 0;
        char c;

        skip_ws(j);
        if (j->done) {
            if (j->pos == j->len)
                return HA_JSON_END;
            fail_at(j, j->pos, "the end of the document after its value");
            return HA_JSON_ERROR;
        }
        c = j->pos < j->len ? j->buf[j->pos] : '\0';
        switch (expect_of(j)) {
        case EX_VALUE:
            return read_value(j);
        case EX_KEY_OR_END:
            if (c == '}')
                return close_container(j);
            return read_key(j);
        case EX_KEY:
            return read_key(j);
        case EX_VALUE_OR_END:
            if (c == ']')
                return close_container(j);
            return read_value(j);
        case EX_COMMA_OR_END:
            if (c == ',') {
                j->pos++;
                if (ctx == '{') {
                    j->first = false;
                    skip_ws(j);
                    return read_key(j);
                }
                j->need_value = true;
                continue;
            }
            if ((c == '}' && ctx == '{') || (c == ']' && ctx == '['))
                return close_container(j);
            fail_at(j, j->pos, ctx == '{' ? "',' or '}' after a member"
                                          : "',' or ']' after an element");
            return HA_JSON_ERROR;
        }
    }
}

int
ha_json_skip(struct ha_json *j, enum ha_json_tok t)
{
    int depth;

    if (t != HA_JSON_OBJECT && t != HA_JSON_ARRAY)
        return t == HA_JSON_ERROR ? -1 : 0;
    depth = j->depth - 1;
    while (j->depth > depth) {
        enum ha_json_tok u = ha_json_next(j);

        if (u == HA_JSON_ERROR)
            return -1;
        if (u == HA_JSON_END)
            return fail_at(j, j->pos, "the rest of the value");
    }
    return 0;
}

int
ha_json_u64(struct ha_json *j, const char *what, uint64_t *out)
{
    uint64_t v = 0;

    if (j->tok_len == 0 || j->tok_len > 20)
        return fail_at(j, j->tok_at, what);
    for (size_t i = 0; i < j->tok_len; i++) {
        char c = j->tok[i];
        unsigned d;

        if (!is_digit(c))
            return fail_at(j, j->tok_at, what);
        d = (unsigned)(c - '0');
        if (v > UINT64_MAX / 10 || (v == UINT64_MAX / 10 && d > UINT64_MAX % 10))
            return fail_at(j, j->tok_at, what);
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int
ha_json_i64(struct ha_json *j, const char *what, int64_t *out)
{
    bool neg = j->tok_len > 0 && j->tok[0] == '-';
    struct ha_json sub = *j;
    uint64_t v;

    if (neg) {
        sub.tok++;
        sub.tok_len--;
    }
    if (ha_json_u64(&sub, what, &v) != 0 ||
        v > (neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
        return fail_at(j, j->tok_at, what);
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return 0;
}

int
ha_json_hex(struct ha_json *j, const char *what, uint64_t *out)
{
    uint64_t v = 0;
    size_t n = j->tok_len;

    if (n < 3 || n > 18 || j->tok[0] != '0' ||
        (j->tok[1] != 'x' && j->tok[1] != 'X'))
        return fail_at(j, j->tok_at, what);
    for (size_t i = 2; i < n; i++) {
        int d = ha_hex_digit(j->tok[i]);

        if (d < 0)
            return fail_at(j, j->tok_at, what);
        v = (v << 4) | (uint64_t)d;
    }
    *out = v;
    return 0;
}

/* Decoded text out, cut at a whole character once it no longer fits. */
struct sink {
    char *out;
    size_t cap;   /* bytes of out, the NUL included */
    size_t n;     /* decoded length so far (also past a cut) */
    size_t kept;  /* bytes in out */
    bool full;    /* a character did not fit: nothing more goes in */
};

static void
sink_put(struct sink *s, const char *b, size_t k)
{
    if (!s->full && s->cap > 0 && s->kept + k < s->cap) {
        memcpy(s->out + s->kept, b, k);
        s->kept += k;
    } else {
        s->full = true;
    }
    s->n += k;
}

/* Appends code point cp as UTF-8. */
static void
sink_utf8(struct sink *s, uint32_t cp)
{
    char b[4];
    size_t k;

    if (cp < 0x80) {
        b[0] = (char)cp;
        k = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xc0 | (cp >> 6));
        b[1] = (char)(0x80 | (cp & 0x3f));
        k = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xe0 | (cp >> 12));
        b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[2] = (char)(0x80 | (cp & 0x3f));
        k = 3;
    } else {
        b[0] = (char)(0xf0 | (cp >> 18));
        b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
        b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
        b[3] = (char)(0x80 | (cp & 0x3f));
        k = 4;
    }
    sink_put(s, b, k);
}

static uint32_t
hex4(const char *p)
{
    return (uint32_t)(ha_hex_digit(p[0]) << 12 | ha_hex_digit(p[1]) << 8 |
                      ha_hex_digit(p[2]) << 4 | ha_hex_digit(p[3]));
}

long
ha_json_string(struct ha_json *j, char *out, size_t outlen)
{
    struct sink s = {out, outlen, 0, 0, false};
    const char *p = j->tok, *e = j->tok + j->tok_len;

    while (p < e) {
        uint32_t cp;

        if (*p != '\\') {
            /* Raw bytes: a UTF-8 sequence goes in whole or not at all. */
            size_t k = 1;
            unsigned char c = (unsigned char)*p;

            if (c >= 0xf0)
                k = 4;
            else if (c >= 0xe0)
                k = 3;
            else if (c >= 0xc0)
                k = 2;
            if (k > (size_t)(e - p))
                k = (size_t)(e - p);
            sink_put(&s, p, k);
            p += k;
            continue;
        }
        p++; /* scan_string checked the escape and its digits */
        switch (*p) {
        case 'b': cp = '\b'; break;
        case 'f': cp = '\f'; break;
        case 'n': cp = '\n'; break;
        case 'r': cp = '\r'; break;
        case 't': cp = '\t'; break;
        case 'u':
            cp = hex4(p + 1);
            p += 4;
            if (cp >= 0xd800 && cp < 0xdc00 && e - p >= 7 && p[1] == '\\' &&
                p[2] == 'u') {
                uint32_t lo = hex4(p + 3);

                if (lo >= 0xdc00 && lo < 0xe000) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    p += 6;
                }
            }
            if (cp >= 0xd800 && cp < 0xe000)
                cp = 0xfffd; /* a lone surrogate: U+FFFD */
            break;
        default: /* " \ / */
            cp = (unsigned char)*p;
            break;
        }
        p++;
        sink_utf8(&s, cp);
    }
    if (outlen > 0)
        out[s.kept] = '\0';
    return (long)s.n;
}

bool
ha_json_is(const struct ha_json *j, const char *s)
{
    size_t n = strlen(s);
    char buf[256];
    struct ha_json copy = *j;

    if (memchr(j->tok, '\\', j->tok_len) == NULL)
        return j->tok_len == n && memcmp(j->tok, s, n) == 0;
    if (n >= sizeof(buf))
        return false;
    copy.err = NULL;
    return ha_json_string(&copy, buf, sizeof(buf)) == (long)n &&
           memcmp(buf, s, n) == 0;
}

int
ha_json_expect(struct ha_json *j, enum ha_json_tok want, const char *what)
{
    enum ha_json_tok t = ha_json_next(j);

    if (t == HA_JSON_ERROR)
        return -1;
    if (t != want)
        return ha_json_fail(j, what);
    return 0;
}

int
ha_json_next_u64(struct ha_json *j, const char *what, uint64_t *out)
{
    if (ha_json_expect(j, HA_JSON_NUMBER, what) != 0)
        return -1;
    return ha_json_u64(j, what, out);
}
