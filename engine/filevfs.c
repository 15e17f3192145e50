/* SPDX-License-Identifier: MIT
 *
 * The datadir's SQLite VFS (see filevfs.h): "unix" underneath, each file
 * a wrapper that holds the real one after it.
 *
 * Which calls take the lock: those in which SQLite's unix VFS takes an
 * inode's lock mutex or a WAL-index's mutex (os_unix.c of SQLite 3.40:
 * open, close, lock, unlock, check-reserved-lock, file-control, and the
 * shared-memory map, lock and unmap). Reads, writes, syncs and the
 * memory-mapped fetches take none of those and pass straight through.
 * Each locked call is one system call or a few: microseconds; none
 * blocks (SQLite's locks are tried, and its busy handler sleeps between
 * calls, outside the lock). The lock is taken before any of SQLite's
 * static mutexes, as every locked call enters them after it.
 */
#include "engine/filevfs.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <sqlite3.h>

#define FILEVFS_NAME "heapadmin-unix"

struct vfile {
    sqlite3_file base; /* pMethods: ours, or NULL if the open failed */
    struct vfile *prev, *next;
    bool dead; /* closed in a fork child: its connection is never used */
};

/* The real file follows the wrapper, 8-byte aligned as SQLite aligns
 * the memory it gives xOpen. */
#define HEAD_SIZE ((sizeof(struct vfile) + 7) & ~(size_t)7)
#define REAL(f) ((sqlite3_file *)((char *)(f) + HEAD_SIZE))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfile *open_files; /* under lock */
static int n_open;               /* under lock */
/* Written once, by register_once under once (pthread_once orders it
 * before every caller's use); read-only after, from any thread. */
static sqlite3_vfs vfs;
static sqlite3_vfs *unix_vfs;
static const char *registered;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------ */

static int
f_close(sqlite3_file *f)
{
    struct vfile *v = (struct vfile *)f;
    int rc = SQLITE_OK;

    if (v->dead)
        return SQLITE_OK;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xClose(REAL(f));
    if (v->prev != NULL)
        v->prev->next = v->next;
    else
        open_files = v->next;
    if (v->next != NULL)
        v->next->prev = v->prev;
    n_open--;
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_READ;
    return REAL(f)->pMethods->xRead(REAL(f), buf, n, off);
}

static int
f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_WRITE;
    return REAL(f)->pMethods->xWrite(REAL(f), buf, n, off);
}

static int
f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_TRUNCATE;
    return REAL(f)->pMethods->xTruncate(REAL(f), size);
}

static int
f_sync(sqlite3_file *f, int flags)
{
    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_FSYNC;
    return REAL(f)->pMethods->xSync(REAL(f), flags);
}

static int
f_size(sqlite3_file *f, sqlite3_int64 *size)
{
    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_FSTAT;
    return REAL(f)->pMethods->xFileSize(REAL(f), size);
}

static int
f_lock(sqlite3_file *f, int level)
{
    int rc;

    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_LOCK;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xLock(REAL(f), level);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
f_unlock(sqlite3_file *f, int level)
{
    int rc;

    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_UNLOCK;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xUnlock(REAL(f), level);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
f_check_reserved(sqlite3_file *f, int *out)
{
    int rc;

    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_CHECKRESERVEDLOCK;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
f_control(sqlite3_file *f, int op, void *arg)
{
    int rc;

    if (((struct vfile *)f)->dead)
        return SQLITE_NOTFOUND;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xFileControl(REAL(f), op, arg);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
f_sector_size(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}

static int
f_device_characteristics(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}

static int
f_shm_map(sqlite3_file *f, int region, int size, int extend,
          void volatile **pp)
{
    int rc;

    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_SHMMAP;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, pp);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
f_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    int rc;

    if (((struct vfile *)f)->dead)
        return SQLITE_IOERR_SHMLOCK;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
    pthread_mutex_unlock(&lock);
    return rc;
}

static void
f_shm_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}

static int
f_shm_unmap(sqlite3_file *f, int delete_flag)
{
    int rc;

    if (((struct vfile *)f)->dead)
        return SQLITE_OK;
    pthread_mutex_lock(&lock);
    rc = REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
f_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
    const sqlite3_io_methods *m = REAL(f)->pMethods;

    *pp = NULL;
    if (((struct vfile *)f)->dead || m->iVersion < 3 || m->xFetch == NULL)
        return SQLITE_OK; /* SQLite then reads instead */
    return m->xFetch(REAL(f), off, n, pp);
}

static int
f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    const sqlite3_io_methods *m = REAL(f)->pMethods;

    if (((struct vfile *)f)->dead || m->iVersion < 3 || m->xUnfetch == NULL)
        return SQLITE_OK;
    return m->xUnfetch(REAL(f), off, p);
}

/* A database file with a WAL-index, and every other file (journals, the
 * WAL itself: SQLite opens those without one, and a file without
 * xShmMap tells SQLite that WAL mode is not possible on it). */
static const sqlite3_io_methods io_shm = {
    3,           f_close,     f_read,
    f_write,     f_truncate,  f_sync,
    f_size,      f_lock,      f_unlock,
    f_check_reserved,         f_control,
    f_sector_size,            f_device_characteristics,
    f_shm_map,   f_shm_lock,  f_shm_barrier,
    f_shm_unmap, f_fetch,     f_unfetch,
};
static const sqlite3_io_methods io_plain = {
    3,           f_close,     f_read,
    f_write,     f_truncate,  f_sync,
    f_size,      f_lock,      f_unlock,
    f_check_reserved,         f_control,
    f_sector_size,            f_device_characteristics,
    NULL,        NULL,        NULL,
    NULL,        f_fetch,     f_unfetch,
};

/* ------------------------------------------------------------------
 * The VFS: open wraps, the rest is "unix"'s own (given "unix" itself,
 * which finds its locking style through its own pAppData).
 * ------------------------------------------------------------------ */

static int
v_open(sqlite3_vfs *self, sqlite3_filename name, sqlite3_file *f, int flags,
       int *out_flags)
{
    struct vfile *v = (struct vfile *)f;
    const sqlite3_io_methods *m;
    int rc;

    (void)self;
    memset(v, 0, sizeof(*v));
    pthread_mutex_lock(&lock);
    rc = unix_vfs->xOpen(unix_vfs, name, REAL(f), flags, out_flags);
    m = REAL(f)->pMethods;
    if (rc == SQLITE_OK && m != NULL) {
        v->base.pMethods =
            m->iVersion >= 2 && m->xShmMap != NULL ? &io_shm : &io_plain;
        v->next = open_files;
        if (open_files != NULL)
            open_files->prev = v;
        open_files = v;
        n_open++;
    } else if (m != NULL) {
        (void)m->xClose(REAL(f)); /* an error with a file: SQLite will not
                                    * close it through our NULL methods */
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static int
v_delete(sqlite3_vfs *self, const char *name, int sync_dir)
{
    (void)self;
    return unix_vfs->xDelete(unix_vfs, name, sync_dir);
}

static int
v_access(sqlite3_vfs *self, const char *name, int flags, int *out)
{
    (void)self;
    return unix_vfs->xAccess(unix_vfs, name, flags, out);
}

static int
v_full_pathname(sqlite3_vfs *self, const char *name, int n, char *out)
{
    (void)self;
    return unix_vfs->xFullPathname(unix_vfs, name, n, out);
}

static void *
v_dlopen(sqlite3_vfs *self, const char *name)
{
    (void)self;
    return unix_vfs->xDlOpen(unix_vfs, name);
}

static void
v_dlerror(sqlite3_vfs *self, int n, char *out)
{
    (void)self;
    unix_vfs->xDlError(unix_vfs, n, out);
}

static void (*v_dlsym(sqlite3_vfs *self, void *h, const char *sym))(void)
{
    (void)self;
    return unix_vfs->xDlSym(unix_vfs, h, sym);
}

static void
v_dlclose(sqlite3_vfs *self, void *h)
{
    (void)self;
    unix_vfs->xDlClose(unix_vfs, h);
}

static int
v_randomness(sqlite3_vfs *self, int n, char *out)
{
    (void)self;
    return unix_vfs->xRandomness(unix_vfs, n, out);
}

static int
v_sleep(sqlite3_vfs *self, int us)
{
    (void)self;
    return unix_vfs->xSleep(unix_vfs, us);
}

static int
v_current_time(sqlite3_vfs *self, double *out)
{
    (void)self;
    return unix_vfs->xCurrentTime(unix_vfs, out);
}

static int
v_last_error(sqlite3_vfs *self, int n, char *out)
{
    (void)self;
    return unix_vfs->xGetLastError(unix_vfs, n, out);
}

static int
v_current_time64(sqlite3_vfs *self, sqlite3_int64 *out)
{
    (void)self;
    return unix_vfs->xCurrentTimeInt64(unix_vfs, out);
}

static void
register_once(void)
{
    sqlite3_vfs *u;

    if (sqlite3_initialize() != SQLITE_OK ||
        (u = sqlite3_vfs_find("unix")) == NULL || u->iVersion < 2)
        return;
    unix_vfs = u;
    vfs.iVersion = 2; /* the system-call overrides are "unix"'s alone */
    vfs.szOsFile = (int)HEAD_SIZE + u->szOsFile;
    vfs.mxPathname = u->mxPathname;
    vfs.zName = FILEVFS_NAME;
    vfs.xOpen = v_open;
    vfs.xDelete = v_delete;
    vfs.xAccess = v_access;
    vfs.xFullPathname = v_full_pathname;
    vfs.xDlOpen = v_dlopen;
    vfs.xDlError = v_dlerror;
    vfs.xDlSym = v_dlsym;
    vfs.xDlClose = v_dlclose;
    vfs.xRandomness = v_randomness;
    vfs.xSleep = v_sleep;
    vfs.xCurrentTime = v_current_time;
    vfs.xGetLastError = v_last_error;
    vfs.xCurrentTimeInt64 = v_current_time64;
    if (sqlite3_vfs_register(&vfs, 0) == SQLITE_OK)
        registered = FILEVFS_NAME;
}

const char *
ha_filevfs_name(void)
{
    (void)pthread_once(&once, register_once);
    return registered;
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
    struct vfile *v = open_files;

    pthread_mutex_init(&lock, NULL);
    /* No thread was inside a locked call at the fork, so the inode and
     * WAL-index mutexes these take are free; the POSIX locks that
     * closing gives back were the parent's, never this process's, so
     * the parent keeps them. Closing only forgets. */
    while (v != NULL) {
        struct vfile *next = v->next;
        const sqlite3_io_methods *m = REAL(v)->pMethods;

        if (m->iVersion >= 2 && m->xShmUnmap != NULL)
            (void)m->xShmUnmap(REAL(v), 0);
        (void)m->xClose(REAL(v));
        v->dead = true;
        v->prev = v->next = NULL;
        v = next;
    }
    open_files = NULL;
    n_open = 0;
}

int
ha_filevfs_open_files(void)
{
    int n;

    pthread_mutex_lock(&lock);
    n = n_open;
    pthread_mutex_unlock(&lock);
    return n;
}
