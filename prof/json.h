/* SPDX-License-Identifier: MIT
 *
 * A pull reader of JSON (RFC 8259) for the documents jemalloc writes
 * with its emitter: the prof_log file (prof.log_stop) and the recent
 * allocations (experimental.prof_recent.alloc_dump). One token at a time
 * over the caller's buffer, nothing copied: the reader checks the
 * grammar as it goes (a value where a value may be, a key and ':' in an
 * object, ',' between members), so a caller that walks only the keys it
 * knows and skips the rest (ha_json_skip) still refuses a malformed
 * document.
 *
 * Trust: safe on hostile input. Nothing is read past len, nesting is
 * bounded (HA_JSON_MAX_DEPTH), numbers are range-checked by the
 * converters, and an error says where (byte offset) and what was
 * expected, never quoting the document: it may not be ours.
 *
 * Pure: no I/O, no allocation.
 */
#ifndef HA_JSON_H
#define HA_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_JSON_MAX_DEPTH 32

enum ha_json_tok {
    HA_JSON_ERROR = -1, /* err says what and where */
    HA_JSON_END = 0,    /* the document is complete */
    HA_JSON_OBJECT,     /* '{' */
    HA_JSON_OBJECT_END, /* '}' */
    HA_JSON_ARRAY,      /* '[' */
    HA_JSON_ARRAY_END,  /* ']' */
    HA_JSON_KEY,        /* a member's name (string) and its ':' */
    HA_JSON_STRING,
    HA_JSON_NUMBER,
    HA_JSON_TRUE,
    HA_JSON_FALSE,
    HA_JSON_NULL
};

struct ha_json {
    const char *buf;
    size_t len;
    size_t pos;                       /* next byte to read */
    int depth;                        /* open containers */
    char stack[HA_JSON_MAX_DEPTH];    /* '{' or '[' per level */
    bool need_value;                  /* after ':' or ',' in an array, or
                                         at the top */
    bool first;                       /* just after '{' or '[' */
    bool done;                        /* the top value is complete */

    /* The token last read (HA_JSON_KEY, _STRING, _NUMBER): its text in
     * buf, escapes not decoded, without the quotes. */
    const char *tok;
    size_t tok_len;
    size_t tok_at;                    /* its offset, for messages */

    char *err;
    size_t errlen;
};

/* Starts reading buf[0 .. len) (no NUL needed); err receives messages. */
void ha_json_init(struct ha_json *j, const char *buf, size_t len, char *err,
                  size_t errlen);

/* The next token. After the top value, HA_JSON_END (anything but white
 * space after it is an error). */
enum ha_json_tok ha_json_next(struct ha_json *j);

/* Skips the value whose first token t was just read (for an object or
 * array, through its end). Returns 0 or -1 (err set). */
int ha_json_skip(struct ha_json *j, enum ha_json_tok t);

/* The number just read as an unsigned integer (no sign, fraction or
 * exponent), below 2^64. Returns 0, or -1 with err naming what. */
int ha_json_u64(struct ha_json *j, const char *what, uint64_t *out);

/* The number just read as a signed integer. Returns 0 or -1. */
int ha_json_i64(struct ha_json *j, const char *what, int64_t *out);

/* "0x<1..16 hex digits>" (an address as jemalloc's "%p" writes it) in the
 * string just read. Returns 0 or -1. */
int ha_json_hex(struct ha_json *j, const char *what, uint64_t *out);

/* Whether the key or string just read, decoded, equals s. */
bool ha_json_is(const struct ha_json *j, const char *s);

/* Decodes the string just read (escapes, \u with surrogate pairs, into
 * UTF-8; a lone surrogate becomes U+FFFD) into out (outlen bytes, always
 * NUL-terminated; longer text is cut at a character boundary). Returns
 * the decoded length before any cut (the reader checked every escape
 * when it read the string). */
long ha_json_string(struct ha_json *j, char *out, size_t outlen);

/* Reads the next token and checks it is want (else err: what). Returns 0
 * or -1. */
int ha_json_expect(struct ha_json *j, enum ha_json_tok want,
                   const char *what);

/* Reads the next value as an unsigned number (ha_json_u64). Returns 0 or
 * -1. */
int ha_json_next_u64(struct ha_json *j, const char *what, uint64_t *out);

/* Sets err to "byte N: expected <what>" at the last token, returns -1. */
int ha_json_fail(struct ha_json *j, const char *what);

#endif /* HA_JSON_H */
