/* SPDX-License-Identifier: MIT
 *
 * The datadir's SQLite VFS (see filevfs.h): "unix" underneath, each file
 * a wrapper that holds a pointer to the real one, kept in memory of ours.
 *
 * Here: the methods SQLite calls, each file's (the io_methods) and the
 * VFS's (open wraps, the rest is "unix"'s own), each made in place or,
 * on the loop's thread, through an op (filevfs_op.c); the VFS's
 * registration; a datadir file's side files given back. The real files
 * and the lock are filevfs.c's.
 */
#include "engine/filevfs.h"
#include "engine/filevfs_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/blockio.h"
#include "core/util.h"

#define FILEVFS_NAME "heapadmin-unix"

/* Written once, by register_once under once (pthread_once orders it
 * before every caller's use); read-only after, from any thread. */
static sqlite3_vfs vfs;
static const char *registered;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* ------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------ */

#define DEAD(f) (((struct vfile *)(f))->r->dead)
#define RF(f) REAL(((struct vfile *)(f))->r)

static int
f_close(sqlite3_file *f)
{
    struct vfile *v = (struct vfile *)f;
    struct op *o;

    if (!ha_blockio_offloading() ||
        (o = ha_filevfs_op_new(OP_CLOSE, v)) == NULL)
        return ha_filevfs_real_close(v->r);
    /* Nobody waits: after every call queued before it, whatever became
     * of them. */
    ha_filevfs_op_post(o);
    v->r = NULL;
    return SQLITE_OK;
}

static int
f_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 off)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_READ;
    if (!ha_blockio_offloading())
        return RF(f)->pMethods->xRead(RF(f), buf, n, off);
    if ((o = ha_filevfs_op_new(OP_READ, (struct vfile *)f)) == NULL ||
        (o->buf = malloc((size_t)n)) == NULL) {
        free(o);
        return SQLITE_IOERR_NOMEM;
    }
    o->a = n;
    o->off = off;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_IOERR_READ;
    rc = o->rc;
    /* A short read has zeroed the rest, as SQLite requires. */
    if (rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ)
        memcpy(buf, o->buf, (size_t)n);
    ha_filevfs_op_free(o);
    return rc;
}

static int
f_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 off)
{
    struct op *o;

    if (DEAD(f))
        return SQLITE_IOERR_WRITE;
    if (!ha_blockio_offloading())
        return RF(f)->pMethods->xWrite(RF(f), buf, n, off);
    if ((o = ha_filevfs_op_new(OP_WRITE, (struct vfile *)f)) == NULL ||
        (o->buf = malloc((size_t)n)) == NULL) {
        free(o);
        return SQLITE_IOERR_NOMEM;
    }
    memcpy(o->buf, buf, (size_t)n);
    o->a = n;
    o->off = off;
    return ha_filevfs_op_simple(o, SQLITE_IOERR_WRITE);
}

static int
f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    struct op *o;

    if (DEAD(f))
        return SQLITE_IOERR_TRUNCATE;
    if (!ha_blockio_offloading())
        return RF(f)->pMethods->xTruncate(RF(f), size);
    if ((o = ha_filevfs_op_new(OP_TRUNCATE, (struct vfile *)f)) != NULL)
        o->off = size;
    return ha_filevfs_op_simple(o, SQLITE_IOERR_TRUNCATE);
}

static int
f_sync(sqlite3_file *f, int flags)
{
    struct op *o;

    if (DEAD(f))
        return SQLITE_IOERR_FSYNC;
    if (!ha_blockio_offloading())
        return RF(f)->pMethods->xSync(RF(f), flags);
    if ((o = ha_filevfs_op_new(OP_SYNC, (struct vfile *)f)) != NULL)
        o->a = flags;
    return ha_filevfs_op_simple(o, SQLITE_IOERR_FSYNC);
}

static int
f_size(sqlite3_file *f, sqlite3_int64 *size)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_FSTAT;
    if (!ha_blockio_offloading())
        return RF(f)->pMethods->xFileSize(RF(f), size);
    if ((o = ha_filevfs_op_new(OP_SIZE, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_IOERR_FSTAT;
    rc = o->rc;
    *size = o->off;
    ha_filevfs_op_free(o);
    return rc;
}

static int
f_lock(sqlite3_file *f, int level)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_LOCK;
    if (!ha_blockio_offloading()) {
        ha_filevfs_lock();
        rc = RF(f)->pMethods->xLock(RF(f), level);
        ha_filevfs_unlock();
        return rc;
    }
    if ((o = ha_filevfs_op_new(OP_LOCK, (struct vfile *)f)) != NULL)
        o->a = level;
    return ha_filevfs_op_simple(o, SQLITE_IOERR_LOCK);
}

static int
f_unlock(sqlite3_file *f, int level)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_UNLOCK;
    if (!ha_blockio_offloading() ||
        (o = ha_filevfs_op_new(OP_UNLOCK, (struct vfile *)f)) == NULL) {
        ha_filevfs_lock();
        rc = RF(f)->pMethods->xUnlock(RF(f), level);
        ha_filevfs_unlock();
        return rc;
    }
    /* Nobody waits for an unlock: it comes before whatever SQLite asks
     * of the file next, queued after it. */
    o->a = level;
    ha_filevfs_op_post(o);
    return SQLITE_OK;
}

static int
f_check_reserved(sqlite3_file *f, int *out)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_CHECKRESERVEDLOCK;
    if (!ha_blockio_offloading()) {
        ha_filevfs_lock();
        rc = RF(f)->pMethods->xCheckReservedLock(RF(f), out);
        ha_filevfs_unlock();
        return rc;
    }
    if ((o = ha_filevfs_op_new(OP_RESERVED, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_IOERR_CHECKRESERVEDLOCK;
    rc = o->rc;
    *out = o->b;
    ha_filevfs_op_free(o);
    return rc;
}

/* File controls that make a system call in "unix", and the type of
 * their argument; the others only read or set fields of the file. */
static int
control_kind(int op)
{
    switch (op) {
    case SQLITE_FCNTL_SIZE_HINT:
        return OP_CONTROL_I64;
    case SQLITE_FCNTL_HAS_MOVED:
#ifdef SQLITE_FCNTL_EXTERNAL_READER
    case SQLITE_FCNTL_EXTERNAL_READER:
#endif
        return OP_CONTROL_INT;
    default:
        return -1;
    }
}

static int
f_control(sqlite3_file *f, int op, void *arg)
{
    struct op *o;
    int rc, kind = control_kind(op);

    if (DEAD(f))
        return SQLITE_NOTFOUND;
    if (kind < 0 || !ha_blockio_offloading()) {
        ha_filevfs_lock();
        rc = RF(f)->pMethods->xFileControl(RF(f), op, arg);
        ha_filevfs_unlock();
        return rc;
    }
    if ((o = ha_filevfs_op_new((enum op_kind)kind, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    o->a = op;
    if (kind == OP_CONTROL_I64)
        o->off = *(sqlite3_int64 *)arg;
    else
        o->b = *(int *)arg;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_IOERR;
    rc = o->rc;
    if (kind == OP_CONTROL_I64)
        *(sqlite3_int64 *)arg = o->off;
    else
        *(int *)arg = o->b;
    ha_filevfs_op_free(o);
    return rc;
}

static int
f_sector_size(sqlite3_file *f)
{
    return RF(f)->pMethods->xSectorSize(RF(f));
}

static int
f_device_characteristics(sqlite3_file *f)
{
    return RF(f)->pMethods->xDeviceCharacteristics(RF(f));
}

static int
f_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **pp)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_SHMMAP;
    if (!ha_blockio_offloading()) {
        ha_filevfs_lock();
        rc = RF(f)->pMethods->xShmMap(RF(f), region, size, extend, pp);
        ha_filevfs_unlock();
        return rc;
    }
    if ((o = ha_filevfs_op_new(OP_SHM_MAP, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    o->a = region;
    o->b = size;
    o->c = extend;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_IOERR_SHMMAP;
    rc = o->rc;
    *pp = o->mapped;
    ha_filevfs_op_free(o);
    return rc;
}

static int
f_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_SHMLOCK;
    if (!ha_blockio_offloading() ||
        (o = ha_filevfs_op_new(OP_SHM_LOCK, (struct vfile *)f)) == NULL) {
        ha_filevfs_lock();
        rc = RF(f)->pMethods->xShmLock(RF(f), offset, n, flags);
        ha_filevfs_unlock();
        return rc;
    }
    o->a = offset;
    o->b = n;
    o->c = flags;
    if (flags & SQLITE_SHM_UNLOCK) {
        ha_filevfs_op_post(o);
        return SQLITE_OK;
    }
    return ha_filevfs_op_simple(o, SQLITE_IOERR_SHMLOCK);
}

static void
f_shm_barrier(sqlite3_file *f)
{
    RF(f)->pMethods->xShmBarrier(RF(f));
}

static int
f_shm_unmap(sqlite3_file *f, int delete_flag)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_OK;
    if (!ha_blockio_offloading() ||
        (o = ha_filevfs_op_new(OP_SHM_UNMAP, (struct vfile *)f)) == NULL) {
        ha_filevfs_lock();
        rc = RF(f)->pMethods->xShmUnmap(RF(f), delete_flag);
        ha_filevfs_unlock();
        return rc;
    }
    o->a = delete_flag;
    ha_filevfs_op_post(o);
    return SQLITE_OK;
}

/* The memory-mapped reads make no system call while SQLite's mmap_size
 * is 0, its default and ours. */
static int
f_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
    const sqlite3_io_methods *m = RF(f)->pMethods;

    *pp = NULL;
    if (DEAD(f) || m->iVersion < 3 || m->xFetch == NULL ||
        ha_blockio_offloading())
        return SQLITE_OK; /* SQLite then reads instead */
    return m->xFetch(RF(f), off, n, pp);
}

static int
f_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
    const sqlite3_io_methods *m = RF(f)->pMethods;

    if (DEAD(f) || m->iVersion < 3 || m->xUnfetch == NULL)
        return SQLITE_OK;
    return m->xUnfetch(RF(f), off, p);
}

/* A database file with a WAL-index, and every other file (journals, the
 * WAL itself: SQLite opens those without one; and a database on a
 * filesystem where the WAL index is not safe: a file without xShmMap
 * tells SQLite that WAL mode is possible there only with
 * locking_mode=EXCLUSIVE, which keeps the index in heap memory). */
static const sqlite3_io_methods io_shm = {
    3,
    f_close,
    f_read,
    f_write,
    f_truncate,
    f_sync,
    f_size,
    f_lock,
    f_unlock,
    f_check_reserved,
    f_control,
    f_sector_size,
    f_device_characteristics,
    f_shm_map,
    f_shm_lock,
    f_shm_barrier,
    f_shm_unmap,
    f_fetch,
    f_unfetch,
};
static const sqlite3_io_methods io_plain = {
    3,
    f_close,
    f_read,
    f_write,
    f_truncate,
    f_sync,
    f_size,
    f_lock,
    f_unlock,
    f_check_reserved,
    f_control,
    f_sector_size,
    f_device_characteristics,
    NULL,
    NULL,
    NULL,
    NULL,
    f_fetch,
    f_unfetch,
};

/* ------------------------------------------------------------------
 * The VFS: open wraps, the rest is "unix"'s own (given "unix" itself,
 * which finds its locking style through its own pAppData).
 * ------------------------------------------------------------------ */

/* The name "unix" will keep a pointer to, in memory of ours: a database's
 * with its journal's and WAL's names after it, as SQLite lays them out
 * (the shared-memory code reads its parameters there); any other
 * file's, with the terminator doubled for the same reads. NULL: a
 * temporary file, which has none. */
static int
copy_name(struct op *o, sqlite3_filename name, int flags)
{
    size_t n;

    if (name == NULL)
        return 0;
    if (flags & SQLITE_OPEN_MAIN_DB) {
        o->fname = sqlite3_create_filename(name, sqlite3_filename_journal(name),
                                           sqlite3_filename_wal(name), 0, NULL);
        return o->fname != NULL ? 0 : -1;
    }
    n = strlen(name);
    if ((o->name = calloc(1, n + 3)) == NULL)
        return -1;
    memcpy(o->name, name, n);
    o->fname = o->name;
    return 0;
}

static int
v_open(sqlite3_vfs *self, sqlite3_filename name, sqlite3_file *f, int flags,
       int *out_flags)
{
    struct vfile *v = (struct vfile *)f;
    struct op *o = calloc(1, sizeof(*o));
    int rc;

    (void)self;
    memset(v, 0, sizeof(*v));
    if (o == NULL)
        return SQLITE_NOMEM;
    if (copy_name(o, name, flags) != 0) {
        ha_filevfs_op_free(o);
        return SQLITE_NOMEM;
    }
    o->kind = OP_OPEN;
    o->a = flags;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_CANTOPEN;
    rc = o->rc;
    if (rc == SQLITE_OK && REAL(o->r)->pMethods != NULL) {
        v->r = o->r;
        v->base.pMethods = o->shm ? &io_shm : &io_plain;
        if (out_flags != NULL)
            *out_flags = o->out_flags;
    } else if (o->r != NULL) {
        if (o->r->made_name)
            sqlite3_free_filename(o->r->name);
        else
            free(o->r->name);
        free(o->r);
    }
    ha_filevfs_op_free(o);
    return rc;
}

static int
v_delete(sqlite3_vfs *self, const char *name, int sync_dir)
{
    struct op *o;

    (void)self;
    if (!ha_blockio_offloading())
        return ha_filevfs_unix->xDelete(ha_filevfs_unix, name, sync_dir);
    if ((o = calloc(1, sizeof(*o))) == NULL ||
        (o->name = strdup(name)) == NULL) {
        free(o);
        return SQLITE_NOMEM;
    }
    o->kind = OP_DELETE;
    o->a = sync_dir;
    return ha_filevfs_op_simple(o, SQLITE_IOERR_DELETE);
}

static int
v_access(sqlite3_vfs *self, const char *name, int flags, int *out)
{
    struct op *o;
    int rc;

    (void)self;
    if (!ha_blockio_offloading())
        return ha_filevfs_unix->xAccess(ha_filevfs_unix, name, flags, out);
    if ((o = calloc(1, sizeof(*o))) == NULL ||
        (o->name = strdup(name)) == NULL) {
        free(o);
        return SQLITE_NOMEM;
    }
    o->kind = OP_ACCESS;
    o->a = flags;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_IOERR_ACCESS;
    rc = o->rc;
    *out = o->b;
    ha_filevfs_op_free(o);
    return rc;
}

static int
v_full_pathname(sqlite3_vfs *self, const char *name, int n, char *out)
{
    struct op *o;
    int rc;

    (void)self;
    if (!ha_blockio_offloading())
        return ha_filevfs_unix->xFullPathname(ha_filevfs_unix, name, n, out);
    if ((o = calloc(1, sizeof(*o))) == NULL ||
        (o->name = strdup(name)) == NULL ||
        (o->buf = calloc(1, (size_t)n)) == NULL) {
        if (o != NULL)
            free(o->name);
        free(o);
        return SQLITE_NOMEM;
    }
    o->kind = OP_FULLPATH;
    o->a = n;
    if (ha_filevfs_op_call(o) != 0)
        return SQLITE_CANTOPEN;
    rc = o->rc;
    memcpy(out, o->buf, (size_t)n);
    ha_filevfs_op_free(o);
    return rc;
}

static void *
v_dlopen(sqlite3_vfs *self, const char *name)
{
    (void)self;
    return ha_filevfs_unix->xDlOpen(ha_filevfs_unix, name);
}

static void
v_dlerror(sqlite3_vfs *self, int n, char *out)
{
    (void)self;
    ha_filevfs_unix->xDlError(ha_filevfs_unix, n, out);
}

static void (*v_dlsym(sqlite3_vfs *self, void *h, const char *sym))(void)
{
    (void)self;
    return ha_filevfs_unix->xDlSym(ha_filevfs_unix, h, sym);
}

static void
v_dlclose(sqlite3_vfs *self, void *h)
{
    (void)self;
    ha_filevfs_unix->xDlClose(ha_filevfs_unix, h);
}

static int
v_randomness(sqlite3_vfs *self, int n, char *out)
{
    (void)self;
    return ha_filevfs_unix->xRandomness(ha_filevfs_unix, n, out);
}

static int
v_sleep(sqlite3_vfs *self, int us)
{
    (void)self;
    return ha_filevfs_unix->xSleep(ha_filevfs_unix, us);
}

static int
v_current_time(sqlite3_vfs *self, double *out)
{
    (void)self;
    return ha_filevfs_unix->xCurrentTime(ha_filevfs_unix, out);
}

static int
v_last_error(sqlite3_vfs *self, int n, char *out)
{
    (void)self;
    return ha_filevfs_unix->xGetLastError(ha_filevfs_unix, n, out);
}

static int
v_current_time64(sqlite3_vfs *self, sqlite3_int64 *out)
{
    (void)self;
    return ha_filevfs_unix->xCurrentTimeInt64(ha_filevfs_unix, out);
}

static void
register_once(void)
{
    sqlite3_vfs *u;

    if (sqlite3_initialize() != SQLITE_OK ||
        (u = sqlite3_vfs_find("unix")) == NULL || u->iVersion < 2)
        return;
    ha_filevfs_unix = u;
    vfs.iVersion = 2; /* the system-call overrides are "unix"'s alone */
    vfs.szOsFile = (int)sizeof(struct vfile);
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

/* Whether path names something (lstat: the effective ids, where
 * access(2) would judge by the real ones, which a host that switches
 * users, or this thread taking root back at exit, does not change). */
static bool
exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

int
ha_filevfs_release(const char *path)
{
    char side[4200];
    sqlite3 *db = NULL;

    if (!exists(path))
        return 0;
    if (sqlite3_open_v2(path, &db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX |
                            SQLITE_OPEN_NOFOLLOW,
                        ha_filevfs_name()) == SQLITE_OK) {
        /* Never waits: a writer elsewhere means another user, who
         * tidies up at its own close. */
        (void)sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", NULL, NULL,
                           NULL);
    }
    sqlite3_close_v2(db);
    snprintf(side, sizeof(side), "%s-wal", path);
    if (exists(side))
        return -1;
    snprintf(side, sizeof(side), "%s-shm", path);
    return exists(side) ? -1 : 0;
}
