/* SPDX-License-Identifier: MIT
 *
 * The disk layer's operations, ProxySQL style, for whichever front-end
 * asks (admin/persist_stmt.h runs them for SAVE and LOAD statements) and
 * for start-up. heapadmin has two layers, not ProxySQL's three: an UPDATE
 * of global_variables acts at once (memory and runtime are one), and the
 * disk (engine/diskstore.h, <datadir>/heapadmin.db).
 *
 * SAVE, LOAD and SAVE CONFIG read or write the live layer through db,
 * the session's SQLite connection with the virtual tables registered
 * (global_variables), so a load is validated and logged exactly as an
 * operator's UPDATE and joins the session's transaction. Start-up has no
 * session: it applies the saved values through the settings engine
 * (heap/settings.h), which global_variables maps its UPDATEs to.
 */
#ifndef HA_ENGINE_PERSIST_H
#define HA_ENGINE_PERSIST_H

#include <stdbool.h>
#include <stddef.h>

#include <sqlite3.h>

#include "engine/config.h"

/* What an operation needs. */
struct ha_worker;
struct ha_heap;

struct ha_persist_ctx {
    sqlite3 *db;                  /* global_variables lives here; not
                                     used by ha_persist_apply_saved */
    struct ha_heap *heap;         /* the settings' (heap/settings.h):
                                     ha_persist_apply_saved only */
    const char *who;              /* "user@peer (connection N)" for the log */
    const char *datadir;          /* absolute */
    const struct ha_config *cfg;  /* SAVE CONFIG TO FILE; NULL: refused */
    struct ha_worker *disk_worker; /* heapadmin.db is read and written
                                      there while the statement waits (a
                                      SAVE fsyncs); NULL: the task's
                                      worker, or inline without a task */
};

/* Why an operation failed. */
enum ha_persist_error {
    HA_PERSIST_IO,                /* the file could not be read or written */
    HA_PERSIST_SQL,               /* the live layer refused (SQLite) */
    HA_PERSIST_INVALID            /* a saved value is not valid now */
};

/* SAVE JEMALLOC VARIABLES TO DISK: the writable jemalloc-* settings, in
 * one transaction. Returns 0 with *n saved and msg saying where, or -1
 * with msg saying why. Logged. */
int ha_persist_save(const struct ha_persist_ctx *ctx, size_t *n, char *msg,
                    size_t msglen);

/* LOAD JEMALLOC VARIABLES FROM DISK: every saved value, all or nothing.
 * Returns 0 with *n applied and msg, or -1 with *why and msg. Logged. */
int ha_persist_load(const struct ha_persist_ctx *ctx, size_t *n,
                    enum ha_persist_error *why, char *msg, size_t msglen);

/* SAVE CONFIG TO FILE file: the config as loaded with the live jemalloc
 * settings, mode 0600, into the datadir (file must be a plain name).
 * Returns 0 with msg naming the file, or -1 with msg. Logged. */
int ha_persist_save_config(const struct ha_persist_ctx *ctx,
                           const char *file, char *msg, size_t msglen);

/* Start-up: applies every saved jemalloc-* value (each on its own, logged
 * with the value it replaces), or with initial discards them (logged).
 * Returns how many were applied, or -1 (logged). */
int ha_persist_apply_saved(const struct ha_persist_ctx *ctx, bool initial);

#endif /* HA_ENGINE_PERSIST_H */
