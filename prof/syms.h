/* SPDX-License-Identifier: MIT
 *
 * Symbolized addresses: what prof/symbolize.c (or a test's fake) produces
 * and prof/aggregate.c consumes. Per address a short run of frames,
 * innermost first (inlined callees, then the real function last), each a
 * function name, source file and line; names are interned once into one
 * string table and referred to by offset. Pure: no ELF, no DWARF.
 */
#ifndef HA_SYMS_H
#define HA_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* Interned NUL-terminated strings; offset 0 is "". */
struct ha_strtab {
    struct ha_buf buf;  /* the strings */
    uint32_t *slots;    /* open-addressed hash of offsets (0 = empty) */
    size_t n_slots;     /* power of two */
    size_t n_strs;
};

/* Returns the offset of s[0..n) in t, adding it if new; UINT32_MAX on
 * allocation failure or when the table would pass 4 GiB. */
uint32_t ha_strtab_intern(struct ha_strtab *t, const char *s, size_t n);
void ha_strtab_free(struct ha_strtab *t);

static inline const char *
ha_strtab_str(const struct ha_strtab *t, uint32_t off)
{
    return t->buf.data != NULL ? (const char *)t->buf.data + off : "";
}

#define HA_SYMS_ALLOCATOR (1u << 0) /* in the allocator's own module */
#define HA_SYMS_NO_MODULE (1u << 1) /* no mapping holds the address */
#define HA_SYMS_NO_FINI (1u << 2)   /* the file's own symbol table has no
                                       _fini: jeprof runs addr2line on it
                                       without -i (see aggregate.h) */
#define HA_SYMS_STALE (1u << 3)     /* the file on disk is not the one the
                                       dump mapped (build-id): left
                                       unnamed rather than misnamed */

struct ha_syms_frame {
    uint32_t func; /* name (ha_syms.strs), 0 = unknown */
    uint32_t file; /* source file, 0 = unknown */
    uint32_t line; /* 0 = unknown */
};

struct ha_syms_addr {
    uint64_t pc;     /* the address looked up (callers already pc - 1) */
    uint32_t first;  /* frames[first .. first + n), innermost first */
    uint32_t n;      /* 0: nothing known (shown as the address) */
    uint32_t module; /* module path (strs), 0 = none */
    uint32_t flags;  /* HA_SYMS_* */
};

struct ha_syms {
    struct ha_syms_addr *addrs; /* sorted by pc after ha_syms_finish() */
    size_t n_addrs;
    size_t addrs_cap;
    struct ha_syms_frame *frames;
    size_t n_frames;
    size_t frames_cap;
    struct ha_strtab strs;
    bool sorted;
};

/* Appends an address with n frames (innermost first; copied). Returns 0
 * or -1 on allocation failure. */
int ha_syms_add(struct ha_syms *s, uint64_t pc, uint32_t module,
                uint32_t flags, const struct ha_syms_frame *frames,
                size_t n);

/* Sorts by pc so ha_syms_find() works; the last of duplicates wins. */
void ha_syms_finish(struct ha_syms *s);

/* The entry for pc, or NULL. */
const struct ha_syms_addr *ha_syms_find(const struct ha_syms *s,
                                        uint64_t pc);

void ha_syms_free(struct ha_syms *s);

static inline const char *
ha_syms_str(const struct ha_syms *s, uint32_t off)
{
    return ha_strtab_str(&s->strs, off);
}

#endif /* HA_SYMS_H */
