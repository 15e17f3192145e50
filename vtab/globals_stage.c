/* SPDX-License-Identifier: MIT
 *
 * global_variables' UPDATE, row by row (globals.h): each value checked
 * against what the variable allows and staged for xSync; nothing is
 * applied here.
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
#include "prof/wrappers.h"

/* ------------------------------------------------------------------
 * Validation and staging (xUpdate)
 * ------------------------------------------------------------------ */

static int
gv_stage(globals_vtab *vt, int row, long long value, const char *text)
{
    struct gv_change *c;

    if (vt->n_changes == vt->cap_changes) {
        int cap = vt->cap_changes ? vt->cap_changes * 2 : 8;
        struct gv_change *p =
            sqlite3_realloc64(vt->changes, (sqlite3_uint64)cap * sizeof(*p));

        if (p == NULL)
            return SQLITE_NOMEM;
        vt->changes = p;
        vt->cap_changes = cap;
    }
    c = &vt->changes[vt->n_changes++];
    memset(c, 0, sizeof(*c));
    c->row = row;
    c->value = value;
    ha_strlcpy(c->text, text, sizeof(c->text));
    return SQLITE_OK;
}

/* The operator's message for a mallctl errno on row r. */
static int
gv_mallctl_error(globals_vtab *vt, const struct gv_row *r, int errnum,
                 const char *text, const char *allowed)
{
    char err[1024];
    struct ha_mallctl_failure f = {
        .errnum = errnum,
        .mallctl = r->mallctl,
        .variable = r->name,
        .value = text,
        .allowed = allowed,
        .prof_built = ha_mallctl_prof_built(ha_globals_ops(vt)),
    };

    ha_mallctl_errmsg(&f, err, sizeof(err));
    return ha_vtab_set_errmsg(&vt->base, "%s", err);
}

/* The dump directory's probe, on the I/O thread (core/blockio.h). */
struct gv_probe {
    char prefix[PATH_MAX];
    struct ha_mallctl_dirstate st;
};

static void
gv_probe_run(void *arg)
{
    struct gv_probe *p = arg;

    ha_mallctl_dir_probe(p->prefix, &p->st);
}

/* Refuses a dump_now that cannot succeed before anything changes: a
 * directory that cannot take it, or a disk that does not answer. */
static int
gv_check_dump_dir(globals_vtab *vt, const struct gv_row *r)
{
    const struct ha_mallctl_ops *ops = ha_globals_ops(vt);
    struct gv_probe *p = calloc(1, sizeof(*p));
    char reason[PATH_MAX + 128], err[PATH_MAX + 512], why[512];
    int rc;

    if (p == NULL)
        return SQLITE_NOMEM;
    if (ha_mallctl_prof_prefix(ops, p->prefix, sizeof(p->prefix)) != 0 ||
        p->prefix[0] == '\0') {
        free(p);
        ha_mallctl_dump_errmsg(EFAULT, r->name, NULL, "",
                               ha_mallctl_prof_built(ops), NULL, NULL, false,
                               err, sizeof(err));
        return ha_vtab_set_errmsg(&vt->base, "%s", err);
    }
    if (ha_blockio_call("checking the dump directory", gv_probe_run, free,
                        p, why, sizeof(why)) != 0)
        return ha_vtab_set_errmsg(&vt->base, "%s: %s; no dump was taken",
                                  r->name, why);
    if (!ha_mallctl_dir_problem(&p->st, reason, sizeof(reason))) {
        free(p);
        return SQLITE_OK;
    }
    ha_mallctl_dump_errmsg(EFAULT, r->name, NULL, p->prefix,
                           ha_mallctl_prof_built(ops), &p->st, NULL, false,
                           err, sizeof(err));
    free(p);
    rc = ha_vtab_set_errmsg(&vt->base, "%s", err);
    return rc;
}

/* A per-arena decay list: every arena named must be in use. */
static int
gv_validate_arena_decay(globals_vtab *vt, int idx, const char *text)
{
    const struct gv_row *r = &ha_globals_rows[idx];
    const struct ha_mallctl_ops *ops = ha_globals_ops(vt);
    struct ha_value_arena_pair *pairs;
    char why[256];
    unsigned narenas = 0;
    size_t n = 0;
    int rc = SQLITE_OK;

    (void)ha_mallctl_epoch(ops); /* arenas created since the last one */
    if (ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas) != 0)
        return gv_mallctl_error(vt, r, ENOENT, text ? text : "NULL", NULL);
    pairs = sqlite3_malloc64(GV_ARENA_LIST_MAX * sizeof(*pairs));
    if (pairs == NULL)
        return SQLITE_NOMEM;
    if (ha_value_parse_arena_list(text, narenas, -1, GV_DECAY_MAX, pairs,
                                  GV_ARENA_LIST_MAX, &n, why,
                                  sizeof(why)) != 0) {
        rc = ha_vtab_set_errmsg(
            &vt->base,
            "%s = '%s': %s; allowed: '<arena>:<ms>[,<arena>:<ms>...]', "
            "each ms %s",
            r->name, text != NULL ? text : "NULL", why, GV_DECAY_ALLOWED);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        if (!ha_globals_arena_in_use(ops, pairs[i].arena)) {
            rc = ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': arena %u is not in use (jemalloc creates arenas "
                "as threads need them); stats_jemalloc_arenas lists those "
                "in use",
                r->name, text, pairs[i].arena);
            goto out;
        }
    rc = gv_stage(vt, idx, (long long)n, text);
out:
    sqlite3_free(pairs);
    return rc;
}

/* purge_arena_now: an arena index, 'all' or 'true' (-1), 'false'. */
static int
gv_validate_purge_arena(globals_vtab *vt, int idx, const char *text)
{
    const struct gv_row *r = &ha_globals_rows[idx];
    const struct ha_mallctl_ops *ops = ha_globals_ops(vt);
    const char *shown = text != NULL ? text : "NULL";
    unsigned narenas = 0;
    long long i;
    bool b;

    if (text != NULL && ha_value_parse_int(text, 0, HA_MALLCTL_ARENAS_ALL - 1,
                                           &i) == 0) {
        (void)ha_mallctl_epoch(ops); /* arenas created since the last one */
        (void)ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas);
        if (i >= (long long)narenas || !ha_globals_arena_in_use(ops, (unsigned)i))
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': arena %lld is not in use (arenas.narenas = %u; "
                "stats_jemalloc_arenas lists those in use); allowed: an "
                "arena in use, 'all', or 'false' to do nothing",
                r->name, shown, i, narenas);
        return gv_stage(vt, idx, i, text);
    }
    if (text != NULL && (ha_str_ieq(text, "all") ||
                         (ha_value_parse_bool(text, &b) == 0 && b)))
        return gv_stage(vt, idx, -1, text);
    if (text != NULL && ha_value_parse_bool(text, &b) == 0 && !b)
        return SQLITE_OK;
    return ha_vtab_set_errmsg(&vt->base,
                              "%s = '%s': invalid value; allowed: an arena "
                              "index (stats_jemalloc_arenas.arena), 'all' "
                              "(or 'true'), or 'false' to do nothing",
                              r->name, shown);
}

/* Validates `UPDATE ... SET variable_value = text` for row index idx and
 * stages it. Returns SQLITE_OK, or SQLITE_ERROR with zErrMsg naming the
 * variable, the value and what is allowed. */
int
ha_globals_validate(globals_vtab *vt, int idx, const char *text)
{
    const struct gv_row *r = &ha_globals_rows[idx];
    const char *shown = text != NULL ? text : "NULL";
    long long lg;
    bool b;

    if (!ha_globals_writable(r)) {
        char list[512];

        ha_globals_writable_list(list, sizeof(list));
        return ha_vtab_set_errmsg(
            &vt->base,
            "%s is read-only (refused value '%s'): %s; writable variables: "
            "%s",
            r->name, shown, r->hint, list);
    }
    if ((r->flags & GV_PROF) && !ha_mallctl_prof_enabled(ha_globals_ops(vt)))
        return gv_mallctl_error(vt, r, ENOENT, shown, NULL);

    if (r->kind == GV_LG_SAMPLE) {
        unsigned floor = vt->conn->ctx->heap->lg_prof_sample_min;
        char rate[32];

        if (ha_value_parse_int(text, 0, GV_LG_SAMPLE_MAX, &lg) != 0)
            return ha_vtab_set_errmsg(&vt->base,
                                      "%s = '%s': invalid value; allowed: %s",
                                      r->name, shown, GV_LG_SAMPLE_ALLOWED);
        if (lg < (long long)floor) {
            ha_value_format_lg_bytes((unsigned)lg, rate, sizeof(rate));
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s' refused: below the floor "
                "jemalloc-lg_prof_sample_min = %u. A sample every %s would "
                "cost the host memory: jemalloc promotes each sampled small "
                "allocation to a 16 KiB extent (measured in redis: 2.8x "
                "resident memory at 10). Allowed: %u..62; to go lower, "
                "lower jemalloc_variables.lg_prof_sample_min in the config",
                r->name, shown, floor, rate, floor);
        }
        return gv_stage(vt, idx, lg, text);
    }
    if (r->kind == GV_DECAY) {
        if (ha_value_parse_int(text, -1, GV_DECAY_MAX, &lg) != 0)
            return ha_vtab_set_errmsg(&vt->base,
                                      "%s = '%s': invalid value; allowed: %s",
                                      r->name, shown, GV_DECAY_ALLOWED);
        return gv_stage(vt, idx, lg, text);
    }
    if (r->kind == GV_ARENA_DECAY)
        return gv_validate_arena_decay(vt, idx, text);
    if (r->kind == GV_PURGE_ARENA)
        return gv_validate_purge_arena(vt, idx, text);
    if (r->kind == GV_LOG_NOW) {
        if (ha_value_parse_int(text, 0, HA_LOGWIN_MAX_S, &lg) != 0)
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': invalid value; allowed: seconds from 1 to %d "
                "to open a lifetime window (every sampled allocation freed "
                "in it is logged, then published for heap_lifetimes), or 0 "
                "to close the open one now",
                r->name, shown, HA_LOGWIN_MAX_S);
        return gv_stage(vt, idx, lg, text);
    }
    if (r->kind == GV_LOG_MAX) {
        if (ha_value_parse_int(text, HA_LOGWIN_MIN_MAX_BYTES,
                               HA_LOGWIN_MAX_MAX_BYTES, &lg) != 0)
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': invalid value; allowed: bytes from %lld (1 MiB) "
                "to %lld (4 GiB): a lifetime window closes early once "
                "jemalloc holds that much memory for its log",
                r->name, shown, HA_LOGWIN_MIN_MAX_BYTES,
                HA_LOGWIN_MAX_MAX_BYTES);
        return gv_stage(vt, idx, lg, text);
    }
    if (r->kind == GV_RECENT_MAX) {
        if (ha_value_parse_int(text, 0, GV_RECENT_MAX_RECORDS, &lg) != 0)
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': invalid value; allowed: 0 (off) to %d: how many "
                "of the last sampled allocations jemalloc keeps for "
                "stats_jemalloc_recent (jemalloc's -1, no bound, is refused: "
                "each record keeps its stack's profiling data alive)",
                r->name, shown, GV_RECENT_MAX_RECORDS);
        return gv_stage(vt, idx, lg, text);
    }
    if (r->kind == GV_WRAPPERS) {
        struct ha_wrap_conf conf;
        char why[512];
        int rc;

        if (text == NULL ||
            ha_wrap_conf_parse(text, &conf, why, sizeof(why)) != 0)
            return ha_vtab_set_errmsg(
                &vt->base, "%s = '%.200s': %s", r->name, shown,
                text == NULL ? "NULL; allowed: " HA_WRAP_CONF_ALLOWED : why);
        rc = gv_stage(vt, idx, 0, conf.text);
        if (rc == SQLITE_OK &&
            (vt->changes[vt->n_changes - 1].str =
                 sqlite3_mprintf("%s", conf.text)) == NULL) {
            vt->n_changes--;
            rc = SQLITE_NOMEM;
        }
        ha_wrap_conf_free(&conf);
        return rc;
    }
    if (r->kind == GV_STATS_AGE) {
        if (ha_value_parse_int(text, 0, 3600000, &lg) != 0)
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': invalid value; allowed: milliseconds from 0 "
                "(refresh jemalloc's statistics on every scan) to 3600000",
                r->name, shown);
        return gv_stage(vt, idx, lg, text);
    }
    if (ha_value_parse_bool(text, &b) != 0) {
        if (ha_globals_is_action(r))
            return ha_vtab_set_errmsg(
                &vt->base,
                "%s = '%s': invalid value; allowed: 'true' to run it now, "
                "'false' to do nothing (also 1/0, on/off, any case)",
                r->name, shown);
        return ha_vtab_set_errmsg(&vt->base,
                                  "%s = '%s': invalid value; allowed: %s",
                                  r->name, shown, HA_VALUE_BOOL_ALLOWED);
    }
    if (ha_globals_is_action(r) && !b)
        return SQLITE_OK; /* 'false' on an action does nothing */
    if (r->kind == GV_DUMP) {
        int rc = gv_check_dump_dir(vt, r);

        if (rc != SQLITE_OK)
            return rc;
    }
    return gv_stage(vt, idx, b, text);
}

