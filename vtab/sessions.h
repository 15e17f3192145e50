/* SPDX-License-Identifier: MIT
 *
 * Per-session virtual tables (sessions.c): stats_admin_sessions (the
 * connected sessions, behind SHOW PROCESSLIST) and session_variables /
 * mysql_variables (behind SHOW [GLOBAL] VARIABLES). Unlike the jemalloc
 * tables they show the admin layer's session state, which they read
 * through struct ha_sessions_source, defined here and implemented by
 * whoever owns the sessions (admin/session.c): vtab/ knows nothing of
 * admin/'s types, so the include graph points one way.
 */
#ifndef HA_SESSIONS_H
#define HA_SESSIONS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

/* One stats_admin_sessions row. Strings are borrowed for the call (the
 * table copies them); NULL reads as SQL NULL. */
struct ha_sessions_row {
    int64_t id;                  /* connection id */
    const char *user;
    const char *host;            /* "address:port" or address */
    const char *db;              /* current schema, NULL when none */
    const char *command;         /* "Sleep", "Query", ... */
    int64_t time;                /* seconds in this command */
    const char *state;           /* "executing" for the asking session */
    const char *info;            /* statement running, NULL when idle */
};

enum ha_sessions_type {
    HA_SESSIONS_INT,
    HA_SESSIONS_TEXT,
    HA_SESSIONS_NULL,
    HA_SESSIONS_TYPE_MAX
};

/* One session_variables / mysql_variables row (strings borrowed). */
struct ha_sessions_var {
    const char *name;            /* lower case */
    enum ha_sessions_type type;
    int64_t ival;                /* HA_SESSIONS_INT */
    const char *sval;            /* HA_SESSIONS_TEXT */
};

/* Where the tables read from; must outlive the connection. */
struct ha_sessions_source {
    /* Calls row(ctx, r) for every session, in PROCESSLIST order (oldest
     * first). Returns 0, or -1 as soon as row does (out of memory). */
    int (*sessions)(void *arg,
                    int (*row)(void *ctx, const struct ha_sessions_row *r),
                    void *ctx);
    /* Calls var(ctx, v) for every variable the asking session sees
     * (global: the server's defaults, without its SET values). Returns
     * 0, or -1 when var does or on OOM. */
    int (*vars)(void *arg, bool global,
                int (*var)(void *ctx, const struct ha_sessions_var *v),
                void *ctx);
    void *arg;                   /* passed back to both */
};

/* Registers the three modules on db, reading src (which must outlive
 * db). Returns SQLITE_OK, or an SQLite error code with *pzErr set
 * (sqlite3_malloc'd). */
int ha_sessions_register(sqlite3 *db, const struct ha_sessions_source *src,
                         char **pzErr);

#endif /* HA_SESSIONS_H */
