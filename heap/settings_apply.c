/* SPDX-License-Identifier: MIT
 *
 * The settings engine's commit (settings.h): the staged changes applied
 * in order, all or nothing: a failure puts back the ones applied before
 * it. Each change is one small function per kind of variable; the
 * actions that cannot be undone are in settings_act.c.
 */
#include "heap/settings.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/log.h"
#include "core/util.h"
#include "heap/heap.h"
#include "heap/mallctl.h"
#include "heap/settings_impl.h"
#include "heap/value.h"

/* ------------------------------------------------------------------
 * One change per kind: each returns 0 or mallctl's errno value (f says
 * what was tried, for the message), with what it did in info
 * ------------------------------------------------------------------ */

static int
apply_bool(const struct ha_mallctl_ops *ops, struct ha_settings_change *c,
           struct ha_mallctl_failure *f)
{
    const struct ha_settings_row *r = &ha_settings_rows[c->row];

    f->allowed = HA_VALUE_BOOL_ALLOWED;
    return ha_mallctl_write_bool(ops, r->mallctl, c->value != 0,
                                 &c->old_bool);
}

/* prof.reset(n): the rate changes only with the samples discarded, so
 * the same rate is left alone (c->old == c->value: nothing to undo). */
static int
apply_lg_sample(const struct ha_mallctl_ops *ops,
                struct ha_settings_change *c, struct ha_mallctl_failure *f,
                char *info, size_t infolen)
{
    const struct ha_settings_row *r = &ha_settings_rows[c->row];
    char rate[32];
    size_t lg = 0;
    int rc;

    f->allowed = GV_LG_SAMPLE_ALLOWED;
    if ((rc = ha_mallctl_read_size(ops, "prof.lg_sample", &lg)) != 0)
        return rc;
    c->old = (long long)lg;
    ha_value_format_lg_bytes((unsigned)c->value, rate, sizeof(rate));
    if (c->old == c->value) {
        ha_err_set(info, infolen,
                   "%s is already %lld (a sample every %s allocated on "
                   "average): nothing reset, the samples are kept",
                   r->name, c->value, rate);
        return 0;
    }
    f->mallctl = "prof.reset";
    rc = ha_mallctl_write_size(ops, "prof.reset", (size_t)c->value);
    if (rc == 0)
        ha_err_set(info, infolen,
                   "%s set to %lld (a sample every %s allocated on "
                   "average); prof.reset discarded the heap profile "
                   "samples collected so far",
                   r->name, c->value, rate);
    return rc;
}

static int
apply_reset(const struct ha_mallctl_ops *ops, char *info, size_t infolen)
{
    size_t lg = 0;
    int rc = ha_mallctl_action(ops, "prof.reset");

    if (rc == 0 && ha_mallctl_read_size(ops, "prof.lg_sample", &lg) == 0)
        ha_err_set(info, infolen,
                   "prof.reset discarded the heap profile samples "
                   "collected so far; jemalloc-lg_prof_sample stays %zu",
                   lg);
    else if (rc == 0)
        ha_err_set(info, infolen,
                   "prof.reset discarded the heap profile samples "
                   "collected so far");
    return rc;
}

/* arenas.<kind>_decay_ms and every arena in use, the old settings in
 * c->undo. */
static int
apply_decay(const struct ha_mallctl_ops *ops, struct ha_settings_change *c,
            struct ha_mallctl_failure *f, char *info, size_t infolen)
{
    const struct ha_settings_row *r = &ha_settings_rows[c->row];
    const char *kind = ha_settings_decay_kind(r);
    ssize_t old = 0;
    int rc;

    (void)ha_mallctl_read_ssize(ops, r->mallctl, &old);
    f->allowed = GV_DECAY_ALLOWED;
    rc = ha_mallctl_set_decay(ops, kind, (ssize_t)c->value, &c->undo);
    if (rc != 0) {
        (void)ha_mallctl_restore_decay(ops, kind, &c->undo);
        ha_mallctl_decay_undo_free(&c->undo);
        return rc;
    }
    ha_err_set(info, infolen,
               "%s set to %lld (was %zd) in every arena in use and for new "
               "ones: %s",
               r->name, c->value, old,
               c->value < 0 ? "freed pages are kept until purged"
               : c->value == 0
                   ? "freed pages go back to the system at once"
                   : "freed pages go back to the system over that many ms");
    return 0;
}

/* Sets the arenas a per-arena decay list names, recording what they had
 * in c->undo. Returns 0 or the first errno value. */
static int
apply_arena_decay(const struct ha_mallctl_ops *ops,
                  struct ha_settings_change *c, char *info, size_t infolen)
{
    const struct ha_settings_row *r = &ha_settings_rows[c->row];
    const char *kind = ha_settings_decay_kind(r);
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
    ha_err_set(info, infolen, "%s:", r->name);
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
            ha_err_set(info + used, infolen - used, "%s arena %u %zd -> %lld",
                       i ? "," : "", pairs[i].arena, old, pairs[i].value);
            used = strlen(info);
        }
    }
    if (n == 0)
        ha_err_set(info, infolen, "%s: no arena listed, nothing changed",
                   r->name);
out:
    free(pairs);
    if (rc != 0) {
        (void)ha_mallctl_restore_decay(ops, kind, &c->undo);
        ha_mallctl_decay_undo_free(&c->undo);
    }
    return rc;
}

static int
apply_recent_max(const struct ha_mallctl_ops *ops,
                 struct ha_settings_change *c, struct ha_mallctl_failure *f,
                 char *info, size_t infolen)
{
    const struct ha_settings_row *r = &ha_settings_rows[c->row];
    ssize_t old = 0;
    int rc;

    f->allowed = "0 (off) to 100000";
    rc = ha_mallctl_write_ssize(ops, r->mallctl, (ssize_t)c->value, &old);
    if (rc != 0)
        return rc;
    c->old = (long long)old;
    if (c->value > 0)
        ha_err_set(info, infolen,
                   "%s set to %lld (was %zd): stats_jemalloc_recent shows "
                   "the last that many sampled allocations",
                   r->name, c->value, old);
    else
        ha_err_set(info, infolen,
                   "%s set to 0 (was %zd): jemalloc keeps no recent "
                   "allocations",
                   r->name, old);
    return 0;
}

/* The heap service's own settings: never fail. */
static void
apply_heap_field(struct ha_heap *heap, struct ha_settings_change *c,
                 char *info, size_t infolen)
{
    const char *name = ha_settings_rows[c->row].name;

    switch (ha_settings_rows[c->row].kind) {
    case GV_DUMP_SYM:
        c->old_bool = heap->dump_symbolized;
        heap->dump_symbolized = c->value != 0;
        ha_err_set(info, infolen,
                   c->value != 0
                       ? "%s set to true: dump_now also writes <dump>.sym, "
                         "which jeprof --text reads with no binary"
                       : "%s set to false: dump_now writes the dump alone",
                   name);
        break;
    case GV_STATS_AGE:
        c->old = heap->stats_max_age_ms;
        heap->stats_max_age_ms = (unsigned)c->value;
        ha_err_set(info, infolen,
                   c->value == 0
                       ? "%s set to %lld: every scan refreshes jemalloc's "
                         "statistics"
                       : "%s set to %lld: scans share one refresh of "
                         "jemalloc's statistics for up to that many ms "
                         "(stats_memory_jemalloc.stats_age_ms shows the "
                         "age)",
                   name, c->value);
        break;
    case GV_LOG_MAX:
        c->old = heap->log_max_bytes;
        heap->log_max_bytes = c->value;
        ha_err_set(info, infolen,
                   "%s set to %lld: a lifetime window closes early once "
                   "jemalloc holds that much memory for its log (an open "
                   "one, from its next second)",
                   name, c->value);
        break;
    default:
        break;
    }
}

/* alloc_wrappers: the canonical text staged, the old one kept. */
static int
apply_wrappers(struct ha_heap *heap, struct ha_settings_change *c,
               char *info, size_t infolen, char *err, size_t errlen)
{
    const char *name = ha_settings_rows[c->row].name;

    if ((c->old_str = strdup(heap->alloc_wrappers)) == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", name);
        return -1;
    }
    ha_strlcpy(heap->alloc_wrappers, c->str, sizeof(heap->alloc_wrappers));
    ha_err_set(info, infolen,
               "%s set to '%s': heap tables, pages and pprof cut past these "
               "allocation wrappers from their next query (heap_wrappers("
               "dump) lists them)",
               name, c->str);
    return 0;
}

/* The changes that end in a mallctl errno (or in none). */
static int
apply_setting(struct ha_heap *heap, struct ha_settings_change *c,
              struct ha_mallctl_failure *f, char *info, size_t infolen)
{
    const struct ha_mallctl_ops *ops = heap->ops;

    switch (ha_settings_rows[c->row].kind) {
    case GV_BOOL:
        return apply_bool(ops, c, f);
    case GV_LG_SAMPLE:
        return apply_lg_sample(ops, c, f, info, infolen);
    case GV_RESET:
        return apply_reset(ops, info, infolen);
    case GV_PURGE:
        return ha_settings_purge(heap, HA_MALLCTL_ARENAS_ALL, info, infolen);
    case GV_PURGE_ARENA:
        return ha_settings_purge(heap,
                                 c->value < 0 ? HA_MALLCTL_ARENAS_ALL
                                              : (unsigned)c->value,
                                 info, infolen);
    case GV_DECAY:
        return apply_decay(ops, c, f, info, infolen);
    case GV_ARENA_DECAY:
        f->allowed = GV_DECAY_ALLOWED;
        return apply_arena_decay(ops, c, info, infolen);
    case GV_RECENT_MAX:
        return apply_recent_max(ops, c, f, info, infolen);
    case GV_DUMP_SYM:
    case GV_STATS_AGE:
    case GV_LOG_MAX:
        apply_heap_field(heap, c, info, infolen);
        return 0;
    default:
        return EPERM;
    }
}

/* Applies c. Returns 0 with an info message (maybe "") in info, or -1
 * with the reason in err. */
static int
apply(struct ha_heap *heap, struct ha_settings_change *c, char *info,
      size_t infolen, char *err, size_t errlen)
{
    const struct ha_settings_row *r = &ha_settings_rows[c->row];
    struct ha_mallctl_failure f = {
        .mallctl = r->mallctl,
        .variable = r->name,
        .value = c->text,
        .prof_built = ha_mallctl_prof_built(heap->ops),
    };
    int rc = 0;

    info[0] = '\0';
    if (r->kind == GV_DUMP)
        rc = ha_settings_dump_now(heap, r->name, info, infolen, err, errlen);
    else if (r->kind == GV_LOG_NOW)
        rc = ha_settings_log_now(heap, c, info, infolen, err, errlen);
    else if (r->kind == GV_WRAPPERS)
        rc = apply_wrappers(heap, c, info, infolen, err, errlen);
    else if ((f.errnum = apply_setting(heap, c, &f, info, infolen)) != 0) {
        ha_mallctl_errmsg(&f, err, errlen);
        rc = -1;
    }
    c->applied = rc == 0;
    return rc;
}

/* ------------------------------------------------------------------
 * Undo and commit
 * ------------------------------------------------------------------ */

/* Puts back what c changed. Returns 0 or mallctl's errno value. */
static int
undo_one(struct ha_heap *heap, const struct ha_settings_change *c)
{
    const struct ha_settings_row *r = &ha_settings_rows[c->row];
    const struct ha_mallctl_ops *ops = heap->ops;

    switch (r->kind) {
    case GV_BOOL:
        return ha_mallctl_write_bool(ops, r->mallctl, c->old_bool, NULL);
    case GV_LG_SAMPLE:
        return ha_mallctl_write_size(ops, "prof.reset", (size_t)c->old);
    case GV_STATS_AGE:
        heap->stats_max_age_ms = (unsigned)c->old;
        return 0;
    case GV_DUMP_SYM:
        heap->dump_symbolized = c->old_bool;
        return 0;
    case GV_LOG_MAX:
        heap->log_max_bytes = c->old;
        return 0;
    case GV_WRAPPERS:
        if (c->old_str != NULL)
            ha_strlcpy(heap->alloc_wrappers, c->old_str,
                       sizeof(heap->alloc_wrappers));
        return 0;
    case GV_RECENT_MAX:
        return ha_mallctl_write_ssize(ops, r->mallctl, (ssize_t)c->old, NULL);
    case GV_DECAY:
    case GV_ARENA_DECAY:
        return ha_mallctl_restore_decay(ops, ha_settings_decay_kind(r),
                                        &c->undo);
    default:
        return 0; /* an action: done */
    }
}

/* Adds name to list ("a, b"), cut at 511 characters. */
static void
list_add(char *list, const char *name)
{
    if (list[0] != '\0')
        strncat(list, ", ", 511 - strlen(list));
    strncat(list, name, 511 - strlen(list));
}

/* Puts back the settings of changes [0, n) that were applied, newest
 * first, and says what in report: "; put back: ...", "; could not put
 * back: ...", "; already done and not undoable: ...". */
static void
undo(struct ha_settings *s, int n, char *report, size_t len)
{
    char undone[512] = "", done[512] = "", failed[512] = "";

    for (int i = n - 1; i >= 0; i--) {
        const struct ha_settings_change *c = &s->changes[i];
        const struct ha_settings_row *r = &ha_settings_rows[c->row];

        /* A rate already set was not reset: nothing happened. */
        if (!c->applied || (r->kind == GV_LG_SAMPLE && c->old == c->value))
            continue;
        if (ha_settings_is_action(r))
            list_add(done, r->name);
        else
            list_add(undo_one(s->heap, c) == 0 ? undone : failed, r->name);
    }
    report[0] = '\0';
    if (undone[0] == '\0' && done[0] == '\0' && failed[0] == '\0') {
        snprintf(report, len, "; nothing was changed");
        return;
    }
    if (undone[0] != '\0')
        ha_err_set(report + strlen(report), len - strlen(report),
                   "; put back: %s", undone);
    if (failed[0] != '\0')
        ha_err_set(report + strlen(report), len - strlen(report),
                   "; could not put back: %s", failed);
    if (done[0] != '\0')
        ha_err_set(report + strlen(report), len - strlen(report),
                   "; already done and not undoable: %s", done);
}

int
ha_settings_commit(struct ha_settings *s, char *info, size_t infolen,
                   char *err, size_t errlen)
{
    const char *who = s->who != NULL && s->who[0] ? s->who : "(unknown)";
    char msg[HA_SETTINGS_INFO_MAX], why[PATH_MAX + 512], report[1536];
    size_t used = 0;

    info[0] = '\0';
    for (int i = 0; i < s->n_changes; i++) {
        const struct ha_settings_change *c = &s->changes[i];
        const char *name = ha_settings_rows[c->row].name;

        if (apply(s->heap, &s->changes[i], msg, sizeof(msg), why,
                  sizeof(why)) != 0) {
            undo(s, i, report, sizeof(report));
            /* The audit trail: who, from where, what, the result. */
            ha_log_warn("control: %s: %s = '%s' failed: %s%s", who, name,
                        c->text, why, report);
            ha_err_set(err, errlen, "%s%s", why, report);
            info[0] = '\0';
            ha_settings_rollback(s);
            return -1;
        }
        ha_log_notice("control: %s: %s = '%s': %s", who, name, c->text,
                      msg[0] != '\0' ? msg : "done");
        if (msg[0] != '\0' && used < infolen) {
            ha_err_set(info + used, infolen - used, "%s%s",
                       used ? "; " : "", msg);
            used = strlen(info);
        }
    }
    ha_settings_rollback(s);
    return 0;
}
