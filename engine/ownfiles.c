/* SPDX-License-Identifier: MIT
 *
 * The daemon's own files in the datadir (see ownfiles.h).
 */
#include "engine/ownfiles.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "engine/diskstore.h"
#include "engine/history.h"
#include "engine/tls.h"
#include "heap/dumpfiles.h"
#include "heap/runs.h"
#include "prof/dumpfile.h"

#define PIDFILE "heapadmind.pid"        /* daemon/main.c writes it */
#define DEFAULT_LOG "heapadmind.log"    /* the errorlog's default */
#define KEYS_LOCK ".heapadmin-keys.lock" /* engine/tls.c's */

/* name is base or base plus one of SQLite's side-file suffixes. */
static bool
sqlite_file(const char *name, const char *base)
{
    static const char *const side[] = {"", "-wal", "-shm", "-journal"};
    size_t n = strlen(base);

    if (strncmp(name, base, n) != 0)
        return false;
    for (size_t i = 0; i < HA_ARRAY_SIZE(side); i++)
        if (strcmp(name + n, side[i]) == 0)
            return true;
    return false;
}

/* Whether the existing file st is the one at path (relative: in the
 * datadir). */
static bool
same_file(const struct stat *st, const char *datadir, const char *path)
{
    char full[PATH_MAX];
    struct stat o;

    if (path == NULL || *path == '\0')
        return false;
    if (path[0] != '/') {
        if ((size_t)snprintf(full, sizeof(full), "%s/%s", datadir, path) >=
            sizeof(full))
            return false;
        path = full;
    }
    return stat(path, &o) == 0 && o.st_dev == st->st_dev &&
           o.st_ino == st->st_ino;
}

bool
ha_ownfiles_is_own(const char *datadir, const struct ha_config *cfg,
                   const char *name, char *what, size_t whatlen)
{
    static const struct {
        enum ha_dumpfile_kind kind;
        const char *what;
    } dumps[] = {
        {HA_DUMPFILE_DUMP, "a heap dump"},
        {HA_DUMPFILE_BUILDID, "a dump's or log's .buildid side file"},
        {HA_DUMPFILE_SYM, "a dump's symbolized copy"},
        {HA_DUMPFILE_MEM, "a dump's .mem side file"},
        {HA_DUMPFILE_LOG, "a lifetime log"},
        {HA_DUMPFILE_LOG_MAPS, "a lifetime log's .maps side file"},
        {HA_DUMPFILE_LOG_WINDOW, "a lifetime log's .window side file"},
    };
    char why[256], path[PATH_MAX];
    struct stat st;

#define OWN(...)                                                           \
    do {                                                                   \
        ha_err_set(what, whatlen, __VA_ARGS__);                            \
        return true;                                                       \
    } while (0)

    if (sqlite_file(name, HA_DISKSTORE_FILE))
        OWN("the saved variables (%s) or one of its SQLite side files",
            HA_DISKSTORE_FILE);
    if (sqlite_file(name, HA_HISTORY_FILE))
        OWN("the memory history (%s) or one of its SQLite side files",
            HA_HISTORY_FILE);
    if (strcmp(name, HA_TLS_KEY_FILE) == 0 ||
        strcmp(name, HA_TLS_RSA_PRIVATE_FILE) == 0)
        OWN("a private key heapadmind made (%s)", name);
    if (strcmp(name, HA_TLS_CERT_FILE) == 0 ||
        strcmp(name, HA_TLS_RSA_PUBLIC_FILE) == 0 ||
        strcmp(name, KEYS_LOCK) == 0)
        OWN("key material heapadmind made (%s)", name);
    if (strcmp(name, PIDFILE) == 0)
        OWN("the pid file");
    if (strcmp(name, HA_DUMPFILES_STAGING) == 0 ||
        strcmp(name, HA_DUMPFILES_EARLIER) == 0 ||
        strcmp(name, HA_RUNS_DIR) == 0)
        OWN("a directory of heapadmind's (%s)", name);
    if ((cfg == NULL || cfg->errorlog == NULL || *cfg->errorlog == '\0') &&
        strcmp(name, DEFAULT_LOG) == 0)
        OWN("the log");
    for (size_t i = 0; i < HA_ARRAY_SIZE(dumps); i++)
        if (ha_dumpfile_name_ok(name, dumps[i].kind, why, sizeof(why)))
            OWN("%s", dumps[i].what);
    if (cfg != NULL && ((cfg->ssl_cert[0] && strcmp(name, cfg->ssl_cert) == 0) ||
                        (cfg->ssl_key[0] && strcmp(name, cfg->ssl_key) == 0)))
        OWN("the TLS certificate or key the config names");
    /* What exists: by what it is, and by identity with the files the
     * config names wherever they are spelled (a path, a link). */
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", datadir, name) >=
            sizeof(path) ||
        lstat(path, &st) != 0)
        return false;
    if (!S_ISREG(st.st_mode))
        OWN("not a regular file (a directory, socket, link or FIFO)");
    if (cfg == NULL)
        return false;
    if (same_file(&st, datadir, cfg->ssl_cert) ||
        same_file(&st, datadir, cfg->ssl_key))
        OWN("the TLS certificate or key the config names");
    if (same_file(&st, datadir, cfg->errorlog))
        OWN("the log");
    if (cfg->has_file_id && st.st_dev == cfg->file_dev &&
        st.st_ino == cfg->file_ino)
        OWN("the config file heapadmind was started from (%s)", cfg->path);
#undef OWN
    return false;
}
