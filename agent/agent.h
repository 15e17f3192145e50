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
 * Environment (all optional; read once, when the agent is loaded):
 *   HEAPADMIN_CONF            heapadmin config file (proxysql.cnf layout):
 *                             credentials, jemalloc_variables, datadir
 *   HEAPADMIN_DATADIR         datadir (dumps); default: the config's, else
 *                             /var/lib/heapadmin when writable, else
 *                             /tmp/heapadmin-<uid>
 *   HEAPADMIN_SOCKET          the unix socket; "%p" is replaced by the
 *                             pid and "%n" by the program name; default:
 *                             the config's admin_variables.mysql_ifaces
 *                             (with %p and %n expanded too) for the
 *                             service's own process, <datadir>/%n.%p.sock
 *                             otherwise and for every other process
 *   HEAPADMIN_TCP             also listen on this host:port (first
 *                             process only: a fork child cannot share it)
 *   HEAPADMIN_LOG             log file; default: none unless the config
 *                             names an errorlog (never stdout or stderr)
 *   HEAPADMIN_START_DELAY_MS  wait this long before holding any descriptor
 *                             (hosts close every fd at start-up); 1000
 *   HEAPADMIN_FORK            follow (default) | per-process | none; see
 *                             fork.c
 *   HEAPADMIN_DISABLE=1       do nothing at all
 */
#ifndef HA_AGENT_H
#define HA_AGENT_H

#include <stdbool.h>
#include <sys/types.h>

enum ha_agent_fork {
    HA_AGENT_FORK_FOLLOW,      /* a daemonizing parent's surviving child */
    HA_AGENT_FORK_PER_PROCESS, /* every process its own endpoint */
    HA_AGENT_FORK_NONE,        /* children never serve */
    HA_AGENT_FORK_MAX
};

/* Starts serving from this process on a detached thread after delay_ms
 * (0: at once). When wait_parent is set, the thread first waits until
 * the parent it had when forked is gone (getppid() changes) and serves
 * only then: a child whose parent lives on (a BGSAVE) never serves. */
void ha_agent_launch(unsigned delay_ms, bool wait_parent, pid_t parent);

/* Forgets the instance inherited from the parent (fork.c calls it in the
 * child): its thread does not exist here. */
void ha_agent_forget_inherited(void);

/* The configured fork policy and start delay. */
enum ha_agent_fork ha_agent_fork_policy(void);
unsigned ha_agent_start_delay_ms(void);

/* Registers the pthread_atfork child handler (fork.c). */
void ha_agent_fork_init(void);

#endif /* HA_AGENT_H */
