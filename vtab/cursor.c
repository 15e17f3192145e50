/* SPDX-License-Identifier: MIT
 *
 * A cursor over an array of rows (see cursor.h).
 */
#include "vtab/cursor.h"

#include <string.h>

int
ha_cursor_open(size_t size, sqlite3_vtab_cursor **pp)
{
    struct ha_cursor *c = sqlite3_malloc64(size);

    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, size);
    *pp = &c->base;
    return SQLITE_OK;
}

int
ha_cursor_close(sqlite3_vtab_cursor *cur)
{
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* Steps over the rows c->skip refuses, from c->row on. */
static void
settle(struct ha_cursor *c)
{
    while (c->skip != NULL && c->row < c->end && c->skip(c))
        c->row++;
}

void
ha_cursor_rewind(struct ha_cursor *c, size_t from, size_t end)
{
    c->row = from;
    c->end = end;
    settle(c);
}

int
ha_cursor_next(sqlite3_vtab_cursor *cur)
{
    struct ha_cursor *c = (struct ha_cursor *)cur;

    c->row++;
    settle(c);
    return SQLITE_OK;
}

int
ha_cursor_eof(sqlite3_vtab_cursor *cur)
{
    const struct ha_cursor *c = (const struct ha_cursor *)cur;

    return c->row >= c->end;
}

int
ha_cursor_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = (sqlite3_int64)((const struct ha_cursor *)cur)->row;
    return SQLITE_OK;
}
