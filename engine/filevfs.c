/* SPDX-License-Identifier: MIT
 *
 * The datadir's SQLite VFS (see filevfs.h), its ground floor: the real
 * files, "unix"'s own sqlite3_file behind each of ours, opened and
 * closed under one lock, the list of those open, the filesystems the
 * WAL index is not safe on (a database there is opened without it),
 * and the fork: taken only while no call holds the lock, and the child
 * closing the inherited files so SQLite forgets them (see filevfs.h
 * why). The methods SQLite calls are filevfs_methods.c's, their trips
 * to the I/O thread filevfs_op.c's, the journal mode
 * filevfs_journal.c's.
 *
 * Which calls take the lock: those in which SQLite's unix VFS takes an
 * inode's lock mutex or a WAL-index's mutex (os_unix.c of SQLite 3.40:
 * open, close, lock, unlock, check-reserved-lock, file-control, and the
 * shared-memory map, lock and unmap). Reads, writes, syncs and the
 * memory-mapped fetches take none of those and pass straight through.
 * Each locked call is one system call or a few: microseconds on a disk
 * that answers; none waits for another process (SQLite's locks are
 * tried, and its busy handler sleeps between calls, outside the lock).
 * The lock is taken before any of SQLite's static mutexes, as every
 * locked call enters them after it.
 */
#include "engine/filevfs.h"
#include "engine/filevfs_int.h"
#include "core/forkguard.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>

#include "core/util.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct vreal *open_files; /* under lock */
static int n_open;               /* under lock */
sqlite3_vfs *ha_filevfs_unix;

/* The lock, inside the fork gate (core/forkguard.h): a fork waits for
 * the calls under way, and none starts while it is being made. */
void
ha_filevfs_lock(void)
{
    ha_forkguard_enter();
    pthread_mutex_lock(&lock);
}

void
ha_filevfs_unlock(void)
{
    pthread_mutex_unlock(&lock);
    ha_forkguard_leave();
}

/* ------------------------------------------------------------------
 * Filesystems
 * ------------------------------------------------------------------ */

/* Filesystems on which SQLite's WAL index, a shared mapping of the -shm
 * file, is not safe: network filesystems, whose pages other clients do
 * not see (SQLite's "WAL does not work over a network filesystem"), and
 * FUSE, where a page fault on the mapping may end in SIGBUS (issue 35:
 * heapadmind died so at start on a FUSE passthrough). Magic numbers from
 * statfs(2) and <linux/magic.h>. */
static const struct {
    unsigned long magic;
    const char *name;
} no_shm[] = {
    {0x6969UL, "nfs"},
    {0x517BUL, "smb"},
    {0xFF534D42UL, "cifs"},
    {0xFE534D42UL, "smb2"},
    {0x65735546UL, "fuse"},
    {0x01021997UL, "9p"},
    {0x00C36400UL, "ceph"},
    {0x73757245UL, "coda"},
    {0x5346414FUL, "afs"},
    {0x6B414653UL, "afs"},
    {0x564CUL, "ncp"},
    {0x0BD00BD0UL, "lustre"},
    {0x20030528UL, "orangefs"},
    {0x01161970UL, "gfs2"},
    {0x7461636FUL, "ocfs2"},
    {0x786F4256UL, "vboxsf"},
};

bool
ha_filevfs_shm_safe(const char *path, char *fsname, size_t len)
{
    struct statfs fs;
    char dir[4096];
    const char *slash;

    if (fsname != NULL && len > 0)
        fsname[0] = '\0';
    if (statfs(path, &fs) != 0) {
        /* Not there yet: its directory's. */
        slash = strrchr(path, '/');
        if (slash == NULL || (size_t)(slash - path) >= sizeof(dir))
            return true;
        memcpy(dir, path, (size_t)(slash - path));
        dir[slash == path ? 1 : slash - path] = '\0';
        if (statfs(dir, &fs) != 0)
            return true;
    }
    for (size_t i = 0; i < HA_ARRAY_SIZE(no_shm); i++)
        if ((unsigned long)fs.f_type == no_shm[i].magic) {
            if (fsname != NULL)
                ha_strlcpy(fsname, no_shm[i].name, len);
            return false;
        }
    return true;
}

/* Closes r's real file and frees r: the last call on it. */
int
ha_filevfs_real_close(struct vreal *r)
{
    int rc = SQLITE_OK;

    ha_filevfs_lock();
    if (!r->dead) {
        rc = REAL(r)->pMethods->xClose(REAL(r));
        if (r->prev != NULL)
            r->prev->next = r->next;
        else
            open_files = r->next;
        if (r->next != NULL)
            r->next->prev = r->prev;
        n_open--;
    }
    ha_filevfs_unlock();
    if (r->made_name)
        sqlite3_free_filename(r->name);
    else
        free(r->name);
    free(r);
    return rc;
}

/* Opens o->fname into a new vreal (o->r): "unix" keeps a pointer to the
 * name, which is ours too, freed with it. */
int
ha_filevfs_real_open(struct op *o)
{
    struct vreal *r = calloc(1, HEAD_SIZE + (size_t)ha_filevfs_unix->szOsFile);
    const sqlite3_io_methods *m;
    int rc;

    if (r == NULL)
        return SQLITE_NOMEM;
    r->name = (char *)o->fname;
    r->made_name = o->name == NULL && o->fname != NULL;
    o->fname = NULL;
    o->name = NULL;
    o->r = r;
    ha_filevfs_lock();
    rc = ha_filevfs_unix->xOpen(ha_filevfs_unix, r->name, REAL(r), o->a,
                                &o->out_flags);
    m = REAL(r)->pMethods;
    if (rc == SQLITE_OK && m != NULL) {
        r->next = open_files;
        if (open_files != NULL)
            open_files->prev = r;
        open_files = r;
        n_open++;
    } else if (m != NULL) {
        (void)m->xClose(REAL(r)); /* an error with a file: SQLite will not
                                    * close it through our NULL methods */
        REAL(r)->pMethods = NULL;
    }
    ha_filevfs_unlock();
    o->shm = rc == SQLITE_OK && m != NULL && m->iVersion >= 2 &&
             m->xShmMap != NULL &&
             (r->name == NULL || !(o->a & SQLITE_OPEN_MAIN_DB) ||
              ha_filevfs_shm_safe(r->name, NULL, 0));
    return rc;
}

/* ------------------------------------------------------------------
 * fork
 * ------------------------------------------------------------------ */

int
ha_filevfs_fork_try(void)
{
    return pthread_mutex_trylock(&lock) == 0;
}

void
ha_filevfs_fork_parent(void)
{
    pthread_mutex_unlock(&lock);
}

void
ha_filevfs_fork_child(void)
{
    struct vreal *r = open_files;

    pthread_mutex_init(&lock, NULL);
    /* No thread was inside a locked call at the fork, so the inode and
     * WAL-index mutexes these take are free; the POSIX locks that
     * closing gives back were the parent's, never this process's, so
     * the parent keeps them. Closing only forgets. */
    while (r != NULL) {
        struct vreal *next = r->next;
        const sqlite3_io_methods *m = REAL(r)->pMethods;

        if (m->iVersion >= 2 && m->xShmUnmap != NULL)
            (void)m->xShmUnmap(REAL(r), 0);
        (void)m->xClose(REAL(r));
        r->dead = true;
        r->prev = r->next = NULL;
        r = next;
    }
    open_files = NULL;
    n_open = 0;
}

int
ha_filevfs_open_files(void)
{
    int n;

    ha_filevfs_lock();
    n = n_open;
    ha_filevfs_unlock();
    return n;
}
