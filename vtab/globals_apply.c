/* SPDX-License-Identifier: MIT
 *
 * global_variables' staged changes applied at xSync (globals.h), in
 * order, all or nothing: a failure undoes the ones applied before it.
 */
#include "vtab/globals.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/blockio.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "heap/dumpjob.h"
#include "heap/logwin.h"
#include "heap/mallctl.h"
#include "heap/symcopy.h"
#include "heap/value.h"
#include "prof/breakdown.h"

/* ------------------------------------------------------------------
 * Applying (xSync)
 * ------------------------------------------------------------------ */

void
ha_globals_set_text(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* Path of the running executable for the jeprof hint. */
static void
self_exe(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);

    if (n <= 0) {
        ha_strlcpy(buf, "heapadmind", len);
        return;
    }
    buf[n] = '\0';
}

/* arena.<i>.purge (HA_MALLCTL_ARENAS_ALL: every arena), with what it
 * returned in info: the dirty and muzzy pages before and after, read
 * around it from a fresh epoch. Returns 0 or mallctl's errno. */
static int
gv_purge(globals_vtab *vt, unsigned arena, char *info, size_t infolen)
{
    const struct ha_mallctl_ops *ops = ha_globals_ops(vt);
    char name[64], ctl[64], who[32];
    size_t before = 0, after = 0, page = 0, m;
    bool counted;
    int rc;

    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", arena);
    (void)ha_mallctl_epoch(ops);
    counted = ha_mallctl_read_size(ops, "arenas.page", &page) == 0 &&
              ha_mallctl_read_size(ops, name, &before) == 0;
    snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", arena);
    if (counted && ha_mallctl_read_size(ops, name, &m) == 0)
        before += m;
    snprintf(ctl, sizeof(ctl), "arena.%u.purge", arena);
    if ((rc = ha_mallctl_action(ops, ctl)) != 0)
        return rc;
    (void)ha_mallctl_epoch(ops);
    vt->conn->ctx->heap->stats_epoch_ms = 0; /* the next scan refreshes */
    snprintf(name, sizeof(name), "stats.arenas.%u.pdirty", arena);
    counted = counted && ha_mallctl_read_size(ops, name, &after) == 0;
    snprintf(name, sizeof(name), "stats.arenas.%u.pmuzzy", arena);
    if (counted && ha_mallctl_read_size(ops, name, &m) == 0)
        after += m;
    if (arena == HA_MALLCTL_ARENAS_ALL)
        ha_strlcpy(who, "all arenas", sizeof(who));
    else
        snprintf(who, sizeof(who), "arena %u", arena);
    if (counted) {
        char bytes[32];

        ha_breakdown_format_bytes(
            before > after ? (int64_t)((before - after) * page) : 0, bytes,
            sizeof(bytes));
        ha_globals_set_text(info, infolen,
                 "%s purged (%s): %s of unused pages returned to the "
                 "system (dirty and muzzy pages %zu -> %zu)",
                 who, ctl, bytes, before, after);
    } else {
        ha_globals_set_text(info, infolen,
                 "unused dirty pages of %s were returned to the system (%s)",
                 who, ctl);
    }
    return 0;
}

/* Sets the arenas a per-arena decay list names, recording what they had
 * in c->undo. Returns 0 or the first errno value. */
static int
gv_apply_arena_decay(globals_vtab *vt, struct gv_change *c, char *info,
                     size_t infolen)
{
    const struct ha_mallctl_ops *ops = ha_globals_ops(vt);
    const struct gv_row *r = &ha_globals_rows[c->row];
    const char *kind = ha_globals_decay_kind(r);
    struct ha_value_arena_pair *pairs;
    char name[64], why[256];
    unsigned narenas = 0;
    size_t n = 0, used = 0;
    int rc = 0;

    memset(&c->undo, 0, sizeof(c->undo));
    c->undo.def = HA_MALLCTL_DECAY_NONE;
    if ((rc = ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas)) !=
        0)
        return rc;
    pairs = malloc(GV_ARENA_LIST_MAX * sizeof(*pairs));
    c->undo.arena = malloc((narenas ? narenas : 1) * sizeof(ssize_t));
    if (pairs == NULL || c->undo.arena == NULL) {
        free(pairs);
        ha_mallctl_decay_undo_free(&c->undo);
        return ENOMEM;
    }
    c->undo.n = narenas;
    for (unsigned i = 0; i < narenas; i++)
        c->undo.arena[i] = HA_MALLCTL_DECAY_NONE;
    if (ha_value_parse_arena_list(c->text, narenas, -1, GV_DECAY_MAX, pairs,
                                  GV_ARENA_LIST_MAX, &n, why,
                                  sizeof(why)) != 0) {
        rc = EINVAL;
        goto out;
    }
    ha_globals_set_text(info, infolen, "%s:", r->name);
    used = strlen(info);
    for (size_t i = 0; i < n; i++) {
        ssize_t old = 0;

        snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", pairs[i].arena,
                 kind);
        rc = ha_mallctl_write_ssize(ops, name, (ssize_t)pairs[i].value, &old);
        if (rc != 0)
            break;
        c->undo.arena[pairs[i].arena] = old;
        if (used + 1 < infolen) {
            ha_globals_set_text(info + used, infolen - used, "%s arena %u %zd -> %lld",
                     i ? "," : "", pairs[i].arena, old, pairs[i].value);
            used = strlen(info);
        }
    }
    if (n == 0)
        ha_globals_set_text(info, infolen, "%s: no arena listed, nothing changed",
                 r->name);
out:
    free(pairs);
    if (rc != 0) {
        (void)ha_mallctl_restore_decay(ops, kind, &c->undo);
        ha_mallctl_decay_undo_free(&c->undo);
    }
    return rc;
}

/* dump_now's job: the dump job (first: ha_dump_job_run takes it) and
 * the heap to tell once its file is published, on the loop. */
struct gv_dump_req {
    struct ha_dump_job dj;
    struct ha_heap *heap;
};

/* The statement stopped waiting (KILL, max_execution_time, shutdown, or
 * disk_timeout_ms on a slow disk): the dump still completes on the disk
 * worker, says where it went, and is pushed like any other (the heap
 * outlives every done callback of its dump worker: ha_engine_free). */
static void
gv_dump_discard(void *arg)
{
    struct gv_dump_req *r = arg;
    struct ha_dump_job *j = &r->dj;

    if (j->rc == 0 && j->file[0] != '\0') {
        ha_log_notice("%s: heap profile written to %s after the statement "
                      "that asked for it stopped waiting",
                      j->variable, j->file);
        ha_heap_published(r->heap);
    }
    free(r);
}

/* Writes a heap dump for variable off the loop; file receives its path.
 * Returns 0, or -1 with the reason in err. */
static int
gv_dump(globals_vtab *vt, const char *variable, char *file, size_t filelen,
        long long *bytes, char *err, size_t errlen)
{
    const struct ha_jemalloc_config *je = vt->conn->ctx->heap->je;
    struct ha_worker *w = vt->conn->ctx->heap->dump_worker;
    struct gv_dump_req *r;
    struct ha_dump_job *j;
    const char *busy;
    int64_t for_ms, timeout_ms, deadline;
    bool late = false;
    int rc;

    /* A disk worker stuck in another job (a sample, a dump of the
     * timers) for longer than the disk timeout would hold this one
     * behind it: said at once. */
    if (ha_blockio_worker_stuck(w, &busy, &for_ms)) {
        ha_globals_set_text(err, errlen,
                            "%s: the disk worker has been %s for %lld s: "
                            "the datadir's disk is not answering; no dump "
                            "was taken",
                            variable, busy, (long long)(for_ms / 1000));
        return -1;
    }
    if ((r = calloc(1, sizeof(*r))) == NULL) {
        ha_globals_set_text(err, errlen, "%s: out of memory", variable);
        return -1;
    }
    r->heap = vt->conn->ctx->heap;
    j = &r->dj;
    /* The dump, its build-ids and retention on the worker (dumpjob.h);
     * no free-space floor: an operator's dump is never skipped. */
    ha_dump_job_init(j, vt->conn->ctx->heap, variable, "manual");
    j->ops = ha_globals_ops(vt);
    ha_strlcpy(j->reason, variable, sizeof(j->reason));
    j->dump = true;
    j->rc = -1;
    if (je != NULL) {
        j->retain = true;
        j->retention_count = je->dump_retention_count;
        j->retention_bytes = je->dump_retention_bytes;
    }
    /* On -1 the job belongs to gv_dump_discard. The wait is bounded
     * like any wait for the disk (core/blockio.h). */
    deadline = ha_blockio_deadline(&timeout_ms);
    if (ha_task_offload_until(w, "writing a heap dump (dump_now)", deadline,
                              ha_dump_job_run, gv_dump_discard, r,
                              &late) != 0) {
        if (late)
            ha_globals_set_text(err, errlen,
                                "%s: the dump was not written within "
                                "disk_timeout_ms = %lld: the datadir's "
                                "disk is not answering; the dump goes on, "
                                "and its file will be in stats_heap_dumps "
                                "if the disk answers",
                                variable, (long long)timeout_ms);
        else
            ha_globals_set_text(err, errlen,
                     "%s: the statement stopped waiting (KILL, "
                     "max_execution_time or shutdown); the dump goes on and "
                     "its file will be in stats_heap_dumps",
                     variable);
        return -1;
    }
    rc = j->rc;
    *bytes = j->bytes;
    if (rc == 0) {
        /* Published (heap/dumpfiles.h: copied out of /dev/shm and linked
         * into the datadir by the job): the push's cue. */
        ha_strlcpy(file, j->file, filelen);
        ha_heap_published(r->heap);
    } else {
        ha_globals_set_text(err, errlen, "%s", j->err);
    }
    free(r);
    return rc;
}

/* Applies c. Returns 0 with an info message (maybe "") in info, or -1
 * with the reason in err. */
int
ha_globals_apply(globals_vtab *vt, struct gv_change *c, char *info, size_t infolen,
         char *err, size_t errlen)
{
    const struct ha_mallctl_ops *ops = ha_globals_ops(vt);
    const struct gv_row *r = &ha_globals_rows[c->row];
    struct ha_mallctl_failure f = {
        .mallctl = r->mallctl,
        .variable = r->name,
        .value = c->text,
        .prof_built = ha_mallctl_prof_built(ops),
    };
    char file[PATH_MAX], exe[PATH_MAX], rate[32];
    long long bytes = -1;
    size_t lg = 0;

    info[0] = '\0';
    switch (r->kind) {
    case GV_BOOL:
        f.allowed = HA_VALUE_BOOL_ALLOWED;
        f.errnum = ha_mallctl_write_bool(ops, r->mallctl, c->value != 0,
                                         &c->old_bool);
        break;
    case GV_LG_SAMPLE:
        f.allowed = GV_LG_SAMPLE_ALLOWED;
        f.errnum = ha_mallctl_read_size(ops, "prof.lg_sample", &lg);
        if (f.errnum != 0)
            break;
        c->old_lg = lg;
        ha_value_format_lg_bytes((unsigned)c->value, rate, sizeof(rate));
        if (lg == (size_t)c->value) {
            ha_globals_set_text(info, infolen,
                     "%s is already %lld (a sample every %s allocated on "
                     "average): nothing reset, the samples are kept",
                     r->name, c->value, rate);
            return 0;
        }
        f.mallctl = "prof.reset";
        f.errnum = ha_mallctl_write_size(ops, "prof.reset", (size_t)c->value);
        if (f.errnum == 0)
            ha_globals_set_text(info, infolen,
                     "%s set to %lld (a sample every %s allocated on "
                     "average); prof.reset discarded the heap profile "
                     "samples collected so far",
                     r->name, c->value, rate);
        break;
    case GV_DUMP:
        if (gv_dump(vt, r->name, file, sizeof(file), &bytes, err,
                    errlen) != 0)
            return -1;
        self_exe(exe, sizeof(exe));
        {
            /* SQL first: it names what jeprof would guess at in a
             * stripped library (docs/getting-started.md). */
            const char *base = strrchr(file, '/');

            base = base != NULL ? base + 1 : file;
            if (bytes >= 0)
                ha_globals_set_text(info, infolen,
                         "heap profile written to %s (%lld bytes); read it "
                         "with: SELECT * FROM heap_top('%s'); or jeprof "
                         "--text %s %s",
                         file, bytes, base, exe, file);
            else
                ha_globals_set_text(info, infolen,
                         "heap profile written to %s; read it with: SELECT "
                         "* FROM heap_top('%s'); or jeprof --text %s %s",
                         file, base, exe, file);
        }
        /* The portable copy: a failure leaves the dump a dump. */
        if (vt->conn->ctx->heap->dump_symbolized && file[0] == '/') {
            char sym[PATH_MAX + 8], why[512];
            size_t at = strlen(info);

            if (ha_symcopy_write(vt->conn->ctx->heap, file, sym, sizeof(sym), why,
                                 sizeof(why)) == 0)
                snprintf(info + at, infolen - at,
                         "; symbolized copy %.400s (jeprof --text %.400s, "
                         "no binary needed)",
                         sym, sym);
            else {
                ha_log_warn("%s: no symbolized copy: %s", file, why);
                snprintf(info + at, infolen - at,
                         "; the symbolized copy was not written: %.400s",
                         why);
            }
        }
        c->applied = true;
        return 0;
    case GV_RESET:
        f.errnum = ha_mallctl_action(ops, "prof.reset");
        if (f.errnum == 0 &&
            ha_mallctl_read_size(ops, "prof.lg_sample", &lg) == 0)
            ha_globals_set_text(info, infolen,
                     "prof.reset discarded the heap profile samples "
                     "collected so far; jemalloc-lg_prof_sample stays %zu",
                     lg);
        else if (f.errnum == 0)
            ha_globals_set_text(info, infolen,
                     "prof.reset discarded the heap profile samples "
                     "collected so far");
        break;
    case GV_DUMP_SYM:
        c->old_bool = vt->conn->ctx->heap->dump_symbolized;
        vt->conn->ctx->heap->dump_symbolized = c->value != 0;
        ha_globals_set_text(info, infolen,
                 c->value != 0
                     ? "%s set to true: dump_now also writes <dump>.sym, "
                       "which jeprof --text reads with no binary"
                     : "%s set to false: dump_now writes the dump alone",
                 r->name);
        break;
    case GV_STATS_AGE:
        c->old_lg = vt->conn->ctx->heap->stats_max_age_ms;
        vt->conn->ctx->heap->stats_max_age_ms = (unsigned)c->value;
        ha_globals_set_text(info, infolen,
                 c->value == 0
                     ? "%s set to %lld: every scan refreshes jemalloc's "
                       "statistics"
                     : "%s set to %lld: scans share one refresh of "
                       "jemalloc's statistics for up to that many ms "
                       "(stats_memory_jemalloc.stats_age_ms shows the age)",
                 r->name, c->value);
        break;
    case GV_PURGE:
        f.errnum = gv_purge(vt, HA_MALLCTL_ARENAS_ALL, info, infolen);
        break;
    case GV_PURGE_ARENA:
        f.errnum = gv_purge(vt,
                            c->value < 0 ? HA_MALLCTL_ARENAS_ALL
                                         : (unsigned)c->value,
                            info, infolen);
        break;
    case GV_DECAY: {
        char was[32];
        ssize_t old = 0;

        (void)ha_mallctl_read_ssize(ops, r->mallctl, &old);
        f.allowed = GV_DECAY_ALLOWED;
        f.errnum = ha_mallctl_set_decay(ops, ha_globals_decay_kind(r),
                                        (ssize_t)c->value, &c->undo);
        if (f.errnum != 0) {
            (void)ha_mallctl_restore_decay(ops, ha_globals_decay_kind(r), &c->undo);
            ha_mallctl_decay_undo_free(&c->undo);
            break;
        }
        snprintf(was, sizeof(was), "%zd", old);
        ha_globals_set_text(info, infolen,
                 "%s set to %lld (was %s) in every arena in use and for new "
                 "ones: %s",
                 r->name, c->value, was,
                 c->value < 0 ? "freed pages are kept until purged"
                 : c->value == 0
                     ? "freed pages go back to the system at once"
                     : "freed pages go back to the system over that many "
                       "ms");
        break;
    }
    case GV_ARENA_DECAY:
        f.allowed = GV_DECAY_ALLOWED;
        f.errnum = gv_apply_arena_decay(vt, c, info, infolen);
        break;
    case GV_LOG_NOW: {
        struct ha_heap *heap = vt->conn->ctx->heap;
        char why[PATH_MAX + 512];
        int rc = c->value > 0
                     ? ha_logwin_open(heap, (unsigned)c->value, info,
                                      infolen, why, sizeof(why))
                     : ha_logwin_close(heap, info, infolen, why, sizeof(why));

        if (rc == HA_HEAP_STOPPED) {
            ha_globals_set_text(err, errlen,
                                "%s: the statement stopped waiting (KILL, "
                                "max_execution_time or shutdown); the "
                                "window %s anyway (jemalloc-log_state)",
                                r->name,
                                c->value > 0 ? "opens" : "closes");
            return -1;
        }
        if (rc != 0) {
            ha_globals_set_text(err, errlen, "%s = '%s': %s", r->name,
                                c->text, why);
            return -1;
        }
        c->applied = true;
        return 0;
    }
    case GV_LOG_MAX:
        c->old_lg = (size_t)vt->conn->ctx->heap->log_max_bytes;
        vt->conn->ctx->heap->log_max_bytes = c->value;
        ha_globals_set_text(info, infolen,
                            "%s set to %lld: a lifetime window closes early "
                            "once jemalloc holds that much memory for its "
                            "log (an open one, from its next second)",
                            r->name, c->value);
        break;
    case GV_WRAPPERS: {
        struct ha_heap *heap = vt->conn->ctx->heap;

        if ((c->old_str = sqlite3_mprintf("%s", heap->alloc_wrappers)) ==
            NULL) {
            ha_globals_set_text(err, errlen, "%s: out of memory", r->name);
            return -1;
        }
        ha_strlcpy(heap->alloc_wrappers, c->str, sizeof(heap->alloc_wrappers));
        ha_globals_set_text(info, infolen,
                            "%s set to '%s': heap tables, pages and pprof "
                            "cut past these allocation wrappers from their "
                            "next query (heap_wrappers(dump) lists them)",
                            r->name, c->str);
        break;
    }
    case GV_RECENT_MAX: {
        ssize_t old = 0;

        f.allowed = "0 (off) to 100000";
        f.errnum = ha_mallctl_write_ssize(ops, r->mallctl,
                                          (ssize_t)c->value, &old);
        if (f.errnum != 0)
            break;
        c->old_lg = (size_t)old;
        if (c->value > 0)
            ha_globals_set_text(info, infolen,
                                "%s set to %lld (was %zd): "
                                "stats_jemalloc_recent shows the last that "
                                "many sampled allocations",
                                r->name, c->value, old);
        else
            ha_globals_set_text(info, infolen,
                                "%s set to 0 (was %zd): jemalloc keeps no "
                                "recent allocations",
                                r->name, old);
        break;
    }
    default:
        f.errnum = EPERM;
        break;
    }
    if (f.errnum != 0) {
        ha_mallctl_errmsg(&f, err, errlen);
        return -1;
    }
    c->applied = true;
    return 0;
}

/* Puts back the settings of changes [0, n) that were applied, newest
 * first. Appends "undone: ..." / "already done: ..." to report. */
void
ha_globals_undo(globals_vtab *vt, int n, char *report, size_t len)
{
    const struct ha_mallctl_ops *ops = ha_globals_ops(vt);
    char undone[512] = "", done[512] = "", failed[512] = "";

    for (int i = n - 1; i >= 0; i--) {
        struct gv_change *c = &vt->changes[i];
        const struct gv_row *r = &ha_globals_rows[c->row];
        char *list;
        int rc = 0;

        if (!c->applied)
            continue;
        if (r->kind == GV_BOOL)
            rc = ha_mallctl_write_bool(ops, r->mallctl, c->old_bool, NULL);
        else if (r->kind == GV_LG_SAMPLE && c->old_lg != (size_t)c->value)
            rc = ha_mallctl_write_size(ops, "prof.reset", c->old_lg);
        else if (r->kind == GV_STATS_AGE)
            vt->conn->ctx->heap->stats_max_age_ms = (unsigned)c->old_lg;
        else if (r->kind == GV_DUMP_SYM)
            vt->conn->ctx->heap->dump_symbolized = c->old_bool;
        else if (r->kind == GV_LOG_MAX)
            vt->conn->ctx->heap->log_max_bytes = (long long)c->old_lg;
        else if (r->kind == GV_WRAPPERS && c->old_str != NULL)
            ha_strlcpy(vt->conn->ctx->heap->alloc_wrappers, c->old_str,
                       sizeof(vt->conn->ctx->heap->alloc_wrappers));
        else if (r->kind == GV_RECENT_MAX)
            rc = ha_mallctl_write_ssize(ops, r->mallctl,
                                        (ssize_t)c->old_lg, NULL);
        else if (r->kind == GV_DECAY || r->kind == GV_ARENA_DECAY)
            rc = ha_mallctl_restore_decay(ops, ha_globals_decay_kind(r), &c->undo);
        list = !ha_globals_is_action(r) ? (rc == 0 ? undone : failed) : done;
        if (list[0] != '\0')
            strncat(list, ", ", 511 - strlen(list));
        strncat(list, r->name, 511 - strlen(list));
    }
    report[0] = '\0';
    if (undone[0] == '\0' && done[0] == '\0' && failed[0] == '\0') {
        snprintf(report, len, "; nothing was changed");
        return;
    }
    if (undone[0] != '\0')
        ha_globals_set_text(report + strlen(report), len - strlen(report),
                 "; put back: %s", undone);
    if (failed[0] != '\0')
        ha_globals_set_text(report + strlen(report), len - strlen(report),
                 "; could not put back: %s", failed);
    if (done[0] != '\0')
        ha_globals_set_text(report + strlen(report), len - strlen(report),
                 "; already done and not undoable: %s", done);
}

/* Forgets the staged changes [from, n_changes), freeing what they own. */
void
ha_globals_drop(globals_vtab *vt, int from)
{
    for (int i = from; i < vt->n_changes; i++) {
        ha_mallctl_decay_undo_free(&vt->changes[i].undo);
        sqlite3_free(vt->changes[i].str);
        sqlite3_free(vt->changes[i].old_str);
        vt->changes[i].str = vt->changes[i].old_str = NULL;
    }
    if (from < vt->n_changes)
        vt->n_changes = from;
}

void
ha_globals_clear(globals_vtab *vt)
{
    ha_globals_drop(vt, 0);
    vt->n_marks = 0;
}

