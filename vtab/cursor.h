/* SPDX-License-Identifier: MIT
 *
 * The cursor of a table whose rows are an array known once xFilter has
 * run: a static catalogue (stats_memory_*, global_variables), a snapshot
 * (the session tables, stats_heap_dumps) or a profile's figures
 * (heap_top, heap_profile_diff, heap_modules). The cursor walks rows
 * [row, end) of it, stepping over rows a push-down the table checks
 * itself excludes. A table's cursor struct starts with a struct
 * ha_cursor, and its module uses these functions for the slots where the
 * walk is all there is to do.
 *
 * Not for cursors that produce rows as they go: heap_stacks and
 * heap_profile walk a profile stack by stack and frame by frame
 * (prof/aggregate.h's walker), and have no array to index.
 */
#ifndef HA_CURSOR_H
#define HA_CURSOR_H

#include <stdbool.h>
#include <stddef.h>

#include <sqlite3.h>

struct ha_cursor {
    sqlite3_vtab_cursor base;   /* Base class - must be first */
    size_t row;                 /* current row */
    size_t end;                 /* one past the last row to produce */
    /* Optional: true when row must not be shown (a push-down the table
     * applies itself, such as heap_top's function = ?). Rows it refuses
     * are stepped over by ha_cursor_rewind and ha_cursor_next. */
    bool (*skip)(const struct ha_cursor *c);
};

/* xOpen body: a zeroed cursor of size bytes (the table's cursor struct,
 * which starts with struct ha_cursor). Returns SQLITE_OK or
 * SQLITE_NOMEM. */
int ha_cursor_open(size_t size, sqlite3_vtab_cursor **pp);

/* xClose of a cursor that holds nothing else: frees it. */
int ha_cursor_close(sqlite3_vtab_cursor *cur);

/* Positions c on rows [from, end), past the first rows c->skip refuses:
 * what xFilter does once the rows are known. */
void ha_cursor_rewind(struct ha_cursor *c, size_t from, size_t end);

/* xNext: the next row c->skip does not refuse. */
int ha_cursor_next(sqlite3_vtab_cursor *cur);

/* xEof: past the last row. */
int ha_cursor_eof(sqlite3_vtab_cursor *cur);

/* xRowid: the current row's index in the array. */
int ha_cursor_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid);

#endif /* HA_CURSOR_H */
