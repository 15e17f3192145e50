/* SPDX-License-Identifier: MIT
 *
 * The VFS's calls off the loop: an op, one call with its own copies of
 * what it reads and writes, run on the I/O thread with a bounded wait.
 *
 * On the loop's thread every call that may touch the disk goes to the
 * I/O thread (core/blockio.h) with copies of what it reads and writes,
 * so that a call given up when the disk stopped answering, which still
 * runs when it answers again, never touches memory SQLite has freed
 * meanwhile; the real file itself is ours, freed by its close, which
 * comes after every call queued before it.
 */
#include "engine/filevfs_int.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "core/blockio.h"
#include "core/log.h"

/* What each op does, for the I/O thread's log and PROCESSLIST. */
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

/* Runs o on the calling thread (the I/O thread's side). */
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
        ha_filevfs_lock();
        o->rc = m->xLock(f, o->a);
        ha_filevfs_unlock();
        break;
    case OP_UNLOCK:
        ha_filevfs_lock();
        o->rc = m->xUnlock(f, o->a);
        ha_filevfs_unlock();
        break;
    case OP_RESERVED:
        ha_filevfs_lock();
        o->rc = m->xCheckReservedLock(f, &o->b);
        ha_filevfs_unlock();
        break;
    case OP_CONTROL_INT:
        ha_filevfs_lock();
        o->rc = m->xFileControl(f, o->a, &o->b);
        ha_filevfs_unlock();
        break;
    case OP_CONTROL_I64:
        ha_filevfs_lock();
        o->rc = m->xFileControl(f, o->a, &o->off);
        ha_filevfs_unlock();
        break;
    case OP_SHM_MAP:
        ha_filevfs_lock();
        o->rc = m->xShmMap(f, o->a, o->b, o->c, &o->mapped);
        ha_filevfs_unlock();
        break;
    case OP_SHM_LOCK:
        ha_filevfs_lock();
        o->rc = m->xShmLock(f, o->a, o->b, o->c);
        ha_filevfs_unlock();
        break;
    case OP_SHM_UNMAP:
        ha_filevfs_lock();
        o->rc = m->xShmUnmap(f, o->a);
        ha_filevfs_unlock();
        break;
    case OP_CLOSE:
        o->rc = ha_filevfs_real_close(o->r);
        o->r = NULL;
        break;
    case OP_OPEN:
        o->rc = ha_filevfs_real_open(o);
        break;
    case OP_DELETE:
        o->rc = ha_filevfs_unix->xDelete(ha_filevfs_unix, o->name, o->a);
        break;
    case OP_ACCESS:
        o->rc = ha_filevfs_unix->xAccess(ha_filevfs_unix, o->name, o->a, &o->b);
        break;
    case OP_FULLPATH:
        o->rc = ha_filevfs_unix->xFullPathname(ha_filevfs_unix, o->name, o->a,
                                               o->buf);
        break;
    }
}

void
ha_filevfs_op_free(struct op *o)
{
    if (o->fname != NULL && o->fname != (sqlite3_filename)o->name)
        sqlite3_free_filename(o->fname);
    free(o->buf);
    free(o->name);
    free(o);
}

/* The I/O thread's done for a call nobody waits for: frees it. */
static void
op_done(void *arg)
{
    ha_filevfs_op_free(arg);
}

/* Queues o on the I/O thread and does not wait: it runs after every call
 * queued before it, whatever became of them, and is freed there. For
 * the calls nobody waits for (a close, an unlock: SQLite is told at once
 * that they succeeded, and what it asks of the file next is queued after
 * them). */
void
ha_filevfs_op_post(struct op *o)
{
    ha_blockio_post(op_what[o->kind], op_run, op_done, o);
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
            ha_filevfs_op_post(c);
        }
    } else if (o->kind == OP_OPEN && o->r != NULL) {
        free(o->r->name);
        free(o->r);
    }
    ha_filevfs_op_free(o);
}

/* Runs o where the disk cannot hold the loop. Returns 0 with o->rc set
 * (o is the caller's, to ha_filevfs_op_free), or -1 when it was given up (o is
 * the discard's). The reason is logged at most once a second. */
int
ha_filevfs_op_call(struct op *o)
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

/* ha_filevfs_op_call for the calls that carry nothing back but a result code:
 * err_rc when given up. */
int
ha_filevfs_op_simple(struct op *o, int err_rc)
{
    int rc;

    if (o == NULL)
        return SQLITE_NOMEM;
    if (ha_filevfs_op_call(o) != 0)
        return err_rc;
    rc = o->rc;
    ha_filevfs_op_free(o);
    return rc;
}

/* A new op on v's real file. */
struct op *
ha_filevfs_op_new(enum op_kind kind, struct vfile *v)
{
    struct op *o = calloc(1, sizeof(*o));

    if (o != NULL) {
        o->kind = kind;
        o->r = v != NULL ? v->r : NULL;
    }
    return o;
}
