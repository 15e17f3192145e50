/* SPDX-License-Identifier: MIT
 *
 * Earlier runs (see dumpfiles.h): at start, staged and in-memory
 * leftovers of processes that are gone are removed, and an earlier
 * run's files under this process's pid are moved to earlier-runs/
 * before this run can write a single dump; publishing moves a taken
 * name aside the same way.
 */

#include "heap/dumpfiles.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "prof/dumpname.h"
#include "heap/dumpfiles_int.h"

/* ------------------------------------------------------------------
 * Earlier runs
 * ------------------------------------------------------------------ */

/* When this process started, in seconds since the epoch: now, less the
 * time since boot, plus /proc/self/stat's starttime (clock ticks after
 * boot). /proc/stat's btime is whole seconds and would put the start up
 * to a second early. Files older than this cannot be this run's. 0 when
 * unknown. */
static double
process_start_time(void)
{
    char buf[1024];
    unsigned long long start_ticks = 0;
    struct timespec real, boot;
    const char *p;
    FILE *f;
    size_t n;
    long hz = sysconf(_SC_CLK_TCK);

    if ((f = fopen("/proc/self/stat", "re")) == NULL)
        return 0;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* Field 2 (comm) may hold spaces and parentheses: count from the
     * last ')'. starttime is field 22, the 20th after it. */
    if ((p = strrchr(buf, ')')) == NULL)
        return 0;
    for (int field = 2; field < 22 && p != NULL; field++)
        p = strchr(p + 1, ' ');
    if (p == NULL || sscanf(p + 1, "%llu", &start_ticks) != 1 || hz <= 0)
        return 0;
    if (clock_gettime(CLOCK_REALTIME, &real) != 0 ||
        clock_gettime(CLOCK_BOOTTIME, &boot) != 0)
        return 0;
    return (double)real.tv_sec + (double)real.tv_nsec / 1e9 -
           ((double)boot.tv_sec + (double)boot.tv_nsec / 1e9) +
           (double)start_ticks / (double)hz;
}

/* Moves the regular files of dir whose names start with head and whose
 * mtime is before not_after (seconds; 0: any) into a new directory
 * earlier-runs/<label>.<UTC time of the newest>/. Returns how many, or
 * -1 (logged). */
int
ha_dumpfiles_move_aside(const char *dir, const char *head, const char *label,
                        double not_after)
{
    char(*names)[NAME_MAX + 1] = NULL;
    size_t cap = 0;
    char base[PATH_MAX], dest[PATH_MAX], from[PATH_MAX], to[PATH_MAX];
    char stamp[80];
    time_t newest = 0;
    size_t n = 0, moved = 0;
    struct dirent *de;
    struct tm tm;
    DIR *d;
    int len, rc = ENAMETOOLONG;

    if ((d = opendir(dir)) == NULL) {
        ha_log_warn("dump housekeeping: cannot read %s: %s", dir,
                    strerror(errno));
        return -1;
    }
    while ((de = readdir(d)) != NULL) {
        struct stat st;

        if (strncmp(de->d_name, head, strlen(head)) != 0)
            continue;
        snprintf(from, sizeof(from), "%s/%s", dir, de->d_name);
        if (lstat(from, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (not_after > 0 &&
            (double)st.st_mtim.tv_sec + (double)st.st_mtim.tv_nsec / 1e9 >=
                not_after)
            continue;
        if (n == cap) {
            size_t ncap = cap == 0 ? 16 : cap * 2;
            void *p = realloc(names, ncap * sizeof(*names));

            if (p == NULL)
                break;
            names = p;
            cap = ncap;
        }
        if (st.st_mtime > newest)
            newest = st.st_mtime;
        ha_strlcpy(names[n++], de->d_name, sizeof(names[0]));
    }
    closedir(d);
    if (n == 0) {
        free(names);
        return 0;
    }
    ha_utc_tm(newest, &tm);
    snprintf(stamp, sizeof(stamp), "%04d%02d%02dT%02d%02d%02dZ",
             tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec);
    len = snprintf(base, sizeof(base), "%s/%s", dir, HA_DUMPFILES_EARLIER);
    if (len < 0 || (size_t)len >= sizeof(base) ||
        (rc = ha_dumpfiles_own_dir(base, 0750)) != 0) {
        ha_log_warn("dump housekeeping: cannot create %s/%s: %s", dir,
                    HA_DUMPFILES_EARLIER, strerror(rc));
        free(names);
        return -1;
    }
    for (int k = 1;; k++) {
        len = k == 1
                  ? snprintf(dest, sizeof(dest), "%s/%s.%s", base, label, stamp)
                  : snprintf(dest, sizeof(dest), "%s/%s.%s-%d", base, label,
                             stamp, k);
        if (len < 0 || (size_t)len >= sizeof(dest)) {
            free(names);
            return -1;
        }
        if (mkdir(dest, 0750) == 0)
            break;
        if (errno != EEXIST || k >= 100) {
            ha_log_warn("dump housekeeping: cannot create %s: %s", dest,
                        strerror(errno));
            free(names);
            return -1;
        }
    }
    for (size_t i = 0; i < n; i++) {
        int a = snprintf(from, sizeof(from), "%s/%s", dir, names[i]);
        int b = snprintf(to, sizeof(to), "%s/%s", dest, names[i]);

        if (a < 0 || (size_t)a >= sizeof(from) || b < 0 ||
            (size_t)b >= sizeof(to))
            continue;
        if (rename(from, to) == 0)
            moved++;
        else
            ha_log_warn("dump housekeeping: cannot move %s to %s: %s", from,
                        dest, strerror(errno));
    }
    free(names);
    ha_log_info("dump housekeeping: %zu file%s of an earlier run with the "
                "same name moved to %s, so this run cannot overwrite them",
                moved, moved == 1 ? "" : "s", dest);
    return (int)moved;
}

/* ------------------------------------------------------------------
 * Start-up
 * ------------------------------------------------------------------ */

/* Removes staged dumps of processes that no longer run or of pid (an
 * earlier run's): the remains of a dump killed mid-write. */
static void
clean_staging(const char *dir, long pid)
{
    char staging[PATH_MAX], path[PATH_MAX];
    struct dirent *de;
    DIR *d;
    int n;

    n = snprintf(staging, sizeof(staging), "%s/%s", dir, HA_DUMPFILES_STAGING);
    if (n < 0 || (size_t)n >= sizeof(staging) || (d = opendir(staging)) == NULL)
        return;
    while ((de = readdir(d)) != NULL) {
        struct ha_dump_name dn;
        struct stat st;

        if (!ha_dumpname_parse(de->d_name, &dn))
            continue;
        if (dn.pid != pid && (kill((pid_t)dn.pid, 0) == 0 || errno != ESRCH))
            continue; /* another live process's dump in progress */
        n = snprintf(path, sizeof(path), "%s/%s", staging, de->d_name);
        if (n < 0 || (size_t)n >= sizeof(path) || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (unlink(path) == 0)
            ha_log_warn("dump housekeeping: removed %s, a dump interrupted "
                        "mid-write by a process that is gone (pid %lld)",
                        path, dn.pid);
    }
    closedir(d);
}

int
ha_dumpfiles_start(const char *prefix, long pid)
{
    char dir[PATH_MAX], head[NAME_MAX + 1], label[NAME_MAX + 1];
    const char *stem;
    double started = process_start_time();
    int n;

    if (ha_dumpfiles_split_prefix(prefix, dir, sizeof(dir), &stem) != 0)
        return -1;
    clean_staging(dir, pid);
    ha_dumpfiles_clean_memory(pid);
    /* Without the start time every same-pid file would look earlier,
     * this run's own included: move nothing rather than that. */
    if (started <= 0)
        return 0;
    n = snprintf(head, sizeof(head), "%s.%ld.", stem, pid);
    if (n < 0 || (size_t)n >= sizeof(head))
        return -1;
    snprintf(label, sizeof(label), "%s.%ld", stem, pid);
    return ha_dumpfiles_move_aside(dir, head, label, started);
}
