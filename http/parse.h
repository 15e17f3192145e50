/* SPDX-License-Identifier: MIT
 *
 * What the HTTP front-end parses out of a request itself, beyond what
 * evhttp does: query parameters (RFC 3986 percent-encoding, '+' as a
 * space as forms send it) and HTTP Basic credentials (RFC 7617). Pure:
 * no evhttp, no sockets; safe on hostile input (fuzzed by
 * test/fuzz/fuzz_http.c).
 */
#ifndef HA_HTTP_PARSE_H
#define HA_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>

/* The value of parameter name in query (a raw query string, may be
 * NULL): returns 1 with *out malloc'd (decoded), 0 when absent (*out
 * NULL), or -1 with err set when the query is malformed on the way to
 * it: a bad %-escape, or an encoded NUL ("x%00.txt" is refused, never cut
 * to "x"). The first occurrence wins. */
int ha_http_query_param(const char *query, const char *name, char **out,
                        char *err, size_t errlen);

#define HA_HTTP_BASIC_MAX 511 /* bytes of decoded "user:password" */

/* HTTP Basic credentials from an Authorization header value: user
 * (NUL-terminated, at most user_cap - 1 bytes) and password (pw_cap
 * bytes, *pw_len of them; may hold any byte but NUL). Returns 0, or -1
 * with *why saying what was wrong ("no credentials" when the header is
 * absent or not Basic). The caller wipes pw. */
int ha_http_basic_parse(const char *header, char *user, size_t user_cap,
                        char *pw, size_t pw_cap, size_t *pw_len,
                        const char **why);

/* Copies text into out (len bytes, NUL-terminated, cut to fit) with
 * every control byte (below 0x20, and 0x7f) written as \xNN, so that a
 * value from a request (a decoded query parameter, a path) can be
 * quoted in a reply's body or a log line without carrying a CR/LF
 * ("?dump=x%0d%0aX-Injected:%201") into them. Returns out. */
char *ha_http_printable(const char *text, char *out, size_t len);

#endif /* HA_HTTP_PARSE_H */
