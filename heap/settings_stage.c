/* SPDX-License-Identifier: MIT
 *
 * The settings engine's change sets (settings.h): each change checked
 * against what the variable allows and what jemalloc can do now, then
 * staged for ha_settings_commit; nothing is applied here.
 */
#include "heap/settings.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/blockio.h"
#include "core/log.h"
#include "core/util.h"
#include "heap/heap.h"
#include "heap/logwin.h"
#include "heap/mallctl.h"
#include "heap/settings_impl.h"
#include "heap/value.h"
#include "prof/wrappers.h"

/* ------------------------------------------------------------------
 * The set
 * ------------------------------------------------------------------ */

void
ha_settings_begin(struct ha_settings *s, struct ha_heap *heap,
                  const char *who)
{
    memset(s, 0, sizeof(*s));
    s->heap = heap;
    s->who = who;
}

int
ha_settings_staged(const struct ha_settings *s)
{
    return s->n_changes;
}

/* Forgets the staged changes [from, n_changes), freeing what they own. */
static void
drop(struct ha_settings *s, int from)
{
    if (from < 0)
        from = 0;
    for (int i = from; i < s->n_changes; i++) {
        ha_mallctl_decay_undo_free(&s->changes[i].undo);
        free(s->changes[i].str);
        free(s->changes[i].old_str);
        s->changes[i].str = s->changes[i].old_str = NULL;
    }
    if (from < s->n_changes)
        s->n_changes = from;
}

void
ha_settings_rollback_to(struct ha_settings *s, int mark)
{
    drop(s, mark);
}

void
ha_settings_rollback(struct ha_settings *s)
{
    drop(s, 0);
}

void
ha_settings_end(struct ha_settings *s)
{
    drop(s, 0);
    free(s->changes);
    s->changes = NULL;
    s->cap_changes = 0;
}

/* Appends a change of row to value (text as written). Returns it, or
 * NULL with err when out of memory. */
static struct ha_settings_change *
add(struct ha_settings *s, int row, long long value, const char *text,
    char *err, size_t errlen)
{
    struct ha_settings_change *c;

    if (s->n_changes == s->cap_changes) {
        int cap = s->cap_changes ? s->cap_changes * 2 : 8;
        struct ha_settings_change *p =
            realloc(s->changes, (size_t)cap * sizeof(*p));

        if (p == NULL) {
            ha_err_set(err, errlen, "%s: out of memory",
                       ha_settings_rows[row].name);
            return NULL;
        }
        s->changes = p;
        s->cap_changes = cap;
    }
    c = &s->changes[s->n_changes++];
    memset(c, 0, sizeof(*c));
    c->row = row;
    c->value = value;
    ha_strlcpy(c->text, text, sizeof(c->text));
    return c;
}

static int
stage(struct ha_settings *s, int row, long long value, const char *text,
      char *err, size_t errlen)
{
    return add(s, row, value, text, err, errlen) != NULL ? 0 : -1;
}

/* ------------------------------------------------------------------
 * Checks
 * ------------------------------------------------------------------ */

/* The operator's message for a mallctl errno on row r. */
static int
mallctl_error(struct ha_heap *heap, const struct ha_settings_row *r,
              int errnum, const char *text, const char *allowed, char *err,
              size_t errlen)
{
    struct ha_mallctl_failure f = {
        .errnum = errnum,
        .mallctl = r->mallctl,
        .variable = r->name,
        .value = text,
        .allowed = allowed,
        .prof_built = ha_mallctl_prof_built(heap->ops),
    };

    ha_mallctl_errmsg(&f, err, errlen);
    return -1;
}

/* The dump directory's probe, on the I/O thread (core/blockio.h). */
struct dir_probe {
    char prefix[PATH_MAX];
    struct ha_mallctl_dirstate st;
};

static void
dir_probe_run(void *arg)
{
    struct dir_probe *p = arg;

    ha_mallctl_dir_probe(p->prefix, &p->st);
}

/* Refuses a dump_now that cannot succeed before anything changes: a
 * directory that cannot take it, or a disk that does not answer. */
static int
check_dump_dir(struct ha_heap *heap, const struct ha_settings_row *r,
               char *err, size_t errlen)
{
    const struct ha_mallctl_ops *ops = heap->ops;
    struct dir_probe *p = calloc(1, sizeof(*p));
    char reason[PATH_MAX + 128], why[512];

    if (p == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", r->name);
        return -1;
    }
    if (ha_mallctl_prof_prefix(ops, p->prefix, sizeof(p->prefix)) != 0 ||
        p->prefix[0] == '\0') {
        free(p);
        ha_mallctl_dump_errmsg(EFAULT, r->name, NULL, "",
                               ha_mallctl_prof_built(ops), NULL, NULL, false,
                               err, errlen);
        return -1;
    }
    if (ha_blockio_call("checking the dump directory", dir_probe_run, free,
                        p, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s; no dump was taken", r->name, why);
        return -1;
    }
    if (!ha_mallctl_dir_problem(&p->st, reason, sizeof(reason))) {
        free(p);
        return 0;
    }
    ha_mallctl_dump_errmsg(EFAULT, r->name, NULL, p->prefix,
                           ha_mallctl_prof_built(ops), &p->st, NULL, false,
                           err, errlen);
    free(p);
    return -1;
}

/* A per-arena decay list: every arena named must be in use. */
static int
stage_arena_decay(struct ha_settings *s, int idx, const char *text,
                  char *err, size_t errlen)
{
    const struct ha_settings_row *r = &ha_settings_rows[idx];
    const struct ha_mallctl_ops *ops = s->heap->ops;
    struct ha_value_arena_pair *pairs;
    char why[256];
    unsigned narenas = 0;
    size_t n = 0;
    int rc = -1;

    (void)ha_mallctl_epoch(ops); /* arenas created since the last one */
    if (ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas) != 0)
        return mallctl_error(s->heap, r, ENOENT, text ? text : "NULL", NULL,
                             err, errlen);
    if ((pairs = malloc(GV_ARENA_LIST_MAX * sizeof(*pairs))) == NULL) {
        ha_err_set(err, errlen, "%s: out of memory", r->name);
        return -1;
    }
    if (ha_value_parse_arena_list(text, narenas, -1, GV_DECAY_MAX, pairs,
                                  GV_ARENA_LIST_MAX, &n, why,
                                  sizeof(why)) != 0) {
        ha_err_set(err, errlen,
                   "%s = '%s': %s; allowed: '<arena>:<ms>[,<arena>:<ms>...]', "
                   "each ms %s",
                   r->name, text != NULL ? text : "NULL", why,
                   GV_DECAY_ALLOWED);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (!ha_settings_arena_in_use(ops, pairs[i].arena)) {
            ha_err_set(err, errlen,
                       "%s = '%s': arena %u is not in use (jemalloc creates "
                       "arenas as threads need them); stats_jemalloc_arenas "
                       "lists those in use",
                       r->name, text, pairs[i].arena);
            goto out;
        }
    rc = stage(s, idx, (long long)n, text, err, errlen);
out:
    free(pairs);
    return rc;
}

/* purge_arena_now: an arena index, 'all' or 'true' (-1), 'false'. */
static int
stage_purge_arena(struct ha_settings *s, int idx, const char *text,
                  char *err, size_t errlen)
{
    const struct ha_settings_row *r = &ha_settings_rows[idx];
    const struct ha_mallctl_ops *ops = s->heap->ops;
    const char *shown = text != NULL ? text : "NULL";
    unsigned narenas = 0;
    long long i;
    bool b;

    if (text != NULL &&
        ha_value_parse_int(text, 0, HA_MALLCTL_ARENAS_ALL - 1, &i) == 0) {
        (void)ha_mallctl_epoch(ops); /* arenas created since the last one */
        (void)ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas);
        if (i >= (long long)narenas ||
            !ha_settings_arena_in_use(ops, (unsigned)i)) {
            ha_err_set(err, errlen,
                       "%s = '%s': arena %lld is not in use (arenas.narenas "
                       "= %u; stats_jemalloc_arenas lists those in use); "
                       "allowed: an arena in use, 'all', or 'false' to do "
                       "nothing",
                       r->name, shown, i, narenas);
            return -1;
        }
        return stage(s, idx, i, text, err, errlen);
    }
    if (text != NULL && (ha_str_ieq(text, "all") ||
                         (ha_value_parse_bool(text, &b) == 0 && b)))
        return stage(s, idx, -1, text, err, errlen);
    if (text != NULL && ha_value_parse_bool(text, &b) == 0 && !b)
        return 0;
    ha_err_set(err, errlen,
               "%s = '%s': invalid value; allowed: an arena index "
               "(stats_jemalloc_arenas.arena), 'all' (or 'true'), or "
               "'false' to do nothing",
               r->name, shown);
    return -1;
}

/* The integer variables' ranges; allowed says what for the message. */
static bool
int_range(enum gv_kind kind, long long *min, long long *max, char *allowed,
          size_t len)
{
    switch (kind) {
    case GV_LG_SAMPLE:
        *min = 0, *max = GV_LG_SAMPLE_MAX;
        ha_strlcpy(allowed, GV_LG_SAMPLE_ALLOWED, len);
        return true;
    case GV_DECAY:
        *min = -1, *max = GV_DECAY_MAX;
        ha_strlcpy(allowed, GV_DECAY_ALLOWED, len);
        return true;
    case GV_LOG_NOW:
        *min = 0, *max = HA_LOGWIN_MAX_S;
        snprintf(allowed, len,
                 "seconds from 1 to %d to open a lifetime window (every "
                 "sampled allocation freed in it is logged, then published "
                 "for heap_lifetimes), or 0 to close the open one now",
                 HA_LOGWIN_MAX_S);
        return true;
    case GV_LOG_MAX:
        *min = HA_LOGWIN_MIN_MAX_BYTES, *max = HA_LOGWIN_MAX_MAX_BYTES;
        snprintf(allowed, len,
                 "bytes from %lld (1 MiB) to %lld (4 GiB): a lifetime "
                 "window closes early once jemalloc holds that much memory "
                 "for its log",
                 HA_LOGWIN_MIN_MAX_BYTES, HA_LOGWIN_MAX_MAX_BYTES);
        return true;
    case GV_RECENT_MAX:
        *min = 0, *max = GV_RECENT_MAX_RECORDS;
        snprintf(allowed, len,
                 "0 (off) to %d: how many of the last sampled allocations "
                 "jemalloc keeps for stats_jemalloc_recent (jemalloc's -1, "
                 "no bound, is refused: each record keeps its stack's "
                 "profiling data alive)",
                 GV_RECENT_MAX_RECORDS);
        return true;
    case GV_STATS_AGE:
        *min = 0, *max = 3600000;
        ha_strlcpy(allowed,
                   "milliseconds from 0 (refresh jemalloc's statistics on "
                   "every scan) to 3600000",
                   len);
        return true;
    default:
        return false;
    }
}

/* lg_prof_sample below the floor the config sets: refused, with why. */
static int
refuse_below_floor(const struct ha_settings_row *r, const char *shown,
                   long long lg, unsigned floor, char *err, size_t errlen)
{
    char rate[32];

    ha_value_format_lg_bytes((unsigned)lg, rate, sizeof(rate));
    ha_err_set(err, errlen,
               "%s = '%s' refused: below the floor "
               "jemalloc-lg_prof_sample_min = %u. A sample every %s would "
               "cost the host memory: jemalloc promotes each sampled small "
               "allocation to a 16 KiB extent (measured in redis: 2.8x "
               "resident memory at 10). Allowed: %u..62; to go lower, "
               "lower jemalloc_variables.lg_prof_sample_min in the config",
               r->name, shown, floor, rate, floor);
    return -1;
}

/* An integer variable: in range (and for lg_prof_sample, not below the
 * floor). */
static int
stage_int(struct ha_settings *s, int idx, const char *text, char *err,
          size_t errlen)
{
    const struct ha_settings_row *r = &ha_settings_rows[idx];
    const char *shown = text != NULL ? text : "NULL";
    char allowed[512];
    long long min, max, v;

    (void)int_range(r->kind, &min, &max, allowed, sizeof(allowed));
    if (ha_value_parse_int(text, min, max, &v) != 0) {
        ha_err_set(err, errlen, "%s = '%s': invalid value; allowed: %s",
                   r->name, shown, allowed);
        return -1;
    }
    if (r->kind == GV_LG_SAMPLE && v < (long long)s->heap->lg_prof_sample_min)
        return refuse_below_floor(r, shown, v, s->heap->lg_prof_sample_min,
                                  err, errlen);
    return stage(s, idx, v, text, err, errlen);
}

/* alloc_wrappers: parsed (prof/wrappers.h) and kept canonical. */
static int
stage_wrappers(struct ha_settings *s, int idx, const char *text, char *err,
               size_t errlen)
{
    const struct ha_settings_row *r = &ha_settings_rows[idx];
    struct ha_wrap_conf conf;
    struct ha_settings_change *c;
    char why[512];
    int rc = -1;

    if (text == NULL ||
        ha_wrap_conf_parse(text, &conf, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s = '%.200s': %s", r->name,
                   text != NULL ? text : "NULL",
                   text == NULL ? "NULL; allowed: " HA_WRAP_CONF_ALLOWED
                                : why);
        return -1;
    }
    if ((c = add(s, idx, 0, conf.text, err, errlen)) != NULL) {
        if ((c->str = strdup(conf.text)) != NULL) {
            rc = 0;
        } else {
            s->n_changes--;
            ha_err_set(err, errlen, "%s: out of memory", r->name);
        }
    }
    ha_wrap_conf_free(&conf);
    return rc;
}

/* A boolean variable or an action ('true' acts, 'false' does nothing). */
static int
stage_bool(struct ha_settings *s, int idx, const char *text, char *err,
           size_t errlen)
{
    const struct ha_settings_row *r = &ha_settings_rows[idx];
    const char *shown = text != NULL ? text : "NULL";
    bool b;

    if (ha_value_parse_bool(text, &b) != 0) {
        if (ha_settings_is_action(r))
            ha_err_set(err, errlen,
                       "%s = '%s': invalid value; allowed: 'true' to run it "
                       "now, 'false' to do nothing (also 1/0, on/off, any "
                       "case)",
                       r->name, shown);
        else
            ha_err_set(err, errlen, "%s = '%s': invalid value; allowed: %s",
                       r->name, shown, HA_VALUE_BOOL_ALLOWED);
        return -1;
    }
    if (ha_settings_is_action(r) && !b)
        return 0; /* 'false' on an action does nothing */
    if (r->kind == GV_DUMP && check_dump_dir(s->heap, r, err, errlen) != 0)
        return -1;
    return stage(s, idx, b, text, err, errlen);
}

/* Checks and stages row idx (see ha_settings_stage). */
static int
check_and_stage(struct ha_settings *s, int idx, const char *text, char *err,
                size_t errlen)
{
    const struct ha_settings_row *r = &ha_settings_rows[idx];
    const char *shown = text != NULL ? text : "NULL";
    long long min, max;
    char allowed[8];

    if (!ha_settings_writable(r)) {
        char list[512];

        ha_settings_writable_list(list, sizeof(list));
        ha_err_set(err, errlen,
                   "%s is read-only (refused value '%s'): %s; writable "
                   "variables: %s",
                   r->name, shown, r->hint, list);
        return -1;
    }
    if ((r->flags & GV_PROF) && !ha_mallctl_prof_enabled(s->heap->ops))
        return mallctl_error(s->heap, r, ENOENT, shown, NULL, err, errlen);
    if (int_range(r->kind, &min, &max, allowed, sizeof(allowed)))
        return stage_int(s, idx, text, err, errlen);
    if (r->kind == GV_ARENA_DECAY)
        return stage_arena_decay(s, idx, text, err, errlen);
    if (r->kind == GV_PURGE_ARENA)
        return stage_purge_arena(s, idx, text, err, errlen);
    if (r->kind == GV_WRAPPERS)
        return stage_wrappers(s, idx, text, err, errlen);
    return stage_bool(s, idx, text, err, errlen);
}

int
ha_settings_stage(struct ha_settings *s, const char *name, const char *value,
                  char *err, size_t errlen)
{
    const char *who = s->who != NULL && s->who[0] ? s->who : "(unknown)";
    int idx = ha_settings_find(name);

    if (idx < 0) {
        ha_err_set(err, errlen, "%s: no such variable (SELECT "
                   "variable_name FROM global_variables lists them)",
                   name != NULL ? name : "NULL");
    } else if (check_and_stage(s, idx, value, err, errlen) == 0) {
        return 0;
    }
    /* The audit trail. Most reasons already name the variable and the
     * value: said once. */
    if (name != NULL && strncmp(err, name, strlen(name)) == 0)
        ha_log_warn("control: %s: %s%s", who, err,
                    strstr(err, "refused") != NULL ? "" : " (refused)");
    else
        ha_log_warn("control: %s: %s = '%.100s' refused: %s", who,
                    name != NULL ? name : "NULL",
                    value != NULL ? value : "NULL", err);
    return -1;
}
