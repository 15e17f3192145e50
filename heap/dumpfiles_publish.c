/* SPDX-License-Identifier: MIT
 *
 * Publishing a dump (see dumpfiles.h): a dump jemalloc wrote in memory
 * copied into the staging directory, and a staged dump given its name
 * in the dump directory with a call that never replaces a file (an
 * earlier run's file of that name is moved aside first).
 */

#include "heap/dumpfiles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "core/fdio.h"
#include "prof/dumpmem.h"
#include "heap/dumpfiles_int.h"

int
ha_dumpfiles_copy_in(const char *mem, const char *prefix, char *out,
                     size_t outlen)
{
    char staged_prefix[PATH_MAX], dir[PATH_MAX], side[PATH_MAX];
    const char *name = strrchr(mem, '/'), *stem;
    char *buf = NULL;
    int in = -1, fd = -1, rc = 0, n;

    name = name != NULL ? name + 1 : mem;
    if ((rc = ha_dumpfiles_staging_prefix(prefix, staged_prefix,
                                          sizeof(staged_prefix))) != 0 ||
        (rc = ha_dumpfiles_split_prefix(staged_prefix, dir, sizeof(dir),
                                        &stem)) != 0)
        goto out;
    n = snprintf(out, outlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= outlen) {
        rc = ENAMETOOLONG;
        goto out;
    }
    if ((buf = malloc(1 << 20)) == NULL) {
        rc = ENOMEM;
        goto out;
    }
    /* Non-blocking: what is there may be no regular file (a FIFO would
     * hold this open for ever). */
    in = open(mem, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (in < 0) {
        rc = errno;
        goto out;
    }
    {
        struct stat st;

        if (fstat(in, &st) != 0 || !S_ISREG(st.st_mode)) {
            rc = EINVAL;
            goto out;
        }
    }
    fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    /* Another process of the directory removed the empty staging
     * directory at its exit (ha_dumpfiles_staging_release) meanwhile:
     * made again, once. */
    if (fd < 0 && errno == ENOENT &&
        ha_dumpfiles_staging_prefix(prefix, staged_prefix,
                                    sizeof(staged_prefix)) == 0)
        fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
                  0600);
    if (fd < 0) {
        rc = errno;
        goto out;
    }
    for (;;) {
        ssize_t r = read(in, buf, 1 << 20);

        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            rc = errno;
            break;
        }
        if (r == 0)
            break;
        rc = ha_fdio_write_all(fd, buf, (size_t)r);
        if (rc != 0)
            break;
    }
    if (rc == 0 && fsync(fd) != 0)
        rc = errno;
    if (close(fd) != 0 && rc == 0)
        rc = errno;
    fd = -1;
    if (rc != 0)
        unlink(out);
out:
    if (in >= 0)
        close(in);
    if (fd >= 0)
        close(fd);
    free(buf);
    unlink(mem);
    /* No side file of it stays in memory either (the dump hook writes
     * none there: ha_dumpfiles_note_memory). */
    if ((size_t)snprintf(side, sizeof(side), "%s%s", mem, HA_DUMPMEM_SUFFIX) <
        sizeof(side))
        unlink(side);
    return rc;
}

int
ha_dumpfiles_publish(const char *staged, const char *dir, char *out,
                     size_t outlen)
{
    const char *name = strrchr(staged, '/');
    int n;

    name = name != NULL ? name + 1 : staged;
    n = snprintf(out, outlen, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= outlen)
        return ENAMETOOLONG;
    /* Private before it has a name anyone can open. */
    (void)ha_dumpfiles_perms(staged);
    for (int attempt = 0; attempt < 2; attempt++) {
        if (renameat2(AT_FDCWD, staged, AT_FDCWD, out, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno == EINVAL || errno == ENOSYS) {
            /* A file system without RENAME_NOREPLACE: link(2) never
             * replaces either. */
            if (link(staged, out) == 0) {
                unlink(staged);
                return 0;
            }
        }
        if (errno != EEXIST || attempt > 0)
            return errno;
        /* Taken: an earlier run's file, same pid. Keep it, elsewhere. */
        if (ha_dumpfiles_move_aside(dir, name, name, 0) <= 0)
            return EEXIST;
    }
    return EEXIST;
}
