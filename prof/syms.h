/* SPDX-License-Identifier: MIT
 *
 * Symbolized addresses: what prof/symbolize.h (or a test's fake) produces
 * and prof/aggregate*.c consume. Per address a short run of frames,
 * innermost first (inlined callees, then the real function last), each a
 * function name, source file and line; names are interned once into one
 * string table and referred to by offset. Per mapped module, where its
 * names came from. Pure: no ELF, no DWARF.
 *
 * Names are only given where they are certain (a DWARF subprogram, or an
 * ELF symbol whose [value, value + size) covers the address). Any other
 * address in a module gets one frame named "<module basename>+0x<offset>"
 * (HA_SYMS_UNNAMED), the offset being the ELF virtual address, which
 * `eu-addr2line -e <module> 0x<offset>` takes and which is the same in
 * every run of the program (no ASLR). Every reader (the SQL tables, the
 * pprof encoder, the flame graph) shows that name as it shows any other.
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
#define HA_SYMS_UNNAMED (1u << 4)   /* no certain name: its one frame is
                                       "<module>+0x<offset>", or the
                                       absolute address outside modules */

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
    uint32_t fsize;  /* bytes of code of its real (outermost) function:
                        the ELF symbol that covers it; 0 = unknown */
};

/* Where a module's names came from, best first from the bottom up. */
enum ha_syms_source {
    HA_SYMS_SRC_NONE,       /* no symbols, or the file could not be read */
    HA_SYMS_SRC_DYNSYM,     /* only the dynamic symbols (.dynsym) */
    HA_SYMS_SRC_SYMTAB,     /* the full symbol table (.symtab) */
    HA_SYMS_SRC_DWARF,      /* DWARF, in the file or a local debug file */
    HA_SYMS_SRC_DEBUGINFOD, /* DWARF fetched from a debuginfod server */
    HA_SYMS_SRC_MAX
};

/* One mapped module that held addresses. */
struct ha_syms_module {
    uint32_t path;              /* (strs) as in ha_syms_addr.module */
    uint32_t build_id;          /* (strs) hex GNU build-id, 0 = none */
    uint32_t detail;            /* (strs) where the names came from, or
                                   why there are none; 0 = nothing */
    enum ha_syms_source from;
    bool from_index;            /* named from the module's symbol index
                                   (prof/symindex.h), its files unread */
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
    size_t n_sorted;            /* addrs[0 .. n_sorted) are sorted (the
                                   last ha_syms_finish) */

    struct ha_syms_module *modules; /* in the order they were added */
    size_t n_modules;
    size_t modules_cap;
    unsigned pending;           /* modules whose debug info was still
                                   being fetched (symbolize.h) */

    /* Per frame of the profile these addresses were made for, the index
     * of its entry in addrs (ha_syms_set_frame_index): every pass over
     * the stacks (aggregate, walker, pprof) then finds a frame's entry
     * without hashing it. NULL: looked up by pc. */
    uint32_t *by_frame;
    size_t n_by_frame;

    /* The allocation wrappers the allocation-site cut skips for the
     * profile these addresses were made for (prof/wrappers.h), owned
     * (ha_syms_free frees it); NULL: none, jeprof's cut. */
    struct ha_wrap_set *wrappers;
};

/* Appends an address with n frames (innermost first; copied), fsize 0.
 * Returns 0 or -1 on allocation failure. */
int ha_syms_add(struct ha_syms *s, uint64_t pc, uint32_t module,
                uint32_t flags, const struct ha_syms_frame *frames,
                size_t n);

/* Appends an address with no certain name: one frame named
 * "<basename of path>+0x<off>" (path NULL or "": "0x<16 hex digits>" of
 * pc), flagged HA_SYMS_UNNAMED on top of flags. Returns 0 or -1. */
int ha_syms_add_unnamed(struct ha_syms *s, uint64_t pc, uint32_t module,
                        uint32_t flags, const char *path, uint64_t off);

/* Makes entry i (in addrs) unnamed as above, flags added: for names
 * that turn out to be wrong (the file changed since the dump). Returns 0
 * or -1. */
int ha_syms_rename_unnamed(struct ha_syms *s, size_t i, uint32_t flags,
                           const char *path, uint64_t off);

/* Writes the unnamed name above into buf (at least 24 bytes longer than
 * the basename is safe; it is cut to len). */
void ha_syms_unnamed_name(char *buf, size_t len, const char *path,
                          uint64_t off);

/* Adds (or replaces) the record of module path: where its names came
 * from, its build-id (may be NULL) and detail (may be NULL). Returns 0 or
 * -1 on allocation failure. */
int ha_syms_set_module(struct ha_syms *s, const char *path,
                       const char *build_id, enum ha_syms_source from,
                       const char *detail);

/* The record of the module whose path is strs offset path, or NULL. */
const struct ha_syms_module *ha_syms_find_module(const struct ha_syms *s,
                                                 uint32_t path);

/* "dwarf", "symtab", "dynsym", "debuginfod" or "none". */
const char *ha_syms_source_name(enum ha_syms_source from);

/* Sorts by pc so ha_syms_find() works; the last of duplicates wins. */
void ha_syms_finish(struct ha_syms *s);

/* Takes index (malloc'd; see ha_agg_lookup_index) as by_frame when s has
 * exactly one entry per address of pcs[0 .. n), in that order (what the
 * symbolizer makes of sorted unique pcs); otherwise frees it and s keeps
 * looking frames up by pc. Call after ha_syms_finish(). */
void ha_syms_set_frame_index(struct ha_syms *s, const uint64_t *pcs,
                             size_t n, uint32_t *index, size_t n_frames);

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
