/* SPDX-License-Identifier: MIT
 *
 * A buffer written whole (see fdio.h).
 */
#include "core/fdio.h"

#include <errno.h>
#include <unistd.h>

int
ha_fdio_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    size_t done = 0;

    while (done < len) {
        ssize_t n = write(fd, p + done, len - done);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return n < 0 ? errno : EIO;
        done += (size_t)n;
    }
    return 0;
}
