/* SPDX-License-Identifier: MIT
 *
 * SHOW -> SELECT (see show.h). Each form is parsed from the tokens after
 * SHOW into a base SELECT whose columns carry MySQL's names; the optional
 * LIKE or WHERE tail then filters it from outside:
 *
 *   SELECT * FROM (<base>) WHERE "<first column>" LIKE <pat> ESCAPE '\'
 *   SELECT * FROM (<base>) WHERE <the WHERE expression, rewritten>
 */
#include "admin/show.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/catalog.h"
#include "admin/emit.h"
#include "core/util.h"

/* Values MySQL 8.0 reports; connectors pick a collation from these. */
#define COLLATIONS                                                          \
    "SELECT 'utf8mb4_0900_ai_ci' AS \"Collation\", 'utf8mb4' AS Charset, "  \
    "255 AS Id, 'Yes' AS \"Default\", 'Yes' AS Compiled, 0 AS Sortlen, "    \
    "'NO PAD' AS Pad_attribute "                                            \
    "UNION ALL SELECT 'utf8mb4_general_ci', 'utf8mb4', 45, '', 'Yes', 1, "  \
    "'PAD SPACE' "                                                          \
    "UNION ALL SELECT 'utf8mb4_bin', 'utf8mb4', 46, '', 'Yes', 1, "         \
    "'PAD SPACE' "                                                          \
    "UNION ALL SELECT 'utf8mb3_general_ci', 'utf8mb3', 33, 'Yes', 'Yes', "  \
    "1, 'PAD SPACE' "                                                       \
    "UNION ALL SELECT 'latin1_swedish_ci', 'latin1', 8, 'Yes', 'Yes', 1, "  \
    "'PAD SPACE' "                                                          \
    "UNION ALL SELECT 'binary', 'binary', 63, 'Yes', 'Yes', 1, 'NO PAD'"

#define CHARSETS                                                            \
    "SELECT 'utf8mb4' AS Charset, 'UTF-8 Unicode' AS Description, "         \
    "'utf8mb4_0900_ai_ci' AS \"Default collation\", 4 AS Maxlen "           \
    "UNION ALL SELECT 'utf8mb3', 'UTF-8 Unicode', 'utf8mb3_general_ci', 3 " \
    "UNION ALL SELECT 'latin1', 'cp1252 West European', "                   \
    "'latin1_swedish_ci', 1 "                                               \
    "UNION ALL SELECT 'binary', 'Binary pseudo charset', 'binary', 1"

#define STATUS_ROW(name) "SELECT '" name "', ha_status('" name "')"

#define STATUS                                                              \
    "SELECT 'Uptime' AS Variable_name, ha_status('Uptime') AS Value "       \
    "UNION ALL " STATUS_ROW("Uptime_since_flush_status")                    \
    " UNION ALL " STATUS_ROW("Threads_connected")                          \
    " UNION ALL " STATUS_ROW("Threads_running")                            \
    " UNION ALL " STATUS_ROW("Connections")                                \
    " UNION ALL " STATUS_ROW("Questions")                                  \
    " UNION ALL " STATUS_ROW("Queries")                                    \
    " UNION ALL " STATUS_ROW("Max_used_connections")                       \
    " UNION ALL " STATUS_ROW("Ssl_cipher")                                 \
    " UNION ALL " STATUS_ROW("Ssl_version")                                \
    " UNION ALL SELECT 'Jemalloc_' || replace(variable_name, '.', '_'), "  \
    "variable_value FROM stats_memory_jemalloc"

/* Appends text as an SQL string literal. */
static void
put_literal(struct ha_buf *out, const char *text)
{
    ha_buf_append_u8(out, '\'');
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '\'')
            ha_buf_append_u8(out, '\'');
        ha_buf_append_u8(out, (uint8_t)*p);
    }
    ha_buf_append_u8(out, '\'');
}

/* Appends text as an SQL "identifier". */
static void
put_ident(struct ha_buf *out, const char *text)
{
    ha_buf_append_u8(out, '"');
    for (const char *p = text; *p != '\0'; p++) {
        if (*p == '"')
            ha_buf_append_u8(out, '"');
        ha_buf_append_u8(out, (uint8_t)*p);
    }
    ha_buf_append_u8(out, '"');
}

static bool
at_end(const struct ha_lex *lx, size_t i)
{
    while (i < lx->n && ha_lex_is_punct(lx, i, ';'))
        i = ha_lex_next(lx, i);
    return i >= lx->n;
}

/* [FROM|IN] name at *i: copies the name (a `db`.`t` pair when dotted is
 * set: the part before the dot goes to db) and advances *i. Returns -1
 * when no name follows. */
static int
parse_name(const struct ha_lex *lx, size_t *i, char *name, size_t len,
           char *db, size_t dblen)
{
    size_t j = *i;

    if (!ha_lex_is_ident(lx, j))
        return -1;
    ha_lex_text(lx, j, name, len);
    j = ha_lex_next(lx, j);
    if (db != NULL && ha_lex_is_punct(lx, j, '.')) {
        size_t k = ha_lex_next(lx, j);
        if (!ha_lex_is_ident(lx, k)) {
            *i = k;
            return -1;
        }
        ha_strlcpy(db, name, dblen);
        ha_lex_text(lx, k, name, len);
        j = ha_lex_next(lx, k);
    }
    *i = j;
    return 0;
}

/* An optional "FROM|IN db" at *i: the schema goes to from (which the
 * caller preset to the current schema). Returns -1 with *bad set when
 * FROM is not followed by a name. */
static int
parse_from_db(const struct ha_lex *lx, size_t *i, char *from, size_t fromlen,
              size_t *bad)
{
    if (!ha_lex_is_word(lx, *i, "FROM") && !ha_lex_is_word(lx, *i, "IN"))
        return 0;
    *i = ha_lex_next(lx, *i);
    if (parse_name(lx, i, from, fromlen, NULL, 0) != 0) {
        *bad = *i;
        return -1;
    }
    return 0;
}

/* The "FROM|IN [db.]table [FROM|IN db]" of SHOW COLUMNS and SHOW INDEX:
 * the table goes to table, its schema (if named) to from. Returns -1
 * with *bad set at the token that does not fit. */
static int
parse_from_table(const struct ha_lex *lx, size_t *i, char *table,
                 size_t tablelen, char *from, size_t fromlen, size_t *bad)
{
    if (!ha_lex_is_word(lx, *i, "FROM") && !ha_lex_is_word(lx, *i, "IN")) {
        *bad = *i;
        return -1;
    }
    *i = ha_lex_next(lx, *i);
    if (parse_name(lx, i, table, tablelen, from, fromlen) != 0) {
        *bad = *i;
        return -1;
    }
    return parse_from_db(lx, i, from, fromlen, bad);
}

/* The LIKE 'pattern' | WHERE expr tail at i around base. like_col is the
 * column LIKE filters. Returns -1 with *bad set on trailing junk. */
static int
wrap_filter(const struct ha_lex *lx, size_t i, const char *base,
            const char *like_col, const char *order, struct ha_buf *out,
            size_t *bad)
{
    ha_buf_append_str(out, "SELECT * FROM (");
    ha_buf_append_str(out, base);
    ha_buf_append_str(out, ")");
    if (ha_lex_is_word(lx, i, "LIKE") && like_col != NULL) {
        size_t p = ha_lex_next(lx, i);
        if (p >= lx->n || lx->toks[p].kind != HA_TOK_STRING) {
            *bad = p;
            return -1;
        }
        ha_buf_append_str(out, " WHERE ");
        put_ident(out, like_col);
        ha_buf_append_str(out, " LIKE ");
        ha_emit_sql(lx, p, p + 1, out);
        ha_buf_append_str(out, " ESCAPE '\\'");
        i = ha_lex_next(lx, p);
    } else if (ha_lex_is_word(lx, i, "WHERE") && like_col != NULL) {
        size_t e = lx->n;
        while (e > i + 1 && ha_lex_is_punct(lx, ha_lex_prev(lx, e), ';'))
            e = ha_lex_prev(lx, e);
        if (ha_lex_next(lx, i) >= e) {
            *bad = e;
            return -1;
        }
        ha_buf_append_str(out, " WHERE ");
        ha_emit_sql(lx, i + 1, e, out);
        i = lx->n;
    }
    if (!at_end(lx, i)) {
        *bad = i;
        return -1;
    }
    if (order != NULL) {
        ha_buf_append_str(out, " ORDER BY ");
        ha_buf_append_str(out, order);
    }
    return 0;
}

/* The SQLite schema a MySQL database's tables live in: the attached
 * stats_history file, else main (stats is a naming, not a schema). Named
 * explicitly because a table of the attached disk schema would otherwise
 * win over main's eponymous one of the same name (global_variables). */
static const char *
sqlite_schema_of(const char *db)
{
    return strcasecmp(db, "stats_history") == 0 ? "stats_history" : "main";
}

/* SHOW [FULL] TABLES [FROM|IN db] [LIKE|WHERE] */
static int
show_tables(const struct ha_lex *lx, size_t i, bool full, const char *db,
            struct ha_buf *out, size_t *bad)
{
    char from[128], col[160];
    struct ha_buf base = HA_BUF_INIT;
    int rc;

    ha_strlcpy(from, db, sizeof(from));
    if (parse_from_db(lx, &i, from, sizeof(from), bad) != 0)
        return -1;
    snprintf(col, sizeof(col), "Tables_in_%s", from);
    ha_buf_append_str(&base, "SELECT name AS ");
    put_ident(&base, col);
    if (full)
        ha_buf_append_str(&base, ", type AS Table_type");
    ha_buf_append_str(&base, " FROM (");
    ha_catalog_append_sql(&base);
    ha_buf_append_str(&base, ") WHERE db = ");
    put_literal(&base, from);
    ha_buf_append_u8(&base, '\0');
    rc = wrap_filter(lx, i, (const char *)base.data, col, "1", out, bad);
    ha_buf_free(&base);
    return rc;
}

/* SHOW TABLE STATUS [FROM|IN db] [LIKE|WHERE] */
static int
show_table_status(const struct ha_lex *lx, size_t i, const char *db,
                  struct ha_buf *out, size_t *bad)
{
    char from[128];
    struct ha_buf base = HA_BUF_INIT;
    int rc;

    ha_strlcpy(from, db, sizeof(from));
    if (parse_from_db(lx, &i, from, sizeof(from), bad) != 0)
        return -1;
    ha_buf_append_str(
        &base,
        "SELECT name AS Name, CASE type WHEN 'VIEW' THEN NULL ELSE 'SQLite' "
        "END AS Engine, 10 AS Version, 'Dynamic' AS Row_format, "
        "NULL AS \"Rows\", 0 AS Avg_row_length, 0 AS Data_length, "
        "0 AS Max_data_length, 0 AS Index_length, 0 AS Data_free, "
        "NULL AS Auto_increment, NULL AS Create_time, NULL AS Update_time, "
        "NULL AS Check_time, 'utf8mb4_0900_ai_ci' AS \"Collation\", "
        "NULL AS Checksum, '' AS Create_options, CASE type WHEN 'VIEW' "
        "THEN 'VIEW' ELSE '' END AS Comment FROM (");
    ha_catalog_append_sql(&base);
    ha_buf_append_str(&base, ") WHERE db = ");
    put_literal(&base, from);
    ha_buf_append_u8(&base, '\0');
    rc = wrap_filter(lx, i, (const char *)base.data, "Name", "1", out, bad);
    ha_buf_free(&base);
    return rc;
}

/* SHOW [FULL] COLUMNS|FIELDS FROM|IN t [FROM|IN db] [LIKE|WHERE] */
static int
show_columns(const struct ha_lex *lx, size_t i, bool full, const char *db,
             struct ha_buf *out, size_t *bad)
{
    char table[128], from[128];
    struct ha_buf base = HA_BUF_INIT;
    int rc;

    ha_strlcpy(from, db, sizeof(from));
    if (parse_from_table(lx, &i, table, sizeof(table), from, sizeof(from),
                         bad) != 0)
        return -1;
    ha_buf_append_str(&base,
                      "SELECT name AS Field, CASE WHEN type = '' THEN "
                      "'text' ELSE lower(type) END AS Type, ");
    if (full)
        ha_buf_append_str(&base,
                          "CASE WHEN type LIKE '%INT%' OR type LIKE "
                          "'%REAL%' OR type LIKE '%FLOA%' OR type LIKE "
                          "'%DOUB%' OR type LIKE '%BLOB%' THEN NULL ELSE "
                          "'utf8mb4_0900_ai_ci' END AS \"Collation\", ");
    ha_buf_append_str(&base,
                      "CASE WHEN \"notnull\" OR pk THEN 'NO' ELSE 'YES' END "
                      "AS \"Null\", CASE WHEN pk THEN 'PRI' ELSE '' END AS "
                      "\"Key\", dflt_value AS \"Default\", '' AS Extra");
    if (full)
        ha_buf_append_str(&base, ", 'select,insert,update,references' AS "
                                 "Privileges, '' AS Comment");
    ha_buf_append_str(&base, " FROM pragma_table_xinfo(ha_table_check(");
    put_literal(&base, from);
    ha_buf_append_str(&base, ", ");
    put_literal(&base, table);
    ha_buf_append_str(&base, "), ");
    put_literal(&base, sqlite_schema_of(from));
    ha_buf_append_str(&base, ") WHERE hidden IN (0, 2, 3) ORDER BY cid");
    ha_buf_append_u8(&base, '\0');
    rc = wrap_filter(lx, i, (const char *)base.data, "Field", NULL, out,
                     bad);
    ha_buf_free(&base);
    return rc;
}

/* SHOW CREATE TABLE [db.]t, SHOW CREATE DATABASE|SCHEMA db */
static int
show_create(const struct ha_lex *lx, size_t i, const char *db,
            struct ha_buf *out, size_t *bad)
{
    char name[128], from[128];

    ha_strlcpy(from, db, sizeof(from));
    if (ha_lex_is_word(lx, i, "DATABASE") || ha_lex_is_word(lx, i, "SCHEMA")) {
        i = ha_lex_next(lx, i);
        if (ha_lex_is_word(lx, i, "IF")) /* IF NOT EXISTS */
            i = ha_lex_next(lx, ha_lex_next(lx, ha_lex_next(lx, i)));
        if (parse_name(lx, &i, name, sizeof(name), NULL, 0) != 0 ||
            !at_end(lx, i)) {
            *bad = i;
            return -1;
        }
        ha_buf_append_str(out, "SELECT ha_schema_check(");
        put_literal(out, name);
        ha_buf_append_str(out, ") AS \"Database\", 'CREATE DATABASE `' || ");
        put_literal(out, name);
        ha_buf_append_str(out, " || '` /*!40100 DEFAULT CHARACTER SET "
                               "utf8mb4 */' AS \"Create Database\"");
        return 0;
    }
    if (!ha_lex_is_word(lx, i, "TABLE") && !ha_lex_is_word(lx, i, "VIEW")) {
        *bad = i;
        return -1;
    }
    i = ha_lex_next(lx, i);
    if (parse_name(lx, &i, name, sizeof(name), from, sizeof(from)) != 0 ||
        !at_end(lx, i)) {
        *bad = i;
        return -1;
    }
    ha_buf_append_str(out, "SELECT ha_table_check(");
    put_literal(out, from);
    ha_buf_append_str(out, ", ");
    put_literal(out, name);
    ha_buf_append_str(out, ") AS \"Table\", ha_create_table(");
    put_literal(out, from);
    ha_buf_append_str(out, ", ");
    put_literal(out, name);
    ha_buf_append_str(out, ") AS \"Create Table\"");
    return 0;
}

/* SHOW [GLOBAL|SESSION] VARIABLES [LIKE|WHERE] */
static int
show_variables(const struct ha_lex *lx, size_t i, bool global,
               struct ha_buf *out, size_t *bad)
{
    const char *base =
        global ? "SELECT variable_name AS Variable_name, "
                 "ifnull(CAST(variable_value AS TEXT), '') AS Value FROM "
                 "temp.global_variables UNION ALL SELECT variable_name, "
                 "ifnull(CAST(variable_value AS TEXT), '') FROM "
                 "mysql_variables"
               : "SELECT variable_name AS Variable_name, "
                 "ifnull(CAST(variable_value AS TEXT), '') AS Value FROM "
                 "temp.global_variables UNION ALL SELECT variable_name, "
                 "ifnull(CAST(variable_value AS TEXT), '') FROM "
                 "session_variables";

    return wrap_filter(lx, i, base, "Variable_name", "1", out, bad);
}

/* SHOW [FULL] PROCESSLIST */
static int
show_processlist(const struct ha_lex *lx, size_t i, bool full,
                 struct ha_buf *out, size_t *bad)
{
    if (!at_end(lx, i)) {
        *bad = i;
        return -1;
    }
    ha_buf_append_str(out, "SELECT id AS Id, user AS User, host AS Host, "
                           "db, command AS Command, time AS Time, state AS "
                           "State, ");
    ha_buf_append_str(out, full ? "info" : "substr(info, 1, 100)");
    ha_buf_append_str(out, " AS Info FROM stats_admin_sessions ORDER BY id");
    return 0;
}

/* SHOW WARNINGS|ERRORS [LIMIT ...] and SHOW COUNT(*) WARNINGS|ERRORS:
 * nothing here raises warnings, and errors are not kept. */
static int
show_warnings(const struct ha_lex *lx, size_t i, struct ha_buf *out,
              size_t *bad)
{
    if (ha_lex_is_word(lx, i, "COUNT")) {
        size_t a = ha_lex_next(lx, i), b = ha_lex_next(lx, a),
               c = ha_lex_next(lx, b), w = ha_lex_next(lx, c);
        bool errors = ha_lex_is_word(lx, w, "ERRORS");
        if (!ha_lex_is_punct(lx, a, '(') || !ha_lex_is_punct(lx, b, '*') ||
            !ha_lex_is_punct(lx, c, ')') ||
            !(errors || ha_lex_is_word(lx, w, "WARNINGS")) ||
            !at_end(lx, ha_lex_next(lx, w))) {
            *bad = a;
            return -1;
        }
        ha_buf_append_str(out, errors
                                   ? "SELECT 0 AS `@@session.error_count`"
                                   : "SELECT 0 AS `@@session.warning_count`");
        return 0;
    }
    i = ha_lex_next(lx, i);
    if (ha_lex_is_word(lx, i, "LIMIT")) {
        /* LIMIT [offset,] count: every row count of nothing is nothing. */
        while (i < lx->n && !ha_lex_is_punct(lx, i, ';'))
            i = ha_lex_next(lx, i);
    }
    if (!at_end(lx, i)) {
        *bad = i;
        return -1;
    }
    ha_buf_append_str(out, "SELECT 'Note' AS Level, 0 AS Code, '' AS "
                           "Message WHERE 0");
    return 0;
}

/* SHOW INDEX|INDEXES|KEYS FROM t [FROM db]: the primary key columns. */
static int
show_index(const struct ha_lex *lx, size_t i, const char *db,
           struct ha_buf *out, size_t *bad)
{
    char table[128], from[128];

    ha_strlcpy(from, db, sizeof(from));
    if (parse_from_table(lx, &i, table, sizeof(table), from, sizeof(from),
                         bad) != 0)
        return -1;
    if (!at_end(lx, i)) {
        *bad = i;
        return -1;
    }
    ha_buf_append_str(out, "SELECT ");
    put_literal(out, table);
    ha_buf_append_str(out,
                      " AS \"Table\", 0 AS Non_unique, 'PRIMARY' AS Key_name, "
                      "pk AS Seq_in_index, name AS Column_name, 'A' AS "
                      "\"Collation\", NULL AS Cardinality, NULL AS Sub_part, "
                      "NULL AS Packed, '' AS \"Null\", 'BTREE' AS "
                      "Index_type, '' AS Comment, '' AS Index_comment, "
                      "'YES' AS Visible, NULL AS Expression FROM "
                      "pragma_table_xinfo(ha_table_check(");
    put_literal(out, from);
    ha_buf_append_str(out, ", ");
    put_literal(out, table);
    ha_buf_append_str(out, "), ");
    put_literal(out, sqlite_schema_of(from));
    ha_buf_append_str(out, ") WHERE pk > 0 ORDER BY pk");
    return 0;
}

int
ha_show_rewrite(const struct ha_lex *lx, size_t i, const char *schema,
                struct ha_buf *out, size_t *bad)
{
    const char *db = (schema != NULL && schema[0] != '\0') ? schema : "main";
    bool full = false, global = false;

    i = ha_lex_next(lx, i); /* past SHOW */
    if (ha_lex_is_word(lx, i, "FULL")) {
        full = true;
        i = ha_lex_next(lx, i);
    }
    if (ha_lex_is_word(lx, i, "GLOBAL")) {
        global = true;
        i = ha_lex_next(lx, i);
    } else if (ha_lex_is_word(lx, i, "SESSION") ||
               ha_lex_is_word(lx, i, "LOCAL")) {
        i = ha_lex_next(lx, i);
    }
    *bad = i;
    if (ha_lex_is_word(lx, i, "TABLES"))
        return show_tables(lx, ha_lex_next(lx, i), full, db, out, bad);
    if (ha_lex_is_word(lx, i, "COLUMNS") || ha_lex_is_word(lx, i, "FIELDS"))
        return show_columns(lx, ha_lex_next(lx, i), full, db, out, bad);
    if (ha_lex_is_word(lx, i, "PROCESSLIST"))
        return show_processlist(lx, ha_lex_next(lx, i), full, out, bad);
    if (full)
        return -1;
    if (ha_lex_is_word(lx, i, "VARIABLES"))
        return show_variables(lx, ha_lex_next(lx, i), global, out, bad);
    if (ha_lex_is_word(lx, i, "STATUS"))
        return wrap_filter(lx, ha_lex_next(lx, i), STATUS, "Variable_name",
                           NULL, out, bad);
    if (global)
        return -1;
    if (ha_lex_is_word(lx, i, "DATABASES") ||
        ha_lex_is_word(lx, i, "SCHEMAS"))
        return wrap_filter(lx, ha_lex_next(lx, i),
                           "SELECT 'main' AS \"Database\" UNION ALL "
                           "SELECT 'stats' UNION ALL SELECT 'stats_history'",
                           "Database", "1", out, bad);
    if (ha_lex_is_word(lx, i, "TABLE") &&
        ha_lex_is_word(lx, ha_lex_next(lx, i), "STATUS"))
        return show_table_status(lx, ha_lex_next(lx, ha_lex_next(lx, i)), db,
                                 out, bad);
    if (ha_lex_is_word(lx, i, "CREATE"))
        return show_create(lx, ha_lex_next(lx, i), db, out, bad);
    if (ha_lex_is_word(lx, i, "INDEX") || ha_lex_is_word(lx, i, "INDEXES") ||
        ha_lex_is_word(lx, i, "KEYS"))
        return show_index(lx, ha_lex_next(lx, i), db, out, bad);
    if (ha_lex_is_word(lx, i, "WARNINGS") || ha_lex_is_word(lx, i, "ERRORS") ||
        ha_lex_is_word(lx, i, "COUNT"))
        return show_warnings(lx, i, out, bad);
    if (ha_lex_is_word(lx, i, "COLLATION"))
        return wrap_filter(lx, ha_lex_next(lx, i), COLLATIONS, "Collation",
                           "Id", out, bad);
    if (ha_lex_is_word(lx, i, "CHARSET"))
        return wrap_filter(lx, ha_lex_next(lx, i), CHARSETS, "Charset", "1",
                           out, bad);
    if (ha_lex_is_word(lx, i, "CHARACTER") &&
        ha_lex_is_word(lx, ha_lex_next(lx, i), "SET"))
        return wrap_filter(lx, ha_lex_next(lx, ha_lex_next(lx, i)), CHARSETS,
                           "Charset", "1", out, bad);
    if (ha_lex_is_word(lx, i, "PROMETHEUS") &&
        ha_lex_is_word(lx, ha_lex_next(lx, i), "METRICS")) {
        size_t end = ha_lex_next(lx, ha_lex_next(lx, i));

        if (!at_end(lx, end)) {
            *bad = end;
            return -1;
        }
        /* ProxySQL's statement: the /metrics text as one row. */
        ha_buf_append_str(out, "SELECT ha_prometheus_metrics() AS Metrics");
        return 0;
    }
    if (ha_lex_is_word(lx, i, "STORAGE"))
        i = ha_lex_next(lx, i);
    if (ha_lex_is_word(lx, i, "ENGINES")) {
        if (!at_end(lx, ha_lex_next(lx, i))) {
            *bad = ha_lex_next(lx, i);
            return -1;
        }
        ha_buf_append_str(out, "SELECT 'SQLite' AS Engine, 'DEFAULT' AS "
                               "Support, 'SQLite in-memory database' AS "
                               "Comment, 'YES' AS Transactions, 'NO' AS XA, "
                               "'YES' AS Savepoints");
        return 0;
    }
    *bad = i;
    return -1;
}
