/* SPDX-License-Identifier: MIT
 *
 * The LD_PRELOAD agent: gives an unmodified jemalloc daemon the admin
 * port, through the public API only (include/heapadmin.h).
 *
 *   LD_PRELOAD=/usr/lib/<arch>/heapadmin/heapadmin-agent.so \
 *   MALLOC_CONF=prof:true,prof_active:false \
 *   HEAPADMIN_CONF=/etc/heapadmin/agent.cnf  redis-server ...
 *   mariadb -S /var/lib/heapadmin/redis-server.<pid>.sock -uadmin -p
 *
 * Environment (all optional; read once, when the agent is loaded, before
 * the host runs, so before it can drop privileges or rewrite anything):
 *   HEAPADMIN_CONF            heapadmin config file (proxysql.cnf layout):
 *                             credentials, jemalloc_variables, datadir;
 *                             read once, by the first process, and kept
 *                             for its children
 *   HEAPADMIN_DATADIR         datadir (dumps); default: the config's, else
 *                             /var/lib/heapadmin when writable (or root),
 *                             else /tmp/heapadmin-<uid>
 *   HEAPADMIN_USERS           users the host's processes drop privileges
 *                             to (nginx's www-data): the first process,
 *                             as root, makes <datadir>/<user>/ for each
 *                             (0700, theirs), where those processes are
 *                             served
 *   HEAPADMIN_PROGRAMS        programs to serve, by name ("*": all);
 *                             default: the one the operator started (the
 *                             first that is not a shell or launcher), not
 *                             the helpers it runs
 *   HEAPADMIN_SOCKET          the unix socket; "%p" is replaced by the
 *                             pid and "%n" by the program name; default:
 *                             the config's admin_variables.mysql_ifaces
 *                             (with %p and %n expanded too) for the
 *                             service's own process, <dir>/%n.%p.sock
 *                             otherwise and for every other process
 *   HEAPADMIN_TCP             also listen on this host:port (first
 *                             process only: a fork child cannot share it)
 *   HEAPADMIN_LOG             log file; default: none unless the config
 *                             names an errorlog (never stdout or stderr)
 *   HEAPADMIN_START_DELAY_MS  wait this long before holding any descriptor
 *                             (hosts close every fd at start-up); 1000;
 *                             at least 250 in a root process's fork
 *                             children when HEAPADMIN_USERS is set (they
 *                             drop privileges first)
 *   HEAPADMIN_FORK            follow (default) | per-process | none; see
 *                             fork.c
 *   HEAPADMIN_DISABLE=1       do nothing at all
 */
#ifndef HA_AGENT_H
#define HA_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

enum ha_agent_fork {
    HA_AGENT_FORK_FOLLOW,      /* a daemonizing parent's surviving child */
    HA_AGENT_FORK_PER_PROCESS, /* every process its own endpoint */
    HA_AGENT_FORK_NONE,        /* children never serve */
    HA_AGENT_FORK_MAX
};

/* Starts serving from this process on a detached thread after delay_ms
 * (0: at once). When wait_parent is set, the thread first waits until
 * the parent it had when forked is gone (ha_agent_await_parent) and
 * serves only then: a child whose parent lives on (a BGSAVE, nginx's
 * workers) never serves, and its thread ends. */
void ha_agent_launch(unsigned delay_ms, bool wait_parent, pid_t parent);

/* HEAPADMIN_FORK=follow: how long past its start delay a fork child
 * waits for its parent to exit before it is known not to be served (a
 * daemonizing parent exits at once). children.c's last look at a child
 * comes no sooner. */
#define HA_AGENT_FOLLOW_WAIT_MS 4000

/* In a fork child's agent thread (fork.c): waits, with no timer, until
 * parent (the process it was forked from) has exited, for at most
 * delay_ms + HA_AGENT_FOLLOW_WAIT_MS. True once it has (this process
 * takes over); false when it lives on (logged: the thread then ends, and
 * the child costs nothing more). */
bool ha_agent_await_parent(pid_t parent, unsigned delay_ms);

/* Forgets the instance inherited from the parent (fork.c calls it in the
 * child): its thread does not exist here. */
void ha_agent_forget_inherited(void);

/* The configured fork policy and start delay. */
enum ha_agent_fork ha_agent_fork_policy(void);
unsigned ha_agent_start_delay_ms(void);

/* Registers the pthread_atfork handlers (fork.c). */
void ha_agent_fork_init(void);

/* Forks this process made, counted by the atfork parent handler (which
 * may run on any of the host's threads: an atomic, nothing else). */
unsigned long ha_agent_forks(void);
void ha_agent_count_fork(void);

/* The name of uid as the constructor learnt it (HEAPADMIN_USERS and the
 * process's own users) into out; its number when unknown (false).
 * Never asks the name service: safe on the agent's threads. */
bool ha_agent_user_name(long uid, char *out, size_t len);

/* snprintf that says whether all of it fit (false: cut). */
bool ha_agent_fmt(char *out, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The agent's log: this process's instance's log once it serves, else
 * HEAPADMIN_LOG (never stdout or stderr). */
void ha_agent_log(int level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- codepages.c: the agent's code, given back when quiet ---- */

/* Finds the read-only segments of the agent's file mapped at so_base.
 * In the constructor only (dl_iterate_phdr takes the loader's lock). */
void ha_agent_code_find(unsigned long so_base);

/* At each tick of the admin thread: drops those pages from this
 * process's resident set once the work that faulted them in is over
 * (they stay in the page cache). */
void ha_agent_code_tick(void);

/* Drops them now. */
void ha_agent_code_drop(void);

/* ---- children.c: what the parent says of the children it starts ---- */

/* What children.c needs to know of this process. */
struct ha_agent_self {
    const char *program;       /* the registry's name for it */
    const char *so_path;       /* this agent's file, as mapped */
    unsigned long so_base;     /* where it is mapped here */
    const char *datadir;       /* the datadir (top) */
    const char *programs;      /* HEAPADMIN_PROGRAMS, "" if unset */
    enum ha_agent_fork fork;
    unsigned delay_ms;
};

/* Called every second on the admin thread: after this process forks,
 * looks at its children (twice: once they had time to exec, and once
 * their start delay has passed) and says once, in this process's log,
 * which are not served and why: AT_SECURE (the loader ignored
 * LD_PRELOAD), no jemalloc, not the served program, no directory for its
 * user, or a fork child under HEAPADMIN_FORK=follow. */
void ha_agent_children_tick(const struct ha_agent_self *self);

/* Whether a program name is a shell or launcher, which passes the agent
 * on to the program it starts and is never served itself. Pure. */
bool ha_agent_is_launcher(const char *program);

/* Whether program is in list (comma- or space-separated names, "*" for
 * every one). Pure. */
bool ha_agent_in_list(const char *list, const char *program);

#endif /* HA_AGENT_H */
