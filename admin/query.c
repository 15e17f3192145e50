/* SPDX-License-Identifier: MIT
 *
 * SQLite statement -> MySQL text result set (see query.h).
 *
 * Column types come from the declared type when there is one, else from
 * the first row's value: INTEGER -> LONGLONG (binary charset, so drivers
 * parse numbers), REAL -> DOUBLE, BLOB -> BLOB, TEXT and NULL ->
 * VAR_STRING in utf8mb4. Because definitions precede rows, the first row
 * is stepped before the definitions are written.
 */
#include "admin/query.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "engine/authorizer.h"
#include "admin/proto.h"
#include "vtab/vtab.h"

void
ha_reply_init(struct ha_reply *r, struct ha_buf *out, uint8_t seq,
              uint32_t caps, uint16_t status)
{
    r->out = out;
    ha_buf_init(&r->scratch);
    r->seq = seq;
    r->caps = caps;
    r->status = status;
    r->warnings = 0;
    r->binary = false;
    r->info_from = NULL;
    r->authz = NULL;
    r->timeout_ms = 0;
    r->shutdown = NULL;
    r->killed = NULL;
    r->budget = NULL;
    r->budget_arg = NULL;
    r->drain = NULL;
    r->drain_arg = NULL;
    r->why_limit = NULL;
}

void
ha_reply_free(struct ha_reply *r)
{
    ha_buf_free(&r->scratch);
}

/* Frames the scratch payload into out and empties scratch. */
static void
flush_packet(struct ha_reply *r)
{
    ha_proto_write_packet(r->out, &r->seq, r->scratch.data, r->scratch.len);
    ha_buf_reset(&r->scratch);
}

void
ha_reply_ok(struct ha_reply *r, uint64_t affected, uint64_t insert_id,
            const char *info)
{
    ha_proto_encode_ok(&r->scratch, 0x00, affected, insert_id, r->status,
                       r->warnings, info);
    flush_packet(r);
}

void
ha_reply_err(struct ha_reply *r, uint16_t code, const char *sqlstate,
             const char *fmt, ...)
{
    char msg[1024];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    ha_proto_encode_err(&r->scratch, code, sqlstate, msg);
    flush_packet(r);
}

void
ha_reply_sqlite_err(struct ha_reply *r, int rc, const char *msg)
{
    int prim = rc & 0xff;
    struct ha_authz_denial d;

    /* A refusal of the session authorizer: the MySQL error it chose.
     * SQLite may report it as SQLITE_ERROR when parsing went on after the
     * refusal, so its messages count too. */
    if ((prim == SQLITE_AUTH ||
         (msg != NULL && (strncmp(msg, "not authorized", 14) == 0 ||
                          (strncmp(msg, "access to ", 10) == 0 &&
                           strstr(msg, " is prohibited") != NULL)))) &&
        ha_authorizer_take_denial(r->authz, &d)) {
        ha_reply_err(r, d.code, d.sqlstate, "%s", d.msg);
        return;
    }
    if (prim == SQLITE_NOMEM) {
        sqlite3_int64 limit = sqlite3_hard_heap_limit64(-1);

        /* MySQL: ER_OUT_OF_RESOURCES. */
        if (limit > 0)
            ha_reply_err(r, 1041, "HY000",
                         "Out of memory: admin SQL may hold %lld bytes "
                         "(admin_variables.sql_memory_limit) and this "
                         "statement needed more; nothing was changed",
                         (long long)limit);
        else
            ha_reply_err(r, 1041, "HY000", "Out of memory");
        return;
    }
    if (prim == SQLITE_INTERRUPT && r->shutdown != NULL &&
        atomic_load(r->shutdown)) {
        /* MySQL: ER_SERVER_SHUTDOWN. */
        ha_reply_err(r, 1053, "08S01", "Server shutdown in progress");
        return;
    }
    if (prim == SQLITE_INTERRUPT && r->killed != NULL && *r->killed) {
        /* MySQL: ER_QUERY_INTERRUPTED, what KILL QUERY makes. */
        ha_reply_err(r, 1317, "70100", "Query execution was interrupted");
        return;
    }
    if (prim == SQLITE_INTERRUPT && r->timeout_ms > 0) {
        /* MySQL: ER_QUERY_TIMEOUT. */
        ha_reply_err(r, 3024, "HY000",
                     "Query execution was interrupted, maximum statement "
                     "execution time exceeded (max_execution_time = %lld ms)",
                     (long long)r->timeout_ms);
        return;
    }
    if (msg == NULL)
        msg = sqlite3_errstr(rc);
    if (strstr(msg, "syntax error") != NULL ||
        strstr(msg, "incomplete input") != NULL ||
        strstr(msg, "unrecognized token") != NULL)
        ha_reply_err(r, 1064, "42000", "%s", msg);
    else if (strncmp(msg, "no such table", 13) == 0)
        ha_reply_err(r, 1146, "42S02", "%s", msg);
    else if (strncmp(msg, "no such column", 14) == 0)
        ha_reply_err(r, 1054, "42S22", "%s", msg);
    else if (rc == SQLITE_CONSTRAINT_UNIQUE ||
             rc == SQLITE_CONSTRAINT_PRIMARYKEY)
        ha_reply_err(r, 1062, "23000", "%s", msg);
    else if (rc == SQLITE_CONSTRAINT_NOTNULL)
        ha_reply_err(r, 1048, "23000", "%s", msg);
    else if (strstr(msg, "already exists") != NULL)
        ha_reply_err(r, 1050, "42S01", "%s", msg);
    else if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
        ha_reply_err(r, 1205, "HY000",
                     "Lock wait timeout exceeded: %s (another session holds "
                     "a write transaction)",
                     msg);
    else
        ha_reply_err(r, 1105, "HY000", "%s", msg);
}

/* The EOF that ends column definitions, omitted with DEPRECATE_EOF. */
static void
defs_end(struct ha_reply *r)
{
    if (r->caps & HA_CLIENT_DEPRECATE_EOF)
        return;
    ha_proto_encode_eof(&r->scratch, r->warnings, r->status);
    flush_packet(r);
}

/* The packet that ends the rows: EOF, or an OK with header 0xFE. */
static void
rows_end(struct ha_reply *r)
{
    if (r->caps & HA_CLIENT_DEPRECATE_EOF)
        ha_proto_encode_ok(&r->scratch, 0xFE, 0, 0, r->status, r->warnings,
                           NULL);
    else
        ha_proto_encode_eof(&r->scratch, r->warnings, r->status);
    flush_packet(r);
}

void
ha_reply_eof(struct ha_reply *r)
{
    rows_end(r);
}

void
ha_reply_raw(struct ha_reply *r, const void *p, size_t n)
{
    ha_buf_append(&r->scratch, p, n);
    flush_packet(r);
}

void
ha_reply_single(struct ha_reply *r, const char *name, const char *value)
{
    struct ha_coldef c = {
        .schema = "", .table = "", .org_table = "", .name = name,
        .org_name = "", .collation = HA_COLLATION_UTF8MB4_0900,
        .length = 1024, .type = HA_TYPE_VAR_STRING, .decimals = 0x1f,
    };

    ha_proto_put_lenenc(&r->scratch, 1);
    flush_packet(r);
    ha_proto_encode_coldef(&r->scratch, &c, false);
    flush_packet(r);
    defs_end(r);
    if (r->binary) {
        struct ha_binval v = {.type = HA_TYPE_VAR_STRING,
                              .kind = value ? HA_BINVAL_BYTES
                                            : HA_BINVAL_NULL,
                              .s = (const uint8_t *)value,
                              .n = value ? strlen(value) : 0};
        ha_proto_encode_binary_row(&r->scratch, &v, 1);
    } else if (value == NULL) {
        ha_buf_append_u8(&r->scratch, 0xFB);
    } else {
        ha_proto_put_lenenc_str(&r->scratch, value, strlen(value));
    }
    flush_packet(r);
    rows_end(r);
}

static int
type_from_decl(const char *decl)
{
    /* SQLite's affinity rules (datatype3.html, section 3.1), in order. */
    if (decl == NULL || *decl == '\0')
        return -1;
    if (strcasestr(decl, "INT") != NULL)
        return SQLITE_INTEGER;
    if (strcasestr(decl, "CHAR") != NULL || strcasestr(decl, "CLOB") ||
        strcasestr(decl, "TEXT") != NULL)
        return SQLITE_TEXT;
    if (strcasestr(decl, "BLOB") != NULL)
        return SQLITE_BLOB;
    if (strcasestr(decl, "REAL") != NULL || strcasestr(decl, "FLOA") ||
        strcasestr(decl, "DOUB") != NULL)
        return SQLITE_FLOAT;
    return -1;
}

static void
coldef_for(sqlite3_stmt *stmt, int i, bool have_row, struct ha_coldef *c)
{
    int t = type_from_decl(sqlite3_column_decltype(stmt, i));
    const char *s;

    if (t < 0)
        t = have_row ? sqlite3_column_type(stmt, i) : SQLITE_NULL;
    memset(c, 0, sizeof(*c));
    c->name = sqlite3_column_name(stmt, i);
    s = sqlite3_column_origin_name(stmt, i);
    c->org_name = s ? s : "";
    s = sqlite3_column_table_name(stmt, i);
    c->table = s ? s : "";
    c->org_table = c->table;
    s = sqlite3_column_database_name(stmt, i);
    c->schema = s ? s : "";
    if (c->name == NULL)
        c->name = "";
    switch (t) {
    case SQLITE_INTEGER:
        c->type = HA_TYPE_LONGLONG;
        c->collation = HA_COLLATION_BINARY;
        c->length = 20;
        c->flags = HA_FLAG_BINARY | HA_FLAG_NUM;
        break;
    case SQLITE_FLOAT:
        c->type = HA_TYPE_DOUBLE;
        c->collation = HA_COLLATION_BINARY;
        c->length = 22;
        c->flags = HA_FLAG_BINARY | HA_FLAG_NUM;
        c->decimals = 0x1f;
        break;
    case SQLITE_BLOB:
        c->type = HA_TYPE_BLOB;
        c->collation = HA_COLLATION_BINARY;
        c->length = 0xffffffffu;
        c->flags = HA_FLAG_BLOB | HA_FLAG_BINARY;
        break;
    default:
        c->type = HA_TYPE_VAR_STRING;
        c->collation = HA_COLLATION_UTF8MB4_0900;
        c->length = 1024;
        c->decimals = 0x1f;
        break;
    }
}

void
ha_reply_coldefs(struct ha_reply *r, sqlite3_stmt *stmt, bool with_default)
{
    int ncol = sqlite3_column_count(stmt);

    for (int i = 0; i < ncol; i++) {
        struct ha_coldef c;
        coldef_for(stmt, i, false, &c);
        ha_proto_encode_coldef(&r->scratch, &c, with_default);
        flush_packet(r);
    }
    defs_end(r);
}

void
ha_reply_prepare_ok(struct ha_reply *r, uint32_t id, sqlite3_stmt *stmt,
                    uint16_t n_params)
{
    /* MySQL describes each parameter as a binary VAR_STRING named "?";
     * clients only count them. */
    static const struct ha_coldef param = {
        .schema = "", .table = "", .org_table = "", .name = "?",
        .org_name = "", .collation = HA_COLLATION_BINARY,
        .type = HA_TYPE_VAR_STRING, .flags = HA_FLAG_BINARY,
    };
    int ncol = stmt != NULL ? sqlite3_column_count(stmt) : 0;

    ha_proto_encode_prepare_ok(&r->scratch, id, (uint16_t)ncol, n_params,
                               r->warnings);
    flush_packet(r);
    if (n_params > 0) {
        for (uint16_t i = 0; i < n_params; i++) {
            ha_proto_encode_coldef(&r->scratch, &param, false);
            flush_packet(r);
        }
        defs_end(r);
    }
    if (ncol > 0)
        ha_reply_coldefs(r, stmt, false);
}

/* One binary row: each value converted by SQLite to the type its column
 * definition announced (types[i]), so the encoding always matches. */
static void
put_binary_row(struct ha_reply *r, sqlite3_stmt *stmt, int ncol,
               const uint8_t *types, struct ha_binval *v)
{
    for (int i = 0; i < ncol; i++) {
        memset(&v[i], 0, sizeof(v[i]));
        v[i].type = types[i];
        if (sqlite3_column_type(stmt, i) == SQLITE_NULL) {
            v[i].kind = HA_BINVAL_NULL;
        } else if (types[i] == HA_TYPE_LONGLONG) {
            v[i].kind = HA_BINVAL_INT;
            v[i].i = sqlite3_column_int64(stmt, i);
        } else if (types[i] == HA_TYPE_DOUBLE) {
            v[i].kind = HA_BINVAL_DOUBLE;
            v[i].d = sqlite3_column_double(stmt, i);
        } else if (types[i] == HA_TYPE_BLOB) {
            v[i].kind = HA_BINVAL_BYTES;
            v[i].s = sqlite3_column_blob(stmt, i);
            v[i].n = (size_t)sqlite3_column_bytes(stmt, i);
        } else {
            v[i].kind = HA_BINVAL_BYTES;
            v[i].s = sqlite3_column_text(stmt, i);
            v[i].n = (size_t)sqlite3_column_bytes(stmt, i);
        }
    }
    ha_proto_encode_binary_row(&r->scratch, v, (size_t)ncol);
    flush_packet(r);
}

static void
put_row(struct ha_reply *r, sqlite3_stmt *stmt, int ncol)
{
    for (int i = 0; i < ncol; i++) {
        if (sqlite3_column_type(stmt, i) == SQLITE_NULL) {
            ha_buf_append_u8(&r->scratch, 0xFB);
        } else if (sqlite3_column_type(stmt, i) == SQLITE_BLOB) {
            const void *p = sqlite3_column_blob(stmt, i);
            ha_proto_put_lenenc_str(&r->scratch, p,
                                    (size_t)sqlite3_column_bytes(stmt, i));
        } else {
            const unsigned char *p = sqlite3_column_text(stmt, i);
            ha_proto_put_lenenc_str(&r->scratch, p,
                                    (size_t)sqlite3_column_bytes(stmt, i));
        }
    }
    flush_packet(r);
}

/* The statement may have opened or closed a transaction (SAVEPOINT,
 * RELEASE): report IN_TRANS as it is now. */
static void
refresh_in_trans(struct ha_reply *r, sqlite3 *db)
{
    r->status = (uint16_t)((r->status & ~HA_STATUS_IN_TRANS) |
                           (sqlite3_get_autocommit(db) ? 0
                                                       : HA_STATUS_IN_TRANS));
}

int
ha_reply_stmt(struct ha_reply *r, sqlite3 *db, sqlite3_stmt *stmt,
              const char *info)
{
    int ncol = sqlite3_column_count(stmt);
    sqlite3_int64 changes_before = sqlite3_total_changes64(db);
    sqlite3_int64 rowid_before = sqlite3_last_insert_rowid(db);
    int rc = sqlite3_step(stmt);

    if (ncol == 0 || (rc != SQLITE_ROW && rc != SQLITE_DONE)) {
        while (rc == SQLITE_ROW)
            rc = sqlite3_step(stmt);
        if (rc != SQLITE_DONE) {
            ha_reply_sqlite_err(r, sqlite3_extended_errcode(db),
                                sqlite3_errmsg(db));
            return rc;
        }
        uint64_t affected = 0, insert_id = 0;
        if (sqlite3_total_changes64(db) != changes_before)
            affected = (uint64_t)sqlite3_changes64(db);
        if (sqlite3_last_insert_rowid(db) != rowid_before)
            insert_id = (uint64_t)sqlite3_last_insert_rowid(db);
        refresh_in_trans(r, db);
        char msg[1024];
        if (info == NULL &&
            ha_vtab_take_info(r->info_from, msg, sizeof(msg)) > 0)
            info = msg;
        ha_reply_ok(r, affected, insert_id, info);
        return rc;
    }

    uint8_t *types = NULL;
    struct ha_binval *vals = NULL;
    /* Where this result set starts, to take it back if it outgrows the
     * output budget (nothing is sent before the whole reply is built). */
    size_t start_len = r->out->len;
    long long max_result = -1; /* -1: the budget was not asked yet */
    uint8_t start_seq = r->seq;
    bool streamed = false;
    if (r->binary) {
        types = malloc((size_t)ncol);
        vals = malloc((size_t)ncol * sizeof(*vals));
        if (types == NULL || vals == NULL) {
            free(types);
            free(vals);
            ha_reply_err(r, 1037, "HY001", "Out of memory");
            sqlite3_reset(stmt);
            return SQLITE_NOMEM;
        }
    }
    ha_proto_put_lenenc(&r->scratch, (uint64_t)ncol);
    flush_packet(r);
    for (int i = 0; i < ncol; i++) {
        struct ha_coldef c;
        coldef_for(stmt, i, rc == SQLITE_ROW, &c);
        ha_proto_encode_coldef(&r->scratch, &c, false);
        flush_packet(r);
        if (types != NULL)
            types[i] = c.type;
    }
    defs_end(r);
    while (rc == SQLITE_ROW) {
        /* Before a row, never after: the last row's reply is then
         * finished whole, as before, and a client that stops reading
         * holds the command only while it has more rows to get. */
        if (r->drain != NULL && r->out->len > HA_REPLY_STREAM_BYTES) {
            if (r->drain(r->drain_arg) != 0) {
                free(types);
                free(vals);
                sqlite3_reset(stmt);
                ha_reply_sqlite_err(r, SQLITE_INTERRUPT, NULL);
                return SQLITE_INTERRUPT;
            }
            /* What was built is on its way: the budget's count of this
             * result no longer applies, its memory is bounded. */
            streamed = true;
        }
        if (r->binary)
            put_binary_row(r, stmt, ncol, types, vals);
        else
            put_row(r, stmt, ncol);
        if (!streamed && r->budget != NULL && max_result < 0 &&
            r->out->len - start_len > HA_REPLY_FREE_BYTES) {
            long long left = r->budget(r->budget_arg);

            max_result = (long long)(r->out->len - start_len) + left;
            if (max_result < 0)
                max_result = 0;
        }
        if (!streamed && max_result >= 0 &&
            (long long)(r->out->len - start_len) > max_result) {
            free(types);
            free(vals);
            sqlite3_reset(stmt);
            r->out->len = start_len;
            r->seq = start_seq;
            /* MySQL: ER_OUT_OF_RESOURCES. */
            ha_reply_err(r, 1041, "HY000",
                         "Out of memory: the result set is larger than the "
                         "%lld bytes of output left (%s); add a LIMIT, or "
                         "read the replies already sent",
                         max_result,
                         r->why_limit != NULL ? r->why_limit
                                              : "admin_variables");
            return SQLITE_NOMEM;
        }
        rc = sqlite3_step(stmt);
    }
    free(types);
    free(vals);
    if (rc != SQLITE_DONE) {
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(db),
                            sqlite3_errmsg(db));
        return rc;
    }
    refresh_in_trans(r, db);
    rows_end(r);
    return rc;
}
