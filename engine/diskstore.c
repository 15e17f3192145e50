/* SPDX-License-Identifier: MIT
 *
 * The disk layer: <datadir>/heapadmin.db (see diskstore.h).
 */
#include "engine/diskstore.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"
#include "engine/filevfs.h"

#define SCHEMA                                                              \
    "CREATE TABLE IF NOT EXISTS global_variables (variable_name VARCHAR "   \
    "NOT NULL PRIMARY KEY, variable_value VARCHAR NOT NULL)"

int
ha_diskstore_path(const char *datadir, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s/%s", datadir, HA_DISKSTORE_FILE);

    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Opens the file read-write (created 0600 when create is set). */
static sqlite3 *
open_store(const char *datadir, bool create, char *path, size_t pathlen,
           char *err, size_t errlen)
{
    sqlite3 *db = NULL;
    int rc;

    if (ha_diskstore_path(datadir, path, pathlen) != 0) {
        ha_err_set(err, errlen, "%s/%s: path too long", datadir,
                   HA_DISKSTORE_FILE);
        return NULL;
    }
    if (create) {
        /* SQLite would create it 0644 less the umask; the values are an
         * operator's settings, so 0600, and never through a symlink. */
        int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);

        if (fd < 0) {
            ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
            return NULL;
        }
        close(fd);
    } else if (faccessat(AT_FDCWD, path, F_OK, AT_EACCESS) != 0) {
        /* The effective ids (a host whose real user differs, as squid's
         * master, is judged as it opens the file). */
        return NULL; /* nothing saved yet */
    }
    rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
                                        SQLITE_OPEN_NOMUTEX |
                                        SQLITE_OPEN_NOFOLLOW,
                         ha_filevfs_name());
    /* Before the first statement: processes starting together on one
     * datadir (the agent in a host of several) open, switch to WAL and
     * create the table at once, and each must wait its turn rather than
     * fail with "database is locked" and lose its saved settings. */
    if (rc == SQLITE_OK)
        sqlite3_busy_timeout(db, 2000);
    if (rc != SQLITE_OK ||
        /* WAL: a session's statement reading disk.global_variables
         * may pause between slices; in WAL mode it never blocks a SAVE
         * (nor a SAVE it), and a crash mid-save still leaves the last
         * committed state. */
        sqlite3_exec(db, "PRAGMA journal_mode = WAL; "
                         "PRAGMA synchronous = FULL; " SCHEMA,
                     NULL, NULL, NULL) != SQLITE_OK) {
        ha_err_set(err, errlen, "%s: %s", path,
                   db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close_v2(db);
        return NULL;
    }
    return db;
}

int
ha_diskstore_init(const char *datadir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    sqlite3 *db = open_store(datadir, true, path, sizeof(path), err, errlen);

    if (db == NULL)
        return -1;
    sqlite3_close_v2(db);
    return 0;
}

/* "prefix%" for LIKE, with LIKE's own characters escaped. */
static void
like_pattern(const char *prefix, char *out, size_t outlen)
{
    size_t o = 0;

    for (const char *p = prefix; *p && o + 3 < outlen; p++) {
        if (*p == '%' || *p == '_' || *p == '\\')
            out[o++] = '\\';
        out[o++] = *p;
    }
    out[o++] = '%';
    out[o] = '\0';
}

int
ha_diskstore_save(const char *datadir, const char *prefix,
                  const char *const *names, const char *const *values,
                  size_t n, char *err, size_t errlen)
{
    char path[PATH_MAX], like[128];
    sqlite3_stmt *del = NULL, *ins = NULL;
    sqlite3 *db = open_store(datadir, true, path, sizeof(path), err, errlen);
    int ret = -1;

    if (db == NULL)
        return -1;
    like_pattern(prefix, like, sizeof(like));
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "DELETE FROM global_variables WHERE variable_name "
                           "LIKE ?1 ESCAPE '\\'",
                           -1, &del, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO global_variables VALUES (?1, ?2)", -1,
                           &ins, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_bind_text(del, 1, like, -1, SQLITE_STATIC);
    if (sqlite3_step(del) != SQLITE_DONE)
        goto fail;
    for (size_t i = 0; i < n; i++) {
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, names[i], -1, SQLITE_STATIC);
        sqlite3_bind_text(ins, 2, values[i], -1, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            goto fail;
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    ret = 0;
    goto out;
fail:
    ha_err_set(err, errlen, "%s: %s; the saved values are unchanged", path,
               sqlite3_errmsg(db));
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
out:
    sqlite3_finalize(del);
    sqlite3_finalize(ins);
    sqlite3_close_v2(db);
    return ret;
}

int
ha_diskstore_load(const char *datadir, const char *prefix,
                  int (*fn)(void *arg, const char *name, const char *value),
                  void *arg, char *err, size_t errlen)
{
    char path[PATH_MAX], like[128];
    sqlite3_stmt *st = NULL;
    sqlite3 *db = open_store(datadir, false, path, sizeof(path), err, errlen);
    int rc, ret = 0;

    if (db == NULL)
        return faccessat(AT_FDCWD, path, F_OK, AT_EACCESS) == 0 ? -1 : 0;
    like_pattern(prefix, like, sizeof(like));
    if (sqlite3_prepare_v2(db,
                           "SELECT variable_name, variable_value FROM "
                           "global_variables WHERE variable_name LIKE ?1 "
                           "ESCAPE '\\' ORDER BY 1",
                           -1, &st, NULL) != SQLITE_OK) {
        ha_err_set(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_close_v2(db);
        return -1;
    }
    sqlite3_bind_text(st, 1, like, -1, SQLITE_STATIC);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        ret = fn(arg, (const char *)sqlite3_column_text(st, 0),
                 (const char *)sqlite3_column_text(st, 1));
        if (ret != 0)
            break;
    }
    if (ret == 0 && rc != SQLITE_DONE) {
        ha_err_set(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
        ret = -1;
    }
    sqlite3_finalize(st);
    sqlite3_close_v2(db);
    return ret;
}

int
ha_diskstore_clear(const char *datadir, const char *prefix, char *err,
                   size_t errlen)
{
    return ha_diskstore_save(datadir, prefix, NULL, NULL, 0, err, errlen);
}
