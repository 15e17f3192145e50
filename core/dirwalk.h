/* SPDX-License-Identifier: MIT
 *
 * The numbered entries of a directory (/proc/<pid>/task, /proc/self/fd:
 * thread ids, descriptors), read with the raw getdents64 system call into
 * a buffer on the caller's stack. opendir/readdir are not used on
 * purpose: opendir allocates (from the host's heap, inside a host) and
 * readdir takes the stream's lock, neither of which is safe where these
 * walks run: in a fork child's atfork handler (the parent may have forked
 * while another thread held malloc's lock) and on the agent's threads
 * inside a host. This allocates nothing, takes no lock of the C
 * library's, calls no locale-dependent parser, and holds one descriptor
 * (O_CLOEXEC) for the length of the walk.
 */
#ifndef HA_DIRWALK_H
#define HA_DIRWALK_H

#include <stdbool.h>

/* Called with each number; returns false to end the walk there. */
typedef bool (*ha_dirwalk_fn)(long n, void *arg);

/* Calls fn(n, arg) for each entry of the directory path whose name is a
 * decimal number n (digits only, at most INT64_MAX: ha_decimal), in the
 * order the kernel lists them (ascending, for /proc's directories),
 * until fn returns false. Other names ("." and "..", "self") are passed over.
 * Returns how many entries fn was called with, or -1 with errno set when
 * path cannot be opened as a directory or read. */
long ha_dirwalk_numbers(const char *path, ha_dirwalk_fn fn, void *arg);

/* The same over /proc/self/fd: every descriptor open in this process
 * except the one the walk itself holds on that directory. */
long ha_dirwalk_fds(ha_dirwalk_fn fn, void *arg);

#endif /* HA_DIRWALK_H */
