/* SPDX-License-Identifier: MIT
 *
 * A small per-session cache of prepared SQLite statements, keyed by the
 * exact SQLite text (after the dialect rewrite). Monitoring scripts send
 * the same few statements every few seconds; compiling them again each
 * time was the largest share of the daemon's own CPU per query
 * (bench/PROFILE.md). Statements are prepared with
 * SQLITE_PREPARE_PERSISTENT; SQLite re-prepares them by itself after a
 * schema change.
 */
#ifndef HA_STMTCACHE_H
#define HA_STMTCACHE_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>

#define HA_STMTCACHE_SIZE 16

struct ha_stmtcache_entry {
    char *sql;              /* key: the SQLite text, malloc'd */
    size_t len;             /* its length in bytes */
    sqlite3_stmt *stmt;     /* NULL for a free slot */
    uint64_t last_used;     /* LRU clock value */
};

struct ha_stmtcache {
    struct ha_stmtcache_entry e[HA_STMTCACHE_SIZE];
    uint64_t clock;
};

/* Returns a ready statement for sql (len bytes, NUL-terminated at len),
 * from the cache or newly prepared on db, and whether it was a hit.
 * *tail receives what follows the first statement (as sqlite3_prepare's
 * pzTail; "" for a cache hit, where only single statements are kept).
 * On a prepare error returns NULL with *rc set; a text with no statement
 * gives NULL with *rc = SQLITE_OK. The statement stays owned by the cache:
 * pass it to ha_stmtcache_done() after use, never finalize it. */
sqlite3_stmt *ha_stmtcache_get(struct ha_stmtcache *c, sqlite3 *db,
                               const char *sql, size_t len,
                               const char **tail, int *rc);

/* Resets stmt after use: releases its locks and cursors, clears bindings.
 * A statement that was not kept in the cache (multi-statement text) is
 * finalized instead. */
void ha_stmtcache_done(struct ha_stmtcache *c, sqlite3_stmt *stmt);

/* Finalizes every cached statement (before sqlite3_close, on reset). */
void ha_stmtcache_clear(struct ha_stmtcache *c);

#endif /* HA_STMTCACHE_H */
