/* SPDX-License-Identifier: MIT
 *
 * global_variables' schema and its table and cursor types (globals.c has
 * the table's documentation and its methods; the variables themselves
 * are the settings engine's, heap/settings.h). Private to globals.c.
 */
#ifndef HA_GLOBALS_H
#define HA_GLOBALS_H

#include <sqlite3.h>

#include "heap/settings.h"
#include "vtab/cursor.h"
#include "vtab/vtab_util.h"

#define GLOBALS_SCHEMA                                        \
    "CREATE TABLE global_variables("                          \
    "variable_name TEXT PRIMARY KEY, " /* 0 GLOBALS_COL_NAME */ \
    "variable_value TEXT"              /* 1 GLOBALS_COL_VALUE */ \
    ")"
#define GLOBALS_COL_NAME 0
#define GLOBALS_COL_VALUE 1

typedef struct globals_vtab globals_vtab;
struct globals_vtab {
    sqlite3_vtab base;             /* Base class - must be first */
    struct ha_vtab_conn *conn;     /* ctx (the heap service) and the info
                                      slot */
    struct ha_settings set;        /* the UPDATEs staged for xSync */

    int *marks;                    /* changes staged at each savepoint
                                      level (ha_settings_staged) */
    int n_marks;
    int cap_marks;
};

typedef struct globals_cursor globals_cursor;
struct globals_cursor {
    struct ha_cursor rc;       /* rows [row, end) of the settings'
                                * catalogue; must be first */
};

#endif /* HA_GLOBALS_H */
