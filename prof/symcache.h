/* SPDX-License-Identifier: MIT
 *
 * The directory that keeps symbol indexes (prof/symindex.h), one file per
 * module build-id, and the file I/O around them: the directory made and
 * checked private, an index mapped read-only after its owner and mode
 * are checked, written atomically (a temporary name, fdatasync, rename),
 * the directory trimmed to a byte bound oldest first, and a module's
 * GNU build-id read from its ELF headers with plain reads (no libelf, so
 * a process that names everything from indexes never loads elfutils).
 *
 * Trust: the directory must be ours (our effective uid) and reachable
 * by nobody else (mode 0700, made so when it is ours and is not); a file
 * in it is used only when it is a regular file of ours, not a link, of
 * mode 0600 or stricter. Anything else is ignored with a reason: a file
 * planted by another user is never read. What an index says is then
 * checked by ha_symindex_open() and the symbolizer (build-id and the
 * files it was made from). Files are never changed in place (writers
 * rename a new file over the old; the trim unlinks), so a mapping stays
 * what was checked; only a process of the same user could truncate or
 * rewrite one under a reader, and that user owns the reader already.
 */
#ifndef HA_SYMCACHE_H
#define HA_SYMCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "prof/maps.h"

#define HA_SYMCACHE_SUFFIX ".idx"
#define HA_SYMCACHE_NAME_MAX (HA_BUILDID_HEX_MAX + 16)
#define HA_SYMCACHE_MAX_FILE ((size_t)1 << 30) /* larger is refused */

/* Makes dir (mode 0700) when missing and opens it. It must be a
 * directory of the effective uid's, not a link; group and other bits on
 * one of ours are cleared. Returns its descriptor, or -1 with err set. */
int ha_symcache_dir_open(const char *dir, char *err, size_t errlen);

/* The file name of the index of build-id hex: "<hex>.d.idx" when names
 * are demangled, "<hex>.m.idx" when not. */
void ha_symcache_name(char *name, size_t len, const char *hex,
                      bool demangled);

/* An index file mapped read-only. */
struct ha_symcache_map {
    void *data;
    size_t len;
    struct stat st;  /* the file's, when it was opened */
};

/* Maps dirfd/name. Returns 0; 1 when there is no such file (nothing is
 * wrong); -1 with why set when it is there but not to be read (not ours,
 * its mode, not a regular file, too small or large, unreadable). */
int ha_symcache_map(int dirfd, const char *name, struct ha_symcache_map *m,
                    char *why, size_t whylen);

void ha_symcache_unmap(struct ha_symcache_map *m);

/* Writes len bytes as dirfd/name (mode 0600): to a temporary name first,
 * synced, then renamed over name, so a reader sees the old file or the
 * whole new one. Returns 0, or -1 with err set (nothing is left behind). */
int ha_symcache_write(int dirfd, const char *name, const void *data,
                      size_t len, char *err, size_t errlen);

/* Removes index files of ours, oldest modification first, until those
 * left take at most max_bytes; never keep (a name, or NULL). Temporary
 * files of writers that died, older than an hour, go too. Returns the
 * bytes the directory's indexes take after. */
uint64_t ha_symcache_trim(int dirfd, uint64_t max_bytes, const char *keep);

/* Marks dirfd/name as used now (its mtime, which the trim goes by) when
 * mtime is older than an hour: an index read often is trimmed last. */
void ha_symcache_touch(int dirfd, const char *name, const struct stat *st);

/* Reads the NT_GNU_BUILD_ID note of the ELF file at path from its
 * program headers (PT_NOTE) into hex; st gets the file's stat, taken on
 * the descriptor read. Returns 0, or -1 (not ELF of this machine's class
 * and byte order, no note, unreadable). */
int ha_symcache_build_id(const char *path, char *hex, struct stat *st);

#endif /* HA_SYMCACHE_H */
