/* SPDX-License-Identifier: MIT
 *
 * stats_agents: the processes the LD_PRELOAD agent serves in this
 * datadir (core/agentreg.h), one row each, as a host gateway sees them.
 *
 * Usage:
 *
 *   SELECT pid, program, state, allocated, resident FROM stats_agents;
 *     Every registered process: the serving ones with their memory now,
 *     the gone ones (kill -9, a crash) until the next start in the
 *     datadir removes them.
 *   SELECT socket FROM stats_agents WHERE program = 'nginx';
 *     Where to point `mariadb -S` for each nginx process.
 *
 * Schema:
 *   0 pid        INTEGER  the process
 *   1 program    TEXT     its program (the registry's name for it)
 *   2 user       TEXT     the user it runs as (its directory's owner)
 *   3 socket     TEXT     its admin endpoint (MySQL; `mariadb -S`), or
 *                         the registry socket of a gone one
 *   4 started    INTEGER  when the process started, Unix seconds
 *   5 allocated  INTEGER  jemalloc's allocated bytes, the host's alone
 *                         (the agent's own arena left out); NULL unless
 *                         it answered
 *   6 resident   INTEGER  the same for resident bytes
 *   7 state      TEXT     'serving', 'no answer' (it lives but did not
 *                         answer within 2 s), 'socket missing' (it lives
 *                         and runs its program, but its .http file was
 *                         deleted: the agent binds it again within a
 *                         second), 'gone' (the process is gone, or the
 *                         pid is another's now), 'mismatch' (a live
 *                         process listens there, but the kernel says it
 *                         runs another program than the name claims:
 *                         never asked, never merged)
 *   8 detail     TEXT     why, for the last three; for a serving
 *                         process that heapadmin-attach attached to
 *                         after its start, "attached at <UTC time>"
 *                         and the children it forked before, which are
 *                         not served
 *
 * pid, program and user are what the kernel proves (core/agentreg.h):
 * the socket's name checked by SO_PEERCRED and /proc/<pid>/exe, the
 * directory's owner. socket, allocated and resident are what the agent
 * answers, taken only from a proven one: socket only when it is a
 * socket of that user in the agent's own directory, the figures only as
 * plain integers.
 *
 * No HIDDEN columns, no constraints used (idxNum 0: a full listing).
 * xFilter lists the datadir and asks every serving agent at once on the
 * gateway's asking threads (ha_task_offload_ask), bounded by 2 s: never
 * on the loop.
 * SQLITE_VTAB_INNOCUOUS: reading it changes nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "core/agenthttp.h"
#include "core/agentreg.h"
#include "core/task.h"
#include "core/util.h"
#include "vtab/cursor.h"
#include "vtab/vtab_util.h"

#define AGENTS_TIMEOUT_MS 2000

#define AGENTS_SCHEMA                                                  \
    "CREATE TABLE x(pid INTEGER, program TEXT, user TEXT, socket TEXT, " \
    "started INTEGER, allocated INTEGER, resident INTEGER, state TEXT, " \
    "detail TEXT)"
#define AGENTS_COL_PID 0
#define AGENTS_COL_PROGRAM 1
#define AGENTS_COL_USER 2
#define AGENTS_COL_SOCKET 3
#define AGENTS_COL_STARTED 4
#define AGENTS_COL_ALLOCATED 5
#define AGENTS_COL_RESIDENT 6
#define AGENTS_COL_STATE 7
#define AGENTS_COL_DETAIL 8

struct agent_row {
    struct ha_agent a;
    char socket[4096];
    long long allocated, resident;
    bool have_memory;
    const char *state;
    char detail[256];
};

typedef struct agents_vtab agents_vtab;
struct agents_vtab {
    sqlite3_vtab base;             /* Base class - must be first */
    struct ha_vtab_conn *conn;
};

typedef struct agents_cursor agents_cursor;
struct agents_cursor {
    struct ha_cursor rc;           /* rows [row, end); must be first */
    struct agent_row *rows;
};

/* ------------------------------------------------------------------
 * The listing (worker thread)
 * ------------------------------------------------------------------ */

struct list_job {
    char datadir[4096];
    struct agent_row *rows;
    size_t n;
    char err[512];
    int rc;
};

/* "key: value" from an /agent answer, into out; false when absent. */
static bool
field(const struct ha_buf *b, const char *key, char *out, size_t len)
{
    size_t k = strlen(key);
    const char *p = (const char *)b->data, *end = p + b->len;

    while (p != NULL && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t n = eol != NULL ? (size_t)(eol - p) : (size_t)(end - p);

        if (n > k + 1 && memcmp(p, key, k) == 0 && p[k] == ':') {
            const char *v = p + k + 1;

            while (v < p + n && *v == ' ')
                v++;
            snprintf(out, len, "%.*s", (int)(p + n - v), v);
            return true;
        }
        p = eol != NULL ? eol + 1 : NULL;
    }
    return false;
}

/* A non-negative decimal integer and nothing else. */
static bool
plain_int(const char *v, long long *out)
{
    long long n = 0;

    if (*v == '\0' || strlen(v) > 18)
        return false;
    for (const char *p = v; *p != '\0'; p++) {
        if (*p < '0' || *p > '9')
            return false;
        n = n * 10 + (*p - '0');
    }
    *out = n;
    return true;
}

/* Whether path, as agent a says its admin socket is, is a socket of a's
 * user in a's own directory (not a link, not another's file). */
static bool
own_socket(const struct ha_agent *a, const char *path)
{
    const char *slash = strrchr(a->path, '/'), *pslash = strrchr(path, '/');
    struct stat st;

    return slash != NULL && pslash != NULL &&
           pslash - path == slash - a->path &&
           memcmp(path, a->path, (size_t)(slash - a->path)) == 0 &&
           strstr(path, "/..") == NULL && lstat(path, &st) == 0 &&
           S_ISSOCK(st.st_mode) && st.st_uid == a->uid;
}

/* "attached at <UTC time>" for an agent heapadmin-attach loaded into a
 * running process, and which of its children, forked before, are not
 * served: from the answer's attached, unserved_children and
 * unserved_more fields, each checked (a number, digits and commas) and
 * written again, never copied. "" for an agent started with its
 * process. */
static void
attached_detail(const struct ha_buf *body, char *out, size_t len)
{
    char v[64], pids[1024], stamp[32];
    long long when, more = 0;
    size_t at = 0;

    out[0] = '\0';
    if (!field(body, "attached", v, sizeof(v)) || !plain_int(v, &when) ||
        when == 0)
        return;
    ha_utc_stamp(stamp, sizeof(stamp), when, ' ');
    (void)ha_appendf(out, len, &at, "attached at %s UTC", stamp);
    if (field(body, "unserved_more", v, sizeof(v)))
        (void)plain_int(v, &more);
    if (field(body, "unserved_children", pids, sizeof(pids)) &&
        pids[0] != '\0' && strspn(pids, "0123456789,") == strlen(pids)) {
        (void)ha_appendf(out, len, &at, "; children forked before the "
                                        "attach are not served: ");
        for (const char *p = pids; *p != '\0';) {
            size_t n = strcspn(p, ",");

            if (n > 0 && !ha_appendf(out, len, &at, "%s%.*s",
                                     p == pids ? "" : ", ", (int)n, p))
                break;
            p += n;
            p += *p == ',';
        }
        if (more > 0)
            (void)ha_appendf(out, len, &at, " and %lld more", more);
    } else if (more > 0) {
        (void)ha_appendf(out, len, &at, "; %lld children forked before "
                                        "the attach are not served", more);
    }
}

static void
list_run(void *arg)
{
    struct list_job *j = arg;
    struct ha_agent_fan fan;
    const struct ha_agent *list;
    size_t n;

    if (ha_agenthttp_fan(j->datadir, 0, "stats", "GET", "/agent", NULL,
                         AGENTS_TIMEOUT_MS, 65536, &fan, j->err,
                         sizeof(j->err)) != 0) {
        j->rc = -1;
        return;
    }
    list = fan.agents;
    n = fan.n;
    j->rows = calloc(n ? n : 1, sizeof(*j->rows));
    if (j->rows == NULL) {
        ha_agenthttp_fan_free(&fan);
        ha_strlcpy(j->err, "out of memory", sizeof(j->err));
        j->rc = -1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        struct agent_row *r = &j->rows[i];
        const struct ha_agent_reply *rep = &fan.replies[i];
        char v[64], v_path[4096];

        r->a = list[i];
        ha_strlcpy(r->socket, list[i].path, sizeof(r->socket));
        if (list[i].state == HA_AGENT_GONE) {
            r->state = "gone";
            ha_strlcpy(r->detail, list[i].why, sizeof(r->detail));
        } else if (list[i].state == HA_AGENT_MISMATCH) {
            r->state = "mismatch";
            ha_strlcpy(r->detail, list[i].why, sizeof(r->detail));
        } else if (list[i].state == HA_AGENT_NO_SOCKET) {
            r->state = "socket missing";
            ha_strlcpy(r->detail, list[i].why, sizeof(r->detail));
        } else if (rep->status != 200) {
            r->state = "no answer";
            snprintf(r->detail, sizeof(r->detail), "%s",
                     rep->status == 0 ? rep->err : "an HTTP error");
        } else {
            r->state = "serving";
            if (field(&rep->body, "endpoint", v_path, sizeof(v_path)) &&
                own_socket(&list[i], v_path))
                ha_strlcpy(r->socket, v_path, sizeof(r->socket));
            r->have_memory =
                field(&rep->body, "allocated", v, sizeof(v)) &&
                plain_int(v, &r->allocated) &&
                field(&rep->body, "resident", v, sizeof(v)) &&
                plain_int(v, &r->resident);
            attached_detail(&rep->body, r->detail, sizeof(r->detail));
        }
    }
    j->n = n;
    ha_agenthttp_fan_free(&fan);
}

static void
list_discard(void *arg)
{
    struct list_job *j = arg;

    free(j->rows);
    free(j);
}

/* ------------------------------------------------------------------
 * Virtual table methods
 * ------------------------------------------------------------------ */

static int
agents_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
               sqlite3_vtab **ppVtab, char **pzErr)
{
    int rc = ha_vtab_new(db, AGENTS_SCHEMA, SQLITE_VTAB_INNOCUOUS,
                         sizeof(agents_vtab), ppVtab, pzErr);

    (void)argc;
    (void)argv;
    if (rc == SQLITE_OK)
        ((agents_vtab *)*ppVtab)->conn = aux;
    return rc;
}

static int
agents_disconnect(sqlite3_vtab *vtab)
{
    sqlite3_free(vtab);
    return SQLITE_OK;
}

static int
agents_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    info->idxNum = 0;
    info->estimatedCost = 1000;
    info->estimatedRows = 16;
    return SQLITE_OK;
}

static int
agents_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **ppCursor)
{
    (void)vtab;
    return ha_cursor_open(sizeof(agents_cursor), ppCursor);
}

static int
agents_close(sqlite3_vtab_cursor *cur)
{
    agents_cursor *c = (agents_cursor *)cur;

    free(c->rows);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int
agents_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
              int argc, sqlite3_value **argv)
{
    agents_cursor *c = (agents_cursor *)cur;
    agents_vtab *vt = (agents_vtab *)cur->pVtab;
    struct list_job *j;

    (void)idxNum;
    (void)idxStr;
    (void)argc;
    (void)argv;
    free(c->rows);
    c->rows = NULL;
    ha_cursor_rewind(&c->rc, 0, 0);
    if (vt->conn->ctx->heap->datadir == NULL)
        return SQLITE_OK;
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return SQLITE_NOMEM;
    ha_strlcpy(j->datadir, vt->conn->ctx->heap->datadir, sizeof(j->datadir));
    if (ha_task_offload_ask(list_run, list_discard, j) != 0) {
        ha_vtab_set_errmsg(&vt->base, "stats_agents: interrupted");
        return SQLITE_INTERRUPT;
    }
    if (j->rc != 0) {
        int rc = ha_vtab_set_errmsg(&vt->base, "stats_agents: %s", j->err);

        list_discard(j);
        return rc;
    }
    c->rows = j->rows;
    ha_cursor_rewind(&c->rc, 0, j->n);
    free(j);
    return SQLITE_OK;
}

static int
agents_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    agents_cursor *c = (agents_cursor *)cur;
    const struct agent_row *r = &c->rows[c->rc.row];

    switch (col) {
    case AGENTS_COL_PID:
        sqlite3_result_int64(ctx, r->a.pid);
        break;
    case AGENTS_COL_PROGRAM:
        sqlite3_result_text(ctx, r->a.program, -1, SQLITE_TRANSIENT);
        break;
    case AGENTS_COL_USER:
        sqlite3_result_text(ctx, r->a.user, -1, SQLITE_TRANSIENT);
        break;
    case AGENTS_COL_SOCKET:
        sqlite3_result_text(ctx, r->socket, -1, SQLITE_TRANSIENT);
        break;
    case AGENTS_COL_STARTED:
        if (r->a.started > 0)
            sqlite3_result_int64(ctx, r->a.started);
        break;
    case AGENTS_COL_ALLOCATED:
        if (r->have_memory)
            sqlite3_result_int64(ctx, r->allocated);
        break;
    case AGENTS_COL_RESIDENT:
        if (r->have_memory)
            sqlite3_result_int64(ctx, r->resident);
        break;
    case AGENTS_COL_STATE:
        sqlite3_result_text(ctx, r->state, -1, SQLITE_STATIC);
        break;
    case AGENTS_COL_DETAIL:
        if (r->detail[0] != '\0')
            sqlite3_result_text(ctx, r->detail, -1, SQLITE_TRANSIENT);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

static const sqlite3_module agents_module = {
    0,                 /* iVersion */
    agents_connect,    /* xCreate - a session's own (temp) */
    agents_connect,    /* xConnect */
    agents_best_index, /* xBestIndex - always the whole listing */
    agents_disconnect, /* xDisconnect */
    agents_disconnect, /* xDestroy */
    agents_open,       /* xOpen */
    agents_close,      /* xClose */
    agents_filter,     /* xFilter - list and ask, off the loop */
    ha_cursor_next,    /* xNext */
    ha_cursor_eof,     /* xEof */
    agents_column,     /* xColumn */
    ha_cursor_rowid,   /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

int
ha_agents_register(sqlite3 *db, struct ha_vtab_conn *conn)
{
    conn->refs++;
    return sqlite3_create_module_v2(db, "stats_agents", &agents_module, conn,
                                    ha_vtab_conn_unref);
}
