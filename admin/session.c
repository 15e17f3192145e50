/* SPDX-License-Identifier: MIT
 *
 * Admin sessions (see session.h): open and close, the engine's registry
 * of clients, the variables a session sees, PROCESSLIST's state and the
 * handlers SQLite calls while a statement runs (max_execution_time,
 * yielding, KILL QUERY, a client gone). The admin database is an SQLite
 * memdb database named with a leading '/', which SQLite shares between
 * all connections of the process while giving each its own page cache
 * and transaction; the server keeps one connection open so it outlives
 * sessions. What runs on a session is elsewhere: the MySQL functions in
 * sqlfunc.c, statements in exec.c, SET in setexec.c.
 */
#include "admin/session.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "admin/proto.h"
#include "admin/schemas.h"
#include "admin/sqlfunc.h"
#include "admin/sysvar.h"
#include "admin/vars.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "engine/catalog.h"
#include "vtab/sessions.h"
#include "vtab/vtab.h"

/* ------------------------------------------------------------------ */
/* Session and user variables                                           */
/* ------------------------------------------------------------------ */

int
ha_session_vars_snapshot(const struct ha_session *s, bool global,
                         struct ha_session_var **vars, size_t *n)
{
    struct ha_session_var *v = NULL, tmp;
    size_t nv = 0;
    const struct ha_sysvar *sv;

    *vars = NULL;
    *n = 0;
    memset(&tmp, 0, sizeof(tmp));
    tmp.type = HA_SYSVAR_INT;
    tmp.ival = global ? 1 : s->autocommit;
    if (ha_vars_set(&v, &nv, "autocommit", &tmp) != 0)
        goto fail;
    for (size_t i = 0; (sv = ha_sysvar_at(i)) != NULL; i++) {
        const struct ha_session_var *o =
            global ? NULL : ha_vars_find(s->vars, s->n_vars, sv->name);
        if (o == NULL) {
            tmp.type = sv->type;
            tmp.ival = ha_sysvar_int(sv, &s->shared->limits);
            tmp.sval = (char *)sv->sval;
            o = &tmp;
        }
        if (ha_vars_set(&v, &nv, sv->name, o) != 0)
            goto fail;
    }
    if (!global) {
        tmp.type = HA_SYSVAR_INT;
        tmp.ival = s->id;
        if (ha_vars_set(&v, &nv, "pseudo_thread_id", &tmp) != 0)
            goto fail;
        /* Names SET accepted that the table does not know. */
        for (size_t i = 0; i < s->n_vars; i++)
            if (ha_vars_find(v, nv, s->vars[i].name) == NULL &&
                ha_vars_set(&v, &nv, s->vars[i].name, &s->vars[i]) != 0)
                goto fail;
    }
    *vars = v;
    *n = nv;
    return 0;
fail:
    ha_vars_free(v, nv);
    return -1;
}

/* ------------------------------------------------------------------ */
/* While a statement runs: max_execution_time, slices, KILL QUERY       */
/* ------------------------------------------------------------------ */

static bool
shutting_down(const struct ha_session *s)
{
    return s->shared->shutdown != NULL && atomic_load(s->shared->shutdown);
}

/* SQLite's progress handler, every 1000 VM steps: a command that has had
 * its slice yields (s->yield), so one long statement does not hold the
 * port; a statement past its deadline (ERR 3024), killed (KILL QUERY, ERR
 * 1317) or running when the server is told to stop (ERR 1053, so SIGTERM
 * is obeyed at once) is interrupted. */
static int
progress_cb(void *arg)
{
    struct ha_session *s = arg;
    int64_t now = ha_clock_ns();

    if (s->yield != NULL && !s->killed && !shutting_down(s)) {
        if (s->slice_from_ns == 0) {
            s->slice_from_ns = now;
        } else if (now - s->slice_from_ns >= HA_SESSION_SLICE_NS) {
            s->yield(s->yield_arg);
            now = s->slice_from_ns = ha_clock_ns();
        }
    }
    if (s->killed || shutting_down(s))
        return 1;
    /* A client that closed its connection is waiting for nothing: at
     * most every 100 ms, a peek at its socket (0 bytes: EOF) ends the
     * statement instead of letting it run to max_execution_time. */
    if (s->client_fd >= 0 && now - s->peeked_ns >= 100000000) {
        char c;

        s->peeked_ns = now;
        if (recv(s->client_fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) == 0) {
            ha_log_info("connection %u: the client went away; its "
                        "statement is interrupted",
                        s->id);
            s->client_fd = -1;
            return 1;
        }
    }
    return s->deadline_ns != 0 && now > s->deadline_ns;
}

/* SQLite's busy handler: a lock held by another session's paused
 * statement (the admin database is shared) is waited for by yielding, so
 * the holder gets its turns and finishes; without s->yield, or once the
 * statement is killed, past its deadline or the server stops, the lock
 * error is returned. Returns nonzero to retry. */
static int
busy_cb(void *arg, int n)
{
    struct ha_session *s = arg;

    (void)n;
    if (s->yield == NULL || s->killed || shutting_down(s) ||
        (s->deadline_ns != 0 && ha_clock_ns() > s->deadline_ns))
        return 0;
    s->yield(s->yield_arg);
    s->slice_from_ns = ha_clock_ns();
    return 1;
}

int64_t
ha_session_arm_deadline(struct ha_session *s)
{
    int64_t ceiling = s->shared->limits.max_execution_time, ms = ceiling;

    for (size_t i = 0; i < s->n_vars; i++)
        if (strcmp(s->vars[i].name, "max_execution_time") == 0 &&
            s->vars[i].type == HA_SYSVAR_INT && s->vars[i].ival > 0 &&
            (ceiling == 0 || s->vars[i].ival < ceiling))
            ms = s->vars[i].ival;
    s->deadline_ns = ms > 0 ? ha_clock_ns() + ms * 1000000 : 0;
    /* The task's too: a statement waiting for a worker's job (a
     * lifetime log's parse, a dump read from disk) runs no SQLite step
     * that would see the deadline, so its timer wakes it. */
    if (ha_task_current() != NULL)
        ha_task_set_deadline(ha_task_current(), s->deadline_ns);
    return ms;
}

void
ha_session_disarm_deadline(struct ha_session *s)
{
    s->deadline_ns = 0;
    if (ha_task_current() != NULL)
        ha_task_set_deadline(ha_task_current(), 0);
}

/* A table waited on purpose (struct ha_vtab_conn.waited): the statement's
 * deadline moves by as much. */
static void
session_waited(void *arg, int64_t ns)
{
    struct ha_session *s = arg;

    if (s->deadline_ns != 0)
        s->deadline_ns += ns;
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                            */
/* ------------------------------------------------------------------ */

/* struct ha_sessions_source for the session tables (vtab/sessions.h):
 * every client of the engine's registry, both front-ends, oldest
 * first, and the variables. */
void
ha_session_client_row(const struct ha_client *client, time_t now,
                      struct ha_sessions_row *r)
{
    const struct ha_session *o =
        HA_CONTAINER_OF(client, const struct ha_session, client);

    r->id = o->id;
    r->user = o->user;
    r->host = o->peer[0] != '\0' ? o->peer : o->host;
    r->db = o->schema[0] != '\0' ? o->schema : NULL;
    r->command = o->command;
    r->time = now > o->command_since ? (int64_t)(now - o->command_since) : 0;
    /* Another session's command shows too, paused between its slices
     * (o->yield is set while one runs). */
    r->state = o->sending                          ? "Sending to client"
               : o->running || o->yield != NULL ? "executing"
                                                 : "";
    r->info = o->info;
}

static const struct ha_client_ops session_client_ops = {
    .row = ha_session_client_row,
};

struct source_walk {
    time_t now;
    int (*row)(void *, const struct ha_sessions_row *);
    void *ctx;
};

static int
source_one(const struct ha_client *c, void *arg)
{
    struct source_walk *w = arg;
    struct ha_sessions_row r;

    memset(&r, 0, sizeof(r));
    if (c->ops == NULL || c->ops->row == NULL)
        return 0;
    c->ops->row(c, w->now, &r);
    return w->row(w->ctx, &r) != 0 ? -1 : 0;
}

static int
source_sessions(void *arg, int (*row)(void *, const struct ha_sessions_row *),
                void *ctx)
{
    const struct ha_session *self = arg;
    struct source_walk w = {time(NULL), row, ctx};

    if (self->shared->clients == NULL)
        return source_one(&self->client, &w);
    return ha_clients_each(self->shared->clients, source_one, &w);
}

static int
source_vars(void *arg, bool global,
            int (*var)(void *, const struct ha_sessions_var *), void *ctx)
{
    static const enum ha_sessions_type types[] = {
        [HA_SYSVAR_INT] = HA_SESSIONS_INT,
        [HA_SYSVAR_TEXT] = HA_SESSIONS_TEXT,
        [HA_SYSVAR_NULL] = HA_SESSIONS_NULL,
    };
    struct ha_session_var *vars;
    size_t n;
    int ret = 0;

    if (ha_session_vars_snapshot(arg, global, &vars, &n) != 0)
        return -1;
    for (size_t i = 0; i < n && ret == 0; i++) {
        struct ha_sessions_var v = {
            .name = vars[i].name,
            .type = types[vars[i].type],
            .ival = vars[i].ival,
            .sval = vars[i].sval,
        };
        ret = var(ctx, &v);
    }
    ha_vars_free(vars, n);
    return ret;
}


int
ha_session_open(struct ha_session *s, const struct ha_session_shared *shared,
                uint32_t id, char *err, size_t errlen)
{
    struct ha_clients *reg = shared->clients;
    char *zerr = NULL;
    int rc;

    memset(s, 0, sizeof(*s));
    s->shared = shared;
    s->id = id;
    s->client_fd = -1;
    s->autocommit = true;
    s->opened_at = s->command_since = time(NULL);
    ha_strlcpy(s->command, "Sleep", sizeof(s->command));
    rc = sqlite3_open_v2(shared->db_uri, &s->db,
                         SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                             SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                         NULL);
    if (rc != SQLITE_OK) {
        ha_err_set(err, errlen, "cannot open the admin database: %s",
                   s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
        goto fail;
    }
    sqlite3_extended_result_codes(s->db, 1);
    /* Before hardening forbids ATTACH: the disk layer (SAVE ... TO
     * DISK, engine/diskstore.h) and the memory history (engine/history.h),
     * read-only, attached on the I/O thread while the login waits as a
     * task (admin/conn.c run_login): the loop serves everyone else, and
     * a disk that does not answer costs the login disk_timeout_ms at
     * most, once: the session opens without the files (its statements
     * naming them say why), and later logins do not wait while the
     * disk stays silent (core/blockio.h). */
    if (ha_schemas_open(s->db,
                        shared->vtab != NULL ? shared->vtab->heap->datadir
                                             : NULL,
                        &s->schemas) != 0) {
        ha_log_warn("connection %u: %s; the session opens without them",
                    id, s->schemas.why[0]);
        s->db = NULL; /* the abandoned call's, closed when it ends */
        rc = sqlite3_open_v2(shared->db_uri, &s->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                                 SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX,
                             NULL);
        if (rc != SQLITE_OK) {
            ha_err_set(err, errlen, "cannot open the admin database: %s",
                       s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(rc));
            goto fail;
        }
        sqlite3_extended_result_codes(s->db, 1);
    }
    /* Opening the tables costs about 0.8 ms of the loop (one virtual
     * table each): it goes in steps, each at a pass of the loop, so a
     * burst of logins never holds a SELECT 1 behind it. Outside a task
     * these return at once. */
    ha_task_step(ha_task_current());
    /* Every 1000 VM steps: the max_execution_time deadline. Set only
     * now: the files above were attached on another thread. */
    sqlite3_progress_handler(s->db, 1000, progress_cb, s);
    sqlite3_busy_handler(s->db, busy_cb, s);
    if (ha_authorizer_harden(s->db, err, errlen) != 0)
        goto fail;
    if (ha_sqlfunc_register(s->db, s, err, errlen) != 0)
        goto fail;
    if (shared->vtab != NULL &&
        ha_vtab_register_all(s->db, shared->vtab, &s->vtab, &zerr) !=
            SQLITE_OK) {
        ha_err_set(err, errlen, "cannot register virtual tables: %s",
                   zerr ? zerr : "unknown error");
        sqlite3_free(zerr);
        goto fail;
    }
    ha_vtab_set_waited(s->vtab, session_waited, s);
    s->sessions_src.sessions = source_sessions;
    s->sessions_src.vars = source_vars;
    s->sessions_src.arg = s;
    if (ha_sessions_register(s->db, &s->sessions_src, &zerr) != SQLITE_OK) {
        ha_err_set(err, errlen, "cannot register the session tables: %s",
                   zerr ? zerr : "unknown error");
        sqlite3_free(zerr);
        goto fail;
    }
    /* Each table a private instance in this connection's temp schema,
     * which bare names resolve to before main and the attached files:
     * statements on them take no lock of the shared scratch database,
     * so a paused reader never holds up a control write, a long write to
     * a scratch table never holds up a reader of the tables, and the
     * disk schema's saved global_variables never shadows the live one.
     * Made before the authorizer is armed (it refuses CREATE VIRTUAL
     * TABLE); a module not registered here (tests) is skipped. */
    size_t n_tables;
    const struct ha_catalog_table *tables = ha_catalog_tables(&n_tables);

    for (size_t i = 0; i < n_tables; i++) {
        char sql[160];

        if (!tables[i].module)
            continue;
        snprintf(sql, sizeof(sql),
                 "CREATE VIRTUAL TABLE temp.\"%s\" USING \"%s\"",
                 tables[i].name, tables[i].name);
        (void)sqlite3_exec(s->db, sql, NULL, NULL, NULL);
        if (i % 16 == 15)
            ha_task_step(ha_task_current());
    }
    /* Armed last: the setup above runs unchecked. */
    s->authz.role = s->role;
    s->authz.user = s->user;
    s->authz.host = s->host;
    ha_authorizer_arm(s->db, &s->authz);
    s->client.id = id;
    s->client.role = s->role;
    s->client.user = s->user;
    s->client.ops = &session_client_ops;
    if (reg != NULL)
        ha_clients_add(reg, &s->client);
    return 0;
fail:
    sqlite3_close_v2(s->db);
    s->db = NULL;
    ha_vtab_release(s->vtab);
    s->vtab = NULL;
    return -1;
}

void
ha_session_set_role(struct ha_session *s, enum ha_role role)
{
    s->role = role;
    s->client.role = role;
    s->authz.role = role;
    ha_vtab_set_admin(s->vtab, role == HA_ROLE_ADMIN);
    if (s->db != NULL)
        ha_authorizer_arm(s->db, &s->authz);
}

void
ha_session_close(struct ha_session *s)
{
    struct ha_clients *reg = s->shared ? s->shared->clients : NULL;

    if (s->db == NULL)
        return;
    if (reg != NULL)
        ha_clients_remove(reg, &s->client);
    /* An open transaction dies with the session, as in MySQL. */
    ha_stmtcache_clear(&s->cache);
    sqlite3_close_v2(s->db);
    s->db = NULL;
    ha_vtab_release(s->vtab);
    s->vtab = NULL;
    ha_vars_clear(&s->vars, &s->n_vars);
    ha_vars_clear(&s->user_vars, &s->n_user_vars);
    free(s->info);
    s->info = NULL;
}

uint16_t
ha_session_status(const struct ha_session *s)
{
    uint16_t st = 0;

    if (s->autocommit)
        st |= HA_STATUS_AUTOCOMMIT;
    if (s->db != NULL && !sqlite3_get_autocommit(s->db))
        st |= HA_STATUS_IN_TRANS;
    if (s->more_results)
        st |= HA_STATUS_MORE_RESULTS;
    return st;
}

int
ha_session_use(struct ha_session *s, const char *name)
{
    if (!ha_schemas_exists(name))
        return -1;
    ha_strlcpy(s->schema, name, sizeof(s->schema));
    return 0;
}

void
ha_session_reset(struct ha_session *s)
{
    if (s->db != NULL && !sqlite3_get_autocommit(s->db))
        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    ha_vars_clear(&s->vars, &s->n_vars);
    ha_vars_clear(&s->user_vars, &s->n_user_vars);
    s->autocommit = true;
    s->multi_statements = s->multi_statements_login;
    s->more_results = false;
}

void
ha_session_set_command(struct ha_session *s, const char *command,
                       const char *info, size_t info_len)
{
    ha_strlcpy(s->command, command, sizeof(s->command));
    s->running = strcmp(command, "Sleep") != 0;
    free(s->info);
    s->info = NULL;
    if (info != NULL) {
        if (info_len > HA_SESSION_INFO_MAX)
            info_len = HA_SESSION_INFO_MAX;
        s->info = malloc(info_len + 1);
        if (s->info != NULL) {
            memcpy(s->info, info, info_len);
            s->info[info_len] = '\0';
        }
    }
    s->command_since = time(NULL);
}

void
ha_session_set_multi_statements(struct ha_session *s, bool on)
{
    if (!s->multi_statements_known) {
        s->multi_statements_login = on;
        s->multi_statements_known = true;
    }
    s->multi_statements = on;
}

/* ------------------------------------------------------------------ */
/* KILL, through the engine's registry                                  */
/* ------------------------------------------------------------------ */

int
ha_session_kill(struct ha_session *s, uint32_t id, bool query_only,
                int *code, char *err, size_t errlen)
{
    if (s->shared->clients == NULL) {
        /* No registry (tests): only this session is known. */
        if (id != s->id) {
            *code = 1094;
            ha_err_set(err, errlen, "Unknown thread id: %u", id);
            return -1;
        }
        s->killed = s->killed || query_only;
        return 0;
    }
    return ha_clients_kill(s->shared->clients, id, query_only, s->role,
                           s->user, code, err, errlen);
}
