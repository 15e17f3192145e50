/* SPDX-License-Identifier: MIT
 *
 * The MySQL -> SQLite token emitter, shared by the dialect layer
 * (dialect.c for whole statements, show.c and setvar.c for parts):
 * @@var and @var become ha_sysvar()/ha_uservar() calls labelled with
 * their MySQL names, LIMIT a,b becomes LIMIT b OFFSET a, the ProxySQL
 * "stats." qualifier is dropped and MySQL string escapes become SQLite
 * literals. Pure: text in, text out.
 */
#ifndef HA_EMIT_H
#define HA_EMIT_H

#include <stddef.h>

#include "core/buf.h"
#include "admin/lex.h"

/* Appends the SQLite form of tokens [from, to) of lx to out (to is
 * clamped to lx->n). Allocation failures are left in out (ha_buf). */
void ha_emit_sql(const struct ha_lex *lx, size_t from, size_t to,
                 struct ha_buf *out);

#endif /* HA_EMIT_H */
