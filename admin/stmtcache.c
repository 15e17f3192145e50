/* SPDX-License-Identifier: MIT
 *
 * Per-session prepared-statement cache (see stmtcache.h): a fixed array
 * with least-recently-used eviction; sixteen slots keep the lookup a
 * short linear scan.
 */
#include "admin/stmtcache.h"

#include <stdlib.h>
#include <string.h>

static struct ha_stmtcache_entry *
find(struct ha_stmtcache *c, const char *sql, size_t len)
{
    for (size_t i = 0; i < HA_STMTCACHE_SIZE; i++) {
        struct ha_stmtcache_entry *e = &c->e[i];
        if (e->stmt != NULL && e->len == len && memcmp(e->sql, sql, len) == 0)
            return e;
    }
    return NULL;
}

static struct ha_stmtcache_entry *
victim(struct ha_stmtcache *c)
{
    struct ha_stmtcache_entry *best = &c->e[0];

    for (size_t i = 0; i < HA_STMTCACHE_SIZE; i++) {
        if (c->e[i].stmt == NULL)
            return &c->e[i];
        if (c->e[i].last_used < best->last_used)
            best = &c->e[i];
    }
    sqlite3_finalize(best->stmt);
    free(best->sql);
    memset(best, 0, sizeof(*best));
    return best;
}

/* True when nothing but spaces and ';' follow the statement: only such
 * texts are cached, so a hit never hides a second statement. */
static bool
tail_is_blank(const char *tail)
{
    for (; *tail != '\0'; tail++)
        if (*tail != ';' && *tail != ' ' && *tail != '\t' && *tail != '\n' &&
            *tail != '\r')
            return false;
    return true;
}

sqlite3_stmt *
ha_stmtcache_get(struct ha_stmtcache *c, sqlite3 *db, const char *sql,
                 size_t len, const char **tail, int *rc)
{
    struct ha_stmtcache_entry *e = find(c, sql, len);
    sqlite3_stmt *stmt = NULL;
    char *key;

    *rc = SQLITE_OK;
    if (e != NULL) {
        e->last_used = ++c->clock;
        *tail = sql + len;
        return e->stmt;
    }
    *rc = sqlite3_prepare_v3(db, sql, (int)len + 1, SQLITE_PREPARE_PERSISTENT,
                             &stmt, tail);
    if (*rc != SQLITE_OK || stmt == NULL)
        return NULL;
    if (!tail_is_blank(*tail))
        return stmt; /* not cached: ha_stmtcache_done finalizes it */
    key = malloc(len + 1);
    if (key == NULL)
        return stmt;
    memcpy(key, sql, len + 1);
    e = victim(c);
    e->sql = key;
    e->len = len;
    e->stmt = stmt;
    e->last_used = ++c->clock;
    return stmt;
}

void
ha_stmtcache_done(struct ha_stmtcache *c, sqlite3_stmt *stmt)
{
    if (stmt == NULL)
        return;
    for (size_t i = 0; i < HA_STMTCACHE_SIZE; i++) {
        if (c->e[i].stmt == stmt) {
            sqlite3_reset(stmt);
            sqlite3_clear_bindings(stmt);
            return;
        }
    }
    sqlite3_finalize(stmt);
}

void
ha_stmtcache_clear(struct ha_stmtcache *c)
{
    for (size_t i = 0; i < HA_STMTCACHE_SIZE; i++) {
        sqlite3_finalize(c->e[i].stmt);
        free(c->e[i].sql);
    }
    memset(c, 0, sizeof(*c));
}
