/* SPDX-License-Identifier: MIT
 *
 * Automatic dumps and dump housekeeping on timers (see dumptimer.h).
 */
#include "engine/dumptimer.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "prof/buildid.h"
#include "vtab/dumpfiles.h"
#include "vtab/mallctl.h"

struct ha_dumptimer {
    struct ha_vtab_ctx *ctx;     /* ops, je */
    struct event *every;         /* dump_interval_s; NULL: off */
    struct event *watch;         /* every HA_DUMPTIMER_WATCH_S; NULL: off */
    bool armed;                  /* resident was below the threshold */
    bool below_floor;            /* in a low-space episode (logged once) */
    time_t last_watch;           /* jemalloc's dumps newer than this are
                                    new to the watch */
};

/* Is free space below the floor? Logs the start of an episode (and its
 * end, when *episode says one was logged). */
static bool
below_floor(const struct ha_vtab_ctx *ctx, bool *episode, const char *prefix,
            const char *what)
{
    long long floor = ctx->je->dump_min_free_bytes;
    long long avail = floor > 0 ? ha_dumpfiles_free_bytes(prefix) : -1;

    if (floor <= 0 || avail < 0 || avail >= floor) {
        if (*episode && floor > 0 && avail >= 0)
            ha_log_notice("automatic dumps resume: %lld bytes free for %s "
                          "(dump_min_free_bytes = %lld)",
                          avail, prefix, floor);
        *episode = false;
        return false;
    }
    ha_log_warn("%s skipped: %lld bytes free for %s, below "
                "jemalloc_variables.dump_min_free_bytes = %lld",
                what, avail, prefix, floor);
    *episode = true;
    return true;
}

int
ha_dumptimer_dump(struct ha_vtab_ctx *ctx, const char *variable,
                  const char *reason, bool *low_space, char *file,
                  size_t filelen)
{
    const struct ha_jemalloc_config *je = ctx->je;
    char prefix[PATH_MAX], err[PATH_MAX + 512], what[256], local[PATH_MAX];
    bool episode = false;

    if (low_space == NULL)
        low_space = &episode;
    if (file == NULL || filelen == 0) {
        file = local;
        filelen = sizeof(local);
    }
    file[0] = '\0';
    if (ha_mallctl_prof_prefix(ctx->ops, prefix, sizeof(prefix)) != 0)
        return -1;
    snprintf(what, sizeof(what), "automatic dump (%s)", reason);
    if (below_floor(ctx, low_space, prefix, what))
        return -1;
    if (ha_mallctl_dump(ctx->ops, variable, file, filelen, err,
                        sizeof(err)) != 0) {
        ha_log_warn("%s failed: %s", what, err);
        return -1;
    }
    if (file[0] == '/' && ha_buildid_record(file, err, sizeof(err)) != 0)
        ha_log_warn("%s: build-ids not recorded: %s", file, err);
    else if (file[0] == '/')
        (void)ha_dumpfiles_sidecar_perms(file, ".buildid");
    ha_log_notice("%s: heap profile written to %s", what, file);
    if (je != NULL)
        (void)ha_dumpfiles_retain(prefix, je->dump_retention_count,
                                  je->dump_retention_bytes);
    return 0;
}

/* One automatic dump (reason says why), then retention. */
static void
automatic_dump(struct ha_dumptimer *t, const char *variable,
               const char *reason)
{
    char file[PATH_MAX];

    (void)ha_dumptimer_dump(t->ctx, variable, reason, &t->below_floor, file,
                            sizeof(file));
}

static void
every_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_dumptimer *t = arg;
    char reason[64];

    (void)fd;
    (void)what;
    snprintf(reason, sizeof(reason), "dump_interval_s = %lld",
             t->ctx->je->dump_interval_s);
    automatic_dump(t, "jemalloc_variables.dump_interval_s", reason);
}

static void
watch_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_dumptimer *t = arg;
    const struct ha_jemalloc_config *je = t->ctx->je;
    char prefix[PATH_MAX];
    time_t now = time(NULL);

    (void)fd;
    (void)what;
    if (ha_mallctl_prof_prefix(t->ctx->ops, prefix, sizeof(prefix)) == 0) {
        /* jemalloc's own interval and high-water dumps since the last
         * look: over the floor they are removed, as skipped. */
        if (below_floor(t->ctx, &t->below_floor, prefix,
                        "jemalloc's interval dumps are"))
            (void)ha_dumpfiles_drop_automatic(prefix, (long)getpid(),
                                              t->last_watch);
        (void)ha_dumpfiles_retain(prefix, je->dump_retention_count,
                                  je->dump_retention_bytes);
    }
    t->last_watch = now;
    if (je->dump_resident_bytes > 0) {
        size_t resident = 0;
        char reason[128];

        ha_vtab_refresh_stats(t->ctx);
        if (ha_mallctl_read_size(t->ctx->ops, "stats.resident", &resident) !=
            0)
            return;
        if ((long long)resident < je->dump_resident_bytes / 10 * 9) {
            t->armed = true;
        } else if (t->armed &&
                   (long long)resident >= je->dump_resident_bytes) {
            t->armed = false;
            snprintf(reason, sizeof(reason),
                     "stats.resident %zu >= dump_resident_bytes %lld",
                     resident, je->dump_resident_bytes);
            automatic_dump(t, "jemalloc_variables.dump_resident_bytes",
                           reason);
        }
    }
}

/* Can jemalloc write dumps on its own (interval or high-water)? */
static bool
jemalloc_dumps_itself(const struct ha_mallctl_ops *ops)
{
    ssize_t lg = -1;
    bool gdump = false;

    if (!ha_mallctl_prof_enabled(ops))
        return false;
    (void)ha_mallctl_read_ssize(ops, "opt.lg_prof_interval", &lg);
    (void)ha_mallctl_read_bool(ops, "prof.gdump", &gdump);
    return lg >= 0 || gdump;
}

struct ha_dumptimer *
ha_dumptimer_new(struct event_base *base, struct ha_vtab_ctx *ctx)
{
    const struct ha_jemalloc_config *je = ctx->je;
    struct ha_dumptimer *t;
    bool every, watch;

    if (je == NULL || !ha_mallctl_prof_enabled(ctx->ops))
        return NULL;
    every = je->dump_interval_s > 0;
    watch = je->dump_resident_bytes > 0 || jemalloc_dumps_itself(ctx->ops);
    if (!every && !watch)
        return NULL;
    if ((t = calloc(1, sizeof(*t))) == NULL)
        goto oom;
    t->ctx = ctx;
    t->armed = true;
    t->last_watch = time(NULL);
    if (every) {
        struct timeval tv = {(time_t)je->dump_interval_s, 0};

        t->every = event_new(base, -1, EV_PERSIST, every_cb, t);
        if (t->every == NULL || event_add(t->every, &tv) != 0)
            goto oom;
    }
    if (watch) {
        struct timeval tv = {HA_DUMPTIMER_WATCH_S, 0};

        t->watch = event_new(base, -1, EV_PERSIST, watch_cb, t);
        if (t->watch == NULL || event_add(t->watch, &tv) != 0)
            goto oom;
    }
    ha_log_info("automatic dumps: every %lld s%s, when stats.resident "
                "passes %lld bytes%s; jemalloc's own dumps %s",
                je->dump_interval_s, every ? "" : " (off)",
                je->dump_resident_bytes,
                je->dump_resident_bytes > 0 ? "" : " (off)",
                jemalloc_dumps_itself(ctx->ops) ? "watched" : "off");
    return t;
oom:
    ha_log_error("automatic dumps: cannot arm their timers");
    ha_dumptimer_free(t);
    return NULL;
}

void
ha_dumptimer_free(struct ha_dumptimer *t)
{
    if (t == NULL)
        return;
    if (t->every != NULL)
        event_free(t->every);
    if (t->watch != NULL)
        event_free(t->watch);
    free(t);
}
