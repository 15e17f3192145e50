/* SPDX-License-Identifier: MIT
 *
 * The admin tables, in one place: which exist, in which schema SHOW
 * TABLES lists them, which every session has as eponymous virtual tables,
 * and which stats users may read. A new table (its vtab/ implementation
 * aside) is one line in catalog.c; SHOW, the session's warm-up and
 * table_exists, the authorizer and the `stats.` qualifier all read it.
 */
#ifndef HA_CATALOG_H
#define HA_CATALOG_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

struct ha_catalog_table {
    const char *name;       /* as SQL names it */
    const char *schema;     /* "stats" or "main": where SHOW TABLES lists
                               it; NULL: not listed */
    bool eponymous;         /* a virtual table every session has, set up
                               (parsed) once when the session opens */
    bool stats_readable;    /* stats users may SELECT from it */
    bool module;            /* a virtual table module of vtab/: every
                               session has a private instance of it in
                               its temp schema (what bare names resolve
                               to), so that no statement on it takes a
                               lock of the shared scratch database */
    const char *doc;        /* what it holds, one row per what, for
                               people: docs/reference/tables.md is made
                               from it (docs/gen/gendocs.c); plain text,
                               `code` in backquotes */
};

/* What one column of a table means (catalog_columns.c), for the
 * generated reference. Every column SQLite reports for a table
 * (PRAGMA table_xinfo, hidden argument columns included) has one;
 * docs/gen/gendocs.c fails naming a column without one, and a doc naming
 * no column. */
struct ha_catalog_column {
    const char *table;      /* as tables[] names it */
    const char *name;       /* the column */
    const char *doc;        /* plain text, `code` in backquotes */
};

/* Every table, in SHOW TABLES order; n_out gets the count. */
const struct ha_catalog_table *ha_catalog_tables(size_t *n_out);

/* The entry for name (case-insensitive), or NULL. */
const struct ha_catalog_table *ha_catalog_find(const char *name);

/* Every column's doc string, *n_out of them, grouped by table. */
const struct ha_catalog_column *ha_catalog_columns(size_t *n_out);

/* The table whose column docs table shares for the columns it has of
 * the same name (heap_growth_stacks: heap_growth), or NULL. */
const char *ha_catalog_columns_like(const char *table);

/* True when name belongs to the stats schema by ProxySQL's naming: it
 * starts "stats_" (any case). There `stats.name` and plain `name` are the
 * same table, and stats users may read it. */
bool ha_catalog_is_stats_name(const char *name);

/* Appends to out a SELECT of (db, name, type) for every listed table,
 * then main's own tables and views from sqlite_schema: the body SHOW
 * TABLES and SHOW TABLE STATUS filter. */
void ha_catalog_append_sql(struct ha_buf *out);

#endif /* HA_CATALOG_H */
