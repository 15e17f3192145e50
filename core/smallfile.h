/* SPDX-License-Identifier: MIT
 *
 * A small file read whole into the caller's buffer: /proc's and
 * /sys/fs/cgroup's files (a process's stat, comm, children; a memory
 * cgroup's limits). It allocates nothing and takes no lock of the C
 * library's (open, read, close), so the agent's threads and a fork child
 * may call it, like core/dirwalk.h. Only a regular file is read, opened
 * with O_NONBLOCK and O_NOFOLLOW: a FIFO where a file is expected (a
 * run record of the datadir names the cgroup directory its files are
 * read from) fails at once instead of hanging the open.
 */
#ifndef HA_SMALLFILE_H
#define HA_SMALLFILE_H

#include <stddef.h>
#include <sys/types.h>

/* Reads up to max - 1 bytes of path (to its end, or until buf is full:
 * a longer file is cut) into buf, NUL-terminated; max is at least 1.
 * Returns the length, or -1 with errno when path cannot be opened or
 * read (an interrupted read is retried); EINVAL when it is not a
 * regular file, ELOOP when it is a symlink. */
ssize_t ha_smallfile_read(const char *path, char *buf, size_t max);

#endif /* HA_SMALLFILE_H */
