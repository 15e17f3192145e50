/* SPDX-License-Identifier: MIT
 *
 * This process's memory cgroup, read (see cgroup.h).
 */
#include "heap/cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/smallfile.h"
#include "core/util.h"

#define SMALL_MAX 16384            /* a group's file */
#define MOUNTINFO_MAX (1u << 20)   /* hosts with thousands of mounts */

/* "<dir>/<name>" read into buf (SMALL_MAX bytes). */
static ssize_t
read_file(const char *dir, const char *name, char *buf)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
        sizeof(path))
        return -1;
    return ha_smallfile_read(path, buf, SMALL_MAX);
}

static int64_t
read_bytes(const char *dir, const char *name)
{
    char buf[256];
    char path[PATH_MAX];
    int64_t v;
    ssize_t n;

    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
        sizeof(path))
        return -1;
    n = ha_smallfile_read(path, buf, sizeof(buf));
    if (n < 0 || ha_cgparse_bytes(buf, (size_t)n, &v) != 0)
        return -1;
    return v;
}

static int64_t
read_key(const char *dir, const char *name, const char *key)
{
    char *buf = malloc(SMALL_MAX);
    uint64_t v;
    ssize_t n;
    int64_t out = -1;

    if (buf == NULL)
        return -1;
    n = read_file(dir, name, buf);
    if (n >= 0 && ha_cgparse_key(buf, (size_t)n, key, &v) == 0)
        out = (int64_t)v;
    free(buf);
    return out;
}

static bool
exists(const char *dir, const char *name)
{
    char path[PATH_MAX];

    return (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) <
               sizeof(path) &&
           access(path, F_OK) == 0;
}

/* ------------------------------------------------------------------
 * Where
 * ------------------------------------------------------------------ */

/* root + rel into out. */
static int
rooted(const char *root, const char *rel, char *out, size_t outlen)
{
    int n = snprintf(out, outlen, "%s%s", root, rel);

    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int
ha_cgroup_locate(const char *root, struct ha_cgroup_where *w, char *err,
                 size_t errlen)
{
    struct ha_cgparse_groups pf;
    struct ha_cgparse_mounts mounts;
    struct ha_cgparse_mount m;
    char path[PATH_MAX], dir[PATH_MAX], why[128];
    char *buf = NULL;
    ssize_t n;
    int rc = -1;

    memset(w, 0, sizeof(*w));
    if (root == NULL)
        root = "";
    if ((buf = malloc(MOUNTINFO_MAX)) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    if (rooted(root, "/proc/self/cgroup", path, sizeof(path)) != 0 ||
        (n = ha_smallfile_read(path, buf, SMALL_MAX)) < 0) {
        ha_err_set(err, errlen, "%s%s: %s", root, "/proc/self/cgroup",
                   strerror(errno));
        goto out;
    }
    if (ha_cgparse_procfile(buf, (size_t)n, &pf, why, sizeof(why)) !=
        0) {
        ha_err_set(err, errlen, "/proc/self/cgroup: %s", why);
        goto out;
    }
    if (rooted(root, "/proc/self/mountinfo", path, sizeof(path)) != 0 ||
        (n = ha_smallfile_read(path, buf, MOUNTINFO_MAX)) < 0) {
        ha_err_set(err, errlen, "%s%s: %s", root, "/proc/self/mountinfo",
                   strerror(errno));
        goto out;
    }
    (void)ha_cgparse_mountinfo(buf, (size_t)n, &mounts);
    rc = 0;

    /* v2 first: its group has memory.max when the memory controller is
     * on there (the root group has none: no limit at the root). */
    if (pf.v2 && mounts.v2.found) {
        m = mounts.v2;
        if (rooted(root, mounts.v2.point, m.point, sizeof(m.point)) == 0 &&
            ha_cgparse_dir(&m, pf.v2_path, dir, sizeof(dir)) == 0) {
            if (exists(dir, "memory.pressure") &&
                (size_t)snprintf(w->psi_file, sizeof(w->psi_file),
                                 "%s/memory.pressure", dir) >=
                    sizeof(w->psi_file))
                w->psi_file[0] = '\0';
            /* The root group's pressure is the whole system's. */
            w->psi_system = strcmp(pf.v2_path, "/") == 0;
            if (exists(dir, "memory.max") || exists(dir, "memory.current")) {
                w->version = 2;
                ha_strlcpy(w->path, pf.v2_path, sizeof(w->path));
                ha_strlcpy(w->dir, dir, sizeof(w->dir));
                ha_strlcpy(w->top, m.point, sizeof(w->top));
            }
        }
    }
    if (w->version == 0 && pf.v1_memory && mounts.v1_memory.found) {
        m = mounts.v1_memory;
        if (rooted(root, mounts.v1_memory.point, m.point, sizeof(m.point)) ==
                0 &&
            ha_cgparse_dir(&m, pf.v1_path, dir, sizeof(dir)) == 0 &&
            exists(dir, "memory.limit_in_bytes")) {
            w->version = 1;
            ha_strlcpy(w->path, pf.v1_path, sizeof(w->path));
            ha_strlcpy(w->dir, dir, sizeof(w->dir));
            ha_strlcpy(w->top, m.point, sizeof(w->top));
        }
    }
    if (w->psi_file[0] == '\0' &&
        rooted(root, "/proc/pressure/memory", path, sizeof(path)) == 0 &&
        access(path, R_OK) == 0) {
        ha_strlcpy(w->psi_file, path, sizeof(w->psi_file));
        w->psi_system = true;
    }
out:
    free(buf);
    return rc;
}

/* ------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------ */

/* The parent directory of dir into out; false at top (or above). */
static bool
parent_dir(const char *dir, const char *top, char *out, size_t outlen)
{
    const char *slash;

    if (strlen(dir) <= strlen(top))
        return false;
    slash = strrchr(dir, '/');
    if (slash == NULL || (size_t)(slash - dir) < strlen(top))
        return false;
    if ((size_t)(slash - dir) >= outlen)
        return false;
    memcpy(out, dir, (size_t)(slash - dir));
    out[slash - dir] = '\0';
    return true;
}

/* The group path one level up from gp, in place ("/" stays). */
static void
group_up(char *gp)
{
    char *slash = strrchr(gp, '/');

    if (slash == gp)
        gp[1] = '\0';
    else if (slash != NULL)
        *slash = '\0';
}

/* The smallest limit over the group and its ancestors (v2 always; v1
 * while the parent has use_hierarchy on), with whose it is. */
static int64_t
binding_limit(const struct ha_cgroup_where *w, const char *file,
              char *whose, size_t whoselen, char *whose_dir, size_t dirlen)
{
    char d[PATH_MAX], up[PATH_MAX], gp[HA_CGPARSE_PATH_MAX];
    int64_t best = HA_CGPARSE_UNLIMITED;

    whose[0] = '\0';
    ha_strlcpy(d, w->dir, sizeof(d));
    ha_strlcpy(gp, w->path, sizeof(gp));
    for (int depth = 0; depth < 64; depth++) {
        int64_t v = read_bytes(d, file);

        if (v >= 0 && (best == HA_CGPARSE_UNLIMITED || v < best)) {
            best = v;
            ha_strlcpy(whose, gp, whoselen);
            ha_strlcpy(whose_dir, d, dirlen);
        }
        if (!parent_dir(d, w->top, up, sizeof(up)))
            break;
        /* v1 charges a parent only under use_hierarchy (always on in
         * kernels since 5.x; a 0 ends the walk). */
        if (w->version == 1 && read_bytes(up, "memory.use_hierarchy") == 0)
            break;
        ha_strlcpy(d, up, sizeof(d));
        group_up(gp);
    }
    return best;
}

void
ha_cgroup_sample(const struct ha_cgroup_where *w, struct ha_cgroup_state *st)
{
    char whose[HA_CGPARSE_PATH_MAX], whose_dir[PATH_MAX];
    const char *d;

    memset(st, 0, sizeof(*st));
    st->version = w->version;
    st->limit = st->high = HA_CGPARSE_UNLIMITED;
    st->usage = st->inactive_file = st->working_set = st->peak = -1;
    st->ev_high = st->ev_max = st->ev_oom = st->ev_oom_kill = -1;
    st->self_oom_kill = -1;
    ha_strlcpy(st->dir, w->dir, sizeof(st->dir));
    if (w->version == 2) {
        st->limit = binding_limit(w, "memory.max", st->limit_path,
                                  sizeof(st->limit_path), st->dir,
                                  sizeof(st->dir));
        st->high = binding_limit(w, "memory.high", whose, sizeof(whose),
                                 whose_dir, sizeof(whose_dir));
        d = st->dir;
        st->usage = read_bytes(d, "memory.current");
        st->peak = read_bytes(d, "memory.peak");
        st->inactive_file = read_key(d, "memory.stat", "inactive_file");
        st->ev_high = read_key(d, "memory.events", "high");
        st->ev_max = read_key(d, "memory.events", "max");
        st->ev_oom = read_key(d, "memory.events", "oom");
        st->ev_oom_kill = read_key(d, "memory.events", "oom_kill");
    } else if (w->version == 1) {
        st->limit = binding_limit(w, "memory.limit_in_bytes",
                                  st->limit_path, sizeof(st->limit_path),
                                  st->dir, sizeof(st->dir));
        d = st->dir;
        st->usage = read_bytes(d, "memory.usage_in_bytes");
        st->peak = read_bytes(d, "memory.max_usage_in_bytes");
        st->inactive_file = read_key(d, "memory.stat", "total_inactive_file");
        st->ev_max = read_bytes(d, "memory.failcnt");
        st->ev_oom_kill = read_key(d, "memory.oom_control", "oom_kill");
        st->under_oom = read_key(d, "memory.oom_control", "under_oom") > 0;
    }
    if (st->limit == HA_CGPARSE_UNLIMITED)
        st->limit_path[0] = '\0';
    if (w->version != 0) {
        uint64_t k;

        if (ha_cgroup_oom_kills(w->version, w->dir, &k) == 0)
            st->self_oom_kill = (int64_t)k;
    }
    if (st->usage >= 0)
        st->working_set =
            st->inactive_file > 0 && st->inactive_file < st->usage
                ? st->usage - st->inactive_file
                : st->usage;
    if (w->psi_file[0] != '\0') {
        char buf[512], err[64];
        ssize_t n = ha_smallfile_read(w->psi_file, buf, sizeof(buf));

        st->has_psi = n >= 0 && ha_cgparse_psi(buf, (size_t)n, &st->psi,
                                               err, sizeof(err)) == 0;
    }
}

int
ha_cgroup_oom_kills(int version, const char *dir, uint64_t *out)
{
    int64_t v = version == 2   ? read_key(dir, "memory.events", "oom_kill")
                : version == 1 ? read_key(dir, "memory.oom_control",
                                          "oom_kill")
                               : -1;

    if (v < 0)
        return -1;
    *out = (uint64_t)v;
    return 0;
}
