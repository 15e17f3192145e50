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
#include <strings.h>
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

#define OURS                                                                \
    "heapadmin keeps one table there, global_variables (variable_name, "    \
    "variable_value), with no view or trigger on it; nothing in the file "  \
    "was changed: move it aside and heapadmind makes a new one"

/* Whether the file open in db is heapadmin's (or empty, a new one), read
 * before anything is written to it: global_variables, if there, is a
 * plain table of exactly (variable_name, variable_value), with no
 * trigger that would turn a SAVE into something else. Other tables are
 * left alone (ProxySQL's proxysql.db has ours among its own). Returns 0,
 * HA_DISKSTORE_FOREIGN with err saying what is wrong and what is
 * allowed, or -1 when the schema cannot be read (err: SQLite's). */
static int
check_ours(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    static const char *const want[] = {"variable_name", "variable_value"};
    sqlite3_stmt *st = NULL;
    int rc, ret = 0, cols = 0;

    if (sqlite3_prepare_v2(db,
                           "SELECT type, ifnull(sql, '') FROM "
                           "sqlite_schema WHERE tbl_name = "
                           "'global_variables' COLLATE NOCASE AND type <> "
                           "'index'",
                           -1, &st, NULL) != SQLITE_OK)
        goto sqlerr;
    while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(st, 0);
        const char *sql = (const char *)sqlite3_column_text(st, 1);

        if (type == NULL || sql == NULL)
            continue;
        if (strcmp(type, "trigger") == 0)
            ha_err_set(err, errlen,
                       "%s is not heapadmin's: it has a trigger on "
                       "global_variables; " OURS,
                       path);
        else if (strcmp(type, "table") != 0)
            ha_err_set(err, errlen,
                       "%s is not heapadmin's: its global_variables is a "
                       "%s, not a table; " OURS,
                       path, type);
        else if (strncasecmp(sql, "CREATE VIRTUAL", 14) == 0)
            ha_err_set(err, errlen,
                       "%s is not heapadmin's: its global_variables is a "
                       "virtual table; " OURS,
                       path);
        else
            continue;
        ret = HA_DISKSTORE_FOREIGN;
    }
    if (ret == 0 && rc != SQLITE_DONE)
        goto sqlerr;
    sqlite3_finalize(st);
    st = NULL;
    if (ret != 0)
        return ret;
    if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info("
                               "'global_variables')",
                           -1, &st, NULL) != SQLITE_OK)
        goto sqlerr;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);

        /* The file's own names are never quoted: only what was
         * expected. */
        if (cols >= 2 || name == NULL || strcasecmp(name, want[cols]) != 0) {
            if (cols >= 2)
                ha_err_set(err, errlen,
                           "%s is not heapadmin's: its global_variables has "
                           "more than two columns; " OURS,
                           path);
            else
                ha_err_set(err, errlen,
                           "%s is not heapadmin's: its global_variables has "
                           "other columns (column %d is not %s); " OURS,
                           path, cols + 1, want[cols]);
            sqlite3_finalize(st);
            return HA_DISKSTORE_FOREIGN;
        }
        cols++;
    }
    if (rc != SQLITE_DONE)
        goto sqlerr;
    sqlite3_finalize(st);
    if (cols == 1) {
        ha_err_set(err, errlen,
                   "%s is not heapadmin's: its global_variables has one "
                   "column; " OURS,
                   path);
        return HA_DISKSTORE_FOREIGN;
    }
    return 0;
sqlerr:
    ha_err_set(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return -1;
}

/* Opens the file read-write (created 0600 when create is set). *why is
 * set to 0, -1 or HA_DISKSTORE_FOREIGN (a file that is not ours, left
 * untouched). */
static sqlite3 *
open_store(const char *datadir, bool create, char *path, size_t pathlen,
           char *err, size_t errlen, int *why)
{
    sqlite3 *db = NULL;
    int rc, ours;

    *why = -1;

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
        *why = 0;
        return NULL; /* nothing saved yet */
    }
    rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
                                        SQLITE_OPEN_NOMUTEX |
                                        SQLITE_OPEN_NOFOLLOW,
                         ha_filevfs_name());
    if (rc == SQLITE_OK) {
        /* The file may be anyone's: its schema is not trusted. */
        (void)sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        (void)sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0,
                                NULL);
    }
    /* Before the first statement: processes starting together on one
     * datadir (the agent in a host of several) open, switch to WAL and
     * create the table at once, and each must wait its turn rather than
     * fail with "database is locked" and lose its saved settings. */
    if (rc == SQLITE_OK) {
        sqlite3_busy_timeout(db, 2000);
        ha_filevfs_journal_begin(db, path);
    }
    /* Before the first write (WAL mode is one): a file that is not ours
     * is left as it is. */
    if (rc == SQLITE_OK &&
        (ours = check_ours(db, path, err, errlen)) != 0) {
        *why = ours;
        sqlite3_close_v2(db);
        return NULL;
    }
    if (rc != SQLITE_OK) {
        ha_err_set(err, errlen, "%s: %s", path,
                   db != NULL ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
        sqlite3_close_v2(db);
        return NULL;
    }
    /* WAL where the filesystem allows it: a session's statement reading
     * disk.global_variables may pause between slices; in WAL mode it
     * never blocks a SAVE (nor a SAVE it), and a crash mid-save still
     * leaves the last committed state (as the rollback journal does
     * where WAL is not safe: filevfs.h). */
    if (ha_filevfs_journal(db, path, err, errlen) != 0 ||
        sqlite3_exec(db, "PRAGMA synchronous = FULL; " SCHEMA, NULL, NULL,
                     NULL) != SQLITE_OK) {
        if (err != NULL && (errlen == 0 || err[0] == '\0'))
            ha_err_set(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
        sqlite3_close_v2(db);
        return NULL;
    }
    *why = 0;
    return db;
}

int
ha_diskstore_init(const char *datadir, char *err, size_t errlen)
{
    char path[PATH_MAX];
    int why;
    sqlite3 *db =
        open_store(datadir, true, path, sizeof(path), err, errlen, &why);

    if (db == NULL)
        return why;
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
    int why;
    sqlite3 *db =
        open_store(datadir, true, path, sizeof(path), err, errlen, &why);
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
    int why;
    sqlite3 *db =
        open_store(datadir, false, path, sizeof(path), err, errlen, &why);
    int rc, ret = 0;

    if (db == NULL)
        return why == 0 ? 0 : -1; /* 0: nothing saved yet */
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
