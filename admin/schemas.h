/* SPDX-License-Identifier: MIT
 *
 * The files a session sees as schemas, read-only, as ProxySQL's admin
 * has them: "disk" (<datadir>/heapadmin.db, the saved variables,
 * engine/diskstore.h) and "stats_history" (<datadir>/heapadmin_stats.db,
 * the memory history, engine/history.h).
 *
 * A schema is there or the statement naming it fails: SQLite resolves
 * a qualified name it cannot find (disk.global_variables with disk not
 * attached, or any unknown.global_variables) to the eponymous virtual
 * table of that name, so a statement asking for the saved variables
 * would silently read the live ones. So before a statement runs, every
 * <schema>.<table> it names is checked: disk and stats_history are
 * attached now if they were not (the file may have appeared, or been
 * locked, since the session opened); if one cannot be, the statement
 * fails naming the file and why (missing, not a database, locked); a
 * table it does not hold fails as unknown; and another schema in front
 * of one of heapadmin's tables is refused.
 *
 * Also which schemas a client may select and where a table lives, for
 * USE, COM_FIELD_LIST and the SQL functions behind SHOW.
 */
#ifndef HA_SCHEMAS_H
#define HA_SCHEMAS_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>

#include "admin/lex.h"
#include "engine/authorizer.h"

#define HA_SCHEMAS_N 2

/* Whether name is a schema a client may select (COM_INIT_DB, USE, the
 * handshake's database): main, stats, stats_history. */
bool ha_schemas_exists(const char *name);

/* Whether table exists in schema as SHOW TABLES lists it: one of
 * heapadmin's tables in its catalogue schema (and main, where it
 * resolves unqualified too), else a table or view of main that a user
 * created. */
bool ha_schemas_table_exists(sqlite3 *db, const char *schema,
                             const char *table);

/* The SQLite schema whose pragmas describe table: "stats_history" for the
 * history tables (their attached file), else "main". Named explicitly
 * because a table of the attached disk schema would otherwise win over
 * main's eponymous one of the same name (global_variables). */
const char *ha_schemas_table_home(const char *table);

struct ha_schemas {
    const char *datadir;          /* absolute; NULL: no files */
    bool attached[HA_SCHEMAS_N];  /* disk, stats_history */
    char why[HA_SCHEMAS_N][320];  /* why not, when not */
};

/* Attaches what can be (at session open, before the authorizer is
 * armed, on a connection no other thread can reach), remembering why the
 * others could not. The files are attached on the I/O thread, waited
 * for at most admin_variables.disk_timeout_ms (core/blockio.h). Returns
 * 0; or -1 when the disk did not answer in time: db is then the
 * abandoned call's (closed when it ends) and the caller opens another,
 * sc saying why neither file is attached. */
int ha_schemas_open(sqlite3 *db, const char *datadir, struct ha_schemas *sc);

/* Checks the qualified names of the statement lx[from, to) (see above);
 * authz is re-armed after a late ATTACH (the authorizer refuses ATTACH
 * to SQL). Returns 0, or -1 with *code (MySQL's 1146) and err set. */
int ha_schemas_check(sqlite3 *db, struct ha_schemas *sc,
                     const struct ha_lex *lx, size_t from, size_t to,
                     struct ha_authz_who *authz, int *code, char *err,
                     size_t errlen);

#endif /* HA_SCHEMAS_H */
