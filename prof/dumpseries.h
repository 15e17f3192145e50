/* SPDX-License-Identifier: MIT
 *
 * A series of heap dumps of one process, for heap_growth: which dumps an
 * operator means by the table's arguments, in the order they were taken.
 *
 * Argument forms (since, until; dump_kind narrows any of them):
 *   ()                  every dump of the process that wrote the newest
 *   (N)                 an integer: that process's newest N dumps
 *   ('a.heap')          a dump's name: from it to the newest of its
 *                       process
 *   ('a.heap','b.heap') two names of one process: from one to the other
 *   (t1, t2)            two times, integers (unix seconds) or text
 *                       'YYYY-MM-DD HH:MM[:SS]' (UTC, as SQLite's
 *                       datetime() writes it; a 'T' may stand for the
 *                       space and a 'Z' may end it): the dumps taken
 *                       between them, of the process that took the newest
 *                       of those
 * dump_kind: 'manual' (m), 'interval' (i), 'high-water' (u), 'final' (f).
 * Without it every kind counts: each dump of a process is a snapshot of
 * the same heap, whether an operator, dump_interval_s, the leak watch or
 * jemalloc's lg_prof_interval took it.
 *
 * A series is one process's (a pid in jemalloc's names, which
 * heapadmin keeps unique in the datadir by moving an earlier run's files
 * aside), ordered by jemalloc's per-process dump counter (seq), so dumps
 * copied in from elsewhere keep their order whatever their file times.
 *
 * Pure: the datadir is listed elsewhere (vtab/heap_growth.c).
 */
#ifndef HA_DUMPSERIES_H
#define HA_DUMPSERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/dumpname.h"

/* One dump in the datadir. */
struct ha_dumpseries_dump {
    const char *name;       /* file name */
    struct ha_dump_name d;  /* parsed from it */
    int64_t t_ns;           /* when it was taken (unix ns) */
};

enum ha_dumpseries_form {
    HA_DUMPSERIES_ALL,      /* () */
    HA_DUMPSERIES_LAST,     /* (N) */
    HA_DUMPSERIES_FROM,     /* ('a') */
    HA_DUMPSERIES_NAMES,    /* ('a', 'b') */
    HA_DUMPSERIES_TIMES,    /* (t1, t2) */
    HA_DUMPSERIES_FORM_MAX
};

struct ha_dumpseries_spec {
    enum ha_dumpseries_form form;
    long long n;             /* LAST */
    const char *a, *b;       /* FROM, NAMES: borrowed from the args */
    int64_t t1_ns, t2_ns;    /* TIMES, t1 <= t2 */
    const char *kind;        /* "manual", ...; NULL: every kind */
};

/* One argument as SQL gave it. */
struct ha_dumpseries_arg {
    bool present;            /* given (not NULL) */
    bool is_int;             /* an INTEGER value, else text */
    long long i;
    const char *text;
};

/* The most dumps one series may hold. */
#define HA_DUMPSERIES_MAX 256

/* Works out the form from since, until and kind (any may be absent).
 * Returns 0, or -1 with what is wrong and the forms allowed in err. */
int ha_dumpseries_spec(const struct ha_dumpseries_arg *since,
                       const struct ha_dumpseries_arg *until,
                       const struct ha_dumpseries_arg *kind,
                       struct ha_dumpseries_spec *out, char *err,
                       size_t errlen);

/* The dumps of dumps[0..n) (any order) that spec means, as indices into
 * dumps, ordered by seq (then kind_seq), into idx[0..*n_out) (idx has
 * room for n). Returns 0, or -1 with the reason in err: no dumps, an
 * unknown name, names of two processes, more than HA_DUMPSERIES_MAX. */
int ha_dumpseries_select(const struct ha_dumpseries_dump *dumps, size_t n,
                         const struct ha_dumpseries_spec *spec, size_t *idx,
                         size_t *n_out, char *err, size_t errlen);

/* 'YYYY-MM-DD HH:MM[:SS]' (or with 'T', ending 'Z'), UTC, years 1970 to
 * 2200, or a decimal number of unix seconds (up to 9000000000), into
 * unix ns. Returns 0, or -1. */
int ha_dumpseries_parse_time(const char *text, int64_t *ns);

#endif /* HA_DUMPSERIES_H */
