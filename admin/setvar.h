/* SPDX-License-Identifier: MIT
 *
 * SET statement parser. Pure: turns the statement into a list of
 * assignments for the session to apply (session.c); no SQLite calls.
 *
 *   SET [GLOBAL|SESSION|LOCAL] name = expr [, ...]
 *   SET @@[global.|session.|local.]name = expr, SET @user = expr
 *   SET <module>-<name> = expr       (a global_variables row, e.g.
 *                                     jemalloc-prof_active; '-' is part
 *                                     of the name only here)
 *   SET NAMES cs [COLLATE coll] | DEFAULT
 *   SET CHARACTER SET cs, SET CHARSET cs
 *   SET [GLOBAL|SESSION] TRANSACTION ISOLATION LEVEL ... | READ ONLY|WRITE
 * A scope keyword applies to the assignments after it until the next one
 * (MySQL 5.7 rule). '=' and ':=' both assign.
 */
#ifndef HA_SETVAR_H
#define HA_SETVAR_H

#include <stdbool.h>
#include <stddef.h>

#include "admin/lex.h"

enum ha_set_scope {
    HA_SET_SESSION,   /* default, SESSION, LOCAL, @@session., @@local. */
    HA_SET_GLOBAL,    /* GLOBAL, PERSIST, @@global. */
    HA_SET_USER,      /* @name */
    HA_SET_SCOPE_MAX
};

enum ha_set_value {
    HA_SET_EXPR,      /* value is SQLite expression text to evaluate */
    HA_SET_WORD,      /* value is a bare word taken as text: ON, utf8mb4 */
    HA_SET_DEFAULT,   /* DEFAULT: back to the server's value */
    HA_SET_VALUE_MAX
};

struct ha_set_item {
    enum ha_set_scope scope;
    char name[128];           /* lower case, without @@ or scope */
    bool is_module;           /* <module>-<name>: a global_variables row */
    enum ha_set_value kind;
    char *value;              /* malloc'd text (EXPR or WORD), else NULL */
};

struct ha_setvar {
    struct ha_set_item *items; /* malloc'd */
    size_t n;
    bool transaction_once;     /* SET TRANSACTION (next transaction only:
                                  accepted, nothing to remember) */
};

/* Parses a SET statement (sql, len bytes). Returns 0, or -1 with err set
 * to MySQL's syntax error text ("... near '...' at line 1") or "out of
 * memory". out must be freed with ha_setvar_free() either way. */
int ha_setvar_parse(const char *sql, size_t len, struct ha_setvar *out,
                    char *err, size_t errlen);

/* The same on a statement already lexed (a whole lex or a view). */
int ha_setvar_parse_lexed(const struct ha_lex *lx, struct ha_setvar *out,
                          char *err, size_t errlen);
void ha_setvar_free(struct ha_setvar *v);

#endif /* HA_SETVAR_H */
