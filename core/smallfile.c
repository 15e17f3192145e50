/* SPDX-License-Identifier: MIT
 *
 * A small file read whole (see smallfile.h).
 */
#include "core/smallfile.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

ssize_t
ha_smallfile_read(const char *path, char *buf, size_t max)
{
    size_t got = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

    if (fd < 0)
        return -1;
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
