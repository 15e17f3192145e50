/* SPDX-License-Identifier: MIT
 *
 * The only code that reaches jemalloc's mallctl() (heap/mallctl*.c).
 * Everything else goes through struct ha_mallctl_ops, so unit tests can
 * pass a fake backend while the daemon passes ha_mallctl_jemalloc.
 *
 * Three layers, one file each:
 *   - typed accessors over an ops pointer (ha_mallctl_read_*, _write_*,
 *     ha_mallctl_action, ha_mallctl_epoch), the decay settings, and the
 *     process-wide state: the dump gate, when sampling started,
 *     prof.prefix remembered (mallctl.c). They keep mallctl(3)'s own
 *     contract and return 0 or an errno value (not -1): the caller needs
 *     the code to explain the failure.
 *   - operator messages (mallctl_errmsg.c): ha_mallctl_errmsg() and
 *     ha_mallctl_dump_errmsg() are pure (no I/O) and turn an errno plus
 *     what was attempted into a sentence naming the variable, the value
 *     and what to do.
 *   - what jemalloc writes to files (mallctl_dump.c): the heap dump
 *     (ha_mallctl_dump): prof.dump with jemalloc's own file naming, the
 *     file written found through experimental.hooks.prof_dump (5.3) or a
 *     directory listing (5.2), the target directory checked before and
 *     after, and a partial file removed on failure; prof_log and the
 *     recent allocations.
 *
 * Errno values follow jemalloc 5.3's src/ctl.c: ENOENT for a name this
 * build lacks or profiling off (opt.prof=false), EFAULT for a dump that
 * could not be written, EINVAL for a size mismatch, EPERM for writing a
 * read-only or reading a write-only name, EAGAIN for an allocation
 * failure.
 */
#ifndef HA_MALLCTL_H
#define HA_MALLCTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int ha_mallctl_fn(const char *name, void *oldp, size_t *oldlenp,
                          void *newp, size_t newlen);

struct ha_mallctl_ops {
    /* Same contract as jemalloc's mallctl(3): 0 or an errno value. */
    ha_mallctl_fn *mallctl;
    int (*nametomib)(const char *name, size_t *mibp, size_t *miblenp);
    int (*bymib)(const size_t *mib, size_t miblen, void *oldp,
                 size_t *oldlenp, void *newp, size_t newlen);
};

/* The real jemalloc the executable is linked with (mallctl_link.c: only
 * the tests link it; the library and the agent resolve jemalloc at run
 * time with ha_mallctl_resolve() instead, so that they carry no
 * dependency on libjemalloc). */
extern const struct ha_mallctl_ops ha_mallctl_jemalloc;

/* Finds jemalloc in the running process (mallctl, mallctlnametomib and
 * mallctlbymib; or the je_-prefixed names of a static, prefixed build)
 * and fills ops. Refuses, with err saying why, when there is none, or
 * when malloc() is not served by the object that exports mallctl (a
 * jemalloc loaded but not used as the allocator would profile an empty
 * heap). Returns 0 or -1. */
int ha_mallctl_resolve(struct ha_mallctl_ops *ops, char *err,
                       size_t errlen);

/* MALLCTL_ARENAS_ALL: "arena.<i>.*" on every arena at once. */
#define HA_MALLCTL_ARENAS_ALL 4096
#define HA_MALLCTL_PURGE_ALL "arena.4096.purge"

/* In a fork() child: re-initialises the process-wide lock that
 * serializes prof.prefix changes and dumps, which a parent's thread may
 * have held at the fork (api/forksafe.c). Only for the child's single
 * thread, before it starts anything. */
void ha_mallctl_forget_locks(void);

/* Signature of jemalloc 5.3's experimental.hooks.prof_dump callback. */
typedef void (*ha_mallctl_dump_hook)(const char *filename);

/* ------------------------------------------------------------------
 * Typed accessors. Each returns 0 or the errno value mallctl returned;
 * out is written only on success. A size mismatch is EINVAL, as jemalloc
 * itself reports it.
 * ------------------------------------------------------------------ */
int ha_mallctl_read_bool(const struct ha_mallctl_ops *ops, const char *name,
                         bool *out);
int ha_mallctl_read_size(const struct ha_mallctl_ops *ops, const char *name,
                         size_t *out);
int ha_mallctl_read_ssize(const struct ha_mallctl_ops *ops, const char *name,
                          ssize_t *out);
int ha_mallctl_read_u64(const struct ha_mallctl_ops *ops, const char *name,
                        uint64_t *out);
int ha_mallctl_read_unsigned(const struct ha_mallctl_ops *ops,
                             const char *name, unsigned *out);
/* A name resolved once to a MIB, so hot reads skip jemalloc's name
 * parsing (jemalloc's own stats.c caches MIBs the same way). state 0:
 * not resolved yet; 1: mib valid; -1: the backend has no MIBs (reads go
 * by name). Zero-initialise it. */
#define HA_MALLCTL_MIB_MAX 6
struct ha_mallctl_mib {
    size_t mib[HA_MALLCTL_MIB_MAX];
    size_t len;
    int state;
};

/* Reads exactly len bytes of name into out through m (resolving it on
 * first use). Returns 0 or an errno value, as the typed accessors. */
int ha_mallctl_read_cached(const struct ha_mallctl_ops *ops, const char *name,
                           struct ha_mallctl_mib *m, void *out, size_t len);

/* Reads a figure of a numbered node, fmt with up to two "%u" fields
 * ("stats.arenas.%u.bins.%u.curregs"), at indices a and b (b unused
 * with one field), exactly len bytes into out. The name is resolved once
 * into m with the indices 0; later reads put a and b into a copy of the
 * MIB, as jemalloc's own stats.c reads per-arena and per-bin figures, or
 * format the name when the backend has no MIBs. One m per fmt. Returns 0
 * or an errno value (ENOENT for an arena that is not initialized). */
int ha_mallctl_read_at(const struct ha_mallctl_ops *ops, const char *fmt,
                       struct ha_mallctl_mib *m, unsigned a, unsigned b,
                       void *out, size_t len)
    __attribute__((format(printf, 2, 0)));

/* *out points into jemalloc (static storage); do not free it. */
int ha_mallctl_read_str(const struct ha_mallctl_ops *ops, const char *name,
                        const char **out);

/* Writes v; when old is not NULL it receives the previous value from the
 * same call (read-modify-write in one mallctl). */
int ha_mallctl_write_bool(const struct ha_mallctl_ops *ops, const char *name,
                          bool v, bool *old);
int ha_mallctl_write_size(const struct ha_mallctl_ops *ops, const char *name,
                          size_t v);
/* Writes v; old, when not NULL, gets the previous value from the same
 * call (arena.<i>.dirty_decay_ms). */
int ha_mallctl_write_ssize(const struct ha_mallctl_ops *ops, const char *name,
                           ssize_t v, ssize_t *old);
/* v may be NULL (prof.dump: jemalloc names the file itself). */
int ha_mallctl_write_str(const struct ha_mallctl_ops *ops, const char *name,
                         const char *v);
/* Write-only call without a value: "arena.4096.purge", prof.reset at the
 * current rate, prof.dump with jemalloc's automatic name. */
int ha_mallctl_action(const struct ha_mallctl_ops *ops, const char *name);

/* Decay settings as they were before ha_mallctl_set_decay changed them:
 * arenas.<kind>_decay_ms and each arena's (HA_MALLCTL_DECAY_NONE for an
 * arena that was not initialized). */
#define HA_MALLCTL_DECAY_NONE ((ssize_t)-2)
struct ha_mallctl_decay_undo {
    ssize_t def;          /* arenas.<kind>_decay_ms */
    ssize_t *arena;       /* malloc'd, n entries */
    unsigned n;
};

/* Sets <kind>_decay_ms (kind "dirty" or "muzzy"; ms -1 = never) for the
 * arenas jemalloc creates from now on (arenas.<kind>_decay_ms) and for
 * every initialized arena now (arena.<i>.<kind>_decay_ms): jemalloc's
 * arenas.* setting alone reaches only new arenas. When undo is not NULL
 * it gets the previous values (free with ha_mallctl_decay_undo_free).
 * Returns 0 or the first errno value (the settings made before it stay;
 * undo covers them). */
int ha_mallctl_set_decay(const struct ha_mallctl_ops *ops, const char *kind,
                         ssize_t ms, struct ha_mallctl_decay_undo *undo);
/* Puts back what undo recorded (def HA_MALLCTL_DECAY_NONE: the arenas
 * only). Returns 0 or the first errno value. */
int ha_mallctl_restore_decay(const struct ha_mallctl_ops *ops,
                             const char *kind,
                             const struct ha_mallctl_decay_undo *undo);
void ha_mallctl_decay_undo_free(struct ha_mallctl_decay_undo *undo);

/* Writes "epoch" so the next stats.* reads are current. EBUSY, and
 * nothing done, while a dump of ours is being written: the refresh would
 * wait for it (see ha_mallctl_dumping); the statistics then stay as of
 * the last refresh. prof.reset (ha_mallctl_write_size and
 * ha_mallctl_action) answers EBUSY the same way. */
int ha_mallctl_epoch(const struct ha_mallctl_ops *ops);

/* True while a dump of ours (ha_mallctl_dump, ha_mallctl_dump_to) is in
 * jemalloc's prof.dump, on any thread of the process. */
bool ha_mallctl_dumping(void);

/* The name under which a wrapped jemalloc (api/arena.h) answers the
 * index of heapadmin's own arena (an unsigned; ENOENT: none), so that
 * what reads arenas one by one can leave it out. */
#define HA_MALLCTL_OWN_ARENA "heapadmin.arena"

/* When this process's samples start, as far as heapadmin saw: the unix
 * ns of the last prof.active switch from off to on or prof.reset (which
 * forgets every sample) made through this module (a session's UPDATE,
 * the start-up settings, a watch's hold); else -1 when opt.prof_active
 * was on from the start (sampling since the process began, unless the
 * host's own code switched it, which heapadmin cannot see); else 0:
 * unknown (switched on by someone else, or off). Process-wide. */
int64_t ha_mallctl_sampling_since(const struct ha_mallctl_ops *ops);

/* jemalloc built with --enable-prof (config.prof). */
bool ha_mallctl_prof_built(const struct ha_mallctl_ops *ops);
/* Profiling usable in this process: config.prof and opt.prof. */
bool ha_mallctl_prof_enabled(const struct ha_mallctl_ops *ops);

/* ------------------------------------------------------------------
 * prof.prefix is write-only, so the value last set through
 * ha_mallctl_set_prof_prefix() is remembered (per ops, process-wide).
 * ------------------------------------------------------------------ */

/* Sets prof.prefix (jemalloc >= 5.3). Returns 0 or an errno value. */
int ha_mallctl_set_prof_prefix(const struct ha_mallctl_ops *ops,
                               const char *prefix);
/* The prefix dumps use now: the remembered one, else opt.prof_prefix.
 * Writes it into out; returns 0, or an errno value with out = "". */
int ha_mallctl_prof_prefix(const struct ha_mallctl_ops *ops, char *out,
                           size_t outlen);
/* Forgets the remembered prefix (tests). */
void ha_mallctl_forget_prof_prefix(void);

/* ------------------------------------------------------------------
 * Operator messages (pure).
 * ------------------------------------------------------------------ */

/* What was attempted when mallctl failed. */
struct ha_mallctl_failure {
    int errnum;            /* errno value mallctl returned */
    const char *mallctl;   /* "prof.active" */
    const char *variable;  /* "jemalloc-prof_active", or NULL: mallctl */
    const char *value;     /* value being written, or NULL for a read */
    const char *allowed;   /* what is allowed, for EINVAL; may be NULL */
    bool prof_built;       /* jemalloc has --enable-prof (config.prof) */
};

/* The message an operator sees when profiling is off in this process. */
#define HA_MALLCTL_PROF_OFF_HINT                                          \
    "heap profiling is not available in this process (opt.prof=false): " \
    "start the process with prof:true in MALLOC_CONF, e.g. "             \
    "MALLOC_CONF=prof:true,prof_active:false,prof_time_resolution:high " \
    "(for an agent, in the service's environment)"
#define HA_MALLCTL_PROF_UNBUILT_HINT                                      \
    "heap profiling is not available: this jemalloc was built without "  \
    "--enable-prof (config.prof=false); statistics still work, but the " \
    "profiler needs a jemalloc built with --enable-prof"

/* Writes "<variable> = '<value>': <reason and what to do>" for f into err
 * (errlen bytes; NULL-tolerant):
 *   ENOENT on prof.* / experimental.hooks.prof_*: profiling is off (or not
 *          built) and how to start with prof:true; other names: this
 *          jemalloc has no such mallctl;
 *   EINVAL: the value and what is allowed;
 *   EPERM:  read-only (or write-only for a read);
 *   EAGAIN: jemalloc ran out of memory;
 *   EFAULT: jemalloc could not complete the call (see ha_mallctl_dump_errmsg
 *           for prof.dump);
 *   others: strerror. */
void ha_mallctl_errmsg(const struct ha_mallctl_failure *f, char *err,
                       size_t errlen);

/* State of a dump's target directory, gathered by ha_mallctl_dir_probe(). */
struct ha_mallctl_dirstate {
    char dir[PATH_MAX];            /* the directory checked */
    int stat_errno;                /* 0, or errno of stat(dir) */
    bool is_dir;                   /* stat says directory */
    int access_errno;              /* 0, or errno of access(dir, W_OK) */
    bool have_statvfs;             /* the two counts below are valid */
    unsigned long long bytes_free; /* f_bavail * f_frsize */
    unsigned long long files_free; /* f_favail (free inodes) */
};

/* Below this many free bytes a failed dump is put down to a full disk. */
#define HA_MALLCTL_DISK_FULL_BYTES (64u * 1024u)

/* Fills *st for the directory part of path (a file path or a prefix: the
 * text up to the last '/', "." when there is none). I/O, never fails:
 * problems land in the errno fields. */
void ha_mallctl_dir_probe(const char *path, struct ha_mallctl_dirstate *st);

/* Writes the reason the directory cannot take a dump into reason
 * (missing, not a directory, not writable, read-only file system, disk or
 * inodes full) and returns true; returns false when *st shows no problem.
 * Pure. */
bool ha_mallctl_dir_problem(const struct ha_mallctl_dirstate *st,
                            char *reason, size_t reasonlen);

/* The message for a failed heap dump. variable names the row
 * ("jemalloc-dump_now"), file is the dump's path when known (else NULL),
 * prefix is the effective prof prefix, before/after are the directory
 * probes around the call (after may be NULL), removed tells whether a
 * partial file was deleted. errnum ENOENT means profiling is off. Pure. */
void ha_mallctl_dump_errmsg(int errnum, const char *variable,
                            const char *file, const char *prefix,
                            bool prof_built,
                            const struct ha_mallctl_dirstate *before,
                            const struct ha_mallctl_dirstate *after,
                            bool removed, char *err, size_t errlen);

/* ------------------------------------------------------------------
 * Heap dump.
 * ------------------------------------------------------------------ */

/* Removes the prof_dump hook ha_mallctl_dump() installed into jemalloc
 * (restoring the one it chained to), so that jemalloc never calls into
 * code that is about to be unmapped: run when the library is unloaded.
 * Process-wide, like the hook itself. */
void ha_mallctl_detach(void);

/* Dumps a heap profile with jemalloc's manual-dump name
 * <prefix>.<pid>.<seq>.m<mseq>.heap. Checks the prefix directory first
 * and refuses without dumping when it cannot work. On success copies the
 * file's path into file (filelen bytes) and returns 0. On failure returns
 * -1 with err set by ha_mallctl_dump_errmsg() (variable names the row in
 * the message) and no file left under the dump's name. */
int ha_mallctl_dump(const struct ha_mallctl_ops *ops, const char *variable,
                    char *file, size_t filelen, char *err, size_t errlen);

/* prof.dump to path (jemalloc creates it, 0644 less the umask), for a
 * private dump that is read and removed at once (heap_top('live')).
 * While it runs, any of fds 0-2 the process has closed is held open on
 * /dev/null, so neither the dump nor jemalloc's leak report can take
 * them (ha_mallctl_dump() does the same). Returns 0 or mallctl's errno
 * value (ENOENT: profiling off; EFAULT: the file could not be written;
 * EBUSY: another dump is being written, which it would wait for). */
int ha_mallctl_dump_to(const struct ha_mallctl_ops *ops, const char *path);

/* ------------------------------------------------------------------
 * prof_log and the recent allocations (jemalloc 5.3).
 * ------------------------------------------------------------------ */

/* prof.log_start with the file jemalloc writes at the stop (path may be
 * NULL: jemalloc's <prefix>.<pid>.<seq>.json). Returns 0 or mallctl's
 * errno value: ENOENT (profiling off), EFAULT (a log is already started
 * in this process, or the name is too long). */
int ha_mallctl_log_start(const struct ha_mallctl_ops *ops, const char *path);

/* prof.log_stop: jemalloc writes its log file now (creat()s it, 0644
 * less the umask), with fds 0-2 held as ha_mallctl_dump_to() holds them.
 * Returns 0 or mallctl's errno value (EFAULT: no log was started, or the
 * file could not be written). */
int ha_mallctl_log_stop(const struct ha_mallctl_ops *ops);

/* experimental.prof_recent.alloc_dump: jemalloc emits the recent
 * allocations as JSON through write_cb(arg, text) (chunks of up to 64
 * KiB, each NUL-terminated), on the calling thread, before returning.
 * write_cb may allocate. Returns 0 or mallctl's errno value (ENOENT:
 * profiling off or no such mallctl). */
int ha_mallctl_recent_dump(const struct ha_mallctl_ops *ops,
                           void (*write_cb)(void *arg, const char *text),
                           void *arg);

/* Installs heapadmin's prof_dump hook now (jemalloc 5.3's
 * experimental.hooks.prof_dump), so every dump jemalloc writes, interval
 * and high-water included, is made private (heap/dumpfiles.h
 * ha_dumpfiles_perms). Returns 0 or the mallctl's errno value (a jemalloc
 * without the hook). */
int ha_mallctl_watch_dumps(const struct ha_mallctl_ops *ops);

#endif /* HA_MALLCTL_H */
