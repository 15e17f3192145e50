/* SPDX-License-Identifier: MIT
 *
 * Running SET on a session: SET [SESSION|GLOBAL] x = ..., SET @x = ...,
 * SET autocommit, SET NAMES/CHARACTER SET, and SET of the jemalloc-*
 * variables, which is an UPDATE of global_variables. Every value is
 * evaluated (a bare word is text, anything else runs as SELECT (<expr>)
 * on the session's connection) and checked before anything changes, so a
 * statement with one bad assignment changes nothing (MySQL's rule).
 */
#ifndef HA_SETEXEC_H
#define HA_SETEXEC_H

#include "admin/lex.h"
#include "admin/query.h"
#include "admin/session.h"

/* Runs the SET statement lx on s and replies OK (with global_variables'
 * info message, when one was set) or ERR through r: 1064 for a syntax
 * error, 1231/1232/1238 as MySQL for a value a variable cannot take or
 * a read-only variable, 1193 for an unknown jemalloc-* name. Returns 0
 * (OK sent) or -1 (ERR sent). */
int ha_setexec_run(struct ha_session *s, const struct ha_lex *lx,
                   struct ha_reply *r);

#endif /* HA_SETEXEC_H */
