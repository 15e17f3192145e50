/* SPDX-License-Identifier: MIT
 *
 * The datadir's file rule for heap profiles: the one gate every reader
 * of a dump passes, whichever front-end asked (SQL's heap tables, HTTP's
 * /debug/pprof and /heap).
 *
 * The datadir also holds secrets (the TLS and RSA private keys, the
 * saved variables, a config written by SAVE CONFIG TO FILE with every
 * password in it), so a name given by a client is read only when:
 *   1. it is a plain file name (core/datadir.h: no '/', no "..", no
 *      control character), or an earlier run's file kept under
 *      "earlier-runs/<plain name>/<plain name>" (heap/dumpfiles.h: the
 *      pid-1 rule moves them there; stats_previous_runs names them so);
 *   2. its last part is a dump's name as jemalloc writes them
 *      (prof/dumpname.h: <prefix>.<pid>.<seq>.<kind><n>.heap), or a
 *      prof_log file's (<prefix>.<pid>.<seq>.json), each asked for as
 *      what it is; or, for the sidecars heapadmin writes beside them,
 *      that name plus ".buildid", ".sym" or ".mem" (a dump's),
 *      ".buildid", ".maps" or ".window" (a log's);
 *   3. it opens, relative to the datadir, without following a symlink
 *      at any of its parts, as a regular file of at most
 *      HA_HEAPV2_MAX_LEN bytes.
 * The caller then uses its bytes only once they parse as a heap profile
 * (prof/heapv2.h), whose errors never quote the file. Messages here name
 * the file and the rule, never anything read from it.
 *
 * Pure but for the open/read of rule 3; safe on any thread.
 */
#ifndef HA_DUMPFILE_H
#define HA_DUMPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

enum ha_dumpfile_kind {
    HA_DUMPFILE_DUMP,      /* <prefix>.<pid>.<seq>.<kind><n>.heap */
    HA_DUMPFILE_BUILDID,   /* <dump or log>.buildid (prof/buildid.h) */
    HA_DUMPFILE_SYM,       /* <dump>.sym, the symbolized copy */
    HA_DUMPFILE_LOG,       /* <prefix>.<pid>.<seq>.json, a prof_log file */
    HA_DUMPFILE_LOG_MAPS,  /* <log>.maps: the process's mappings then */
    HA_DUMPFILE_LOG_WINDOW, /* <log>.window: the window's figures */
    HA_DUMPFILE_MEM        /* <dump>.mem (prof/dumpmem.h) */
};

#define HA_DUMPFILE_EARLIER "earlier-runs" /* = HA_DUMPFILES_EARLIER */

/* Rules 1 and 2: whether name may be read as a file of kind. Returns
 * true, or false with why saying what is allowed. */
bool ha_dumpfile_name_ok(const char *name, enum ha_dumpfile_kind kind,
                         char *why, size_t whylen);

/* Rule 3 after 1 and 2: fstat of datadir/name (no symlink followed) into
 * *st. Returns 0, or -1 with err naming the file and the reason. */
int ha_dumpfile_stat(const char *datadir, const char *name,
                     enum ha_dumpfile_kind kind, struct stat *st, char *err,
                     size_t errlen);

/* Rules 1 to 3, then reads the file whole into *buf (malloc'd,
 * NUL-terminated, *len bytes) and its stat into *st. Returns 0, or -1
 * with err naming the file and the reason. */
int ha_dumpfile_read(const char *datadir, const char *name,
                     enum ha_dumpfile_kind kind, char **buf, size_t *len,
                     struct stat *st, char *err, size_t errlen);

/* Rules 1 to 3, then the file open for reading (O_CLOEXEC): the
 * descriptor, its stat in *st, or -1 with err naming the file and the
 * reason. */
int ha_dumpfile_open(const char *datadir, const char *name,
                     enum ha_dumpfile_kind kind, struct stat *st, char *err,
                     size_t errlen);

/* Reads an open descriptor's regular file whole (the live profile's
 * private dump). name is for messages. Returns 0 or -1 with err. */
int ha_dumpfile_read_fd(int fd, const char *name, const struct stat *st,
                        char **buf, size_t *len, char *err, size_t errlen);

#endif /* HA_DUMPFILE_H */
