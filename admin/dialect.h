/* SPDX-License-Identifier: MIT
 *
 * MySQL dialect -> SQLite, at the token level (aware of quotes, backticks
 * and comments; no regular expressions over whole statements). SQLite
 * then evaluates the result. Pure: no SQLite calls.
 *
 * Rewrites:
 *   @@var, @@session.var, @@global.var, @@local.var
 *                       -> ha_sysvar('var'); a result column that is only
 *                          such a reference keeps its MySQL label, e.g.
 *                          SELECT @@version_comment -> column `@@version_comment`
 *   'it\'s' "str"       -> 'it''s' 'str'   (MySQL backslash escapes; double
 *                          quotes are string literals in MySQL)
 *   # comment           -> -- comment
 *   /+!80000 SET x +/  -> SET x   (versioned comments at or below the
 *                          server's 8.0.35 run; newer ones are dropped;
 *                          "/+" stands for slash-star here)
 *   LIMIT a, b          -> LIMIT b OFFSET a
 *   @name (user variable) -> ha_uservar('name'), labelled `@name` like @@
 *   stats.stats_x       -> stats_x  (the stats schema's tables are
 *                          eponymous virtual tables in main; the
 *                          qualifier is dropped for stats_* names only)
 *   SHOW ...            -> the equivalent SELECT (show.c), so SQLite
 *                          evaluates LIKE and WHERE
 *
 * Also classifies the statement by its leading keywords so the session
 * can answer statements SQLite has no equivalent for, and splits a
 * multi-statement COM_QUERY at its top-level semicolons.
 */
#ifndef HA_DIALECT_H
#define HA_DIALECT_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "core/buf.h"
#include "admin/lex.h"

/* The MySQL version that versioned comments (slash-star-bang NNNNN) are
 * compared against. */
#define HA_DIALECT_SERVER_VERSION_ID HA_LEX_SERVER_VERSION_ID

enum ha_stmt_kind {
    HA_STMT_OTHER,          /* hand to SQLite */
    HA_STMT_EMPTY,          /* only comments / whitespace / ';' */
    HA_STMT_SET,            /* SET ... (session settings) */
    HA_STMT_USE,            /* USE db */
    HA_STMT_BEGIN,          /* BEGIN / START TRANSACTION */
    HA_STMT_COMMIT,         /* COMMIT [WORK] */
    HA_STMT_ROLLBACK,       /* ROLLBACK [WORK] (not TO SAVEPOINT) */
    HA_STMT_SHOW,           /* SHOW ...: the output is its SELECT */
    HA_STMT_KILL,           /* KILL [QUERY|CONNECTION] id */
    HA_STMT_PERSIST,        /* SAVE ... / LOAD ... (admin/persist_stmt.h) */
    HA_STMT_ERROR,          /* refused as MySQL 8.0 would refuse it */
    HA_STMT_KIND_MAX
};

struct ha_dialect_result {
    enum ha_stmt_kind kind;
    char arg[256];          /* USE: the schema name, unquoted;
                               ERROR: the message */
    uint16_t err_code;      /* ERROR: MySQL error code */
    char sqlstate[6];       /* ERROR: its SQLSTATE */
    uint32_t kill_id;       /* KILL: connection id */
    bool kill_query;        /* KILL QUERY (else CONNECTION) */
    char verb[16];          /* first keyword as written ("" if none) */
};

/* One statement of a COM_QUERY: offset and length in the text, without
 * the terminating ';'. */
struct ha_dialect_span {
    size_t off;
    size_t len;
    size_t tok_from;        /* its tokens [tok_from, tok_to) in the lex */
    size_t tok_to;          /* the split ran on (ha_dialect_split_lexed) */
};

/* Rewrites one MySQL statement (sql, len bytes; need not be
 * NUL-terminated) into out as SQLite SQL, NUL-terminated, and classifies
 * it into res (for SHOW, out is the SELECT that answers it; for a
 * statement MySQL 8.0 would refuse, res->kind is HA_STMT_ERROR with the
 * code and message MySQL sends). Returns 0, or -1 with err set for an
 * unterminated quote or comment (the text names what was left open). */
int ha_dialect_rewrite(const char *sql, size_t len, struct ha_buf *out,
                       struct ha_dialect_result *res, char *err,
                       size_t errlen);
/* The same, for a session whose current schema is schema (NULL or "":
 * main), which SHOW TABLES and SHOW COLUMNS use when no FROM names one. */
int ha_dialect_rewrite_in(const char *sql, size_t len, const char *schema,
                          struct ha_buf *out, struct ha_dialect_result *res,
                          char *err, size_t errlen);

/* Splits a COM_QUERY text at its top-level ';' (not in quotes, comments
 * or a CREATE TRIGGER body) into *spans (malloc'd; the caller frees it),
 * dropping pieces that hold only comments and whitespace. *n is 0 for an
 * empty query. Returns 0, or -1 with err set as ha_dialect_rewrite(). */
int ha_dialect_split(const char *sql, size_t len,
                     struct ha_dialect_span **spans, size_t *n, char *err,
                     size_t errlen);

/* The same on a text already lexed (lx, or a view of it): each span
 * also names its token range, for ha_lex_view(). */
int ha_dialect_split_lexed(const struct ha_lex *lx,
                           struct ha_dialect_span **spans, size_t *n,
                           char *err, size_t errlen);

/* ha_dialect_rewrite_in() on one statement already lexed (a whole lex, or
 * a view from ha_dialect_split_lexed's span): the text is never lexed
 * again. Returns 0, or -1 with err "out of memory". */
int ha_dialect_rewrite_lexed(const struct ha_lex *lx, const char *schema,
                             struct ha_buf *out,
                             struct ha_dialect_result *res, char *err,
                             size_t errlen);

/* Formats MySQL's syntax error text for a statement that goes wrong at
 * byte off: "You have an error in your SQL syntax; ... near '<up to 80
 * bytes from off>' at line <n>". */
/* The names of the common table expressions in tokens [from, to) of lx
 * (WITH [RECURSIVE] name [(cols)] AS [NOT] [MATERIALIZED] (...), ...,
 * nested WITHs too), up to max, each truncated to 63 bytes. Returns how
 * many. Pure. */
size_t ha_dialect_cte_names(const struct ha_lex *lx, size_t from, size_t to,
                            char (*names)[64], size_t max);

void ha_dialect_syntax_error(const char *sql, size_t len, size_t off,
                             char *buf, size_t buflen);

#endif /* HA_DIALECT_H */
