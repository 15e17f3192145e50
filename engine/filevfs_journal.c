/* SPDX-License-Identifier: MIT
 *
 * The journal mode a datadir database gets: WAL where its filesystem
 * keeps SQLite's shared-memory WAL index safe, a rollback journal where
 * it does not (network filesystems, FUSE: ha_filevfs_shm_safe), each
 * choice logged once per path.
 */
#include "engine/filevfs.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "core/forkguard.h"
#include "core/log.h"
#include "core/util.h"

/* Paths whose choice was logged (each once per process). */
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;
static char said[4][4096];

static bool
first_time(const char *path, const char *mode)
{
    char key[4096];
    bool first = true;

    snprintf(key, sizeof(key), "%s %s", mode, path);
    /* Inside the gate: a host that forks while an agent opens its
     * databases must not leave the child this lock held (forkrace.sh
     * under TSan: a child's agent waited on it for ever). */
    ha_forkguard_enter();
    pthread_mutex_lock(&said_lock);
    for (size_t i = 0; i < HA_ARRAY_SIZE(said) && first; i++)
        if (strcmp(said[i], key) == 0)
            first = false;
    for (size_t i = 0; i < HA_ARRAY_SIZE(said) && first; i++)
        if (said[i][0] == '\0') {
            ha_strlcpy(said[i], key, sizeof(said[i]));
            break;
        }
    pthread_mutex_unlock(&said_lock);
    ha_forkguard_leave();
    return first;
}

void
ha_filevfs_journal_begin(sqlite3 *db, const char *path)
{
    if (!ha_filevfs_shm_safe(path, NULL, 0))
        (void)sqlite3_exec(db, "PRAGMA locking_mode = EXCLUSIVE", NULL, NULL,
                           NULL);
}

int
ha_filevfs_journal(sqlite3 *db, const char *path, char *err, size_t errlen)
{
    char fs[32];

    if (ha_filevfs_shm_safe(path, fs, sizeof(fs))) {
        if (sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) !=
            SQLITE_OK)
            goto fail;
        if (first_time(path, "wal"))
            ha_log_info("%s: journal_mode = WAL", path);
        return 0;
    }
    /* A WAL file left by a run on another filesystem (or another
     * version) is read in exclusive locking mode, where SQLite keeps
     * the WAL index in heap memory and never maps -shm, checkpointed
     * and turned into a rollback journal; the lock goes with the next
     * read once the mode is normal again. */
    if (sqlite3_exec(db,
                     "PRAGMA locking_mode = EXCLUSIVE; "
                     "PRAGMA journal_mode = DELETE; "
                     "PRAGMA locking_mode = NORMAL; "
                     "SELECT count(*) FROM sqlite_schema",
                     NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    if (first_time(path, "delete"))
        ha_log_notice("%s: journal_mode = DELETE (a rollback journal): "
                      "its directory is on %s, where SQLite's WAL, whose "
                      "index is memory shared through a mapped -shm "
                      "file, is not safe; a statement that pauses while "
                      "reading it may make a write wait",
                      path, fs);
    return 0;
fail:
    ha_err_set(err, errlen, "%s: %s", path, sqlite3_errmsg(db));
    return -1;
}
