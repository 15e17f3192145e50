/* SPDX-License-Identifier: MIT
 *
 * The MAPPED_LIBRARIES section of a heap dump (a copy of
 * /proc/<pid>/maps, proc(5): "start-end perms offset dev inode [path]")
 * read into file-backed mappings grouped by path into modules, and an
 * address-to-module lookup for symbolization. Also the build-id side file
 * written next to a dump (`<dump>.buildid`), so a reader can tell that
 * the binary on disk is no longer the one that was mapped.
 *
 * Pure: no I/O (prof/buildid.c reads ELF files and writes the side file).
 * Trust: safe on hostile input; every line is checked, a bad one is
 * reported as "maps line N: expected ...", memory is O(len).
 */
#ifndef HA_MAPS_H
#define HA_MAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_MAPS_R (1u << 0) /* readable */
#define HA_MAPS_W (1u << 1) /* writable */
#define HA_MAPS_X (1u << 2) /* executable: frames live here */

/* One file-backed mapping. */
struct ha_maps_entry {
    uint64_t start;  /* first address */
    uint64_t end;    /* one past the last */
    uint64_t offset; /* file offset of start */
    uint32_t module; /* index in ha_maps.modules */
    uint32_t flags;  /* HA_MAPS_* */
};

/* A file mapped at least once (the executable, each shared object). */
struct ha_maps_module {
    uint32_t path_off; /* in ha_maps.paths, NUL-terminated */
    uint32_t n_maps;   /* mappings of this path */
    uint64_t lo;       /* lowest start of any of its mappings */
    uint64_t hi;       /* highest end */
    uint64_t base;     /* start - offset of its lowest mapping: where the
                          file's offset 0 is (the load address of a PIE or
                          shared object whose first segment is at 0) */
    bool exec;         /* has an executable mapping */
    bool deleted;      /* path ended in " (deleted)": replaced on disk */
};

struct ha_maps {
    struct ha_maps_entry *entries; /* sorted by start */
    size_t n_entries;
    struct ha_maps_module *modules; /* in order of first appearance */
    size_t n_modules;
    char *paths; /* NUL-separated module paths */
    size_t paths_len;
};

/* Parses maps text into *out (zeroed first). Lines without a path or
 * with a pseudo path ("[heap]", "[vdso]") are checked and skipped.
 * Returns 0, or -1 with "maps line N: expected ..." in err. */
int ha_maps_parse(const char *buf, size_t len, struct ha_maps *out,
                  char *err, size_t errlen);

void ha_maps_free(struct ha_maps *m);

static inline const char *
ha_maps_module_path(const struct ha_maps *m, size_t module)
{
    return m->paths + m->modules[module].path_off;
}

/* Finds the mapping that holds addr. Returns its index in entries, or -1;
 * *file_off (may be NULL) gets addr's offset in the mapped file. */
long ha_maps_lookup(const struct ha_maps *m, uint64_t addr,
                    uint64_t *file_off);

/* Index of the module with this path, or -1. */
long ha_maps_find_module(const struct ha_maps *m, const char *path);

/* ------------------------------------------------------------------ */
/* Build-id side file                                                   */
/* ------------------------------------------------------------------ */

/* Longest build-id kept, in bytes (GNU ld writes 20, sha1; 16 for md5 or
 * uuid; the ELF note allows any length). */
#define HA_BUILDID_MAX 64
#define HA_BUILDID_HEX_MAX (2 * HA_BUILDID_MAX + 1)

/* `<dump>.buildid`: one "<hex build-id> <path>\n" per mapped file. The id
 * comes first because paths may hold spaces; the path runs to the end of
 * the line. Lines starting with '#' are comments, except
 * "# dumped_at <seconds>.<nanoseconds>": when the dump was written (its
 * mtime as it was then), which survives copying the two files elsewhere
 * where the copy's own mtime would not. */
struct ha_buildids {
    int64_t dumped_at_ns;             /* unix ns; 0: not recorded */
    struct ha_buildid {
        char hex[HA_BUILDID_HEX_MAX]; /* lower-case hex */
        uint32_t path_off;            /* in paths */
    } *ids;
    size_t n_ids;
    char *paths;
    size_t paths_len;
};

/* Parses a side file. Returns 0, or -1 with "buildid line N: expected
 * ..." in err. */
int ha_buildids_parse(const char *buf, size_t len, struct ha_buildids *out,
                      char *err, size_t errlen);

void ha_buildids_free(struct ha_buildids *b);

/* The recorded hex build-id of path, or NULL. */
const char *ha_buildids_find(const struct ha_buildids *b, const char *path);

/* Formats bytes as lower-case hex into hex[HA_BUILDID_HEX_MAX]. Returns 0,
 * or -1 if n is 0 or above HA_BUILDID_MAX. */
int ha_buildid_to_hex(const uint8_t *id, size_t n, char *hex);

#endif /* HA_MAPS_H */
