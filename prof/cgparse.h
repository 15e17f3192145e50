/* SPDX-License-Identifier: MIT
 *
 * The kernel's memory cgroup files, parsed: which group a process is in
 * (/proc/<pid>/cgroup), where the hierarchies are mounted
 * (/proc/<pid>/mountinfo), and the files of a group, cgroup v1
 * (memory.limit_in_bytes, memory.usage_in_bytes, memory.failcnt,
 * memory.oom_control, memory.stat, memory.use_hierarchy) and v2
 * (memory.max, memory.high, memory.current, memory.peak, memory.events,
 * memory.stat) and pressure stall information (memory.pressure,
 * /proc/pressure/memory). Formats from the kernel's
 * Documentation/admin-guide/cgroup-v1/memory.rst, cgroup-v2.rst and
 * accounting/psi.rst; heap/cgroup.h reads the files.
 *
 * Pure: no I/O. Trust: the files come from the kernel, but a fixture, a
 * container's bind mount or a fuzzer may hand anything: every parser is
 * safe on hostile input (bounded, nothing read past len, no assert).
 */
#ifndef HA_CGPARSE_H
#define HA_CGPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HA_CGPARSE_PATH_MAX 1024   /* a group's path within a hierarchy */

/* No limit: v2's "max", or v1's "unlimited" (PAGE_COUNTER_MAX pages:
 * 9223372036854771712 on x86-64; any value from 2^62 up is taken so). */
#define HA_CGPARSE_UNLIMITED (-1)
#define HA_CGPARSE_V1_UNLIMITED_MIN (INT64_C(1) << 62)

/* The process's groups, from /proc/<pid>/cgroup ("ID:CONTROLLERS:PATH"
 * lines; "0::PATH" is the unified hierarchy's). */
struct ha_cgparse_groups {
    bool v1_memory;                       /* a v1 hierarchy lists memory */
    char v1_path[HA_CGPARSE_PATH_MAX];     /* its group: "/T" */
    bool v2;                              /* a "0::" line */
    char v2_path[HA_CGPARSE_PATH_MAX];     /* "/system.slice/x.service" */
};

/* Parses /proc/<pid>/cgroup. Returns 0 (a file without either line is
 * not an error: out says so), or -1 with err naming the line. */
int ha_cgparse_procfile(const char *buf, size_t len,
                        struct ha_cgparse_groups *out, char *err,
                        size_t errlen);

/* One mount of a cgroup hierarchy, from /proc/<pid>/mountinfo. */
struct ha_cgparse_mount {
    bool found;
    char root[HA_CGPARSE_PATH_MAX];  /* the hierarchy's directory mounted
                                       (field 4: "/" or, in a container
                                       without a cgroup namespace,
                                       "/docker/<id>") */
    char point[HA_CGPARSE_PATH_MAX]; /* where (field 5), octal escapes
                                       (\040) decoded */
};

struct ha_cgparse_mounts {
    struct ha_cgparse_mount v1_memory; /* fstype cgroup, option memory */
    struct ha_cgparse_mount v2;        /* fstype cgroup2 */
};

/* Parses /proc/<pid>/mountinfo: the first mount of each hierarchy.
 * Lines that do not parse are skipped (the file is the kernel's; other
 * file systems' lines may carry anything). Returns 0. */
int ha_cgparse_mountinfo(const char *buf, size_t len,
                         struct ha_cgparse_mounts *out);

/* The directory of group path under mount m (m->point followed by path
 * less m->root) into out. Returns 0, or -1 when path is not under
 * m->root (the group is outside what is mounted) or out is too small. */
int ha_cgparse_dir(const struct ha_cgparse_mount *m, const char *path,
                   char *out, size_t outlen);

/* A byte count file: memory.max, memory.high, memory.limit_in_bytes,
 * memory.current, memory.usage_in_bytes, memory.peak. "max" and v1's
 * unlimited values become HA_CGPARSE_UNLIMITED. Returns 0, or -1 when the
 * text is not one number (or "max") and a newline. */
int ha_cgparse_bytes(const char *buf, size_t len, int64_t *out);

/* The value of key in a flat keyed file ("key value" per line:
 * memory.events, memory.stat, memory.oom_control). Returns 0, or -1
 * when key is absent or its value is not a number. */
int ha_cgparse_key(const char *buf, size_t len, const char *key,
                   uint64_t *out);

/* One line of a pressure file. */
struct ha_psi_line {
    bool present;
    double avg10, avg60, avg300;  /* percent of time stalled */
    uint64_t total_us;            /* stalled time since boot, us */
};

/* A pressure file (PSI): "some avg10=0.00 avg60=0.00 avg300=0.00
 * total=0" and a "full" line (absent in old kernels' system files). */
struct ha_psi {
    struct ha_psi_line some, full;
};

/* Parses a pressure file. Returns 0 when the "some" line parsed, else -1
 * with err naming the line. */
int ha_cgparse_psi(const char *buf, size_t len, struct ha_psi *out,
                   char *err, size_t errlen);

/* The PSI trigger the kernel is given for a stall share: "some
 * <stall_us> <window_us>\0" with the window window_ms (rounded to
 * whole seconds of 2: unprivileged triggers need multiples of 2 s) and
 * the stall pct percent of it, into out. Returns the length written
 * (with the NUL), or -1 when pct is not in (0, 100] or out is too
 * small. */
int ha_cgparse_psi_trigger(double pct, unsigned window_ms, char *out,
                           size_t outlen);

#endif /* HA_CGPARSE_H */
