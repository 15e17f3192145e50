/* SPDX-License-Identifier: MIT
 *
 * GNU build-ids of mapped files: recorded next to a heap dump when it is
 * taken (dumps carry no build-ids, so after an upgrade every reader would
 * silently misname frames) and compared with the files on disk when the
 * dump is read. The side file format and its parser are in maps.h.
 */
#ifndef HA_BUILDID_H
#define HA_BUILDID_H

#include <stddef.h>

#include "prof/maps.h"

/* Reads the NT_GNU_BUILD_ID note of the ELF file at path (libelf) into
 * hex[HA_BUILDID_HEX_MAX]. Returns 0, or -1 with err set (not ELF, no
 * note, unreadable). */
int ha_buildid_from_file(const char *path, char *hex, char *err,
                         size_t errlen);

/* Writes "<dump_path>.buildid": the dump's time ("# dumped_at", its
 * mtime now) and the build-id of every object loaded in this process,
 * read from the notes in mapped memory (dl_iterate_phdr), so it is the
 * build-id of what was running even if the file was since replaced.
 * Call right after prof.dump. Written to a temporary name and
 * renamed. Returns 0, or -1 with err set. */
int ha_buildid_record(const char *dump_path, char *err, size_t errlen);

enum ha_buildid_state {
    HA_BUILDID_MATCH,    /* recorded and on disk agree */
    HA_BUILDID_MISMATCH, /* the file on disk is not what was mapped */
    HA_BUILDID_UNKNOWN,  /* nothing recorded, or the file has none */
    HA_BUILDID_STATE_MAX
};

/* Compares the recorded build-id of path (side may be NULL) with the file
 * on disk; disk_hex (HA_BUILDID_HEX_MAX, may be NULL) gets the latter or
 * "". */
enum ha_buildid_state ha_buildid_check(const struct ha_buildids *side,
                                       const char *path, char *disk_hex);

#endif /* HA_BUILDID_H */
