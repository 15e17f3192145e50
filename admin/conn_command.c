/* SPDX-License-Identifier: MIT
 *
 * The command phase's handlers: one command packet (COM_QUERY,
 * COM_STMT_*, COM_PING, COM_FIELD_LIST, ...) turned into its reply in
 * c->out, on the loop's stack or inside a task (conn_state.c decides).
 * A reply built in a task streams (ha_conn_drain); every reply counts
 * against max_output_total.
 */
#include "admin/conn_int.h"

#include <stdio.h>
#include <string.h>

#include "admin/exec.h"
#include "admin/handshake.h"
#include "admin/query.h"
#include "admin/sysvar.h"
#include "core/log.h"
#include "core/task.h"

/* Copies a name of n bytes into dst (size bytes) as a C string. Returns
 * -1 if it does not fit or holds a NUL. */
static int
copy_name(char *dst, size_t size, const uint8_t *src, size_t n)
{
    if (n >= size || memchr(src, '\0', n) != NULL)
        return -1;
    memcpy(dst, src, n);
    dst[n] = '\0';
    return 0;
}

static void
on_field_list(struct ha_conn *c, const uint8_t *p, size_t len,
              struct ha_reply *r)
{
    const uint8_t *t, *w;
    size_t tn, wn;
    char table[HA_PROTO_MAX_DB + 1], wild[HA_PROTO_MAX_DB + 1];
    char err[128];

    if (ha_proto_decode_field_list(p, len, &t, &tn, &w, &wn, err,
                                   sizeof(err)) != 0 ||
        copy_name(table, sizeof(table), t, tn) != 0 ||
        copy_name(wild, sizeof(wild), w, wn) != 0) {
        ha_reply_err(r, 1146, "42S02", "Table '%.*s' doesn't exist",
                     (int)(tn > 64 ? 64 : tn), (const char *)t);
        return;
    }
    ha_session_set_command(&c->session, "Field List", table, tn);
    ha_exec_field_list(&c->session, table, wn > 0 ? wild : NULL, r);
}

/* COM_STATISTICS: a bare string<EOF>, never an OK (MySQL protocol:
 * COM_STATISTICS); the mysql CLI's status command reads the leading
 * "Uptime: N". */
static void
on_statistics(struct ha_conn *c, struct ha_reply *r)
{
    struct ha_clients_stats st;
    char text[256];
    int n;

    ha_clients_stats(c->env->shared->clients, &st);
    n = snprintf(text, sizeof(text),
                 "Uptime: %llu  Threads: %zu  Questions: %llu  Slow "
                 "queries: 0  Opens: 0  Flush tables: 1  Open tables: 0  "
                 "Queries per second avg: %.3f",
                 (unsigned long long)st.uptime, st.threads,
                 (unsigned long long)st.questions,
                 st.uptime > 0 ? (double)st.questions / (double)st.uptime
                               : 0.0);
    ha_reply_raw(r, text,
                 n > 0 && (size_t)n < sizeof(text) ? (size_t)n : strlen(text));
}

/* struct ha_reply.budget: bytes the reply being built may still add,
 * counting every connection's unsent bytes (this one's, the reply so far
 * included); negative when they are over already. */
static long long
conn_output_left(void *arg)
{
    struct ha_conn *c = arg;

    return c->env->output_left(c->env->arg);
}

void
ha_conn_command_run(struct ha_conn *c, const uint8_t *p, size_t len)
{
    struct ha_reply r;
    char name[HA_PROTO_MAX_DB + 1];
    char err[256];
    uint32_t v;

    ha_reply_init(&r, &c->out, c->seq, c->caps, ha_session_status(&c->session));
    if (ha_task_busy(&c->task)) {
        /* Results stream: big ones hold a window, not their size. */
        r.drain = ha_conn_drain;
        r.drain_arg = c;
    }
    if (c->env->output_left != NULL && c->env->max_output_total > 0) {
        /* One budget for every session's unsent replies: a client that
         * never reads holds at most what was left when it asked. */
        r.budget = conn_output_left;
        r.budget_arg = c;
        r.why_limit = "admin_variables.max_output_total, for all sessions' "
                      "unsent replies";
    }
    switch (p[0]) {
    case HA_COM_QUIT:
        ha_wire_set_state(c, HA_CONN_CLOSING);
        break;
    case HA_COM_PING:
        ha_reply_ok(&r, 0, 0, NULL);
        break;
    case HA_COM_INIT_DB:
        if (len - 1 >= sizeof(name)) {
            ha_reply_err(&r, 1049, "42000",
                         "Unknown database (name longer "
                         "than %d bytes)",
                         HA_PROTO_MAX_DB);
            break;
        }
        memcpy(name, p + 1, len - 1);
        name[len - 1] = '\0';
        ha_session_set_command(&c->session, "Init DB", name, len - 1);
        if (ha_session_use(&c->session, name) != 0)
            ha_reply_err(&r, 1049, "42000", "Unknown database '%s'", name);
        else
            ha_reply_ok(&r, 0, 0, NULL);
        break;
    case HA_COM_QUERY:
        ha_log_debug("connection %u: query: %.*s", c->id,
                     (int)(len - 1 > 200 ? 200 : len - 1), (const char *)p + 1);
        ha_exec_query(&c->session, (const char *)p + 1, len - 1, &r);
        break;
    case HA_COM_FIELD_LIST:
        on_field_list(c, p, len, &r);
        break;
    case HA_COM_STATISTICS:
        on_statistics(c, &r);
        break;
    case HA_COM_PROCESS_KILL:
        if (ha_proto_decode_u32_arg(p, len, 4, &v, err, sizeof(err)) != 0) {
            ha_reply_err(&r, 1835, "HY000",
                         "Malformed communication packet: %s", err);
            break;
        }
        /* Killing itself: the server closes this connection once the
         * OK is written. */
        ha_session_set_command(&c->session, "Kill", NULL, 0);
        {
            int code = 0;

            if (ha_session_kill(&c->session, v, false, &code, err,
                                sizeof(err)) != 0)
                ha_reply_err(&r, (uint16_t)code, "HY000", "%s", err);
            else
                ha_reply_ok(&r, 0, 0, NULL);
        }
        break;
    case HA_COM_DEBUG:
        ha_reply_eof(&r);
        break;
    case HA_COM_SET_OPTION:
        if (ha_proto_decode_u32_arg(p, len, 2, &v, err, sizeof(err)) != 0 ||
            v > 1) {
            ha_reply_err(&r, 1047, "08S01", "Unknown command");
            break;
        }
        /* MYSQL_OPTION_MULTI_STATEMENTS_ON = 0, _OFF = 1. The reply is an
         * EOF, not an OK (MySQL protocol: COM_SET_OPTION). */
        ha_session_set_multi_statements(&c->session, v == 0);
        ha_reply_eof(&r);
        break;
    case HA_COM_RESET_CONNECTION:
        ha_stmt_table_clear(&c->stmts);
        ha_session_reset(&c->session);
        r.status = ha_session_status(&c->session);
        ha_reply_ok(&r, 0, 0, NULL);
        break;
    case HA_COM_CHANGE_USER:
        ha_handshake_change_user(c, p, len);
        break;
    case HA_COM_STMT_PREPARE:
        ha_log_debug("connection %u: prepare: %.*s", c->id,
                     (int)(len - 1 > 200 ? 200 : len - 1), (const char *)p + 1);
        ha_session_set_command(&c->session, "Prepare", (const char *)p + 1,
                               len - 1);
        ha_stmt_prepare(&c->stmts, &c->session, (const char *)p + 1, len - 1,
                        &r);
        break;
    case HA_COM_STMT_EXECUTE:
        ha_stmt_execute(&c->stmts, &c->session, p, len, &r);
        break;
    case HA_COM_STMT_SEND_LONG_DATA:
        /* No reply, ever (MySQL protocol: COM_STMT_SEND_LONG_DATA); a
         * problem surfaces at execute. */
        if (ha_stmt_send_long_data(&c->stmts, p, len, err, sizeof(err)) != 0)
            ha_log_debug("connection %u: COM_STMT_SEND_LONG_DATA ignored: "
                         "%s",
                         c->id, err);
        break;
    case HA_COM_STMT_CLOSE:
        (void)ha_stmt_close(&c->stmts, p, len); /* no reply */
        break;
    case HA_COM_STMT_RESET:
        ha_stmt_reset(&c->stmts, p, len, &r);
        break;
    case HA_COM_STMT_FETCH:
        if (ha_proto_decode_u32_arg(p, len, 4, &v, err, sizeof(err)) != 0)
            v = 0;
        ha_reply_err(&r, 1421, "HY000",
                     "The statement (%u) has no open cursor: this server "
                     "does not support cursors",
                     v);
        break;
    default:
        ha_reply_err(&r, 1047, "08S01", "Unknown command 0x%02x", p[0]);
        break;
    }
    if (c->state == HA_CONN_COMMAND)
        ha_session_set_command(&c->session, "Sleep", NULL, 0);
    /* COM_CHANGE_USER wrote through ha_wire_send and moved c->seq. */
    if (p[0] != HA_COM_CHANGE_USER)
        c->seq = r.seq;
    ha_reply_free(&r);
}
