/* SPDX-License-Identifier: MIT
 *
 * A fake jemalloc behind struct ha_mallctl_ops for the vtab-mechanics
 * tests: a table of names and values that counts every call, records
 * writes, and can be told to fail a name with an errno. It follows
 * jemalloc 5.3's contract where the code under test depends on it: size
 * checks (EINVAL), read-only/write-only (EPERM), prof.* needing opt.prof
 * (ENOENT), prof.reset setting prof.lg_sample, and prof.dump naming its
 * file <prefix>.<pid>.<seq>.m<mseq>.heap and calling the
 * experimental.hooks.prof_dump hook after every dump, failed or not.
 *
 * Header-only (static inline functions) and included by exactly one .c file per
 * test binary, so no test needs extra build rules.
 */
#ifndef HA_FAKE_MALLCTL_H
#define HA_FAKE_MALLCTL_H

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "heap/mallctl.h"

enum fake_type {
    FAKE_BOOL,
    FAKE_SIZE,
    FAKE_SSIZE,
    FAKE_U64,
    FAKE_UNSIGNED,
    FAKE_STR,    /* const char * */
    FAKE_ACTION, /* write-only, value optional (prof.reset, purge, dump) */
    FAKE_HOOK,   /* function pointer, read-write */
    FAKE_TYPE_MAX
};

#define FAKE_RO (1u << 0)   /* write -> EPERM */
#define FAKE_WO (1u << 1)   /* read -> EPERM */
#define FAKE_PROF (1u << 2) /* write -> ENOENT unless opt.prof */

struct fake_ctl {
    const char *name;
    enum fake_type type;
    unsigned flags;      /* FAKE_* */
    union {
        bool b;
        size_t z;
        ssize_t s;
        uint64_t u;
        unsigned n;
        void (*hook)(const char *);
    } v;                 /* current value */
    char str[PATH_MAX];  /* FAKE_STR value; last string written */

    int fail_errno;      /* injected: every call returns it */
    unsigned n_calls;    /* every call, failed or not */
    unsigned n_reads;    /* successful reads */
    unsigned n_writes;   /* successful writes */
};

#define FAKE_MAX_CTLS 128

static struct {
    struct fake_ctl ctls[FAKE_MAX_CTLS];
    int n_ctls;
    unsigned n_calls;       /* every call, known names or not */
    unsigned seq, mseq;     /* jemalloc's dump counters */
    bool dump_writes_file;  /* prof.dump creates the file */
    bool dump_partial;      /* an injected prof.dump failure leaves a
                               partial file (disk full), else none */
} fake;

static inline struct fake_ctl *
fake_add(const char *name, enum fake_type type, unsigned flags)
{
    struct fake_ctl *c;

    if (fake.n_ctls >= FAKE_MAX_CTLS) {
        fprintf(stderr, "fake_mallctl: more than %d entries\n",
                FAKE_MAX_CTLS);
        abort();
    }
    c = &fake.ctls[fake.n_ctls++];

    memset(c, 0, sizeof(*c));
    c->name = name;
    c->type = type;
    c->flags = flags;
    return c;
}

static inline void
fake_add_bool(const char *name, unsigned flags, bool v)
{
    fake_add(name, FAKE_BOOL, flags)->v.b = v;
}

static inline void
fake_add_size(const char *name, unsigned flags, size_t v)
{
    fake_add(name, FAKE_SIZE, flags)->v.z = v;
}

static inline void
fake_add_str(const char *name, unsigned flags, const char *v)
{
    struct fake_ctl *c = fake_add(name, FAKE_STR, flags);

    snprintf(c->str, sizeof(c->str), "%s", v);
}

/* A jemalloc 5.3 with profiling built in; opt.prof as given. */
static inline void
fake_reset(bool opt_prof)
{
    struct fake_ctl *c;

    memset(&fake, 0, sizeof(fake));
    fake.dump_writes_file = true;
    fake.dump_partial = true;
    ha_mallctl_forget_prof_prefix();

    fake_add_bool("config.prof", FAKE_RO, true);
    fake_add_bool("opt.prof", FAKE_RO, opt_prof);
    fake_add("epoch", FAKE_U64, 0)->v.u = 1;
    fake_add_size("stats.allocated", FAKE_RO, 1000);
    fake_add_size("stats.active", FAKE_RO, 2000);
    fake_add_size("stats.metadata", FAKE_RO, 3000);
    fake_add_size("stats.metadata_thp", FAKE_RO, 0);
    fake_add_size("stats.resident", FAKE_RO, 5000);
    fake_add_size("stats.mapped", FAKE_RO, 6000);
    fake_add_size("stats.retained", FAKE_RO, 7000);
    fake_add_size("stats.zero_reallocs", FAKE_RO, 8);
    fake_add_size("stats.background_thread.num_threads", FAKE_RO, 0);
    fake_add("stats.background_thread.num_runs", FAKE_U64, FAKE_RO)->v.u = 9;
    fake_add("stats.background_thread.run_interval", FAKE_U64, FAKE_RO)
        ->v.u = 10;
    fake_add("arenas.narenas", FAKE_UNSIGNED, FAKE_RO)->v.n = 4;
    fake_add_size("prof.lg_sample", FAKE_RO, opt_prof ? 19 : 0);
    fake_add("prof.interval", FAKE_U64, FAKE_RO)->v.u = 0;
    fake_add_bool("prof.active", FAKE_PROF, false);
    fake_add_bool("prof.gdump", FAKE_PROF, false);
    fake_add_bool("prof.thread_active_init", FAKE_PROF, opt_prof);
    fake_add_bool("background_thread", 0, false);
    fake_add("prof.reset", FAKE_ACTION, FAKE_WO | FAKE_PROF);
    fake_add("prof.dump", FAKE_ACTION, FAKE_WO | FAKE_PROF);
    fake_add("prof.prefix", FAKE_STR, FAKE_WO | FAKE_PROF);
    fake_add("arena.4096.purge", FAKE_ACTION, FAKE_WO);
    /* Decay and per-arena actions: arena 0 in use, arena 1 not yet. */
    fake_add("arenas.dirty_decay_ms", FAKE_SSIZE, 0)->v.s = 10000;
    fake_add("arenas.muzzy_decay_ms", FAKE_SSIZE, 0)->v.s = 0;
    fake_add_bool("arena.0.initialized", FAKE_RO, true);
    fake_add_bool("arena.1.initialized", FAKE_RO, false);
    fake_add("arena.0.dirty_decay_ms", FAKE_SSIZE, 0)->v.s = 10000;
    fake_add("arena.0.muzzy_decay_ms", FAKE_SSIZE, 0)->v.s = 0;
    fake_add("arena.0.purge", FAKE_ACTION, FAKE_WO);
    fake_add("experimental.hooks.prof_dump", FAKE_HOOK, FAKE_PROF);
    fake_add_str("version", FAKE_RO, "5.3.0-fake");
    fake_add_str("opt.prof_prefix", FAKE_RO, "jeprof");
    fake_add("opt.lg_prof_interval", FAKE_SSIZE, FAKE_RO)->v.s = -1;
    fake_add_size("opt.lg_prof_sample", FAKE_RO, 19);
    fake_add_bool("opt.prof_active", FAKE_RO, false);
    fake_add_bool("opt.prof_accum", FAKE_RO, false);
    fake_add_bool("opt.prof_final", FAKE_RO, false);
    fake_add_bool("opt.prof_leak", FAKE_RO, false);
    fake_add_bool("opt.prof_leak_error", FAKE_RO, false);
    fake_add_bool("opt.prof_gdump", FAKE_RO, false);
    fake_add_bool("opt.prof_thread_active_init", FAKE_RO, true);
    fake_add_bool("opt.prof_stats", FAKE_RO, false);
    fake_add_bool("opt.prof_sys_thread_name", FAKE_RO, false);
    fake_add_str("opt.prof_time_resolution", FAKE_RO, "default");
    c = fake_add("opt.prof_recent_alloc_max", FAKE_SSIZE, FAKE_RO);
    c->v.s = 0;
    fake_add("experimental.prof_recent.alloc_max", FAKE_SSIZE, FAKE_PROF)
        ->v.s = 0;
}

static inline struct fake_ctl *
fake_find(const char *name)
{
    for (int i = 0; i < fake.n_ctls; i++)
        if (strcmp(fake.ctls[i].name, name) == 0)
            return &fake.ctls[i];
    return NULL;
}

/* The entry for name; tests only ask for names the fake has. */
static inline struct fake_ctl *
fake_get(const char *name)
{
    struct fake_ctl *c = fake_find(name);

    if (c == NULL) {
        fprintf(stderr, "fake_mallctl: no entry '%s'\n", name);
        abort();
    }
    return c;
}

/* Forgets all call counts (values stay). */
static inline void
fake_clear_counts(void)
{
    fake.n_calls = 0;
    for (int i = 0; i < fake.n_ctls; i++)
        fake.ctls[i].n_calls = fake.ctls[i].n_reads =
            fake.ctls[i].n_writes = 0;
}

/* Removes name, as a jemalloc without it (ENOENT). */
static inline void
fake_remove(const char *name)
{
    fake_get(name)->name = "(removed)";
}

static inline size_t
fake_size_of(enum fake_type t)
{
    switch (t) {
    case FAKE_BOOL: return sizeof(bool);
    case FAKE_SIZE: return sizeof(size_t);
    case FAKE_SSIZE: return sizeof(ssize_t);
    case FAKE_U64: return sizeof(uint64_t);
    case FAKE_UNSIGNED: return sizeof(unsigned);
    case FAKE_STR: return sizeof(const char *);
    case FAKE_HOOK: return sizeof(void (*)(const char *));
    default: return 0;
    }
}

/* prof.dump: jemalloc's manual naming, the file, the hook. fail is the
 * injected errno (0: none). */
static inline int
fake_dump(const char *path, int fail)
{
    struct fake_ctl *prefix = fake_get("prof.prefix");
    struct fake_ctl *hook = fake_find("experimental.hooks.prof_dump");
    char name[PATH_MAX];
    int rc = 0;

    if (path == NULL) {
        const char *p = prefix->n_writes > 0 ? prefix->str
                                             : fake_get("opt.prof_prefix")->str;

        if (p[0] == '\0')
            return EFAULT;
        if (snprintf(name, sizeof(name), "%s.%ld.%u.m%u.heap", p,
                     (long)getpid(), fake.seq++, fake.mseq++) >=
            (int)sizeof(name))
            return EFAULT;
    } else {
        snprintf(name, sizeof(name), "%s", path);
    }
    if (fail == 0 ? fake.dump_writes_file : fake.dump_partial) {
        int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        if (fd < 0) {
            rc = EFAULT;
        } else {
            const char *body = "heap_v2/524288\n  t*: 0: 0 [0: 0]\n";

            if (write(fd, body, fail == 0 ? strlen(body) : 4) < 0)
                rc = EFAULT;
            close(fd);
        }
    }
    if (rc == 0)
        rc = fail;
    /* jemalloc calls the hook after closing the file, failed or not. */
    if (hook != NULL && hook->v.hook != NULL)
        hook->v.hook(name);
    return rc;
}

static inline int
fake_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
             size_t newlen)
{
    struct fake_ctl *c = fake_find(name);
    struct fake_ctl *opt = fake_find("opt.prof");
    bool opt_prof = opt != NULL && opt->v.b;
    size_t size;
    int rc;

    fake.n_calls++;
    if (c == NULL)
        return ENOENT;
    c->n_calls++;
    if (c->fail_errno != 0 && c->type != FAKE_ACTION)
        return c->fail_errno;
    size = fake_size_of(c->type);

    if (oldp != NULL || oldlenp != NULL) {
        if (c->flags & FAKE_WO)
            return EPERM;
        if (oldp == NULL || oldlenp == NULL || *oldlenp != size)
            return EINVAL;
    }
    if (newp != NULL) {
        if (c->flags & FAKE_RO)
            return EPERM;
        if ((c->flags & FAKE_PROF) && !opt_prof)
            return ENOENT;
        if (c->type != FAKE_ACTION && newlen != size)
            return EINVAL;
    }
    if (c->type == FAKE_ACTION) {
        if ((c->flags & FAKE_PROF) && !opt_prof)
            return ENOENT;
        if (strcmp(name, "prof.dump") == 0) {
            const char *path = NULL;

            if (newp != NULL) {
                if (newlen != sizeof(path))
                    return EINVAL;
                memcpy(&path, newp, sizeof(path));
            }
            rc = fake_dump(path, c->fail_errno);
            if (rc != 0)
                return rc;
        } else if (c->fail_errno != 0) {
            return c->fail_errno;
        } else if (strcmp(name, "prof.reset") == 0 && newp != NULL) {
            size_t lg;

            if (newlen != sizeof(lg))
                return EINVAL;
            memcpy(&lg, newp, sizeof(lg));
            fake_get("prof.lg_sample")->v.z = lg > 63 ? 63 : lg;
        }
        c->n_writes++;
        return 0;
    }

    if (oldp != NULL) {
        switch (c->type) {
        case FAKE_STR: {
            const char *s = c->str;

            memcpy(oldp, &s, sizeof(s));
            break;
        }
        default:
            memcpy(oldp, &c->v, size);
            break;
        }
        c->n_reads++;
    }
    if (newp != NULL) {
        if (c->type == FAKE_STR) {
            const char *s;

            memcpy(&s, newp, sizeof(s));
            snprintf(c->str, sizeof(c->str), "%s", s != NULL ? s : "");
        } else {
            memcpy(&c->v, newp, size);
        }
        c->n_writes++;
    }
    return 0;
}

static inline int
fake_nametomib(const char *name, size_t *mibp, size_t *miblenp)
{
    (void)name;
    (void)mibp;
    (void)miblenp;
    return ENOENT;
}

static inline int
fake_bymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
           void *newp, size_t newlen)
{
    (void)mib;
    (void)miblen;
    (void)oldp;
    (void)oldlenp;
    (void)newp;
    (void)newlen;
    return ENOENT;
}

static const struct ha_mallctl_ops fake_ops = {
    .mallctl = fake_mallctl,
    .nametomib = fake_nametomib,
    .bymib = fake_bymib,
};

#endif /* HA_FAKE_MALLCTL_H */
