/* SPDX-License-Identifier: MIT
 *
 * The SQLite VFS heapadmin opens its datadir's files through (the history
 * and heapadmin.db, directly and ATTACHed by sessions): SQLite's "unix"
 * VFS, with every call that takes one of its per-file locks made under
 * one lock of ours, a list of the files open, and, on the loop's thread,
 * every call that may touch the disk made on the I/O thread with a
 * bounded wait (core/blockio.h): a statement reading stats_history on a
 * disk that stopped answering fails after disk_timeout_ms, and the loop
 * serves everyone else meanwhile; a close never waits.
 *
 * Where SQLite's WAL is not safe (a network or FUSE filesystem:
 * ha_filevfs_shm_safe), a database file is opened without the shared-
 * memory methods, so SQLite never maps its -shm file there, and its
 * owner uses a rollback journal (ha_filevfs_journal).
 *
 * Why: SQLite's unix VFS keeps one record per open inode for the whole
 * process (its POSIX lock counts, the WAL-index and their mutexes). A
 * fork child inherits the parent's records but not the threads that use
 * them, and a connection the child opens on the same file joins them:
 * it waits for ever on a mutex a parent's thread held at the fork, or
 * trusts lock counts that belong to another process. With this VFS the
 * fork is taken while no thread is inside such a call (ha_filevfs_fork_try),
 * and the child closes the inherited files (ha_filevfs_fork_child), so
 * SQLite forgets them before the child opens its own.
 */
#ifndef HA_FILEVFS_H
#define HA_FILEVFS_H

#include <stdbool.h>
#include <stddef.h>

struct sqlite3;

/* The VFS's name for sqlite3_open_v2 and "vfs=" URIs; registered (not as
 * the default) on the first call. NULL if SQLite has no "unix" VFS or
 * cannot register one (the caller then uses the default). */
const char *ha_filevfs_name(void);

/* Fork protocol (api/forksafe.c). try: 1 with the VFS's lock held (no
 * thread is inside a locking call, and none can enter one), 0 if another
 * thread holds it now. parent: gives it back. child: with SQLite's own
 * static mutexes already given back, closes every file open at the fork
 * (the parent's, which the child never uses: their connections stay
 * leaked) and makes the lock new. */
int ha_filevfs_fork_try(void);
void ha_filevfs_fork_parent(void);
void ha_filevfs_fork_child(void);

/* Lets SQLite tidy the WAL database at path away as its last user: opens
 * it (never creating it, never through a link), reads its schema and
 * closes it. When no other connection of any process has it open, SQLite
 * then checkpoints the WAL into the database and removes path-wal and
 * path-shm; otherwise it leaves them, for the last one's close. Nothing
 * is lost either way (SQLite's own close, under its exclusive lock).
 * Returns 0 when the two files are gone afterwards, -1 otherwise. */
int ha_filevfs_release(const char *path);

/* Whether SQLite's WAL index (a shared mapping of the -shm file) is safe
 * on the filesystem of path (or of its directory, when path does not
 * exist yet): false on network filesystems (NFS, CIFS/SMB, 9p, Ceph,
 * AFS, Lustre, ...) and FUSE, by statfs(2)'s f_type, with its name in
 * fsname (may be NULL); true when it cannot be told. May block on that
 * disk: a worker's call, or the I/O thread's. */
bool ha_filevfs_shm_safe(const char *path, char *fsname, size_t len);

/* Before the first read of a read-write connection to path: where WAL is
 * not safe, exclusive locking mode, so that a WAL file left there is
 * read with its index in heap memory (a database without the shared-
 * memory methods cannot be read in WAL mode otherwise). */
void ha_filevfs_journal_begin(struct sqlite3 *db, const char *path);

/* Sets the journal mode of the database open in db at path (a
 * read-write connection, before its first write): WAL where
 * ha_filevfs_shm_safe, else a rollback journal (DELETE), a WAL left
 * there first read in exclusive locking mode, where SQLite keeps its
 * index in heap memory. Logs the choice, once per file and process.
 * Returns 0, or -1 with err ("path: SQLite's message"). */
int ha_filevfs_journal(struct sqlite3 *db, const char *path, char *err,
                       size_t errlen);

/* How many files are open through the VFS in this process (tests). */
int ha_filevfs_open_files(void);

#endif /* HA_FILEVFS_H */
