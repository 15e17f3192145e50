/* SPDX-License-Identifier: MIT */
/*
 * deps/check-private.sh's shared object: links the private archives of
 * deps/out and exports one function, which uses each library once and
 * reports what it found. Everything else, the libraries included, stays
 * hidden (-fvisibility=hidden, --exclude-libs,ALL, deps/check/private.map).
 */
#include <event2/event.h>
#include <libconfig.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

__attribute__((visibility("default"))) int ha_private_probe(char *out,
                                                            size_t len);

/* The SQLite options heapadmin's admin database relies on. */
static const char *const wanted_opts[] = {
    "THREADSAFE=1",
    "ENABLE_COLUMN_METADATA",
    "OMIT_LOAD_EXTENSION",
    "ENABLE_DBSTAT_VTAB",
};

static int
probe_sqlite(char *ver, size_t verlen, char *sqlver, size_t sqllen)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int on = -1, rc = -1;

    snprintf(ver, verlen, "%s", sqlite3_libversion());
    for (size_t i = 0; i < sizeof wanted_opts / sizeof wanted_opts[0]; i++)
        if (!sqlite3_compileoption_used(wanted_opts[i]))
            return -10 - (int)i;
    if (sqlite3_open_v2("file:/x?vfs=memdb", &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK)
        goto out;
    /* heapadmin's authorizer switches extension loading off this way. */
    if (sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, &on) !=
            SQLITE_OK ||
        on != 0)
        goto out;
    if (sqlite3_exec(
            db, "CREATE TABLE t(v); INSERT INTO t VALUES (sqlite_version());",
            NULL, NULL, NULL) != SQLITE_OK)
        goto out;
    if (sqlite3_prepare_v2(db,
                           "SELECT v, (SELECT count(*) FROM dbstat) > 0 FROM t",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int(st, 1) != 1 ||
        /* column metadata: the column comes from main.t.v */
        strcmp(sqlite3_column_table_name(st, 0), "t") != 0)
        goto out;
    snprintf(sqlver, sqllen, "%s", (const char *)sqlite3_column_text(st, 0));
    /* DEFAULT_MEMSTATUS=1: heapadmin reports sqlite3_memory_used(). */
    if (sqlite3_memory_used() <= 0)
        goto out;
    rc = 0;
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rc;
}

static int
probe_config(long long *value)
{
    config_t cfg;
    int rc = -1;

    config_init(&cfg);
    if (config_read_string(&cfg, "admin = { port = 6032; };") == CONFIG_TRUE &&
        config_lookup_int64(&cfg, "admin.port", value) == CONFIG_TRUE)
        rc = 0;
    config_destroy(&cfg);
    return rc;
}

int
ha_private_probe(char *out, size_t len)
{
    char ver[32], sqlver[32];
    long long port = 0;
    struct event_base *base;
    int rc;

    base = event_base_new();
    if (base == NULL)
        return -1;
    snprintf(out, len, "event_version=%s\nevent_method=%s\n",
             event_get_version(), event_base_get_method(base));
    event_base_free(base);

    rc = probe_sqlite(ver, sizeof ver, sqlver, sizeof sqlver);
    if (rc != 0)
        return rc == -1 ? -2 : rc;
    if (probe_config(&port) != 0)
        return -3;
    snprintf(out + strlen(out), len - strlen(out),
             "sqlite3_libversion=%s\nsqlite_version=%s\nconfig_port=%lld\n",
             ver, sqlver, port);
    return 0;
}
