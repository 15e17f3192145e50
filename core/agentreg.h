/* SPDX-License-Identifier: MIT
 *
 * The agents of a datadir: how processes served by the LD_PRELOAD agent
 * register with a host gateway (heapadmind --gateway), how the gateway
 * finds and asks them, and how endpoints of processes that are gone are
 * removed.
 *
 * Layout. Each served process listens on
 *     <dir>/<program>.<pid>.http    (HTTP for the gateway; the registry)
 *     <dir>/<program>.<pid>.sock    (MySQL, the default admin socket)
 * where <dir> is the datadir for processes of the datadir's owner, and
 * <datadir>/<user>/ for a process running as another user (a worker a
 * root master forked and that then dropped privileges): a directory of
 * that user's, mode 0700, made by the root process before the drop. No
 * directory is ever writable by more than one user, so nothing a worker
 * can create (a symlink, a hard link, a FIFO) is followed by a process
 * of another user: root only lists, unlinkat()s names and connect()s to
 * sockets there, and a connection is believed only once SO_PEERCRED
 * shows the process and user the name promises, before a byte is sent.
 *
 * The socket files are the registry: no list to keep in step, nothing
 * shared to lock. An entry whose process is gone (kill -9 leaves its
 * files) or now runs another program is stale: listed as gone, and
 * removed at the next start in that datadir (ha_agentreg_clean).
 *
 * Asking them is core/agenthttp.h's.
 */
#ifndef HA_AGENTREG_H
#define HA_AGENTREG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/buf.h"

#define HA_AGENTREG_HTTP ".http"  /* the registry socket's suffix */
#define HA_AGENTREG_SQL ".sock"   /* the default MySQL socket's */
#define HA_AGENTREG_PROGRAM_MAX 64
#define HA_AGENTREG_YOUNG_S 10     /* a socket this new that refuses is a
                                      process starting, not a stale one */

enum ha_agent_state {
    HA_AGENT_SERVING,   /* its process lives and answers on the socket */
    HA_AGENT_GONE,      /* its process is gone, or the pid now runs
                           another program or user: a stale entry */
    HA_AGENT_MISMATCH,  /* a live process listens there as the name's pid
                           and user, but the kernel says it runs another
                           program than the name claims (or cannot say):
                           never asked, never merged, not removed */
    HA_AGENT_NO_SOCKET, /* its process lives and runs the program the
                           name says, but its .http file is gone (a tmp
                           cleaner deleted it; the agent makes it again
                           within a second): not reachable now */
    HA_AGENT_STATE_MAX
};

struct ha_agent {
    pid_t pid;                             /* from the name */
    char program[HA_AGENTREG_PROGRAM_MAX]; /* from the name */
    char path[4096];                       /* the .http socket */
    uid_t uid;                             /* its directory's owner: the
                                              user the process runs as */
    char user[64];                         /* that user's name, or uid */
    enum ha_agent_state state;
    char why[200];  /* gone, mismatch: why; starting or busy: what
                       was seen */
    int64_t started;                       /* process start, Unix s; 0 */
    bool no_socket;  /* found by its .sock alone: the .http is missing */
    bool foreign;    /* gone, and the pid lives as another user or
                        another process answers on the socket: the entry
                        says nothing true of that pid, so nothing is
                        said of it (no series, no row's figures) */
};

/* Splits a registry name "<program>.<pid><suffix>" (program may hold
 * dots; pid is decimal, 1..2^31-1). Returns true with program (len
 * bytes) and *pid set. Pure. */
bool ha_agentreg_parse_name(const char *name, const char *suffix,
                            char *program, size_t len, pid_t *pid);

/* The state of agent a now, from the kernel alone: /proc (the process
 * lives, one of its uids is the directory's owner), a connect() whose
 * SO_PEERCRED must show the name's pid and the directory's user, and
 * /proc/<pid>/exe, which must be the program the name says
 * (ha_agentreg_exe_matches). a->state, a->why and a->started are set. */
void ha_agentreg_check(struct ha_agent *a);

/* Lists the agents registered in datadir (absolute) and in its per-user
 * directories, checked (ha_agentreg_check), ordered by directory then
 * pid. *out is malloc'd (free() it); *n its length. Directories this
 * process cannot read are skipped. Returns 0, or -1 with err. */
int ha_agentreg_list(const char *datadir, struct ha_agent **out, size_t *n,
                     char *err, size_t errlen);

/* Removes the stale entries (both sockets) of datadir in the directories
 * this process may clean: every one when it runs as root, else those it
 * owns. Names only (unlinkat, never following a link). removed (may be
 * NULL) is told of each file removed, with the reason. Returns how many
 * entries. */
size_t ha_agentreg_clean(const char *datadir,
                         void (*removed)(void *arg, const char *path,
                                         const char *why),
                         void *arg);

/* Whether exe (a /proc/<pid>/exe link's target, " (deleted)" allowed)
 * runs program: its basename is program, or same_file(<exe's
 * directory>/<program>, arg) says that name is the same file (the link
 * a process was started through: redis-server -> redis-check-rdb).
 * Pure but for same_file. */
bool ha_agentreg_exe_matches(const char *exe, const char *program,
                             bool (*same_file)(const char *path, void *arg),
                             void *arg);

/* Connects to a's registry socket and checks the peer before anything
 * is sent: its pid must be a->pid and its user a->uid. Returns a
 * blocking descriptor, or -1 with err. */
int ha_agentreg_connect(const struct ha_agent *a, char *err, size_t errlen);

/* The process's start time as Unix seconds (from /proc), or 0. */
int64_t ha_agentreg_started(pid_t pid);

/* The name of this process's program, as the registry names it: the
 * basename of /proc/self/exe, or of the path it was executed as when
 * that is a link to the same file (redis-server, which Debian links to
 * redis-check-rdb). Into out (len bytes). */
void ha_agentreg_self_program(char *out, size_t len);

#endif /* HA_AGENTREG_H */
