/* SPDX-License-Identifier: MIT
 *
 * The attached files of a session, the schemas a client may select and
 * where a table lives (see schemas.h).
 */
#include "admin/schemas.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/blockio.h"
#include "core/task.h"
#include "core/util.h"
#include "engine/catalog.h"
#include "engine/diskstore.h"
#include "engine/filevfs.h"
#include "engine/history.h"

static const struct {
    const char *schema;
    const char *file;
    const char *absent;      /* what a missing file means */
} files[HA_SCHEMAS_N] = {
    {"disk", HA_DISKSTORE_FILE,
     "it does not exist (it is created at start and by SAVE JEMALLOC "
     "VARIABLES TO DISK)"},
    {"stats_history", HA_HISTORY_FILE,
     "it does not exist (the memory history is written there every "
     "admin-stats_system_memory seconds; 0 turns it off)"},
};

static const char *const selectable[] = {"main", "stats", "stats_history"};

bool
ha_schemas_exists(const char *name)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(selectable); i++)
        if (strcmp(selectable[i], name) == 0)
            return true;
    return false;
}

const char *
ha_schemas_table_home(const char *table)
{
    const struct ha_catalog_table *t = ha_catalog_find(table);

    return t != NULL && t->schema != NULL &&
                   ha_str_ieq(t->schema, "stats_history")
               ? "stats_history"
               : "main";
}

bool
ha_schemas_table_exists(sqlite3 *db, const char *schema, const char *table)
{
    sqlite3_stmt *st = NULL;
    bool found = false;

    const struct ha_catalog_table *t = ha_catalog_find(table);

    if (t != NULL && t->schema != NULL)
        return ha_str_ieq(schema, t->schema) || ha_str_ieq(schema, "main");
    if (!ha_str_ieq(schema, "main"))
        return false;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM main.sqlite_schema WHERE type IN "
                           "('table', 'view') AND name = ?1 COLLATE NOCASE",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

/* A stat(2) of the datadir's disk, off the loop (core/blockio.h). */
struct stat_call {
    char path[PATH_MAX];
    int rc;                        /* 0 or errno */
};

static void
stat_run(void *arg)
{
    struct stat_call *c = arg;
    struct stat st;

    c->rc = stat(c->path, &st) == 0 ? 0 : errno;
}

/* 0 when path exists; else an errno value, or -1 with why set (the disk
 * did not answer). */
static int
stat_file(const char *path, char *why, size_t whylen)
{
    struct stat_call *c = calloc(1, sizeof(*c));
    int rc;

    if (c == NULL)
        return ENOMEM;
    ha_strlcpy(c->path, path, sizeof(c->path));
    if (ha_blockio_call("looking for a file of the datadir", stat_run,
                        free, c, why, whylen) != 0)
        return -1;
    rc = c->rc;
    free(c);
    return rc;
}

/* Attaches file i read-only. Returns 0, or -1 with sc->why[i] set. */
static int
attach(sqlite3 *db, struct ha_schemas *sc, size_t i)
{
    char path[PATH_MAX], *sql, why[256];
    sqlite3_str *uri;
    int rc;

    if (sc->datadir == NULL) {
        ha_err_set(sc->why[i], sizeof(sc->why[i]), "no datadir");
        return -1;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", sc->datadir,
                         files[i].file) >= sizeof(path)) {
        ha_err_set(sc->why[i], sizeof(sc->why[i]), "path too long");
        return -1;
    }
    if ((rc = stat_file(path, why, sizeof(why))) != 0) {
        ha_err_set(sc->why[i], sizeof(sc->why[i]), "%s: %s", path,
                   rc < 0             ? why
                   : rc == ENOENT     ? files[i].absent
                                      : strerror(rc));
        return -1;
    }
    /* A URI: the path's reserved characters percent-encoded. */
    uri = sqlite3_str_new(db);
    sqlite3_str_appendall(uri, "file:");
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if (*p == '%' || *p == '?' || *p == '#' || *p < 0x21 || *p > 0x7e)
            sqlite3_str_appendf(uri, "%%%02X", *p);
        else
            sqlite3_str_appendchar(uri, 1, (char)*p);
    }
    /* ATTACH would use the main database's VFS (memdb) unless told; the
     * datadir's files go through the one that is safe across fork. */
    sqlite3_str_appendf(uri, "?mode=ro&vfs=%s",
                        ha_filevfs_name() != NULL ? ha_filevfs_name()
                        : sqlite3_vfs_find(NULL) != NULL
                            ? sqlite3_vfs_find(NULL)->zName
                            : "unix");
    sql = sqlite3_mprintf("ATTACH DATABASE %Q AS %s", sqlite3_str_value(uri),
                          files[i].schema);
    sqlite3_free(sqlite3_str_finish(uri));
    rc = sql != NULL ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK) {
        /* Read its schema now: a file that is not a database (or is
         * locked) says so here, not as "no such table" later. */
        sql = sqlite3_mprintf("SELECT count(*) FROM %s.sqlite_schema",
                              files[i].schema);
        rc = sql != NULL ? sqlite3_exec(db, sql, NULL, NULL, NULL)
                         : SQLITE_NOMEM;
        sqlite3_free(sql);
        if (rc != SQLITE_OK) {
            ha_err_set(sc->why[i], sizeof(sc->why[i]), "%s: %s", path,
                       sqlite3_errmsg(db));
            sql = sqlite3_mprintf("DETACH DATABASE %s", files[i].schema);
            if (sql != NULL)
                (void)sqlite3_exec(db, sql, NULL, NULL, NULL);
            sqlite3_free(sql);
            return -1;
        }
        sc->attached[i] = true;
        sc->why[i][0] = '\0';
        return 0;
    }
    ha_err_set(sc->why[i], sizeof(sc->why[i]), "%s: %s", path,
               sqlite3_errmsg(db));
    return -1;
}

/* The files attached at a session's open, on the I/O thread. */
struct open_job {
    sqlite3 *db;                   /* lent by the session; the job's own
                                      once abandoned */
    struct ha_schemas sc;          /* the job's copy */
};

static void
open_run(void *arg)
{
    struct open_job *j = arg;

    /* A file locked for a moment (a SAVE committing) is waited for
     * here, on this thread, not by failing the attach. */
    sqlite3_busy_timeout(j->db, 250);
    for (size_t i = 0; i < HA_SCHEMAS_N; i++)
        (void)attach(j->db, &j->sc, i);
    sqlite3_busy_timeout(j->db, 0);
}

static void
close_run(void *arg)
{
    sqlite3_close_v2(arg);
}

/* The session gave up on the job: its connection, which nobody else
 * ever saw (no table, no function), is closed where the disk cannot
 * hold the loop. */
static void
open_discard(void *arg)
{
    struct open_job *j = arg;

    ha_blockio_post("closing an abandoned session's files", close_run, NULL,
                    j->db);
    free(j);
}

int
ha_schemas_open(sqlite3 *db, const char *datadir, struct ha_schemas *sc)
{
    struct open_job *j = calloc(1, sizeof(*j));
    char why[256];

    memset(sc, 0, sizeof(*sc));
    sc->datadir = datadir;
    if (datadir == NULL) {
        free(j);
        for (size_t i = 0; i < HA_SCHEMAS_N; i++)
            (void)attach(db, sc, i); /* says why not */
        return 0;
    }
    if (j == NULL) {
        for (size_t i = 0; i < HA_SCHEMAS_N; i++)
            ha_err_set(sc->why[i], sizeof(sc->why[i]), "out of memory");
        return 0;
    }
    /* Both files at once, on the I/O thread: the connection is lent to
     * it (no other thread can reach it yet), and the login waits as a
     * task, a bounded time, while the loop serves everyone else. */
    j->db = db;
    j->sc = *sc;
    if (ha_blockio_call("attaching heapadmin.db and heapadmin_stats.db",
                        open_run, open_discard, j, why, sizeof(why)) != 0) {
        for (size_t i = 0; i < HA_SCHEMAS_N; i++)
            ha_err_set(sc->why[i], sizeof(sc->why[i]), "%s/%s: %s", datadir,
                       files[i].file, why);
        return -1;
    }
    *sc = j->sc;
    free(j);
    return 0;
}

/* Attaches file i after the session opened: the authorizer and the
 * attach limit hardening set are lifted for the one ATTACH. */
static int
attach_late(sqlite3 *db, struct ha_schemas *sc, size_t i,
            struct ha_authz_who *authz)
{
    int limit = sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, -1);
    int rc;

    sqlite3_set_authorizer(db, NULL, NULL);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, HA_SCHEMAS_N);
    rc = attach(db, sc, i);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, limit);
    ha_authorizer_arm(db, authz);
    return rc;
}

/* Whether schema sc[i] holds table (asked of SQLite's schema, not by
 * SQL: the authorizer keeps stats users out of the schema table). */
static bool
holds(sqlite3 *db, size_t i, const char *table)
{
    return sqlite3_table_column_metadata(db, files[i].schema, table, NULL,
                                         NULL, NULL, NULL, NULL,
                                         NULL) == SQLITE_OK;
}

int
ha_schemas_check(sqlite3 *db, struct ha_schemas *sc, const struct ha_lex *lx,
                 size_t from, size_t to, struct ha_authz_who *authz,
                 int *code, char *err, size_t errlen)
{
    if (to > lx->n)
        to = lx->n;
    for (size_t i = from; i < to; i++) {
        size_t dot, t, prev;
        char schema[64], table[128];
        size_t k;

        if (!ha_lex_is_ident(lx, i))
            continue;
        dot = ha_lex_next(lx, i);
        t = dot < to ? ha_lex_next(lx, dot) : to;
        if (t >= to || !ha_lex_is_punct(lx, dot, '.') ||
            !ha_lex_is_ident(lx, t))
            continue;
        prev = ha_lex_prev(lx, i);
        if (prev < lx->n && ha_lex_is_punct(lx, prev, '.'))
            continue; /* the middle of a.b.c: b is no schema */
        ha_lex_text(lx, i, schema, sizeof(schema));
        ha_lex_text(lx, t, table, sizeof(table));
        for (k = 0; k < HA_SCHEMAS_N; k++)
            if (ha_str_ieq(schema, files[k].schema))
                break;
        if (k == HA_SCHEMAS_N) {
            const struct ha_catalog_table *c = ha_catalog_find(table);

            /* Another qualifier on one of heapadmin's own tables: only
             * the schemas it lives in (an alias never precedes a table
             * name; a column is never named like one). */
            if (c != NULL && c->module && !ha_str_ieq(schema, "main") &&
                !ha_str_ieq(schema, "temp") &&
                !ha_str_ieq(schema, "stats")) {
                *code = 1146;
                ha_err_set(err, errlen,
                           "Table '%s.%s' doesn't exist (%s is in main%s)",
                           schema, table, table,
                           c->schema != NULL && strcmp(c->schema, "stats") ==
                                   0
                               ? " and stats"
                               : "");
                return -1;
            }
            continue;
        }
        if (!sc->attached[k] && attach_late(db, sc, k, authz) != 0) {
            *code = 1146;
            ha_err_set(err, errlen,
                       "Table '%s.%s' cannot be read: schema %s is %s",
                       schema, table, files[k].schema, sc->why[k]);
            return -1;
        }
        if (strncasecmp(table, "sqlite_", 7) != 0 && !holds(db, k, table)) {
            *code = 1146;
            ha_err_set(err, errlen, "Table '%s.%s' doesn't exist", schema,
                       table);
            return -1;
        }
        i = t;
    }
    return 0;
}
