/* SPDX-License-Identifier: MIT
 *
 * A heap dump as a self-contained "symbolized profile", the form jeprof
 * reads with no binary (`jeprof --text <file>`; jemalloc 5.3.0 bin/jeprof:
 * PrintSymbolizedProfile writes it, ReadProfile/ReadSymbols/FetchSymbols
 * read it), so a dump can be read on another machine:
 *
 *   --- symbol
 *   binary=<main executable>
 *   0x<pc> <outermost>--<...>--<innermost inlined>
 *   ...
 *   ---
 *   --- heap
 *   <the dump's heap_v2 text, leak-report lines removed>
 *
 * The pcs are the addresses jeprof looks up: frame 0 as written, every
 * other frame minus one (its FixCallerAddresses does the same to a
 * symbolized profile's stacks), i.e. ha_agg_lookup_pcs(). Per pc the
 * inline chain is joined by "--", outermost first: jeprof marks all but
 * the first "(inline)". An address with no certain name is written with
 * its "<module>+0x<offset>" (syms.h), as every table shows it; one
 * outside every module is left out (jeprof shows the address). Inside
 * the allocator (HA_SYMS_ALLOCATOR) an unnamed address is written
 * "malloc": jeprof cuts a heap stack at its deepest allocator entry point
 * by name, and with the binary it names a stripped libjemalloc's
 * internals after the nearest exported symbol, malloc; so the copy is
 * cut the same way (such frames are never shown). "--" cannot appear
 * inside a name (C++'s operator-- would): it is written "-~"; newlines
 * and NULs become spaces.
 * Pure: no I/O.
 */
#ifndef HA_SYMFILE_H
#define HA_SYMFILE_H

#include <stddef.h>

#include "core/buf.h"
#include "prof/syms.h"

/* Appends just the symbol lines ("0x<pc> <names>\n" per named pc, as
 * above): also the answer of gperftools' remote symbol protocol
 * (http/pprof.c). Returns 0, or -1 when out could not grow. */
int ha_symfile_symbols(const struct ha_syms *syms, struct ha_buf *out);

/* Appends the symbolized profile to out: syms for the symbol section
 * (every entry with a name), text[0..len) (already cleaned with
 * ha_heapv2_clean) as the heap section, binary for "binary=" (NULL:
 * none). Returns 0, or -1 when out could not grow. */
int ha_symfile_write(const struct ha_syms *syms, const char *text,
                     size_t len, const char *binary, struct ha_buf *out);

#endif /* HA_SYMFILE_H */
