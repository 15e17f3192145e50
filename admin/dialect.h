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
 *
 * Also classifies the statement by its leading keywords so the session
 * can answer statements SQLite has no equivalent for.
 */
#ifndef HA_DIALECT_H
#define HA_DIALECT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

/* The MySQL version that versioned comments (slash-star-bang NNNNN) are
 * compared against. */
#define HA_DIALECT_SERVER_VERSION_ID 80035

enum ha_stmt_kind {
    HA_STMT_OTHER,          /* hand to SQLite */
    HA_STMT_EMPTY,          /* only comments / whitespace / ';' */
    HA_STMT_SET,            /* SET ... (session settings) */
    HA_STMT_USE,            /* USE db */
    HA_STMT_BEGIN,          /* BEGIN / START TRANSACTION */
    HA_STMT_COMMIT,         /* COMMIT [WORK] */
    HA_STMT_ROLLBACK,       /* ROLLBACK [WORK] (not TO SAVEPOINT) */
    HA_STMT_KIND_MAX
};

struct ha_dialect_result {
    enum ha_stmt_kind kind;
    char arg[256];          /* USE: the schema name, unquoted */
};

/* Rewrites one MySQL statement (sql, len bytes; need not be
 * NUL-terminated) into out as SQLite SQL, NUL-terminated, and classifies
 * it into res. Returns 0, or -1 with err set for an unterminated quote or
 * comment (the text names what was left open). */
int ha_dialect_rewrite(const char *sql, size_t len, struct ha_buf *out,
                       struct ha_dialect_result *res, char *err,
                       size_t errlen);

#endif /* HA_DIALECT_H */
