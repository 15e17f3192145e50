/* SPDX-License-Identifier: MIT
 *
 * A run of a process, recorded in the datadir so that the next start can
 * say how it ended (heap/runs.h keeps the files): "runs/<pid>.<start
 * ns>.run", rewritten whole (a new file renamed over the old) at start,
 * at each history sample, as the limit watch's looks find the usage 1 %
 * of the limit away from the record's, at each limit dump, and when a
 * later run settles it, and
 * "runs/<pid>.<start ns>.end", written once by a clean stop or a process
 * exit (the host's exit() runs heapadmin's destructor; a SIGKILL runs
 * nothing).
 *
 *   heapadmin-run 1
 *   pid <n>
 *   program <name>
 *   started_ns <unix ns>
 *   prefix <dump stem>
 *   cgroup <1|2> <path>               the process's memory cgroup
 *   cgroup_dir <directory>            its group's: where the kernel
 *                                     counts its OOM kills
 *   limit <bytes|max>
 *   oom_kills <n>                     that group's count when last seen
 *   last_seen_ns <unix ns>
 *   usage <bytes>                     the group's, when last seen
 *   working_set <bytes>               ... less its inactive file cache
 *   resident <bytes>                  VmRSS, when last seen
 *   peak_resident <bytes>             the most VmRSS seen
 *   limit_dump <ns> <usage> <working set> <file>
 *                                     each limit dump (the last
 *                                     HA_RUNREC_LIMIT_DUMPS, oldest
 *                                     first): the look it was decided
 *                                     on, unix ns and bytes
 *   how <word>                        settled: oom-killed, stopped,
 *   detail <text>                       exited, killed, ended
 *   ended_ns <unix ns>                settled with a known end
 *
 * The end file: "stopped <ns>" or "exited <ns>".
 *
 * Pure: formatting, parsing and the verdict.
 */
#ifndef HA_RUNREC_H
#define HA_RUNREC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_RUNREC_DETAIL_MAX 512
#define HA_RUNREC_LIMIT_DUMPS 8

/* A limit dump, as the look it was decided on saw the group. */
struct ha_runrec_dump {
    int64_t ns;                      /* unix ns of the look */
    int64_t usage, working_set;      /* bytes; -1 unknown */
    char file[128];                  /* the dump's name in the datadir */
};

struct ha_runrec {
    int64_t pid;
    char program[64];
    int64_t started_ns;
    char prefix[64];
    int cgroup_version;              /* 0: none */
    char cgroup_path[256];
    char cgroup_dir[512];
    int64_t limit;                   /* -1: none */
    int64_t oom_kills;               /* -1: unknown */
    int64_t last_seen_ns;
    int64_t usage;                   /* -1: unknown */
    int64_t working_set;             /* -1: unknown */
    int64_t resident;
    int64_t peak_resident;
    struct ha_runrec_dump limit_dumps[HA_RUNREC_LIMIT_DUMPS]; /* oldest
                                        first */
    size_t n_limit_dumps;
    char how[24];                    /* "": not settled */
    char detail[HA_RUNREC_DETAIL_MAX];
    int64_t ended_ns;                /* 0: not known exactly */
};

/* Every figure unknown, nothing settled. */
void ha_runrec_init(struct ha_runrec *r);

/* Writes r in the format above into buf. Returns the length, or -1 when
 * buf is too small. */
int ha_runrec_format(const struct ha_runrec *r, char *buf, size_t len);

/* Adds a limit dump to r, the oldest dropped past
 * HA_RUNREC_LIMIT_DUMPS. */
void ha_runrec_add_limit_dump(struct ha_runrec *r,
                              const struct ha_runrec_dump *d);

/* Parses a run file. Returns 0, or -1 with err naming the line (a bad
 * header, a known key whose value does not parse, no pid or start). */
int ha_runrec_parse(const char *buf, size_t len, struct ha_runrec *r,
                    char *err, size_t errlen);

/* An end file: how ("stopped" or "exited") and when. Returns 0, or -1. */
int ha_runrec_parse_end(const char *buf, size_t len, char *how,
                        size_t howlen, int64_t *ended_ns);

/* What the kernel and the files say now of a run whose process is gone,
 * for the verdict. */
struct ha_runrec_after {
    bool has_end;                    /* its end file was there */
    char end_how[16];                /* "stopped", "exited" */
    int64_t end_ns;
    int64_t oom_kills_now;           /* its group's count now; -1: the
                                        group is gone or says nothing */
    int64_t newest_dump_ns;          /* its newest dump; 0: none (a
                                        sign of life after its last
                                        look: last_seen_ns moves up) */
};

/* Settles r (its process is gone): how it ended, when where that is
 * known, and the evidence in detail. A clean stop or exit recorded wins;
 * else an OOM kill where the kernel's count for its group rose after
 * its last look; else "killed" (no clean stop, the count did not move)
 * or "ended" (the group is gone: the kernel cannot say). */
void ha_runrec_settle(struct ha_runrec *r, const struct ha_runrec_after *a);

#endif /* HA_RUNREC_H */
