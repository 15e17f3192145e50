/* SPDX-License-Identifier: MIT
 *
 * The modes of dump files and their side files (see dumpfiles.h): 0600,
 * or 0640 with the dump group, applied from jemalloc's dump hook too
 * (so nothing here allocates or locks); a side file written beside its
 * dump with that mode.
 */

#include "heap/dumpfiles.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/fdio.h"
#include "heap/dumpfiles_int.h"

/* -1: no group, dumps are 0600. */
static _Atomic long long dump_gid = -1;

void
ha_dumpfiles_set_perms(gid_t gid)
{
    atomic_store(&dump_gid, gid == (gid_t)-1 ? -1 : (long long)gid);
}

int
ha_dumpfiles_perms(const char *path)
{
    long long gid = atomic_load(&dump_gid);

    if (gid >= 0 && chown(path, (uid_t)-1, (gid_t)gid) != 0)
        return errno;
    return chmod(path, gid >= 0 ? 0640 : 0600) == 0 ? 0 : errno;
}

int
ha_dumpfiles_sidecar_perms(const char *dump, const char *suffix)
{
    char path[PATH_MAX];

    if ((size_t)snprintf(path, sizeof(path), "%s%s", dump, suffix) >=
        sizeof(path))
        return ENAMETOOLONG;
    return ha_dumpfiles_perms(path);
}

int
ha_dumpfiles_write_sidecar(const char *dump, const char *suffix,
                           const char *text, size_t len)
{
    char path[PATH_MAX];
    int fd, rc = 0;

    if ((size_t)snprintf(path, sizeof(path), "%s%s", dump, suffix) >=
        sizeof(path))
        return ENAMETOOLONG;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno;
    rc = ha_fdio_write_all(fd, text, len);
    if (close(fd) != 0 && rc == 0)
        rc = errno;
    if (rc != 0) {
        unlink(path);
        return rc;
    }
    (void)ha_dumpfiles_perms(path);
    return 0;
}
