/* SPDX-License-Identifier: MIT
 *
 * Session and user variables as SET leaves them: a small array of named
 * values per session (struct ha_session.vars for SET [SESSION], .user_vars
 * for SET @x), looked up by name without regard to case. Pure: no SQLite,
 * no session; the session, the SQL functions that read @@x and @x, and
 * SET's execution all work on these arrays.
 */
#ifndef HA_VARS_H
#define HA_VARS_H

#include <stddef.h>
#include <stdint.h>

#include "admin/sysvar.h"

/* A session or user variable set with SET. */
struct ha_session_var {
    char name[128];              /* lower case */
    enum ha_sysvar_type type;
    int64_t ival;                /* HA_SYSVAR_INT */
    char *sval;                  /* HA_SYSVAR_TEXT, malloc'd */
};

/* The entry of vars[0..n) named name (ASCII case ignored), or NULL. */
struct ha_session_var *ha_vars_find(struct ha_session_var *vars, size_t n,
                                    const char *name);

/* Sets name in *vars (adding it when absent, growing the array) to v's
 * type and value; v->sval is copied. Returns 0, or -1 on OOM (*vars
 * unchanged). */
int ha_vars_set(struct ha_session_var **vars, size_t *n, const char *name,
                const struct ha_session_var *v);

/* Removes name from vars[0..*n), if there (the last entry takes its
 * place). */
void ha_vars_unset(struct ha_session_var *vars, size_t *n, const char *name);

/* Frees the n entries' values and the array. */
void ha_vars_free(struct ha_session_var *vars, size_t n);

/* ha_vars_free, then *vars = NULL and *n = 0. */
void ha_vars_clear(struct ha_session_var **vars, size_t *n);

#endif /* HA_VARS_H */
