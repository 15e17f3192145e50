/* SPDX-License-Identifier: MIT
 *
 * The process heapadmin-attach is asked to serve, looked at from the
 * outside: /proc, its files, and its link map read from its memory. No
 * call here stops, signals or writes to it; each refusal is decided here,
 * before inject.c touches anything.
 */
#ifndef HA_ATTACH_TARGET_H
#define HA_ATTACH_TARGET_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "attach/procparse.h"

struct ha_attach_target {
    pid_t pid;
    char exe[PATH_MAX];         /* /proc/<pid>/exe's target */
    char program[128];          /* its base name */
    struct ha_procstatus status;

    bool other_mntns;           /* in another mount namespace than ours */
    char agent_seen[PATH_MAX];  /* the agent as we read it: the path, or
                                   /proc/<pid>/root/<path> */

    uint64_t dlopen_fn;         /* absolute, in the target */
    uint64_t dlerror_fn;
    uint64_t errno_fn;
    uint64_t attach_value;      /* heapadmin_agent_attach in the agent */
    char jemalloc[PATH_MAX];    /* the object that defines mallctl */
    bool prefixed;              /* ... as je_mallctl */
    unsigned n_objects;         /* in its link map */
};

/* Looks at process pid and decides whether the agent at agent_path (an
 * absolute path, as the target sees it) may be loaded into it. On 0,
 * *t holds what inject.c needs. On -1, err says what refused it and
 * why, in one sentence an operator can act on; nothing in the target
 * was changed. The refusals, in the order they are checked: not a
 * process of ours to take (this tool itself, a zombie, stopped, a
 * kernel thread), a 32-bit or foreign-architecture process,
 * ptrace_scope or its user forbidding us, another tracer attached,
 * AT_SECURE, not dumpable, the agent's file not there
 * in its mount namespace, the agent or heapadmin already in it, no
 * jemalloc (with a static jemalloc that is not exported named as
 * such), malloc() not jemalloc's, no dlopen(). */
int ha_target_inspect(pid_t pid, const char *agent_path,
                      struct ha_attach_target *t, char *err, size_t errlen);

#endif /* HA_ATTACH_TARGET_H */
