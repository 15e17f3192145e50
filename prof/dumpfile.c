/* SPDX-License-Identifier: MIT
 *
 * The file rule for heap profiles (see dumpfile.h).
 */
#include "prof/dumpfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/datadir.h"
#include "core/util.h"
#include "prof/dumpname.h"
#include "prof/heapv2.h"

static const char *const suffix[] = {
    [HA_DUMPFILE_DUMP] = "",
    [HA_DUMPFILE_BUILDID] = ".buildid",
    [HA_DUMPFILE_SYM] = ".sym",
    [HA_DUMPFILE_MEM] = ".mem",
    [HA_DUMPFILE_LOG] = "",
    [HA_DUMPFILE_LOG_MAPS] = ".maps",
    [HA_DUMPFILE_LOG_WINDOW] = ".window",
};

/* An earlier run's file, "earlier-runs/<dir>/<file>": true with the
 * directory and file parts (both plain names) in dir and file. */
static bool
earlier_parts(const char *name, char *dir, size_t dirlen, const char **file)
{
    const char *rest, *slash;
    char why[8];
    size_t n = strlen(HA_DUMPFILE_EARLIER);

    if (name == NULL || strncmp(name, HA_DUMPFILE_EARLIER, n) != 0 ||
        name[n] != '/')
        return false;
    rest = name + n + 1;
    slash = strchr(rest, '/');
    if (slash == NULL || (size_t)(slash - rest) >= dirlen)
        return false;
    memcpy(dir, rest, (size_t)(slash - rest));
    dir[slash - rest] = '\0';
    *file = slash + 1;
    return ha_datadir_plain_name(dir, why, sizeof(why)) &&
           ha_datadir_plain_name(*file, why, sizeof(why));
}

/* Whether a parsed name d suits kind: a dump and its sidecars, or a log
 * and its. */
static bool
kind_fits(enum ha_dumpfile_kind kind, const struct ha_dump_name *d)
{
    switch (kind) {
    case HA_DUMPFILE_DUMP:
    case HA_DUMPFILE_SYM:
    case HA_DUMPFILE_MEM:
        return !d->log;
    case HA_DUMPFILE_LOG:
    case HA_DUMPFILE_LOG_MAPS:
    case HA_DUMPFILE_LOG_WINDOW:
        return d->log;
    default:
        return true;
    }
}

bool
ha_dumpfile_name_ok(const char *name, enum ha_dumpfile_kind kind,
                    char *why, size_t whylen)
{
    char dump[NAME_MAX + 1], plain[160], edir[NAME_MAX + 1];
    size_t len, slen = strlen(suffix[kind]);
    struct ha_dump_name d;
    const char *efile;

    if (earlier_parts(name, edir, sizeof(edir), &efile))
        name = efile;
    else if (!ha_datadir_plain_name(name, plain, sizeof(plain))) {
        ha_err_set(why, whylen,
                   "'%.200s' is refused: %s; give a dump's file name, as "
                   "stats_heap_dumps.file_name lists them",
                   name != NULL ? name : "", plain);
        return false;
    }
    len = strlen(name);
    if (len <= slen || len - slen >= sizeof(dump) ||
        strcmp(name + len - slen, suffix[kind]) != 0)
        goto refused;
    memcpy(dump, name, len - slen);
    dump[len - slen] = '\0';
    if (ha_dumpname_parse(dump, &d)) {
        if (kind_fits(kind, &d))
            return true;
        if (kind == HA_DUMPFILE_DUMP) {
            ha_err_set(why, whylen,
                       "'%.200s' is a lifetime log (stats_heap_dumps kind "
                       "'log'), not a heap dump: read it with "
                       "heap_lifetimes('%.200s')",
                       name, name);
            return false;
        }
        if (kind == HA_DUMPFILE_LOG) {
            ha_err_set(why, whylen,
                       "'%.200s' is a heap dump, not a lifetime log: "
                       "heap_lifetimes reads the logs jemalloc-log_now "
                       "writes (stats_heap_dumps kind 'log', named "
                       "<prefix>.<pid>.<seq>.json)",
                       name);
            return false;
        }
        goto refused;
    }
refused:
    if (kind == HA_DUMPFILE_LOG) {
        ha_err_set(why, whylen,
                   "'%.200s' is refused: only lifetime logs of the datadir "
                   "may be read here, named <prefix>.<pid>.<seq>.json as "
                   "jemalloc writes them (SELECT file_name FROM "
                   "stats_heap_dumps WHERE kind = 'log' lists them)",
                   name);
        return false;
    }
    ha_err_set(why, whylen,
               "'%.200s' is refused: only heap dumps of the datadir may be "
               "read, named <prefix>.<pid>.<seq>.<m|i|u><n>.heap or "
               "<prefix>.<pid>.<seq>.f.heap as jemalloc writes them "
               "(SELECT file_name FROM stats_heap_dumps lists them; "
               "stats_previous_runs names earlier runs' under "
               "earlier-runs/)",
               name);
    return false;
}

/* Opens datadir/name for reading after the name rules. Returns the
 * descriptor and its stat, or -1 with err set. */
static int
open_checked(const char *datadir, const char *name,
             enum ha_dumpfile_kind kind, struct stat *st, char *err,
             size_t errlen)
{
    char path[PATH_MAX], edir[NAME_MAX + 1];
    const char *efile;
    int fd, e;

    if (!ha_dumpfile_name_ok(name, kind, err, errlen))
        return -1;
    if (datadir == NULL) {
        ha_err_set(err, errlen, "%s: no datadir is configured", name);
        return -1;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", datadir, name) >=
        sizeof(path)) {
        ha_err_set(err, errlen, "%s: path too long", name);
        return -1;
    }
    if (earlier_parts(name, edir, sizeof(edir), &efile)) {
        /* Each directory part opened without following a symlink, so
         * none planted in the datadir leads out of it. */
        int top = open(datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int runs = top < 0 ? -1
                           : openat(top, HA_DUMPFILE_EARLIER,
                                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                        O_CLOEXEC);
        int run = runs < 0 ? -1
                           : openat(runs, edir,
                                    O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
                                        O_CLOEXEC);

        fd = run < 0 ? -1
                     : openat(run, efile,
                              O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        e = errno;
        if (run >= 0)
            close(run);
        if (runs >= 0)
            close(runs);
        if (top >= 0)
            close(top);
        errno = e;
    } else {
        /* O_NOFOLLOW: a symlink planted in the datadir leads nowhere;
         * O_NONBLOCK: a FIFO planted there cannot hang the open. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    }
    if (fd < 0 || fstat(fd, st) != 0) {
        e = errno;
        ha_err_set(err, errlen, "%s: cannot read it: %s%s", name,
                   strerror(e),
                   e == ENOENT ? " (SELECT file_name FROM stats_heap_dumps "
                                 "lists the dumps)"
                   : e == ELOOP ? " (a symlink: only regular files are "
                                  "read)"
                                : "");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size > HA_HEAPV2_MAX_LEN) {
        ha_err_set(err, errlen, "%s: not a regular file of at most %u bytes",
                   name, HA_HEAPV2_MAX_LEN);
        close(fd);
        return -1;
    }
    return fd;
}

int
ha_dumpfile_stat(const char *datadir, const char *name,
                 enum ha_dumpfile_kind kind, struct stat *st, char *err,
                 size_t errlen)
{
    int fd = open_checked(datadir, name, kind, st, err, errlen);

    if (fd < 0)
        return -1;
    close(fd);
    return 0;
}

int
ha_dumpfile_read_fd(int fd, const char *name, const struct stat *st,
                    char **buf, size_t *len, char *err, size_t errlen)
{
    size_t got = 0;

    *buf = NULL;
    *len = 0;
    if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size > HA_HEAPV2_MAX_LEN) {
        ha_err_set(err, errlen, "%s: not a regular file of at most %u bytes",
                   name, HA_HEAPV2_MAX_LEN);
        return -1;
    }
    *buf = malloc((size_t)st->st_size + 1);
    if (*buf == NULL) {
        ha_err_set(err, errlen, "%s: out of memory reading %lld bytes", name,
                   (long long)st->st_size);
        return -1;
    }
    while (got < (size_t)st->st_size) {
        ssize_t n = read(fd, *buf + got, (size_t)st->st_size - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    (*buf)[got] = '\0';
    *len = got;
    return 0;
}

int
ha_dumpfile_read(const char *datadir, const char *name,
                 enum ha_dumpfile_kind kind, char **buf, size_t *len,
                 struct stat *st, char *err, size_t errlen)
{
    int fd = open_checked(datadir, name, kind, st, err, errlen);
    int ret;

    *buf = NULL;
    *len = 0;
    if (fd < 0)
        return -1;
    ret = ha_dumpfile_read_fd(fd, name, st, buf, len, err, errlen);
    close(fd);
    return ret;
}

int
ha_dumpfile_open(const char *datadir, const char *name,
                 enum ha_dumpfile_kind kind, struct stat *st, char *err,
                 size_t errlen)
{
    int fd = open_checked(datadir, name, kind, st, err, errlen);

    /* O_NONBLOCK kept a FIFO from hanging the open; a regular file reads
     * the same without it. */
    if (fd >= 0)
        (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}
