/* SPDX-License-Identifier: MIT
 *
 * Replies to a command: OK, ERR and text result sets built from an SQLite
 * statement, framed into packets with the right sequence ids and, for
 * result sets, the EOF or CLIENT_DEPRECATE_EOF framing the client
 * negotiated (MySQL protocol: Text Resultset, OK_Packet, EOF_Packet).
 */
#ifndef HA_QUERY_H
#define HA_QUERY_H

#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "engine/clients.h"

struct ha_authz_who;
struct ha_vtab_conn;

#define HA_REPLY_FREE_BYTES (64u << 10) /* a result set this small is
                                          never checked against the
                                          output budget */
#define HA_REPLY_STREAM_BYTES HA_CLIENTS_STREAM_BYTES /* built reply
                                  bytes that are sent on before the next
                                  row (struct ha_reply.drain): the
                                  engine's per-client stream budget */

struct ha_reply {
    struct ha_buf *out;      /* framed packets are appended here */
    struct ha_buf scratch;   /* one payload being built */
    uint8_t seq;             /* sequence id of the next packet */
    uint32_t caps;           /* negotiated capabilities (HA_CLIENT_*) */
    uint16_t status;         /* server status flags for OK/EOF */
    uint16_t warnings;
    bool binary;             /* result sets in the binary protocol
                              * (COM_STMT_EXECUTE), else text */
    /* Optional: after a statement succeeds, the OK packet's info field
     * comes from this connection's virtual tables (ha_vtab_take_info,
     * e.g. the name of the dump file written); NULL: none. */
    struct ha_vtab_conn *info_from;
    /* Optional: the session whose authorizer refusals an SQLITE_AUTH is
     * reported with (ha_authorizer_take_denial); NULL sends SQLite's own
     * message. The session sets it when it starts answering. */
    struct ha_authz_who *authz;
    /* The statement's max_execution_time in ms when one applies: an
     * SQLITE_INTERRUPT is then MySQL's ERR 3024. 0: none. */
    int64_t timeout_ms;
    /* Optional: the output budget (admin/conn.c). Once a result set has
     * grown past HA_REPLY_FREE_BYTES, budget(budget_arg) is asked, once,
     * how many more bytes may be held now, this result's included
     * (negative: already over); past that the rows built so far are
     * dropped and the reply is ERR 1041 naming why_limit. Asking
     * late keeps the count of every connection's bytes off the path of
     * small answers, which always go out (an admin can still act). NULL:
     * no budget. */
    long long (*budget)(void *budget_arg);
    void *budget_arg;
    const char *why_limit;
    /* Optional: streaming. Before a result set's next row, when more than
     * HA_REPLY_STREAM_BYTES are built, drain(drain_arg) sends them on and
     * returns once the client has taken enough (a command on a fiber
     * pauses meanwhile, admin/conn.c), so a big result holds about that
     * much memory, not its size, and the budget is no longer asked.
     * Nonzero: the connection failed, or the statement was killed or the
     * server stops while waiting; the result ends with an ERR. NULL:
     * replies are built whole. */
    int (*drain)(void *drain_arg);
    void *drain_arg;
    /* Optional: set (from any thread or a signal handler) when the server
     * is shutting down: an SQLITE_INTERRUPT is then MySQL's ERR 1053.
     * NULL: never. */
    const _Atomic bool *shutdown;
    /* Optional: true when KILL QUERY stopped the statement: an
     * SQLITE_INTERRUPT is then MySQL's ERR 1317. NULL: never. */
    const bool *killed;
};

/* Starts a reply whose first packet has sequence id seq. */
void ha_reply_init(struct ha_reply *r, struct ha_buf *out, uint8_t seq,
                   uint32_t caps, uint16_t status);
void ha_reply_free(struct ha_reply *r);

void ha_reply_ok(struct ha_reply *r, uint64_t affected, uint64_t insert_id,
                 const char *info);
void ha_reply_err(struct ha_reply *r, uint16_t code, const char *sqlstate,
                  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Sends an SQLite error (rc and message of db) as the MySQL error that
 * best matches it: 1064 syntax, 1146 no such table, 1054 no such column,
 * 1062 duplicate key, 1048 NOT NULL, 1050 table exists, 1205 busy, else
 * 1105 with SQLite's message. */
void ha_reply_sqlite_err(struct ha_reply *r, int rc, const char *msg);

/* The EOF packet, or the 0xFE-OK under CLIENT_DEPRECATE_EOF, alone: the
 * reply to COM_SET_OPTION and COM_DEBUG, and the end of COM_FIELD_LIST. */
void ha_reply_eof(struct ha_reply *r);

/* One packet whose payload is exactly n bytes of p (COM_STATISTICS). */
void ha_reply_raw(struct ha_reply *r, const void *p, size_t n);

/* Column definitions of stmt, each followed by the EOF the client's
 * framing wants (none under DEPRECATE_EOF); with_default adds the NULL
 * default value COM_FIELD_LIST carries. Types come from the declared
 * types only (no row has been stepped). */
void ha_reply_coldefs(struct ha_reply *r, sqlite3_stmt *stmt,
                      bool with_default);

/* COM_STMT_PREPARE_OK for statement id: the 12-byte header, n_params
 * parameter definitions (named "?") and stmt's column definitions
 * (stmt may be NULL: no columns), each block followed by EOF unless
 * DEPRECATE_EOF (MySQL protocol: COM_STMT_PREPARE Response). */
void ha_reply_prepare_ok(struct ha_reply *r, uint32_t id,
                         sqlite3_stmt *stmt, uint16_t n_params);

/* A one-row, one-column result set named name (text, or binary when
 * r->binary). value NULL sends SQL NULL. */
void ha_reply_single(struct ha_reply *r, const char *name,
                     const char *value);

/* Steps stmt to completion and replies with a result set (when it has
 * columns; binary rows when r->binary, each value encoded as its column
 * definition's type) or an OK carrying the rows it changed. On an SQLite error the
 * reply ends with ERR (after any rows already sent, as the protocol
 * allows). info, if not NULL, is sent in the OK's info field; otherwise
 * r->info_from may supply one. Returns the final SQLite code (SQLITE_DONE
 * on success). */
int ha_reply_stmt(struct ha_reply *r, sqlite3 *db, sqlite3_stmt *stmt,
                  const char *info);

#endif /* HA_QUERY_H */
