/* SPDX-License-Identifier: MIT
 *
 * What /proc says of another process (see proc.h).
 */
#include "agent/proc.h"

#include <stdio.h>
#include <string.h>

#include "core/dirwalk.h"
#include "core/smallfile.h"

struct thread_search {
    pid_t pid;
    const char *name;
    bool found;
};

static bool
thread_is(long tid, void *arg)
{
    struct thread_search *s = arg;
    char path[96], comm[32];

    snprintf(path, sizeof(path), "/proc/%ld/task/%ld/comm", (long)s->pid,
             tid);
    if (ha_smallfile_read(path, comm, sizeof(comm)) > 0) {
        comm[strcspn(comm, "\n")] = '\0';
        s->found = strcmp(comm, s->name) == 0;
    }
    return !s->found;
}

bool
ha_agent_proc_has_thread(pid_t pid, const char *name)
{
    struct thread_search s = {.pid = pid, .name = name, .found = false};
    char path[64];

    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    (void)ha_dirwalk_numbers(path, thread_is, &s);
    return s.found;
}
