/* SPDX-License-Identifier: MIT
 *
 * This process's memory cgroup, read: which group it is in and where
 * that group's files are (cgroup v2, else v1's memory hierarchy), the
 * limit that binds it (its group's or an ancestor's: the smallest),
 * usage, working set, the kernel's memory events and pressure (PSI).
 * The files are the kernel's counters (no walk, microseconds to read),
 * so the statistics tables, the metrics and the limit watch read them
 * where they are. prof/cgparse.h parses them.
 *
 * Every path is taken under a root directory ("" for the system's), so
 * the tests run the same code on fixture trees (test/data/cgroup/).
 */
#ifndef HA_HEAP_CGROUP_H
#define HA_HEAP_CGROUP_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "prof/cgparse.h"

/* Where the process's memory cgroup is. */
struct ha_cgroup_where {
    int version;                      /* 2, 1, or 0: no memory cgroup */
    char path[HA_CGPARSE_PATH_MAX];    /* the group in its hierarchy */
    char dir[PATH_MAX];               /* its directory (under root) */
    char top[PATH_MAX];               /* the hierarchy's mount point:
                                         ancestors are read up to it */
    char psi_file[PATH_MAX];          /* memory.pressure of the
                                         process's v2 group (hybrid
                                         systems have one beside a v1
                                         memory group), else
                                         /proc/pressure/memory; "": no
                                         PSI */
    bool psi_system;                  /* psi_file is the system's */
};

/* Finds the process's memory cgroup under root ("" or NULL: the
 * system's /proc/self and mounts). Returns 0 with w filled (version 0
 * when the process has none: no memory controller mounted, or its group
 * is outside what is mounted), or -1 with err when /proc cannot be read. */
int ha_cgroup_locate(const char *root, struct ha_cgroup_where *w,
                     char *err, size_t errlen);

/* What the group's files say now. A figure the files do not give is -1
 * (or HA_CGPARSE_UNLIMITED for the limits). Under a limit the figures are
 * the limiting group's (an ancestor's, when the limit is its): its usage
 * is what the limit is held against, siblings included, and its events
 * are where the kernel counts them. */
struct ha_cgroup_state {
    int version;                      /* as located; 0: nothing below */
    int64_t limit;                    /* bytes: the smallest memory.max /
                                         memory.limit_in_bytes of the
                                         group and its ancestors;
                                         HA_CGPARSE_UNLIMITED: none */
    char limit_path[HA_CGPARSE_PATH_MAX]; /* the group that sets it */
    char dir[PATH_MAX];               /* whose figures follow: the
                                         limiting group's, else the
                                         process's own */
    int64_t high;                     /* v2 memory.high (smallest), where
                                         the kernel throttles and
                                         reclaims; UNLIMITED: none */
    int64_t usage;                    /* memory.current /
                                         memory.usage_in_bytes: every
                                         page charged, page cache too */
    int64_t inactive_file;            /* memory.stat inactive_file (v1:
                                         total_inactive_file): cache the
                                         kernel reclaims first */
    int64_t working_set;              /* usage - inactive_file: what
                                         cannot simply be dropped (the
                                         figure kubelet and cAdvisor
                                         call working set) */
    int64_t peak;                     /* memory.peak / max_usage_in_bytes */
    /* memory.events (v2, this group and below); v1: max is
     * memory.failcnt (times usage hit the limit), oom_kill is
     * memory.oom_control's, high and oom do not exist (-1). */
    int64_t ev_high, ev_max, ev_oom, ev_oom_kill;
    int64_t self_oom_kill;            /* the process's own group's OOM
                                         kills (v1 counts a kill in the
                                         victim's group only, v2 there
                                         and above): what a run record
                                         compares */
    bool under_oom;                   /* v1 oom_control under_oom */
    bool has_psi;
    struct ha_psi psi;
};

/* Reads the state of the group w locates. Files that cannot be read
 * leave their figures -1. */
void ha_cgroup_sample(const struct ha_cgroup_where *w,
                      struct ha_cgroup_state *st);

/* The OOM kills the kernel has counted in the group at dir (v1:
 * memory.oom_control's oom_kill, the victims' own groups'; v2:
 * memory.events' oom_kill, there and below), for a run recorded
 * earlier. Returns 0, or -1 when the file is gone or says
 * nothing (the group was removed). */
int ha_cgroup_oom_kills(int version, const char *dir, uint64_t *out);

/* Whether a limit binds the process (w located a group and st read a
 * limit). */
static inline bool
ha_cgroup_limited(const struct ha_cgroup_state *st)
{
    return st->version != 0 && st->limit != HA_CGPARSE_UNLIMITED;
}

#endif /* HA_HEAP_CGROUP_H */
