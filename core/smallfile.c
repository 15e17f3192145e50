/* SPDX-License-Identifier: MIT
 *
 * A small file read whole (see smallfile.h).
 */
#include "core/smallfile.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

ssize_t
ha_smallfile_read(const char *path, char *buf, size_t max)
{
    size_t got = 0;
    struct stat st;
    /* Only a regular file: a FIFO where a file is expected (a cgroup
     * directory named by a run record of the datadir) would hold a
     * blocking open for ever, a symlink could lead anywhere. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK |
                            O_NOFOLLOW);

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    while (got + 1 < max) {
        ssize_t n = read(fd, buf + got, max - 1 - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;

            close(fd);
            errno = e;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    buf[got] = '\0';
    return (ssize_t)got;
}
