/* SPDX-License-Identifier: MIT
 *
 * A growable byte buffer. The wire codec appends packets to one; conn.c
 * then moves the bytes into the bufferevent. Allocation failure is sticky:
 * after one failed append every later append is a no-op and ha_buf_failed()
 * reports it, so encoders need not check each call.
 */
#ifndef HA_BUF_H
#define HA_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ha_buf {
    uint8_t *data;  /* heap storage, NULL until the first append */
    size_t len;     /* bytes in use */
    size_t cap;     /* bytes allocated */
    bool failed;    /* an allocation failed; contents are incomplete */
};

#define HA_BUF_INIT {NULL, 0, 0, false}

void ha_buf_init(struct ha_buf *b);
void ha_buf_free(struct ha_buf *b);
/* Empties the buffer, keeping its storage. */
void ha_buf_reset(struct ha_buf *b);
/* Ensures room for n more bytes. Returns 0, or -1 on allocation failure. */
int ha_buf_reserve(struct ha_buf *b, size_t n);
void ha_buf_append(struct ha_buf *b, const void *p, size_t n);
void ha_buf_append_u8(struct ha_buf *b, uint8_t v);
/* Little-endian fixed-width integers (MySQL protocol: int<2>, int<3> ...). */
void ha_buf_append_le(struct ha_buf *b, uint64_t v, size_t width);
void ha_buf_append_str(struct ha_buf *b, const char *s);
/* Appends s and its terminating NUL (MySQL string<NUL>). */
void ha_buf_append_strz(struct ha_buf *b, const char *s);
void ha_buf_printf(struct ha_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Removes the first n bytes. */
void ha_buf_consume(struct ha_buf *b, size_t n);
static inline bool ha_buf_failed(const struct ha_buf *b) { return b->failed; }

#endif /* HA_BUF_H */
