/* SPDX-License-Identifier: MIT
 *
 * Loading the agent into a running process with ptrace(2), x86_64 only
 * (see inject.c for how, and why not gdb). One thread of the target is
 * taken at a safe point, made to call dlopen() and the agent's
 * heapadmin_agent_attach(), and given back with every register, its
 * signal mask, errno and nice value as they were; the other threads run
 * on.
 */
#ifndef HA_ATTACH_INJECT_H
#define HA_ATTACH_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* What to load, where the functions are in the target (absolute
 * addresses, from its link map and the files' symbol tables). */
struct ha_inject_plan {
    pid_t pid;                 /* the target process */
    uint64_t dlopen_fn;        /* dlopen (glibc's libc, or libdl) */
    uint64_t dlerror_fn;       /* dlerror, to say why a dlopen failed */
    uint64_t errno_fn;         /* __errno_location */
    const char *agent_path;    /* the agent's file as the target sees it */
    uint64_t attach_value;     /* heapadmin_agent_attach's st_value in
                                  that file (added to its load bias) */
    const char *request;       /* the request text the agent is given
                                  (HEAPADMIN_* lines; agent/attachreq.h) */
    unsigned search_ms;        /* how long to look for a safe point */
};

/* What happened, for the report. Times in milliseconds. */
struct ha_inject_result {
    pid_t tid;                 /* the thread that loaded the agent */
    long syscall_nr;           /* the wait it was taken at */
    bool blocked;              /* taken while blocked in it (an
                                  interrupt), not at its return */
    double search_ms;          /* from the first look to the safe stop */
    double held_ms;            /* from the safe stop to its release: the
                                  time that thread did not run the
                                  host's code */
    double dlopen_ms;          /* of which dlopen() */
    double attach_ms;          /* of which heapadmin_agent_attach() */
    unsigned syscall_stops;    /* syscall stops seen while waiting for
                                  the thread to reach a wait */
    unsigned signals_requeued; /* signals that arrived for that thread
                                  while it was held, sent again after */
    bool loaded;               /* dlopen() succeeded: the agent is in the
                                  process for good (never dlclose()d) */
    int attach_rc;             /* heapadmin_agent_attach()'s: 0 serving */
    char message[1024];        /* its message (or dlerror()'s) */
};

/* Loads the agent into plan->pid. Returns 0 when the agent was called
 * (res->attach_rc and res->message say what it made of it), or -1 with
 * err: nothing was changed in the target when !res->loaded (no thread
 * reached a safe point in time, ptrace refused, dlopen() failed), and
 * the thread was given back as it was in every case. */
int ha_inject_agent(const struct ha_inject_plan *plan,
                    struct ha_inject_result *res, char *err, size_t errlen);

#endif /* HA_ATTACH_INJECT_H */
