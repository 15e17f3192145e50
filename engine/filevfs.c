/* SPDX-License-Identifier: MIT
 *
 * The datadir's SQLite VFS (see filevfs.h): "unix" underneath, each file
 * a wrapper that holds a pointer to the real one, kept in memory of ours.
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
 *
 * On the loop's thread every call that may touch the disk goes to the
 * I/O thread (core/blockio.h) with copies of what it reads and writes,
 * so that a call given up when the disk stopped answering, which still
 * runs when it answers again, never touches memory SQLite has freed
 * meanwhile; the real file itself is ours, freed by its close, which
 * comes after every call queued before it.
 */
#include "engine/filevfs.h"
#include "core/forkguard.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "core/blockio.h"
#include "core/log.h"
#include "core/util.h"

#define FILEVFS_NAME "heapadmin-unix"

/* The real file: "unix"'s sqlite3_file follows this header, 8-byte
 * aligned as SQLite aligns the memory it gives xOpen. */
struct vreal {
    struct vreal *prev, *next;     /* open_files (lock) */
    bool dead;                     /* closed in a fork child: its
                                      connection is never used */
    char *name;                    /* the name "unix" keeps a pointer to */
    bool made_name;                /* ... from sqlite3_create_filename */
};

#define HEAD_SIZE ((sizeof(struct vreal) + 7) & ~(size_t)7)
#define REAL(r) ((sqlite3_file *)((char *)(r) + HEAD_SIZE))

/* SQLite's file: a pointer to ours. */
struct vfile {
    sqlite3_file base;             /* pMethods: ours, or NULL if the open
                                      failed */
    struct vreal *r;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct vreal *open_files; /* under lock */
static int n_open;               /* under lock */
/* Written once, by register_once under once (pthread_once orders it
 * before every caller's use); read-only after, from any thread. */
static sqlite3_vfs vfs;
static sqlite3_vfs *unix_vfs;
static const char *registered;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The lock, inside the fork gate (core/forkguard.h): a fork waits for
 * the calls under way, and none starts while it is being made. */
static void
vfs_lock(void)
{
    ha_forkguard_enter();
    pthread_mutex_lock(&lock);
}

static void
vfs_unlock(void)
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

/* ------------------------------------------------------------------
 * Calls off the loop
 * ------------------------------------------------------------------ */

enum op_kind {
    OP_READ,
    OP_WRITE,
    OP_TRUNCATE,
    OP_SYNC,
    OP_SIZE,
    OP_LOCK,
    OP_UNLOCK,
    OP_RESERVED,
    OP_CONTROL_INT,   /* a file control with an int argument */
    OP_CONTROL_I64,   /* ... with an sqlite3_int64 argument */
    OP_SHM_MAP,
    OP_SHM_LOCK,
    OP_SHM_UNMAP,
    OP_CLOSE,
    OP_OPEN,
    OP_DELETE,
    OP_ACCESS,
    OP_FULLPATH,
};

static const char *const op_what[] = {
    [OP_READ] = "reading an SQLite file of the datadir",
    [OP_WRITE] = "writing an SQLite file of the datadir",
    [OP_TRUNCATE] = "truncating an SQLite file of the datadir",
    [OP_SYNC] = "syncing an SQLite file of the datadir",
    [OP_SIZE] = "sizing an SQLite file of the datadir",
    [OP_LOCK] = "locking an SQLite file of the datadir",
    [OP_UNLOCK] = "unlocking an SQLite file of the datadir",
    [OP_RESERVED] = "checking an SQLite file's lock",
    [OP_CONTROL_INT] = "asking an SQLite file of the datadir",
    [OP_CONTROL_I64] = "asking an SQLite file of the datadir",
    [OP_SHM_MAP] = "mapping an SQLite WAL index",
    [OP_SHM_LOCK] = "locking an SQLite WAL index",
    [OP_SHM_UNMAP] = "unmapping an SQLite WAL index",
    [OP_CLOSE] = "closing an SQLite file of the datadir",
    [OP_OPEN] = "opening an SQLite file of the datadir",
    [OP_DELETE] = "removing an SQLite file of the datadir",
    [OP_ACCESS] = "looking for an SQLite file of the datadir",
    [OP_FULLPATH] = "resolving an SQLite file's path",
};

/* One call, with its own copies of what it reads and writes. */
struct op {
    enum op_kind kind;
    struct vreal *r;               /* the file; OP_OPEN: made by the call */
    int rc;
    int a, b, c;                   /* amount, level, flags, offsets */
    sqlite3_int64 off;             /* offset, size */
    void *buf;                     /* read, write, full path: ours */
    void volatile *mapped;         /* OP_SHM_MAP */
    char *name;                    /* OP_OPEN, OP_DELETE, OP_ACCESS,
                                      OP_FULLPATH: a copy */
    sqlite3_filename fname;        /* OP_OPEN: what "unix" is given */
    int out_flags;                 /* OP_OPEN */
    bool shm;                      /* OP_OPEN: the WAL index is safe */
};

static int real_close(struct vreal *r);
static int real_open(struct op *o);

static void
op_run(void *arg)
{
    struct op *o = arg;
    sqlite3_file *f = o->r != NULL ? REAL(o->r) : NULL;
    const sqlite3_io_methods *m = f != NULL ? f->pMethods : NULL;

    switch (o->kind) {
    case OP_READ:
        o->rc = m->xRead(f, o->buf, o->a, o->off);
        break;
    case OP_WRITE:
        o->rc = m->xWrite(f, o->buf, o->a, o->off);
        break;
    case OP_TRUNCATE:
        o->rc = m->xTruncate(f, o->off);
        break;
    case OP_SYNC:
        o->rc = m->xSync(f, o->a);
        break;
    case OP_SIZE:
        o->rc = m->xFileSize(f, &o->off);
        break;
    case OP_LOCK:
        vfs_lock();
        o->rc = m->xLock(f, o->a);
        vfs_unlock();
        break;
    case OP_UNLOCK:
        vfs_lock();
        o->rc = m->xUnlock(f, o->a);
        vfs_unlock();
        break;
    case OP_RESERVED:
        vfs_lock();
        o->rc = m->xCheckReservedLock(f, &o->b);
        vfs_unlock();
        break;
    case OP_CONTROL_INT:
        vfs_lock();
        o->rc = m->xFileControl(f, o->a, &o->b);
        vfs_unlock();
        break;
    case OP_CONTROL_I64:
        vfs_lock();
        o->rc = m->xFileControl(f, o->a, &o->off);
        vfs_unlock();
        break;
    case OP_SHM_MAP:
        vfs_lock();
        o->rc = m->xShmMap(f, o->a, o->b, o->c, &o->mapped);
        vfs_unlock();
        break;
    case OP_SHM_LOCK:
        vfs_lock();
        o->rc = m->xShmLock(f, o->a, o->b, o->c);
        vfs_unlock();
        break;
    case OP_SHM_UNMAP:
        vfs_lock();
        o->rc = m->xShmUnmap(f, o->a);
        vfs_unlock();
        break;
    case OP_CLOSE:
        o->rc = real_close(o->r);
        o->r = NULL;
        break;
    case OP_OPEN:
        o->rc = real_open(o);
        break;
    case OP_DELETE:
        o->rc = unix_vfs->xDelete(unix_vfs, o->name, o->a);
        break;
    case OP_ACCESS:
        o->rc = unix_vfs->xAccess(unix_vfs, o->name, o->a, &o->b);
        break;
    case OP_FULLPATH:
        o->rc = unix_vfs->xFullPathname(unix_vfs, o->name, o->a, o->buf);
        break;
    }
}

static void
op_free(struct op *o)
{
    if (o->fname != NULL && o->fname != (sqlite3_filename)o->name)
        sqlite3_free_filename(o->fname);
    free(o->buf);
    free(o->name);
    free(o);
}

/* An abandoned call ended (or never ran): an open that succeeded after
 * SQLite gave up on it leaves a file nobody holds, closed now. */
static void
op_discard(void *arg)
{
    struct op *o = arg;

    if (o->kind == OP_OPEN && o->r != NULL && o->rc == SQLITE_OK &&
        REAL(o->r)->pMethods != NULL) {
        struct op *c = calloc(1, sizeof(*c));

        if (c != NULL) {
            c->kind = OP_CLOSE;
            c->r = o->r;
            ha_blockio_post(op_what[OP_CLOSE], op_run,
                            (void (*)(void *))op_free, c);
        }
    } else if (o->kind == OP_OPEN && o->r != NULL) {
        free(o->r->name);
        free(o->r);
    }
    op_free(o);
}

static void
op_done(void *arg)
{
    op_free(arg);
}

/* Runs o where the disk cannot hold the loop. Returns 0 with o->rc set
 * (o is the caller's, to op_free), or -1 when it was given up (o is the
 * discard's). The reason is logged at most once a second. */
static int
op_call(struct op *o)
{
    static _Atomic int64_t logged_s;
    char err[512];

    if (ha_blockio_call(op_what[o->kind], op_run, op_discard, o, err,
                        sizeof(err)) != 0) {
        int64_t now = (int64_t)time(NULL);

        if (atomic_exchange(&logged_s, now) != now)
            ha_log_warn("SQLite: %s", err);
        return -1;
    }
    return 0;
}

/* op_call for the calls that carry nothing back but a result code:
 * err_rc when given up. */
static int
op_simple(struct op *o, int err_rc)
{
    int rc;

    if (o == NULL)
        return SQLITE_NOMEM;
    if (op_call(o) != 0)
        return err_rc;
    rc = o->rc;
    op_free(o);
    return rc;
}

/* A new op on v's real file. */
static struct op *
op_new(enum op_kind kind, struct vfile *v)
{
    struct op *o = calloc(1, sizeof(*o));

    if (o != NULL) {
        o->kind = kind;
        o->r = v != NULL ? v->r : NULL;
    }
    return o;
}

/* ------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------ */

#define DEAD(f) (((struct vfile *)(f))->r->dead)
#define RF(f) REAL(((struct vfile *)(f))->r)

/* Closes r's real file and frees r: the last call on it. */
static int
real_close(struct vreal *r)
{
    int rc = SQLITE_OK;

    vfs_lock();
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
    vfs_unlock();
    if (r->made_name)
        sqlite3_free_filename(r->name);
    else
        free(r->name);
    free(r);
    return rc;
}

static int
f_close(sqlite3_file *f)
{
    struct vfile *v = (struct vfile *)f;
    struct op *o;

    if (!ha_blockio_offloading() || (o = op_new(OP_CLOSE, v)) == NULL)
        return real_close(v->r);
    /* Nobody waits: after every call queued before it, whatever became
     * of them. */
    ha_blockio_post(op_what[OP_CLOSE], op_run, op_done, o);
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
    if ((o = op_new(OP_READ, (struct vfile *)f)) == NULL ||
        (o->buf = malloc((size_t)n)) == NULL) {
        free(o);
        return SQLITE_IOERR_NOMEM;
    }
    o->a = n;
    o->off = off;
    if (op_call(o) != 0)
        return SQLITE_IOERR_READ;
    rc = o->rc;
    /* A short read has zeroed the rest, as SQLite requires. */
    if (rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ)
        memcpy(buf, o->buf, (size_t)n);
    op_free(o);
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
    if ((o = op_new(OP_WRITE, (struct vfile *)f)) == NULL ||
        (o->buf = malloc((size_t)n)) == NULL) {
        free(o);
        return SQLITE_IOERR_NOMEM;
    }
    memcpy(o->buf, buf, (size_t)n);
    o->a = n;
    o->off = off;
    return op_simple(o, SQLITE_IOERR_WRITE);
}

static int
f_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    struct op *o;

    if (DEAD(f))
        return SQLITE_IOERR_TRUNCATE;
    if (!ha_blockio_offloading())
        return RF(f)->pMethods->xTruncate(RF(f), size);
    if ((o = op_new(OP_TRUNCATE, (struct vfile *)f)) != NULL)
        o->off = size;
    return op_simple(o, SQLITE_IOERR_TRUNCATE);
}

static int
f_sync(sqlite3_file *f, int flags)
{
    struct op *o;

    if (DEAD(f))
        return SQLITE_IOERR_FSYNC;
    if (!ha_blockio_offloading())
        return RF(f)->pMethods->xSync(RF(f), flags);
    if ((o = op_new(OP_SYNC, (struct vfile *)f)) != NULL)
        o->a = flags;
    return op_simple(o, SQLITE_IOERR_FSYNC);
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
    if ((o = op_new(OP_SIZE, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    if (op_call(o) != 0)
        return SQLITE_IOERR_FSTAT;
    rc = o->rc;
    *size = o->off;
    op_free(o);
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
        vfs_lock();
        rc = RF(f)->pMethods->xLock(RF(f), level);
        vfs_unlock();
        return rc;
    }
    if ((o = op_new(OP_LOCK, (struct vfile *)f)) != NULL)
        o->a = level;
    return op_simple(o, SQLITE_IOERR_LOCK);
}

static int
f_unlock(sqlite3_file *f, int level)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_UNLOCK;
    if (!ha_blockio_offloading() ||
        (o = op_new(OP_UNLOCK, (struct vfile *)f)) == NULL) {
        vfs_lock();
        rc = RF(f)->pMethods->xUnlock(RF(f), level);
        vfs_unlock();
        return rc;
    }
    /* Nobody waits for an unlock: it comes before whatever SQLite asks
     * of the file next, queued after it. */
    o->a = level;
    ha_blockio_post(op_what[OP_UNLOCK], op_run, op_done, o);
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
        vfs_lock();
        rc = RF(f)->pMethods->xCheckReservedLock(RF(f), out);
        vfs_unlock();
        return rc;
    }
    if ((o = op_new(OP_RESERVED, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    if (op_call(o) != 0)
        return SQLITE_IOERR_CHECKRESERVEDLOCK;
    rc = o->rc;
    *out = o->b;
    op_free(o);
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
        vfs_lock();
        rc = RF(f)->pMethods->xFileControl(RF(f), op, arg);
        vfs_unlock();
        return rc;
    }
    if ((o = op_new((enum op_kind)kind, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    o->a = op;
    if (kind == OP_CONTROL_I64)
        o->off = *(sqlite3_int64 *)arg;
    else
        o->b = *(int *)arg;
    if (op_call(o) != 0)
        return SQLITE_IOERR;
    rc = o->rc;
    if (kind == OP_CONTROL_I64)
        *(sqlite3_int64 *)arg = o->off;
    else
        *(int *)arg = o->b;
    op_free(o);
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
f_shm_map(sqlite3_file *f, int region, int size, int extend,
          void volatile **pp)
{
    struct op *o;
    int rc;

    if (DEAD(f))
        return SQLITE_IOERR_SHMMAP;
    if (!ha_blockio_offloading()) {
        vfs_lock();
        rc = RF(f)->pMethods->xShmMap(RF(f), region, size, extend, pp);
        vfs_unlock();
        return rc;
    }
    if ((o = op_new(OP_SHM_MAP, (struct vfile *)f)) == NULL)
        return SQLITE_NOMEM;
    o->a = region;
    o->b = size;
    o->c = extend;
    if (op_call(o) != 0)
        return SQLITE_IOERR_SHMMAP;
    rc = o->rc;
    *pp = o->mapped;
    op_free(o);
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
        (o = op_new(OP_SHM_LOCK, (struct vfile *)f)) == NULL) {
        vfs_lock();
        rc = RF(f)->pMethods->xShmLock(RF(f), offset, n, flags);
        vfs_unlock();
        return rc;
    }
    o->a = offset;
    o->b = n;
    o->c = flags;
    if (flags & SQLITE_SHM_UNLOCK) {
        ha_blockio_post(op_what[OP_SHM_LOCK], op_run, op_done, o);
        return SQLITE_OK;
    }
    return op_simple(o, SQLITE_IOERR_SHMLOCK);
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
        (o = op_new(OP_SHM_UNMAP, (struct vfile *)f)) == NULL) {
        vfs_lock();
        rc = RF(f)->pMethods->xShmUnmap(RF(f), delete_flag);
        vfs_unlock();
        return rc;
    }
    o->a = delete_flag;
    ha_blockio_post(op_what[OP_SHM_UNMAP], op_run, op_done, o);
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

/* Opens o->fname into a new vreal (o->r): "unix" keeps a pointer to the
 * name, which is ours too, freed with it. */
static int
real_open(struct op *o)
{
    struct vreal *r = calloc(1, HEAD_SIZE + (size_t)unix_vfs->szOsFile);
    const sqlite3_io_methods *m;
    int rc;

    if (r == NULL)
        return SQLITE_NOMEM;
    r->name = (char *)o->fname;
    r->made_name = o->name == NULL && o->fname != NULL;
    o->fname = NULL;
    o->name = NULL;
    o->r = r;
    vfs_lock();
    rc = unix_vfs->xOpen(unix_vfs, r->name, REAL(r), o->a, &o->out_flags);
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
    vfs_unlock();
    o->shm = rc == SQLITE_OK && m != NULL && m->iVersion >= 2 &&
             m->xShmMap != NULL &&
             (r->name == NULL || !(o->a & SQLITE_OPEN_MAIN_DB) ||
              ha_filevfs_shm_safe(r->name, NULL, 0));
    return rc;
}

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
        o->fname = sqlite3_create_filename(name,
                                           sqlite3_filename_journal(name),
                                           sqlite3_filename_wal(name), 0,
                                           NULL);
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
        op_free(o);
        return SQLITE_NOMEM;
    }
    o->kind = OP_OPEN;
    o->a = flags;
    if (op_call(o) != 0)
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
    op_free(o);
    return rc;
}

static int
v_delete(sqlite3_vfs *self, const char *name, int sync_dir)
{
    struct op *o;

    (void)self;
    if (!ha_blockio_offloading())
        return unix_vfs->xDelete(unix_vfs, name, sync_dir);
    if ((o = calloc(1, sizeof(*o))) == NULL ||
        (o->name = strdup(name)) == NULL) {
        free(o);
        return SQLITE_NOMEM;
    }
    o->kind = OP_DELETE;
    o->a = sync_dir;
    return op_simple(o, SQLITE_IOERR_DELETE);
}

static int
v_access(sqlite3_vfs *self, const char *name, int flags, int *out)
{
    struct op *o;
    int rc;

    (void)self;
    if (!ha_blockio_offloading())
        return unix_vfs->xAccess(unix_vfs, name, flags, out);
    if ((o = calloc(1, sizeof(*o))) == NULL ||
        (o->name = strdup(name)) == NULL) {
        free(o);
        return SQLITE_NOMEM;
    }
    o->kind = OP_ACCESS;
    o->a = flags;
    if (op_call(o) != 0)
        return SQLITE_IOERR_ACCESS;
    rc = o->rc;
    *out = o->b;
    op_free(o);
    return rc;
}

static int
v_full_pathname(sqlite3_vfs *self, const char *name, int n, char *out)
{
    struct op *o;
    int rc;

    (void)self;
    if (!ha_blockio_offloading())
        return unix_vfs->xFullPathname(unix_vfs, name, n, out);
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
    if (op_call(o) != 0)
        return SQLITE_CANTOPEN;
    rc = o->rc;
    memcpy(out, o->buf, (size_t)n);
    op_free(o);
    return rc;
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
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
                                       SQLITE_OPEN_NOMUTEX |
                                       SQLITE_OPEN_NOFOLLOW,
                        ha_filevfs_name()) == SQLITE_OK) {
        /* Never waits: a writer elsewhere means another user, who
         * tidies up at its own close. */
        (void)sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", NULL,
                           NULL, NULL);
    }
    sqlite3_close_v2(db);
    snprintf(side, sizeof(side), "%s-wal", path);
    if (exists(side))
        return -1;
    snprintf(side, sizeof(side), "%s-shm", path);
    return exists(side) ? -1 : 0;
}


/* ------------------------------------------------------------------
 * Journal mode
 * ------------------------------------------------------------------ */

/* Paths whose choice was logged (each once per process). */
static pthread_mutex_t said_lock = PTHREAD_MUTEX_INITIALIZER;
static char said[4][4096];

static bool
first_time(const char *path, const char *mode)
{
    char key[4096];
    bool first = true;

    snprintf(key, sizeof(key), "%s %s", mode, path);
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
        if (sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL,
                         NULL) != SQLITE_OK)
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

int
ha_filevfs_open_files(void)
{
    int n;

    vfs_lock();
    n = n_open;
    vfs_unlock();
    return n;
}
