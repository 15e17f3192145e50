/* SPDX-License-Identifier: MIT
 *
 * The VFS's insides, shared by its files and private to them:
 * filevfs_methods.c (the methods SQLite calls: each file's and the
 * VFS's), filevfs_op.c (those calls made on the I/O thread) and
 * filevfs.c ("unix"'s real files under our lock, their list, the fork).
 * What callers use is filevfs.h.
 */
#ifndef HA_FILEVFS_INT_H
#define HA_FILEVFS_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <sqlite3.h>

/* The real file: "unix"'s sqlite3_file follows this header, 8-byte
 * aligned as SQLite aligns the memory it gives xOpen. */
struct vreal {
    struct vreal *prev, *next; /* open_files (lock) */
    bool dead;                 /* closed in a fork child: its
                                  connection is never used */
    char *name;                /* the name "unix" keeps a pointer to */
    bool made_name;            /* ... from sqlite3_create_filename */
};

#define HEAD_SIZE ((sizeof(struct vreal) + 7) & ~(size_t)7)
#define REAL(r) ((sqlite3_file *)((char *)(r) + HEAD_SIZE))

/* SQLite's file: a pointer to ours. */
struct vfile {
    sqlite3_file base; /* pMethods: ours, or NULL if the open
                          failed */
    struct vreal *r;
};

enum op_kind {
    OP_READ,
    OP_WRITE,
    OP_TRUNCATE,
    OP_SYNC,
    OP_SIZE,
    OP_LOCK,
    OP_UNLOCK,
    OP_RESERVED,
    OP_CONTROL_INT, /* a file control with an int argument */
    OP_CONTROL_I64, /* ... with an sqlite3_int64 argument */
    OP_SHM_MAP,
    OP_SHM_LOCK,
    OP_SHM_UNMAP,
    OP_CLOSE,
    OP_OPEN,
    OP_DELETE,
    OP_ACCESS,
    OP_FULLPATH,
};

/* One call, with its own copies of what it reads and writes. */
struct op {
    enum op_kind kind;
    struct vreal *r; /* the file; OP_OPEN: made by the call */
    int rc;
    int a, b, c;            /* amount, level, flags, offsets */
    sqlite3_int64 off;      /* offset, size */
    void *buf;              /* read, write, full path: ours */
    void volatile *mapped;  /* OP_SHM_MAP */
    char *name;             /* OP_OPEN, OP_DELETE, OP_ACCESS,
                               OP_FULLPATH: a copy */
    sqlite3_filename fname; /* OP_OPEN: what "unix" is given */
    int out_flags;          /* OP_OPEN */
    bool shm;               /* OP_OPEN: the WAL index is safe */
};

/* "unix": written once, by the VFS's registration under pthread_once
 * (ordered before every caller's use); read-only after, from any
 * thread. */
extern sqlite3_vfs *ha_filevfs_unix;

/* The lock of the calls that take "unix"'s per-file mutexes, inside the
 * fork gate (filevfs.c). */
void ha_filevfs_lock(void);
void ha_filevfs_unlock(void);

/* Opens o->fname into a new vreal (o->r), listed when it opened; an
 * SQLite result code. */
int ha_filevfs_real_open(struct op *o);

/* Closes r's real file and frees r: the last call on it. An SQLite
 * result code. */
int ha_filevfs_real_close(struct vreal *r);

void ha_filevfs_op_free(struct op *o);
int ha_filevfs_op_call(struct op *o);
int ha_filevfs_op_simple(struct op *o, int err_rc);
/* Queues o on the I/O thread without waiting; o is freed there. */
void ha_filevfs_op_post(struct op *o);
struct op *ha_filevfs_op_new(enum op_kind kind, struct vfile *v);

#endif
