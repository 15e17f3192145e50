/* SPDX-License-Identifier: MIT
 *
 * What heap profiles tell that /metrics carries (see profmetrics.h).
 */
#include "heap/profmetrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "prof/dumpname.h"
#include "prof/growth.h"
#include "prof/threads.h"

/* One leak site of the last series. */
struct site {
    char *function;
    double bytes_per_s;
    double r2;           /* NAN: undefined (not written) */
    const char *pattern; /* static */
};

/* One thread name's in-use bytes. */
struct named {
    char *name; /* "" for threads with none */
    long long bytes;
};

/* heap->profmetrics. */
struct ha_profmetrics {
    long long sites_pid; /* the series' process */
    struct site *sites;
    size_t n_sites;

    int64_t threads_ns; /* when that profile was taken; 0:
                           none */
    struct named *names;
    size_t n_names;
    bool said_unnamed; /* the log said names are off */
};

static struct ha_profmetrics *
state_of(struct ha_heap *heap)
{
    if (heap->profmetrics == NULL)
        heap->profmetrics = calloc(1, sizeof(*heap->profmetrics));
    return heap->profmetrics;
}

static void
sites_free(struct ha_profmetrics *m)
{
    for (size_t i = 0; i < m->n_sites; i++)
        free(m->sites[i].function);
    free(m->sites);
    m->sites = NULL;
    m->n_sites = 0;
}

static void
names_free(struct ha_profmetrics *m)
{
    for (size_t i = 0; i < m->n_names; i++)
        free(m->names[i].name);
    free(m->names);
    m->names = NULL;
    m->n_names = 0;
}

void
ha_profmetrics_free(struct ha_heap *heap)
{
    if (heap->profmetrics == NULL)
        return;
    sites_free(heap->profmetrics);
    names_free(heap->profmetrics);
    free(heap->profmetrics);
    heap->profmetrics = NULL;
}

/* ------------------------------------------------------------------
 * Leak sites
 * ------------------------------------------------------------------ */

void
ha_profmetrics_set_sites(struct ha_heap *heap, long long pid,
                         const struct ha_growth *funcs)
{
    struct ha_profmetrics *m = state_of(heap);
    size_t k = heap->je != NULL ? (size_t)heap->je->leak_watch_sites : 0, n;
    struct site *s;

    if (m == NULL)
        return;
    sites_free(m);
    m->sites_pid = pid;
    if (k > HA_LEAK_WATCH_SITES_MAX)
        k = HA_LEAK_WATCH_SITES_MAX;
    /* The ranking's order, sites that grew (a positive score) only: a
     * churning or flat site is no leak, whatever its place. */
    for (n = 0; n < funcs->n_rows && n < k; n++)
        if (!(funcs->rows[n].score > 0) ||
            !isfinite(funcs->rows[n].bytes_per_hour))
            break;
    if (n == 0 || (s = calloc(n, sizeof(*s))) == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct ha_growth_row *r = &funcs->rows[i];

        if ((s[i].function = strdup(ha_growth_key(funcs, r))) == NULL) {
            n = i;
            break;
        }
        s[i].bytes_per_s = r->bytes_per_hour / 3600.0;
        s[i].r2 = r->r2;
        s[i].pattern = ha_growth_pattern_name(r->pattern);
    }
    m->sites = s;
    m->n_sites = n;
}

/* ------------------------------------------------------------------
 * Threads
 * ------------------------------------------------------------------ */

/* Whether the profile named name (live or not) is of this process: a
 * live one, or a dump whose name carries this pid. */
static bool
of_this_process(const char *name, bool live)
{
    struct ha_dump_name d;

    if (live)
        return true;
    return ha_dumpname_parse(name, &d) && !d.log &&
           d.pid == (long long)getpid();
}

/* Whether a thread with stacks has a name; true where none has stacks
 * (nothing to say). */
static bool
any_named(const struct ha_threads_row *rows, size_t n)
{
    bool stacks = false;

    for (size_t i = 0; i < n; i++) {
        if (rows[i].stacks == 0)
            continue;
        if (rows[i].name != NULL)
            return true;
        stacks = true;
    }
    return !stacks;
}

void
ha_profmetrics_note_profile(struct ha_heap *heap, const char *name, bool live,
                            int64_t taken_ns, const struct ha_threads_row *rows,
                            size_t n_rows)
{
    struct ha_profmetrics *m;
    struct named *names = NULL;
    size_t n = 0;

    if (rows == NULL || name == NULL || !of_this_process(name, live) ||
        (m = state_of(heap)) == NULL)
        return;
    /* Once a run: where names would help and there are none (of the
     * threads with stacks: heapadmin names its own, which have none). */
    if (!m->said_unnamed && !any_named(rows, n_rows)) {
        m->said_unnamed = true;
        ha_log_info("heap profiles of this process name no thread: "
                    "heap_threads' thread_name and the metrics by thread "
                    "say nothing. Start jemalloc with prof_sys_thread_name:"
                    "true in MALLOC_CONF (the kernel's names), or name the "
                    "threads with heapadmin_set_thread_name()");
    }
    if (taken_ns < m->threads_ns)
        return;
    if (n_rows > 0 && (names = calloc(n_rows, sizeof(*names))) == NULL)
        return;
    /* A few threads, or a few hundred: a linear search by name. */
    for (size_t i = 0; i < n_rows; i++) {
        const char *tn = rows[i].name != NULL ? rows[i].name : "";
        size_t j;

        for (j = 0; j < n; j++)
            if (strcmp(names[j].name, tn) == 0)
                break;
        if (j == n) {
            if ((names[n].name = strdup(tn)) == NULL)
                goto oom;
            n++;
        }
        names[j].bytes += rows[i].i_bytes;
    }
    names_free(m);
    m->names = names;
    m->n_names = n;
    m->threads_ns = taken_ns;
    return;
oom:
    for (size_t j = 0; j < n; j++)
        free(names[j].name);
    free(names);
}

/* ------------------------------------------------------------------
 * The families
 * ------------------------------------------------------------------ */

void
ha_profmetrics_write(struct ha_heap *heap, struct ha_expo *e)
{
    const struct ha_profmetrics *m = heap->profmetrics;
    const char *program = heap->program != NULL ? heap->program : "";
    char pid[24], rank[24];

    if (m == NULL)
        return;
    snprintf(pid, sizeof(pid), "%lld", m->sites_pid);
    if (m->n_sites > 0) {
        ha_expo_family(e, "heapadmin_leak_site_growth_bytes_per_second",
                       HA_EXPO_GAUGE,
                       "A leaking allocation site's growth (heap_growth's "
                       "slope) in the last series the leak watch ranked; "
                       "its top sites by rank.");
        for (size_t i = 0; i < m->n_sites; i++) {
            const char *labels[] = {"program", program,    "pid",
                                    pid,       "function", m->sites[i].function,
                                    "rank",    rank,       NULL};

            snprintf(rank, sizeof(rank), "%zu", i + 1);
            ha_expo_sample(e, labels, m->sites[i].bytes_per_s);
        }
        ha_expo_family(e, "heapadmin_leak_site_growth_r2", HA_EXPO_GAUGE,
                       "How well a line fits that site's growth over the "
                       "series (heap_growth's r2, 0..1).");
        for (size_t i = 0; i < m->n_sites; i++) {
            const char *labels[] = {"program", program,    "pid",
                                    pid,       "function", m->sites[i].function,
                                    "rank",    rank,       NULL};

            snprintf(rank, sizeof(rank), "%zu", i + 1);
            if (isfinite(m->sites[i].r2))
                ha_expo_sample(e, labels, m->sites[i].r2);
        }
        ha_expo_family(e, "heapadmin_leak_site_info", HA_EXPO_GAUGE,
                       "1 for each leaking site of that series, with the "
                       "shape of its growth (heap_growth's pattern).");
        for (size_t i = 0; i < m->n_sites; i++) {
            const char *labels[] = {"program",  program,
                                    "pid",      pid,
                                    "function", m->sites[i].function,
                                    "rank",     rank,
                                    "pattern",  m->sites[i].pattern,
                                    NULL};

            snprintf(rank, sizeof(rank), "%zu", i + 1);
            ha_expo_sample(e, labels, 1);
        }
    }
    if (m->threads_ns > 0) {
        const char *prog[] = {"program", program, NULL};

        ha_expo_family(e, "heapadmin_thread_live_bytes", HA_EXPO_GAUGE,
                       "In-use bytes by thread name (a pool's threads "
                       "summed) in the newest heap profile read of this "
                       "process (heap_threads).");
        for (size_t i = 0; i < m->n_names; i++) {
            const char *labels[] = {"program", program, "thread_name",
                                    m->names[i].name, NULL};

            ha_expo_sample(e, labels, (double)m->names[i].bytes);
        }
        ha_expo_family(e, "heapadmin_thread_profile_timestamp_seconds",
                       HA_EXPO_GAUGE,
                       "When the profile heapadmin_thread_live_bytes is of "
                       "was taken (unix seconds).");
        ha_expo_sample(e, prog, (double)m->threads_ns / 1e9);
    }
}
