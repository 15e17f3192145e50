/* SPDX-License-Identifier: MIT
 *
 * heapadmind's log lines written by a thread of their own. The log file
 * sits in the datadir by default: on a disk that stopped answering (a
 * hung NFS mount, a FUSE server that hangs) a write(2) to it waits until
 * the disk answers, and the event loop, which logs every login, would
 * wait with it. So lines are queued in memory (HA_LOGQ_BYTES at most;
 * past it a line is dropped and counted, and the count is logged once
 * the file takes lines again) and the writer thread writes them in
 * order. Any thread may queue a line.
 */
#ifndef HA_LOGQ_H
#define HA_LOGQ_H

#include <stdbool.h>
#include <stddef.h>

#define HA_LOGQ_BYTES (1u << 20)

struct ha_logq;

/* A queue writing to fd (not owned: the caller keeps it open and may
 * change it with ha_logq_set_fd). Returns NULL when no thread could be
 * started: the caller then writes lines itself. */
struct ha_logq *ha_logq_start(int fd);

/* Queues text[0 .. len) (a whole line with its newline). Returns true,
 * or false when it was dropped (the queue full). */
bool ha_logq_put(struct ha_logq *q, const char *text, size_t len);

/* Lines queued from now on go to fd (SIGHUP's reopened log). */
void ha_logq_set_fd(struct ha_logq *q, int fd);

/* logrotate's SIGHUP: the writer thread opens path anew (O_APPEND, 0640)
 * onto the descriptor it writes to, and onto stderr (libraries report
 * there), before the lines queued after this call: an open, or the old
 * file's close, on a disk that stopped answering waits there, never on
 * the caller's thread. path must outlive q. */
void ha_logq_reopen(struct ha_logq *q, const char *path);

/* Writes what is queued, waiting timeout_ms at most, and stops the
 * thread. Returns 0 when all was written; -1 when the file did not take
 * it in time (the thread is then left behind with what it holds, and q
 * is leaked). q is gone either way. */
int ha_logq_stop(struct ha_logq *q, int timeout_ms);

#endif /* HA_LOGQ_H */
