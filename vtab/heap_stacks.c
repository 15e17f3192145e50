/* SPDX-License-Identifier: MIT
 *
 * One heap profile per stack and per frame, produced lazily from the
 * cached profile (heap/profiles.h); stack ids are the same in both, the
 * stack's place in the dump (1 = first).
 *
 * heap_stacks(<dump>), one row per stack:
 *   0 stack_id  INTEGER
 *   1 bytes     INTEGER  in-use bytes, scaled as jeprof scales them
 *   2 objects   INTEGER  in-use objects, scaled the same way
 *   3 frames    INTEGER  frames in stack (inlined ones included)
 *   4 stack     TEXT     flame-graph "collapsed" form: root first, frames
 *                        joined by ';', inlined frames marked "[inline]",
 *                        allocator frames cut as jeprof cuts them and the
 *                        allocation wrappers past them (prof/wrappers.h):
 *                        its last frame is the allocation site
 *   5 alloc_bytes INTEGER  allocated since profiling began, freed or not
 *                        (cumulative counters: opt.prof_accum), scaled
 *                        the same way; NULL when the dump has none
 *   6 alloc_objects INTEGER
 *   7 wrapper   TEXT     the wrapper frames the cut left out, collapsed
 *                        the same way (stack || ';' || wrapper is the
 *                        whole stack past the allocator's frames); NULL
 *                        when the site called the allocator itself
 *   8 dump      HIDDEN   a file name from stats_heap_dumps, or 'live'
 *   9 seconds   HIDDEN   with 'live': a delta over that many seconds
 *                        (1..60), heap_stacks('live', 10): alloc_* what
 *                        the stack allocated in the window
 *  10 thread    HIDDEN   thread = '<name>' or thread = <thread_id> (as
 *                        heap_top's): each stack's part of those threads
 *                        (heap_threads' rule), stacks they have no part
 *                        in left out
 *
 * heap_profile(<dump>), one row per frame of each stack, allocation
 * site first:
 *   0 stack_id        INTEGER
 *   1 depth           INTEGER  0 = the allocation site (the first frame
 *                              after the allocator's and the allocation
 *                              wrappers', as heap_stacks cuts), counting
 *                              inlined frames, innermost first
 *   2 address         TEXT     the address looked up, hex: the return
 *                              address minus one for callers
 *   3 function        TEXT     name; "<module>+0x<offset>" when none is
 *                              certain (prof/syms.h), the address
 *                              outside every module
 *   4 file            TEXT     source file (NULL: unknown)
 *   5 line            INTEGER  source line (NULL: unknown)
 *   6 module          TEXT     the mapped file holding the address
 *   7 inlined         INTEGER  1 when inlined into the next row's function
 *   8 bytes           INTEGER  the stack's in-use bytes (as heap_stacks)
 *   9 objects         INTEGER  the stack's in-use objects
 *  10 module_changed  INTEGER  1 when the module on disk is not the one
 *                              the dump mapped (build-id): left unnamed
 *  11 dump            HIDDEN
 * Summing bytes over DISTINCT stack_id per function gives jeprof's cum
 * figure; depth = 0 rows give its flat one (heap_top does both).
 *
 * Both take `stack_id = N` without a scan, and heap_profile
 * `function = '...'` too (rows of other functions are skipped in C).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "prof/aggregate.h"
#include "prof/threads.h"
#include "heap/profiles.h"
#include "vtab/heap_vtab.h"

#define STACKS_SCHEMA                                                     \
    "CREATE TABLE x(stack_id INTEGER, bytes INTEGER, objects INTEGER, "   \
    "frames INTEGER, stack TEXT, alloc_bytes INTEGER, "                   \
    "alloc_objects INTEGER, wrapper TEXT, dump HIDDEN, seconds HIDDEN, "  \
    "thread HIDDEN)"
#define STACKS_COL_ID 0
#define STACKS_COL_WRAPPER 7
#define STACKS_COL_DUMP 8
#define STACKS_COL_SECONDS 9
#define STACKS_COL_THREAD 10

#define PROFILE_SCHEMA                                                    \
    "CREATE TABLE x(stack_id INTEGER, depth INTEGER, address TEXT, "      \
    "function TEXT, file TEXT, line INTEGER, module TEXT, "               \
    "inlined INTEGER, bytes INTEGER, objects INTEGER, "                   \
    "module_changed INTEGER, dump HIDDEN)"
#define PROFILE_COL_ID 0
#define PROFILE_COL_FUNCTION 3
#define PROFILE_COL_DUMP 11

/* One cursor type serves both tables. */
typedef struct stacks_cursor stacks_cursor;
struct stacks_cursor {
    sqlite3_vtab_cursor base;     /* Base class - must be first */
    struct ha_heap_profile *prof;
    struct ha_agg_walker *walker;
    size_t i;                     /* stack */
    size_t end;                   /* one past the last stack to show */
    bool per_frame;               /* heap_profile */

    /* heap_stacks: the current stack collapsed, built when asked */
    struct ha_buf line;
    size_t line_for;              /* stack line holds + 1; 0 = none */

    /* heap_profile: position within stack i */
    size_t j;                     /* raw frame */
    uint32_t q;                   /* inline level, innermost first */
    long long depth;
    char *only;                   /* function = ?, or NULL */
    char addr[24];

    /* heap_stacks: the hidden columns' values (NULL: not given), and
     * the thread filter with stack i's share of it */
    sqlite3_value *seconds, *thread;
    bool by_thread;
    struct ha_threads_match m;    /* points into thread */
    double share[4];              /* objs, bytes, accum_objs, accum_bytes */
};

static int
stacks_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
               sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, STACKS_SCHEMA, pp, pzErr);
}

static int
profile_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                sqlite3_vtab **pp, char **pzErr)
{
    (void)argc;
    (void)argv;
    return ha_heap_vtab_connect(db, aux, PROFILE_SCHEMA, pp, pzErr);
}

static int
stacks_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    static const int push[] = {STACKS_COL_ID, STACKS_COL_SECONDS,
                               STACKS_COL_THREAD};

    (void)p;
    return ha_heap_vtab_best_index(info, STACKS_COL_DUMP, 1, push, 3, 10000);
}

static int
profile_best_index(sqlite3_vtab *p, sqlite3_index_info *info)
{
    static const int push[] = {PROFILE_COL_ID, PROFILE_COL_FUNCTION};

    (void)p;
    return ha_heap_vtab_best_index(info, PROFILE_COL_DUMP, 1, push, 2, 100000);
}

static int
stacks_open(sqlite3_vtab *p, sqlite3_vtab_cursor **pp)
{
    stacks_cursor *c = sqlite3_malloc(sizeof(*c));

    (void)p;
    if (c == NULL)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof(*c));
    ha_buf_init(&c->line);
    *pp = &c->base;
    return SQLITE_OK;
}

static void
stacks_clear(stacks_cursor *c)
{
    ha_agg_walker_free(c->walker);
    c->walker = NULL;
    ha_heap_profile_put(c->prof);
    c->prof = NULL;
    free(c->only);
    c->only = NULL;
    sqlite3_value_free(c->seconds);
    sqlite3_value_free(c->thread);
    c->seconds = c->thread = NULL;
    c->by_thread = false;
    c->i = c->end = 0;
    c->line_for = 0;
}

/* heap_stacks with a thread filter: moves to the first stack at or after
 * i the threads have a part in, its share in c->share. */
static void
thread_settle(stacks_cursor *c)
{
    c->share[0] = c->share[1] = c->share[2] = c->share[3] = 1;
    if (!c->by_thread)
        return;
    for (; c->i < c->end; c->i++) {
        ha_threads_stack_share(&c->prof->p, c->i, &c->m, c->share);
        if (c->share[0] > 0 || c->share[1] > 0 || c->share[2] > 0 ||
            c->share[3] > 0)
            return;
    }
}

static int
stacks_close(sqlite3_vtab_cursor *cur)
{
    stacks_cursor *c = (stacks_cursor *)cur;

    stacks_clear(c);
    ha_buf_free(&c->line);
    sqlite3_free(cur);
    return SQLITE_OK;
}

/* heap_profile: the syms entry of the current row's frame (NULL: none). */
static const struct ha_syms_addr *
row_sa(const stacks_cursor *c)
{
    return ha_agg_walker_frame(c->walker, c->j);
}

/* heap_profile: the function name of the current row; NULL when it has
 * none (the address stands in). */
static const char *
row_function(const stacks_cursor *c)
{
    const struct ha_syms_addr *sa = row_sa(c);
    const char *name;

    if (sa == NULL || sa->n == 0)
        return NULL;
    name = ha_syms_str(&c->prof->syms,
                       c->prof->syms.frames[sa->first + c->q].func);
    return *name ? name : NULL;
}

/* heap_profile: true when raw frame j of stack i holds a row. */
static bool
frame_shown(const stacks_cursor *c, size_t j)
{
    return ha_heapv2_stack_frames(&c->prof->p, c->i)[j] < HA_AGG_HIGH_ADDR;
}

/* heap_profile: moves to the first row at or after stack i, frame j
 * (q = 0), skipping frames with no row and stacks with none left.
 * Returns -1 on allocation failure. */
static int
profile_settle(stacks_cursor *c, bool new_stack)
{
    for (;;) {
        size_t n;

        if (c->i >= c->end)
            return 0;
        n = c->prof->p.stacks[c->i].n_frames;
        if (new_stack) {
            size_t start = ha_agg_walker_stack(c->walker, &c->prof->p, c->i);
            struct ha_agg_cut cut;

            if (start == SIZE_MAX)
                return -1;
            ha_agg_walker_cut(c->walker, &cut);
            c->j = start;
            /* The site may be inlined where a wrapper was: its frame's
             * rows start past the wrapper's. */
            c->q = start < n && row_sa(c) != NULL && cut.skip < row_sa(c)->n
                       ? cut.skip
                       : 0;
            c->depth = 0;
            new_stack = false;
        }
        while (c->j < n && !frame_shown(c, c->j))
            c->j++;
        if (c->j < n)
            return 0;
        c->i++;
        new_stack = true;
    }
}

/* heap_profile: the next row, whatever its function. */
static int
profile_step(stacks_cursor *c)
{
    const struct ha_syms_addr *sa = row_sa(c);
    uint32_t rows = sa != NULL && sa->n > 0 ? sa->n : 1;

    c->depth++;
    if (++c->q < rows)
        return 0;
    c->q = 0;
    c->j++;
    return profile_settle(c, false);
}

/* heap_profile: steps over rows the function push-down excludes. */
static int
profile_skip(stacks_cursor *c)
{
    while (c->only != NULL && c->i < c->end) {
        const char *fn = row_function(c);

        if (fn != NULL ? strcmp(fn, c->only) == 0
                       : (snprintf(c->addr, sizeof(c->addr), "0x%016" PRIx64,
                                   ha_agg_lookup_pc(
                                       ha_heapv2_stack_frames(&c->prof->p,
                                                              c->i),
                                       c->j)),
                          strcmp(c->addr, c->only) == 0))
            return 0;
        if (profile_step(c) != 0)
            return -1;
    }
    return 0;
}

static int
stacks_filter_common(stacks_cursor *c, const char *what, int idxNum,
                     int argc, sqlite3_value **argv)
{
    heap_vtab *vt = (heap_vtab *)c->base.pVtab;
    int rc;
    int at = 1;
    long long only_id = -1;

    stacks_clear(c);
    if (!(idxNum & HA_HEAP_IDX_ARGS) || argc < 1)
        return ha_vtab_set_errmsg(&vt->base,
                                  "%s needs a dump: SELECT * FROM %s('<file "
                                  "name from stats_heap_dumps>') or "
                                  "%s('live')",
                                  what, what, what);
    if ((idxNum & HA_HEAP_IDX_PUSH(0)) && at < argc) {
        sqlite3_value *v = argv[at++];

        /* Anything but a whole number matches no stack. */
        only_id = sqlite3_value_numeric_type(v) == SQLITE_INTEGER
                      ? sqlite3_value_int64(v)
                      : 0;
    }
    if (c->per_frame && (idxNum & HA_HEAP_IDX_PUSH(1)) && at < argc) {
        const unsigned char *fn = sqlite3_value_text(argv[at++]);

        if ((c->only = strdup(fn ? (const char *)fn : "")) == NULL)
            return SQLITE_NOMEM;
    }
    if (!c->per_frame && (idxNum & HA_HEAP_IDX_PUSH(1)) && at < argc &&
        (c->seconds = sqlite3_value_dup(argv[at++])) == NULL)
        return SQLITE_NOMEM;
    if (!c->per_frame && (idxNum & HA_HEAP_IDX_PUSH(2)) && at < argc &&
        (c->thread = sqlite3_value_dup(argv[at++])) == NULL)
        return SQLITE_NOMEM;
    if (c->thread != NULL && sqlite3_value_type(c->thread) != SQLITE_NULL) {
        if ((rc = ha_heap_vtab_thread(&vt->base, what, c->thread, &c->m)) !=
            SQLITE_OK)
            return rc;
        c->by_thread = true;
    }
    if ((rc = ha_heap_vtab_profile(&vt->base, what, argv[0], c->seconds,
                                   &c->prof)) != SQLITE_OK)
        return rc;
    if ((c->walker = ha_agg_walker_new(&c->prof->syms)) == NULL)
        return SQLITE_NOMEM;
    c->i = 0;
    c->end = c->prof->p.n_stacks;
    if (idxNum & HA_HEAP_IDX_PUSH(0)) {
        if (only_id >= 1 && (unsigned long long)only_id <= c->end) {
            c->i = (size_t)only_id - 1;
            c->end = c->i + 1;
        } else {
            c->end = 0;
        }
    }
    thread_settle(c);
    return SQLITE_OK;
}

static int
stacks_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
              int argc, sqlite3_value **argv)
{
    (void)idxStr;
    return stacks_filter_common((stacks_cursor *)cur, "heap_stacks", idxNum,
                                argc, argv);
}

static int
profile_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr,
               int argc, sqlite3_value **argv)
{
    stacks_cursor *c = (stacks_cursor *)cur;
    int rc;

    (void)idxStr;
    c->per_frame = true;
    rc = stacks_filter_common(c, "heap_profile", idxNum, argc, argv);
    if (rc != SQLITE_OK)
        return rc;
    if (profile_settle(c, true) != 0 || profile_skip(c) != 0)
        return SQLITE_NOMEM;
    return SQLITE_OK;
}

static int
stacks_next(sqlite3_vtab_cursor *cur)
{
    stacks_cursor *c = (stacks_cursor *)cur;

    if (!c->per_frame) {
        c->i++;
        thread_settle(c);
        return SQLITE_OK;
    }
    if (profile_step(c) != 0 || profile_skip(c) != 0)
        return SQLITE_NOMEM;
    return SQLITE_OK;
}

static int
stacks_eof(sqlite3_vtab_cursor *cur)
{
    stacks_cursor *c = (stacks_cursor *)cur;

    return c->prof == NULL || c->i >= c->end;
}

/* heap_stacks: builds the current stack's collapsed line once. */
static int
stacks_line(stacks_cursor *c)
{
    if (c->line_for == c->i + 1)
        return 0;
    if (ha_agg_walker_collapsed(c->walker, &c->prof->p, c->i, &c->line) !=
        0)
        return -1;
    c->line_for = c->i + 1;
    return 0;
}

static sqlite3_int64
rounded(double v)
{
    return (sqlite3_int64)(v < 0 ? v - 0.5 : v + 0.5);
}

static int
stacks_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    stacks_cursor *c = (stacks_cursor *)cur;
    const struct ha_heapv2_stack *s = &c->prof->p.stacks[c->i];

    switch (col) {
    case 0:
        sqlite3_result_int64(ctx, (sqlite3_int64)c->i + 1);
        break;
    case 1:
        sqlite3_result_int64(ctx, rounded(s->bytes * c->share[1]));
        break;
    case 2:
        sqlite3_result_int64(ctx, rounded(s->objs * c->share[0]));
        break;
    case 3:
    case 4:
        if (stacks_line(c) != 0)
            return SQLITE_NOMEM;
        if (col == 4) {
            sqlite3_result_text(ctx, c->line.len ? (const char *)c->line.data
                                                 : "",
                                (int)c->line.len, SQLITE_TRANSIENT);
        } else {
            long long n = c->line.len > 0;

            for (size_t k = 0; k < c->line.len; k++)
                n += c->line.data[k] == ';';
            sqlite3_result_int64(ctx, n);
        }
        break;
    case 5:
    case 6:
        if (ha_heapv2_has_accum(&c->prof->p))
            sqlite3_result_int64(ctx,
                                 rounded(col == 5
                                             ? s->accum_bytes * c->share[3]
                                             : s->accum_objs * c->share[2]));
        break;
    case STACKS_COL_WRAPPER: {
        struct ha_buf w = HA_BUF_INIT;

        if (ha_agg_walker_wrapper(c->walker, &c->prof->p, c->i, &w) != 0) {
            ha_buf_free(&w);
            return SQLITE_NOMEM;
        }
        if (w.len > 0)
            sqlite3_result_text(ctx, (const char *)w.data, (int)w.len,
                                SQLITE_TRANSIENT);
        ha_buf_free(&w);
        break;
    }
    case STACKS_COL_DUMP:
        sqlite3_result_text(ctx, c->prof->name, -1, SQLITE_TRANSIENT);
        break;
    case STACKS_COL_SECONDS:
        if (c->seconds != NULL)
            sqlite3_result_value(ctx, c->seconds);
        break;
    case STACKS_COL_THREAD:
        if (c->thread != NULL)
            sqlite3_result_value(ctx, c->thread);
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

static int
profile_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    stacks_cursor *c = (stacks_cursor *)cur;
    const struct ha_heapv2_stack *s = &c->prof->p.stacks[c->i];
    const struct ha_syms *syms = &c->prof->syms;
    const struct ha_syms_addr *sa = row_sa(c);
    const struct ha_syms_frame *fr =
        sa != NULL && sa->n > 0 ? &syms->frames[sa->first + c->q] : NULL;
    uint64_t pc = ha_agg_lookup_pc(ha_heapv2_stack_frames(&c->prof->p, c->i),
                                   c->j);
    const char *fn;

    switch (col) {
    case 0:
        sqlite3_result_int64(ctx, (sqlite3_int64)c->i + 1);
        break;
    case 1:
        sqlite3_result_int64(ctx, c->depth);
        break;
    case 2:
    case 3:
        fn = col == 3 ? row_function(c) : NULL;
        if (fn != NULL) {
            sqlite3_result_text(ctx, fn, -1, SQLITE_TRANSIENT);
        } else {
            snprintf(c->addr, sizeof(c->addr), "0x%016" PRIx64, pc);
            sqlite3_result_text(ctx, c->addr, -1, SQLITE_TRANSIENT);
        }
        break;
    case 4:
        if (fr != NULL && fr->file != 0)
            sqlite3_result_text(ctx, ha_syms_str(syms, fr->file), -1,
                                SQLITE_TRANSIENT);
        break;
    case 5:
        if (fr != NULL && fr->line != 0)
            sqlite3_result_int64(ctx, fr->line);
        break;
    case 6:
        if (sa != NULL && sa->module != 0)
            sqlite3_result_text(ctx, ha_syms_str(syms, sa->module), -1,
                                SQLITE_TRANSIENT);
        break;
    case 7:
        sqlite3_result_int(ctx, sa != NULL && c->q + 1 < sa->n);
        break;
    case 8:
        sqlite3_result_int64(ctx, rounded(s->bytes));
        break;
    case 9:
        sqlite3_result_int64(ctx, rounded(s->objs));
        break;
    case 10:
        sqlite3_result_int(ctx, sa != NULL && (sa->flags & HA_SYMS_STALE));
        break;
    default:
        break;
    }
    return SQLITE_OK;
}

const sqlite3_module ha_heap_stacks_module = {
    0,                  /* iVersion */
    stacks_connect,     /* xCreate: a session's own (temp) */
    stacks_connect,     /* xConnect */
    stacks_best_index,  /* xBestIndex - the dump; stack_id = */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    stacks_open,        /* xOpen */
    stacks_close,       /* xClose */
    stacks_filter,      /* xFilter */
    stacks_next,        /* xNext */
    stacks_eof,         /* xEof */
    stacks_column,      /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};

const sqlite3_module ha_heap_profile_module = {
    0,                  /* iVersion */
    profile_connect,    /* xCreate: a session's own (temp) */
    profile_connect,    /* xConnect */
    profile_best_index, /* xBestIndex - the dump; stack_id =, function = */
    ha_heap_vtab_disconnect, /* xDisconnect */
    ha_heap_vtab_disconnect, /* xDestroy */
    stacks_open,        /* xOpen */
    stacks_close,       /* xClose */
    profile_filter,     /* xFilter */
    stacks_next,        /* xNext */
    stacks_eof,         /* xEof */
    profile_column,     /* xColumn */
    ha_heap_vtab_rowid,      /* xRowid */
    NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
