/* SPDX-License-Identifier: MIT
 *
 * Where dump files go (see dumpfiles.h): a prefix's directory and stem,
 * directories of this user's made on demand, and the staging directory
 * heapadmin's own dumps are written into before they are published.
 */

#include "heap/dumpfiles.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "heap/dumpfiles_int.h"

/* Splits prefix into its directory and its stem. */
int
ha_dumpfiles_split_prefix(const char *prefix, char *dir, size_t dirlen,
                          const char **stem)
{
    const char *slash = strrchr(prefix, '/');
    int n;

    if (slash == NULL) {
        *stem = prefix;
        n = snprintf(dir, dirlen, ".");
    } else {
        *stem = slash + 1;
        n = snprintf(dir, dirlen, "%.*s",
                     (int)(slash == prefix ? 1 : slash - prefix), prefix);
    }
    return n < 0 || (size_t)n >= dirlen ? ENAMETOOLONG : 0;
}

int
ha_dumpfiles_dir(const char *prefix, char *dir, size_t dirlen)
{
    const char *stem;

    return ha_dumpfiles_split_prefix(prefix, dir, dirlen, &stem);
}

/* A directory of this user's at path (never a symlink), made with mode
 * when missing. Returns 0 or an errno value. */
int
ha_dumpfiles_own_dir(const char *path, mode_t mode)
{
    struct stat st;

    if (mkdir(path, mode) != 0 && errno != EEXIST)
        return errno;
    if (lstat(path, &st) != 0)
        return errno;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
        return ENOTDIR;
    return 0;
}

int
ha_dumpfiles_staging_prefix(const char *prefix, char *out, size_t outlen)
{
    char dir[PATH_MAX], staging[PATH_MAX];
    const char *stem;
    int rc, n;

    if ((rc = ha_dumpfiles_split_prefix(prefix, dir, sizeof(dir), &stem)) != 0)
        return rc;
    n = snprintf(staging, sizeof(staging), "%s/%s", dir, HA_DUMPFILES_STAGING);
    if (n < 0 || (size_t)n >= sizeof(staging))
        return ENAMETOOLONG;
    if ((rc = ha_dumpfiles_own_dir(staging, 0700)) != 0)
        return rc;
    n = snprintf(out, outlen, "%s/%s", staging, stem);
    return n < 0 || (size_t)n >= outlen ? ENAMETOOLONG : 0;
}

int
ha_dumpfiles_staging_release(const char *dir)
{
    char staging[PATH_MAX];
    int n =
        snprintf(staging, sizeof(staging), "%s/%s", dir, HA_DUMPFILES_STAGING);

    if (n < 0 || (size_t)n >= sizeof(staging))
        return ENAMETOOLONG;
    /* rmdir never follows a link, and removes only an empty
     * directory. */
    if (rmdir(staging) == 0 || errno == ENOENT)
        return 0;
    return errno;
}
