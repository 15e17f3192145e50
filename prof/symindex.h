/* SPDX-License-Identifier: MIT
 *
 * The symbol index of one ELF module: all the symbolizer needs to name
 * any address in it (inline chains, file:line, ELF function symbols, its
 * PT_LOAD segments, where its names came from), so that a later process
 * names the module's addresses without opening its DWARF. Pure: it
 * encodes an index from arrays, checks the bytes of one read back, and
 * looks addresses up in it. Where index files live and how they are
 * written: prof/symcache.h; who builds and reads them: the symbolizer
 * (prof/symbolize_index.c).
 *
 * An address's names are a function of four things an index keeps apart,
 * each a sorted table: its inline chain (the DWARF subprogram and
 * inlined-subroutine DIEs that hold it, innermost first, with where each
 * was inlined), the line table's file:line, the ELF symbol whose
 * [value, value + size) holds it, and its module's path (for the
 * "<module>+0x<offset>" of an unnamed address). ha_symindex_frames()
 * turns the first three into frames: the one rule, used by the DWARF
 * path too (prof/symbolize_dwarf.c), so an index names as DWARF does.
 *
 * Format, version 1, in the host's byte order (an index never leaves its
 * host; another order is refused by the byte-order word):
 *   struct ha_symindex_header (368 bytes), then sections, each 8-aligned
 *   at the offset the header gives:
 *     SEGS    struct ha_symindex_seg[]   PT_LOAD: file offset to vaddr
 *     SYMS    struct ha_symindex_sym[]   function symbols, by address,
 *                                        one per address
 *     NODES   struct ha_symindex_node[]  frames of inline chains, each
 *                                        with its caller's node, which
 *                                        comes before it
 *     CHAINS  struct ha_symindex_span[]  address to innermost node
 *     LINES   struct ha_symindex_line[]  address to file:line
 *     STRS    NUL-terminated strings; offset 0 is ""
 *   A span or line holds from its start to the next one's; addresses are
 *   kept as offsets from the header's base, so a module spans less than
 *   4 GiB.
 *
 * Trust: an index is read as hostile input. ha_symindex_open() checks a
 * CRC-32C of the whole file (its crc field counted as 0), the header,
 * every offset, count, order and index, before anything is used, so a
 * flipped bit, a truncated or extended file, or a planted one is refused
 * with a reason and never read out of bounds or turned into a name.
 */
#ifndef HA_SYMINDEX_H
#define HA_SYMINDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "prof/maps.h"
#include "prof/syms.h"

#define HA_SYMINDEX_VERSION 1
#define HA_SYMINDEX_MAX_DEPTH 64  /* frames kept per address (as DWARF) */
#define HA_SYMINDEX_NONE UINT32_MAX

/* Flags of an index (ha_symindex_header.flags). */
#define HA_SYMINDEX_F_DEMANGLED (1u << 0) /* C++ names were demangled */
#define HA_SYMINDEX_F_NO_FINI (1u << 1)   /* its own .symtab has no _fini */
#define HA_SYMINDEX_F_DEBUGINFOD (1u << 2) /* debuginfod was on */
#define HA_SYMINDEX_F_WANTS_DEBUGINFOD (1u << 3) /* no DWARF of its own
                                              nor under a debug root:
                                              debuginfod would be asked */

enum ha_symindex_sect {
    HA_SYMINDEX_SEGS,
    HA_SYMINDEX_SYMS,
    HA_SYMINDEX_NODES,
    HA_SYMINDEX_CHAINS,
    HA_SYMINDEX_LINES,
    HA_SYMINDEX_STRS,
    HA_SYMINDEX_SECT_MAX
};

/* A file's identity on disk: a change means another file. */
struct ha_symindex_ident {
    uint64_t size;     /* 0 with mtime 0: no file */
    int64_t mtime_s;
    int64_t mtime_ns;
};

struct ha_symindex_header {
    char magic[8];              /* "HASYMIDX" */
    uint32_t version;           /* HA_SYMINDEX_VERSION */
    uint32_t byte_order;        /* 0x01020304 as the writer stored it */
    uint64_t file_bytes;        /* the whole file */
    uint32_t crc;               /* CRC-32C of the file, this field 0 */
    uint32_t flags;             /* HA_SYMINDEX_F_* */
    uint32_t from;              /* enum ha_syms_source */
    uint32_t detail;            /* STRS: where names came from */
    char build_id[136];         /* the module's, lower-case hex, NUL */
    struct ha_symindex_ident module; /* the ELF file indexed */
    struct ha_symindex_ident debug;  /* the first debug file found under
                                        the debug roots by build-id when
                                        it was built (used or not) */
    struct ha_symindex_ident fetched; /* debuginfod's file, when the
                                         names came from it */
    uint32_t debug_path;        /* STRS: debug's path; 0: there was none */
    uint32_t fetched_path;      /* STRS: fetched's path; 0: none */
    uint64_t base;              /* spans and lines hold vaddr - base */
    struct {
        uint64_t off;           /* from the file's start, 8-aligned */
        uint64_t n;             /* records (STRS: bytes) */
    } sect[HA_SYMINDEX_SECT_MAX];
    uint8_t reserved[8];        /* 0 */
};

struct ha_symindex_seg {
    uint64_t off;     /* p_offset */
    uint64_t filesz;  /* p_filesz */
    uint64_t vaddr;   /* p_vaddr */
};

struct ha_symindex_sym {
    uint64_t addr;    /* ELF vaddr */
    uint64_t size;    /* > 0 */
    uint32_t name;    /* STRS */
    uint32_t pad;     /* 0 */
};

/* One frame of a chain: a subprogram or inlined subroutine. */
struct ha_symindex_node {
    uint32_t func;      /* STRS; 0: the DIE has no name */
    uint32_t call_file; /* STRS: where it was inlined (the caller's
                           frame's file); 0: unknown */
    uint32_t call_line; /* 0: unknown */
    uint32_t parent;    /* the node it is inlined into (below this one's
                           index), or HA_SYMINDEX_NONE */
};

struct ha_symindex_span {
    uint32_t start;   /* vaddr - base */
    uint32_t node;    /* innermost frame, or HA_SYMINDEX_NONE */
};

struct ha_symindex_line {
    uint32_t start;   /* vaddr - base */
    uint32_t file;    /* STRS; 0: no line */
    uint32_t line;    /* 0: none */
};

/* ------------------------------------------------------------------ */
/* The naming rule, shared with the DWARF path                        */
/* ------------------------------------------------------------------ */

/* A chain's frame as the rule reads it; strings are ids of the caller's
 * string table (0: none). */
struct ha_symindex_link {
    uint32_t func;
    uint32_t call_file;
    uint32_t call_line;
};

/* Frames of an address from its chain (innermost first, depth links) and
 * the line table's file and line: frame 0 is the innermost function at
 * file:line, frame i + 1 the function frame i was inlined into, at frame
 * i's call site. Writes at most max frames into fr; returns how many. */
size_t ha_symindex_frames(const struct ha_symindex_link *chain, size_t depth,
                          uint32_t file, uint32_t line,
                          struct ha_syms_frame *fr, size_t max);

/* True when the frames need the ELF symbol's name: no chain, or the
 * outermost DIE has no name. */
static inline bool
ha_symindex_wants_symbol(const struct ha_syms_frame *fr, size_t n)
{
    return n == 0 || fr[n - 1].func == 0;
}

/* What an address is called once the symbol (sym: its name's id, 0 for
 * none) is in. */
enum ha_symindex_naming {
    HA_SYMINDEX_NAMED,          /* the frames as they are */
    HA_SYMINDEX_UNNAMED,        /* no name is certain: the address is
                                   "<module>+0x<vaddr>" alone */
    HA_SYMINDEX_OUTER_UNNAMED   /* inlined callees in a nameless
                                   function: the last frame takes the
                                   address's "<module>+0x<vaddr>" */
};

/* Completes fr (*n frames, ha_symindex_wants_symbol true) with the
 * symbol: no frames and no symbol is UNNAMED; no frames gives one frame
 * named sym at file:line; otherwise the outermost frame is named sym, or
 * is OUTER_UNNAMED when there is none. */
enum ha_symindex_naming ha_symindex_with_symbol(struct ha_syms_frame *fr,
                                                size_t *n, uint32_t sym,
                                                uint32_t file,
                                                uint32_t line);

/* The element of syms (n elements of stride bytes, sorted by a uint64_t
 * address at offset 0, with a uint64_t size at offset 8, one per
 * address) whose [addr, addr + size) holds addr, looking at the 16 below
 * it at most; SIZE_MAX for none. Never the nearest one below: in a
 * stripped object that is some exported function the address has
 * nothing to do with. */
size_t ha_symindex_cover(const void *syms, size_t n, size_t stride,
                         uint64_t addr);

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

/* An index's contents as arrays: h's identity fields (flags, from,
 * detail, build_id, module, debug, fetched and their paths, base) are
 * the caller's; ha_symindex_encode() fills in the rest. The arrays must
 * already be in the order and bounds ha_symindex_open() checks. */
struct ha_symindex_parts {
    struct ha_symindex_header h;
    const struct ha_symindex_seg *segs;
    size_t n_segs;
    const struct ha_symindex_sym *syms;
    size_t n_syms;
    const struct ha_symindex_node *nodes;
    size_t n_nodes;
    const struct ha_symindex_span *chains;
    size_t n_chains;
    const struct ha_symindex_line *lines;
    size_t n_lines;
    const char *strs;    /* strs[0] is '\0' and strs[strs_len - 1] too */
    size_t strs_len;
};

/* Appends the index's bytes to out (empty). Returns 0, or -1 on
 * allocation failure. */
int ha_symindex_encode(const struct ha_symindex_parts *p, struct ha_buf *out);

/* CRC-32C (Castagnoli) of buf, continuing from crc (0 to start). */
uint32_t ha_symindex_crc32c(uint32_t crc, const void *buf, size_t len);

/* The same without the CPU's crc32 instruction (a table), which
 * ha_symindex_crc32c uses where there is none. */
uint32_t ha_symindex_crc32c_table(uint32_t crc, const void *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Reading                                                            */
/* ------------------------------------------------------------------ */

/* An index checked by ha_symindex_open(): views into its bytes. */
struct ha_symindex {
    const struct ha_symindex_header *h;
    const struct ha_symindex_seg *segs;
    size_t n_segs;
    const struct ha_symindex_sym *syms;
    size_t n_syms;
    const struct ha_symindex_node *nodes;
    size_t n_nodes;
    const struct ha_symindex_span *chains;
    size_t n_chains;
    const struct ha_symindex_line *lines;
    size_t n_lines;
    const char *strs;
    size_t strs_len;
};

/* Checks the len bytes at buf (8-aligned: a mapping or malloc) as an
 * index and sets ix to view them. Returns 0, or -1 with why set ("CRC
 * mismatch", "truncated: ...", "section ... out of bounds", ...). */
int ha_symindex_open(struct ha_symindex *ix, const void *buf, size_t len,
                     char *why, size_t whylen);

/* The string at STRS offset off (checked by ha_symindex_open). */
static inline const char *
ha_symindex_str(const struct ha_symindex *ix, uint32_t off)
{
    return ix->strs + off;
}

/* File offset to ELF vaddr through the PT_LOAD that holds it. */
bool ha_symindex_vaddr(const struct ha_symindex *ix, uint64_t off,
                       uint64_t *vaddr);

/* Where the last lookups landed, for the next: lookups in address order
 * then cost a step or two instead of a search. Any value is correct
 * (HA_SYMINDEX_CURSOR_INIT: none). */
struct ha_symindex_cursor {
    size_t chain;
    size_t line;
};

#define HA_SYMINDEX_CURSOR_INIT {SIZE_MAX, SIZE_MAX}

/* The chain of vaddr, innermost first, into links (at most max; STRS
 * ids). Returns its depth (0: none). at may be NULL. */
size_t ha_symindex_chain(const struct ha_symindex *ix, uint64_t vaddr,
                         struct ha_symindex_link *links, size_t max,
                         struct ha_symindex_cursor *at);

/* The line table's file (STRS; 0: none) and line of vaddr. at may be
 * NULL. */
void ha_symindex_line(const struct ha_symindex *ix, uint64_t vaddr,
                      uint32_t *file, uint32_t *line,
                      struct ha_symindex_cursor *at);

/* The name (STRS) of the symbol that holds vaddr, or 0. *size (may be
 * NULL) gets its size in bytes, 0 when none holds vaddr: the function's
 * size that wrapper detection asks for (prof/wrappers.h), as the DWARF
 * path gives it. */
uint32_t ha_symindex_symbol(const struct ha_symindex *ix, uint64_t vaddr,
                            uint64_t *size);

#endif /* HA_SYMINDEX_H */
