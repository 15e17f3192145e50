/* SPDX-License-Identifier: MIT
 *
 * A directory's numbered entries without opendir/readdir (see dirwalk.h
 * for why). getdents64 fills the buffer with struct linux_dirent64
 * records (getdents64(2)): an inode, an offset, the record's length, a
 * type byte and the NUL-terminated name; records are 8-byte aligned.
 */
#include "core/dirwalk.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/util.h"

struct dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

static long
walk(const char *path, bool skip_own, ha_dirwalk_fn fn, void *arg)
{
    _Alignas(8) char buf[4096];
    int dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    long seen = 0, got;
    bool more = true;
    int err = 0;

    if (dir < 0)
        return -1;
    while (more) {
        got = syscall(SYS_getdents64, dir, buf, sizeof(buf));
        if (got == 0)
            break;
        if (got < 0) {
            err = errno;
            break;
        }
        for (long off = 0; off < got && more;) {
            const struct dirent64 *d = (const void *)(buf + off);
            uint64_t n;

            off += d->reclen;
            if (!ha_decimal(d->name, d->name + strlen(d->name), &n) ||
                (skip_own && n == (uint64_t)dir))
                continue;
            seen++;
            more = fn((long)n, arg);
        }
    }
    close(dir);
    if (err != 0) {
        errno = err;
        return -1;
    }
    return seen;
}

long
ha_dirwalk_numbers(const char *path, ha_dirwalk_fn fn, void *arg)
{
    return walk(path, false, fn, arg);
}

long
ha_dirwalk_fds(ha_dirwalk_fn fn, void *arg)
{
    return walk("/proc/self/fd", true, fn, arg);
}
