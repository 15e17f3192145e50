/* SPDX-License-Identifier: MIT
 *
 * Process plumbing for heapadmind: the pid file that doubles
 * as the single-instance lock, and daemonizing with a readiness pipe so
 * that start-up errors still reach the terminal that started us.
 */
#ifndef HA_DAEMON_H
#define HA_DAEMON_H

#include <stddef.h>
#include <sys/types.h>

/* Opens and locks path (flock, so the lock survives fork). Returns the
 * descriptor, or -1 with err set; when another process holds the lock,
 * err names its pid as recorded in the file. */
int ha_daemon_lock_pidfile(const char *path, char *err, size_t errlen);

/* Replaces the pid file's content with pid. Returns 0 or -1 (errno). */
int ha_daemon_write_pid(int fd, pid_t pid);

/* Forks into the background: the parent waits on a pipe and exits 0 when
 * the child calls ha_daemon_ready(fd, NULL), or prints the child's error
 * and exits 1. In the child (returned fd >= 0) the process is a session
 * leader with stdin and stdout on /dev/null. Returns -1 with err if fork
 * failed (in the original process). */
int ha_daemon_start(char *err, size_t errlen);

/* Reports start-up success (msg NULL) or failure (msg) to the waiting
 * parent and closes fd: one verdict byte, then the message. No-op when
 * fd < 0. */
void ha_daemon_ready(int fd, const char *msg);

/* unlink(path), waiting timeout_ms at most: at the stop, the pid file in
 * a datadir whose disk stopped answering must not keep the process
 * alive (the call is left to a thread of its own, which the exit ends).
 * Returns 0 when removed, -1 with errno (ETIMEDOUT: no answer). */
int ha_daemon_unlink_within(const char *path, int timeout_ms);

/* At the very end of the process: closes every descriptor of a file or
 * directory (not sockets, pipes, event descriptors, nor /dev), each on a
 * thread of its own, waiting timeout_ms at most for them all. Why: a
 * close(2) of a file on a filesystem that stopped answering (NFS, FUSE)
 * waits for the server's answer to its flush, and one left for exit(3)
 * holds the exiting process there for as long; closed on a thread, the
 * descriptor is out of the table at once, and the exit that follows
 * kills the thread still waiting, which a killed wait allows. Returns
 * how many were still closing when it returned. */
int ha_daemon_close_files_within(int timeout_ms);

/* Raises the soft limit on open descriptors to the hard one (a daemon
 * serving many clients should not stop at the usual 1024 while the
 * system allows more). Writes what it did (or why not) into msg (len
 * bytes). Returns 1 when it raised it, 0 when it already was the hard
 * limit, -1 on failure (errno). */
int ha_daemon_raise_nofile(char *msg, size_t len);

#endif /* HA_DAEMON_H */
