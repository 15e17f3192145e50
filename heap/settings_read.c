/* SPDX-License-Identifier: MIT
 *
 * The settings engine's reading (settings.h): each variable's current
 * value, live from jemalloc, the heap service or its owner's hooks.
 */
#include "heap/settings.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "core/util.h"
#include "heap/heap.h"
#include "heap/logwin.h"
#include "heap/mallctl.h"
#include "heap/settings_impl.h"
#include "heap/value.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

/* The config value behind a GV_KEEP row, as text. */
static bool
gv_keep_text(const struct ha_jemalloc_config *je, const char *name,
             char *buf, size_t len)
{
    if (je == NULL)
        return false;
    if (strcmp(name, "jemalloc-limit_dump_fractions") == 0) {
        ha_strlcpy(buf, je->limit_dump_fractions, len);
        return true;
    }
    if (strcmp(name, "jemalloc-limit_dump_events") == 0) {
        ha_strlcpy(buf, je->limit_dump_events ? "true" : "false", len);
        return true;
    }
    if (strcmp(name, "jemalloc-limit_watch_sampling") == 0) {
        ha_strlcpy(buf, je->limit_watch_sampling ? "true" : "false", len);
        return true;
    }
    if (strcmp(name, "jemalloc-limit_dump_psi_pct") == 0) {
        snprintf(buf, len, "%d", je->limit_dump_psi_pct);
        return true;
    }
    if (strcmp(name, "jemalloc-limit_watch_lg_prof_sample") == 0) {
        snprintf(buf, len, "%d",
                 je->limit_watch_lg_prof_sample == HA_UNSET
                     ? -1
                     : je->limit_watch_lg_prof_sample);
        return true;
    }
    return false;
}

/* The config value behind a GV_KEEP row. */
static bool
gv_keep_value(const struct ha_jemalloc_config *je, const char *name,
              long long *out)
{
    static const struct {
        const char *name;
        size_t offset;
    } keep[] = {
#define KEEP(n) {"jemalloc-" #n, offsetof(struct ha_jemalloc_config, n)}
        KEEP(dump_retention_count),
        KEEP(dump_retention_bytes),
        KEEP(dump_min_free_bytes),
        KEEP(dump_interval_s),
        KEEP(dump_resident_bytes),
        KEEP(leak_watch_growth_bytes),
        KEEP(leak_watch_window_s),
        KEEP(leak_watch_dump_interval_s),
        KEEP(leak_watch_dumps),
        KEEP(leak_watch_sites),
        KEEP(limit_dump_min_interval_s),
#undef KEEP
    };

    if (je == NULL)
        return false;
    if (strcmp(name, "jemalloc-leak_watch_lg_prof_sample") == 0) {
        *out = je->leak_watch_lg_prof_sample == HA_UNSET
                   ? -1
                   : je->leak_watch_lg_prof_sample;
        return true;
    }
    for (size_t i = 0; i < HA_ARRAY_SIZE(keep); i++)
        if (strcmp(name, keep[i].name) == 0) {
            *out = *(const long long *)((const char *)je + keep[i].offset);
            return true;
        }
    return false;
}

/* Whether arena i is initialized (in use). */
bool
ha_settings_arena_in_use(const struct ha_mallctl_ops *ops, unsigned i)
{
    char name[64];
    bool init = false;

    snprintf(name, sizeof(name), "arena.%u.initialized", i);
    return ha_mallctl_read_bool(ops, name, &init) == 0 && init;
}

/* "<arena>:<ms>,..." for the arenas whose <kind>_decay_ms differs from
 * arenas.<kind>_decay_ms; "" when none. Returns 0 or an errno value. */
static int
gv_read_arena_decay(const struct ha_mallctl_ops *ops, const char *kind,
                    char *buf, size_t len)
{
    char name[64];
    unsigned narenas = 0;
    ssize_t def = 0, v;
    size_t used = 0;
    int rc;

    buf[0] = '\0';
    /* The arena list and their states are as of the last epoch. */
    (void)ha_mallctl_epoch(ops);
    snprintf(name, sizeof(name), "arenas.%s_decay_ms", kind);
    if ((rc = ha_mallctl_read_ssize(ops, name, &def)) != 0 ||
        (rc = ha_mallctl_read_unsigned(ops, "arenas.narenas", &narenas)) !=
            0)
        return rc;
    for (unsigned i = 0; i < narenas && used + 32 < len; i++) {
        snprintf(name, sizeof(name), "arena.%u.%s_decay_ms", i, kind);
        if (!ha_settings_arena_in_use(ops, i) ||
            ha_mallctl_read_ssize(ops, name, &v) != 0 || v == def)
            continue;
        used += (size_t)snprintf(buf + used, len - used, "%s%u:%zd",
                                 used ? "," : "", i, v);
    }
    return 0;
}

/* The lifetime window's state as one line. */
static void
log_state(const struct ha_heap *heap, char *buf, size_t len)
{
    struct ha_logwin_state st;
    char mem[64] = "";
    size_t at;

    ha_logwin_state(heap, &st);
    if (st.open && st.bytes >= 0)
        snprintf(mem, sizeof(mem), ", %lld bytes of jemalloc's memory",
                 st.bytes);
    if (st.open && !st.ours)
        snprintf(buf, len, "open in this process by another instance: %s",
                 st.file);
    else if (st.open)
        snprintf(buf, len, "%s: %s, %lld of %lld s left%s (closes at %lld)",
                 st.closing ? "closing" : "open", st.file, st.seconds_left,
                 st.seconds, mem, st.max_bytes);
    else
        snprintf(buf, len, "closed");
    at = strlen(buf);
    if (st.last_err[0] != '\0')
        snprintf(buf + at, len - at, "; the last window failed: %s",
                 st.last_err);
    else if (st.last[0] != '\0')
        snprintf(buf + at, len - at,
                 "; last: %s (%lld s, closed by %s, %lld bytes at the end)",
                 st.last, st.last_seconds, st.last_why, st.last_bytes);
}

/* A row read from a mallctl: rc 0 or the errno value. */
static int
read_mallctl(const struct ha_mallctl_ops *ops, const struct ha_settings_row *r,
             char *buf, size_t len)
{
    int rc = 0;

    switch (r->kind) {
    case GV_BOOL:
    case GV_RO_BOOL: {
        bool b = false;

        rc = ha_mallctl_read_bool(ops, r->mallctl, &b);
        if (rc == ENOENT && (r->flags & GV_ENOENT_FALSE))
            rc = 0;
        ha_strlcpy(buf, ha_value_bool_str(b), len);
        break;
    }
    case GV_LG_SAMPLE:
    case GV_RO_SIZE: {
        size_t v = 0;

        rc = ha_mallctl_read_size(ops, r->mallctl, &v);
        snprintf(buf, len, "%zu", v);
        break;
    }
    case GV_RO_SSIZE:
    case GV_DECAY:
    case GV_RECENT_MAX: {
        ssize_t v = 0;

        rc = ha_mallctl_read_ssize(ops, r->mallctl, &v);
        snprintf(buf, len, "%zd", v);
        break;
    }
    case GV_RO_STR: {
        const char *s = NULL;

        rc = ha_mallctl_read_str(ops, r->mallctl, &s);
        if (rc == 0)
            ha_strlcpy(buf, s, len);
        break;
    }
    case GV_PREFIX:
        rc = ha_mallctl_prof_prefix(ops, buf, len);
        break;
    case GV_ARENA_DECAY:
        rc = gv_read_arena_decay(ops, ha_settings_decay_kind(r), buf, len);
        break;
    default:
        rc = -1;
        break;
    }
    return rc;
}

/* A row the heap service keeps (or an action's 'false'): rc 0, or -1
 * for a row it does not keep. */
static int
read_heap(const struct ha_heap *heap, const struct ha_settings_row *r,
          char *buf, size_t len)
{
    struct ha_logwin_state st;
    long long v;

    switch (r->kind) {
    case GV_DUMP:
    case GV_RESET:
    case GV_PURGE:
    case GV_PURGE_ARENA:
        ha_strlcpy(buf, "false", len);
        return 0;
    case GV_LG_MIN:
        snprintf(buf, len, "%u", heap->lg_prof_sample_min);
        return 0;
    case GV_STATS_AGE:
        snprintf(buf, len, "%u", heap->stats_max_age_ms);
        return 0;
    case GV_DUMP_SYM:
        ha_strlcpy(buf, heap->dump_symbolized ? "true" : "false", len);
        return 0;
    case GV_KEEP:
        if (gv_keep_text(heap->je, r->name, buf, len))
            return 0;
        if (!gv_keep_value(heap->je, r->name, &v))
            return -1;
        snprintf(buf, len, "%lld", v);
        return 0;
    case GV_LOG_NOW:
        ha_logwin_state(heap, &st);
        snprintf(buf, len, "%lld", st.ours ? st.seconds_left : 0);
        return 0;
    case GV_LOG_MAX:
        snprintf(buf, len, "%lld",
                 heap->log_max_bytes > 0 ? heap->log_max_bytes
                                         : HA_LOGWIN_DEFAULT_MAX_BYTES);
        return 0;
    case GV_LOG_STATE:
        log_state(heap, buf, len);
        return 0;
    case GV_WRAPPERS:
        ha_strlcpy(buf, heap->alloc_wrappers, len);
        return 0;
    default:
        return -1;
    }
}

bool
ha_settings_read(struct ha_heap *heap, int i, char *buf, size_t len)
{
    const struct ha_settings_row *r;

    if (len == 0)
        return false;
    buf[0] = '\0';
    if (i < 0 || i >= GV_N_ROWS)
        return false;
    r = &ha_settings_rows[i];
    switch (r->kind) {
    case GV_ADMIN:
        if (r->admin == GV_ADMIN_VERSION) {
            ha_strlcpy(buf, PACKAGE_VERSION, len);
            return true;
        }
        /* The config's owner renders its rows. */
        return heap->admin_value != NULL &&
               heap->admin_value(heap->admin_arg, r->name, buf, len);
    case GV_ENGINE:
        return heap->engine_value != NULL &&
               heap->engine_value(heap->engine_arg, r->name, buf, len);
    case GV_LG_SAMPLE:
        /* prof.lg_sample reads 0 with profiling off; that would claim
         * every byte is sampled. */
        if (!ha_mallctl_prof_enabled(heap->ops))
            return false;
        return read_mallctl(heap->ops, r, buf, len) == 0;
    case GV_BOOL:
    case GV_RO_BOOL:
    case GV_RO_SIZE:
    case GV_RO_SSIZE:
    case GV_DECAY:
    case GV_RECENT_MAX:
    case GV_RO_STR:
    case GV_PREFIX:
    case GV_ARENA_DECAY:
        return read_mallctl(heap->ops, r, buf, len) == 0;
    default:
        return read_heap(heap, r, buf, len) == 0;
    }
}

bool
ha_settings_get(struct ha_heap *heap, const char *name, char *buf,
                size_t len)
{
    int i = ha_settings_find(name);

    if (len > 0)
        buf[0] = '\0';
    return i >= 0 && ha_settings_read(heap, i, buf, len);
}

int
ha_settings_each(struct ha_heap *heap,
                 int (*visit)(void *arg, const char *name, const char *value),
                 void *arg)
{
    char buf[PATH_MAX];

    for (int i = 0; i < GV_N_ROWS; i++) {
        int rc = visit(arg, ha_settings_rows[i].name,
                    ha_settings_read(heap, i, buf, sizeof(buf)) ? buf : NULL);

        if (rc != 0)
            return rc;
    }
    return 0;
}
