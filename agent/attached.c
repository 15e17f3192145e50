/* SPDX-License-Identifier: MIT
 *
 * The agent attached to a running process (see attached.h). A child the
 * process forked before the attach is a copy of it without the agent:
 * nothing serves it, and nothing can from here (its memory is its own).
 * It is recorded with its start time (a pid is reused) and listed while
 * it lives, so stats_agents says which processes of this one's are not
 * served, and the log says how to serve them (attach each).
 */
#include "agent/attached.h"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/proc.h"
#include "core/agentnote.h"
#include "core/dirwalk.h"
#include "core/smallfile.h"

#define CHILDREN_MAX 256
#define REFRESH_TICKS 2   /* the list is looked at every 2nd tick (s) */

static struct {
    long pid;
    long long start;  /* clock ticks after boot: pids are reused */
} children[CHILDREN_MAX];
static size_t n_children, n_children_lost;
static bool told;
static unsigned ticks;

bool
ha_agent_preloaded(void *self)
{
    struct link_map *mine = NULL, *libc = NULL;
    Dl_info info;

    if (dladdr1(self, &info, (void **)&mine, RTLD_DL_LINKMAP) == 0 ||
        mine == NULL ||
        dladdr1((void *)getpid, &info, (void **)&libc, RTLD_DL_LINKMAP) ==
            0 ||
        libc == NULL)
        return true; /* cannot tell: as before the attach existed */
    for (struct link_map *l = mine->l_prev; l != NULL; l = l->l_prev)
        if (l == libc)
            return false;
    return true;
}

/* The start time of pid (field 22 of its stat), or -1. */
static long long
start_of(long pid)
{
    char path[64], buf[1024], *p;
    long long start = -1;

    snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0)
        return -1;
    p = strrchr(buf, ')');
    if (p == NULL ||
        sscanf(p + 1,
               " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d "
               "%*d %*d %*d %*d %*d %lld",
               &start) != 1)
        return -1;
    return start;
}

static void
add_child(long pid)
{
    for (size_t i = 0; i < n_children; i++)
        if (children[i].pid == pid)
            return;
    if (n_children == CHILDREN_MAX) {
        n_children_lost++;
        return;
    }
    children[n_children].pid = pid;
    children[n_children].start = start_of(pid);
    n_children++;
}

/* One thread's children (/proc/self/task/<tid>/children: pids
 * separated by spaces). */
static bool
thread_children(long tid, void *arg)
{
    char path[64], buf[4096];

    (void)arg;
    snprintf(path, sizeof(path), "/proc/self/task/%ld/children", tid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0)
        return true;
    for (char *p = buf; *p != '\0';) {
        char *end;
        long pid = strtol(p, &end, 10);

        if (end == p)
            break;
        if (pid > 0)
            add_child(pid);
        p = end;
    }
    return true;
}

static void
forked(void)
{
    /* A child of the attached process is served (or not) by its fork
     * policy from its start: none of this is its. */
    ha_agentnote_set_attached(0);
    ha_agentnote_set_unserved(NULL, 0, 0);
    n_children = n_children_lost = 0;
    told = true;
}

void
ha_agent_attached_begin(void)
{
    ha_agentnote_set_attached((int64_t)time(NULL));
    (void)ha_dirwalk_numbers("/proc/self/task", thread_children, NULL);
    (void)pthread_atfork(NULL, NULL, forked);
}

void
ha_agent_attached_tick(void)
{
    long live[CHILDREN_MAX];
    size_t n = 0;
    char list[512];
    size_t at = 0;

    if (ha_agentnote_attached() == 0 || n_children + n_children_lost == 0 ||
        ticks++ % REFRESH_TICKS != 0)
        return;
    /* Alive, and not served since (heapadmin-attach run on it too). */
    for (size_t i = 0; i < n_children; i++)
        if (children[i].start >= 0 &&
            start_of(children[i].pid) == children[i].start &&
            !ha_agent_proc_has_thread((pid_t)children[i].pid, "heapadmin"))
            live[n++] = children[i].pid;
    ha_agentnote_set_unserved(live, n, n_children_lost);
    if (told || (n == 0 && n_children_lost == 0))
        return;
    told = true;
    list[0] = '\0';
    for (size_t i = 0; i < n && at + 24 < sizeof(list); i++)
        at += (size_t)snprintf(list + at, sizeof(list) - at, "%s%ld",
                               i > 0 ? ", " : "", live[i]);
    ha_agent_log(1, "attached to a running process: its %zu children "
                    "forked before the attach (%s%s) do not have the agent "
                    "and are not served; run heapadmin-attach on each one "
                    "to serve it",
                 n + n_children_lost, list,
                 n_children_lost > 0 ? ", ..." : "");
}
