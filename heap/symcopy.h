/* SPDX-License-Identifier: MIT
 *
 * The portable copy dump_now writes beside a dump when
 * jemalloc-dump_symbolized is on: `<dump>.sym`, jeprof's symbolized
 * profile (prof/symfile.h), readable with `jeprof --text <dump>.sym` on a
 * machine without the binaries. Symbolized in-process with the heap's
 * cached symbolizer; the loaded profile stays in the heap tables' cache,
 * so the first SQL read of the fresh dump is warm.
 */
#ifndef HA_SYMCOPY_H
#define HA_SYMCOPY_H

#include <stddef.h>

#include "heap/heap.h"

/* Writes <dump_path>.sym (a temporary name, then rename: never a partial
 * file under the final name; never through a symlink). dump_path must be
 * in heap->datadir. On success copies the written path to out (outlen
 * bytes) and returns 0; otherwise -1 with err saying why. */
int ha_symcopy_write(struct ha_heap *heap, const char *dump_path,
                     char *out, size_t outlen, char *err, size_t errlen);

#endif /* HA_SYMCOPY_H */
