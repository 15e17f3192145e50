/* SPDX-License-Identifier: MIT
 *
 * This process's instance of heapadmin: its endpoint chosen, made and
 * started, taken back when the host changed its ids meanwhile, forgotten
 * in a fork child (whose thread does not exist), and its socket files
 * removed when the host exits without stopping it. Kept apart from the
 * thread that starts it (launch.c) so that what a served process owns,
 * and what it must leave behind, is in one file.
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/attached.h"
#include "agent/children.h"
#include "agent/codepages.h"
#include "agent/log.h"
#include "agent/stacktrim.h"
#include "include/heapadmin.h"

#define LISTENER_CHECK_MS 1000

/* Set once a process has applied the profiler's settings (config, saved
 * values): a fork child made after that inherits them in jemalloc's own
 * state and only adopts them; one made before (the host forked during
 * the start delay) applies them itself. */
static _Atomic bool profiler_applied;

/* The instance serving this process, and the process it belongs to (a
 * fork child inherits both values but not the thread behind them). */
static _Atomic(struct heapadmin *) current;
static _Atomic pid_t current_pid;
static char current_sock[PATH_MAX];  /* its socket files, for exit() */
static char current_agent[PATH_MAX];

/* Expands %p (pid) and %n (program name) in tmpl into out. */
static int
expand(const char *tmpl, pid_t pid, char *out, size_t len)
{
    size_t used = 0;

    for (const char *p = tmpl; *p != '\0'; p++) {
        char piece[64];
        const char *add = piece;
        size_t n;

        if (p[0] == '%' && p[1] == 'p') {
            snprintf(piece, sizeof(piece), "%ld", (long)pid);
            p++;
        } else if (p[0] == '%' && p[1] == 'n') {
            add = ha_agent_settings.program;
            p++;
        } else {
            piece[0] = *p;
            piece[1] = '\0';
        }
        n = strlen(add);
        if (used + n + 1 > len)
            return -1;
        memcpy(out + used, add, n);
        used += n;
    }
    out[used] = '\0';
    return 0;
}

static void
tick(void *arg)
{
    struct ha_agent_self self = {
        .program = ha_agent_settings.program,
        .so_path = ha_agent_settings.so_path,
        .so_base = ha_agent_settings.so_base,
        .datadir = ha_agent_settings.datadir,
        .programs = ha_agent_settings.programs,
        .fork = ha_agent_settings.fork,
        .delay_ms = ha_agent_settings.delay_ms,
    };

    (void)arg;
    ha_agent_children_tick(&self);
    ha_agent_attached_tick();
    /* Quiet again after work: its stack goes back with its code. */
    if (ha_agent_code_tick())
        ha_agent_stack_trim();
}

/* Creates and starts this process's instance. parent: the daemonizing
 * parent it took over from (0: none). Returns false when it does not
 * serve (said in the log). */
bool
ha_agent_serve(pid_t parent)
{
    struct heapadmin_options o;
    struct heapadmin *h = NULL;
    char dir[PATH_MAX], sock[PATH_MAX], agent[PATH_MAX];
    char ifaces[PATH_MAX + 300], err[1024];
    pid_t pid = getpid();
    bool first = pid == ha_agent_settings.first_pid, fork_child = !first;
    bool own_endpoint;

    if (!ha_agent_have_jemalloc())
        return false;
    if (ha_agent_settings.conf[0] != '\0' &&
        ha_agent_settings.conf_text == NULL) {
        ha_agent_log(0, "not serving %s (pid %ld): %s",
                     ha_agent_settings.program, (long)pid,
                     ha_agent_settings.conf_err);
        return false;
    }
    if (ha_agent_own_dir(dir, sizeof(dir), err, sizeof(err)) != 0) {
        /* Said by the parent too (children.c), which can write its log;
         * this process may not be able to. */
        ha_agent_log(1, "not serving %s (pid %ld): %s",
                     ha_agent_settings.program, (long)pid, err);
        return false;
    }
    if (strcmp(dir, ha_agent_settings.datadir) != 0)
        ha_agent_log_fallback(dir);
    if ((size_t)snprintf(agent, sizeof(agent), "%s/%s.%ld.http", dir,
                         ha_agent_settings.program,
                         (long)pid) >= sizeof(agent) ||
        strlen(agent) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        ha_agent_log(0, "not serving %s (pid %ld): the socket path %s is "
                     "longer than a unix socket's %zu bytes: choose a "
                     "shorter datadir",
                     ha_agent_settings.program, (long)pid, agent,
                     sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return false;
    }
    if (ha_agent_settings.socket_tmpl[0] != '\0') {
        if (expand(ha_agent_settings.socket_tmpl, pid, sock,
                   sizeof(sock)) != 0) {
            ha_agent_log(0, "HEAPADMIN_SOCKET is too long");
            return false;
        }
    } else {
        ha_agent_fmt(sock, sizeof(sock), "%s/%s.%ld.sock", dir,
                     ha_agent_settings.program, (long)pid);
    }
    /* The config's interfaces belong to the service's own process: the
     * first one, or the child that took over from a daemonizing parent.
     * Other children (per-process) get the socket named after their pid,
     * as the config's addresses are taken. */
    own_endpoint = first || parent > 0;
    if (ha_agent_settings.socket_tmpl[0] == '\0' &&
        ha_agent_settings.cfg_ifaces[0] != '\0' && own_endpoint) {
        if (expand(ha_agent_settings.cfg_ifaces, pid, ifaces,
                   sizeof(ifaces)) != 0) {
            ha_agent_log(0, "mysql_ifaces is too long");
            return false;
        }
    } else if (ha_agent_settings.tcp[0] != '\0' && first) {
        snprintf(ifaces, sizeof(ifaces), "%s;%s", sock, ha_agent_settings.tcp);
    } else {
        snprintf(ifaces, sizeof(ifaces), "%s", sock);
    }
    {
        /* The socket to remove at exit: the first unix path. */
        const char *semi = strchr(ifaces, ';');
        size_t n = semi != NULL ? (size_t)(semi - ifaces) : strlen(ifaces);

        if (ifaces[0] == '/' && n < sizeof(sock)) {
            memcpy(sock, ifaces, n);
            sock[n] = '\0';
        } else if (ifaces[0] != '/') {
            sock[0] = '\0';
        }
    }

    memset(&o, 0, sizeof(o));
    o.config_text = ha_agent_settings.conf_text;
    o.config_name =
        ha_agent_settings.conf[0] != '\0' ? ha_agent_settings.conf : NULL;
    o.datadir = dir;
    o.mysql_ifaces = ifaces;
    o.listener_check_ms = LISTENER_CHECK_MS;
    o.agent_socket = agent;
    /* One fixed address fits one process: a host of several is served
     * by the gateway instead. */
    o.refuse_http_ifaces = ha_agent_settings.fork == HA_AGENT_FORK_PER_PROCESS;
    o.inherit_profiler = fork_child && atomic_load(&profiler_applied);
    o.tick = tick;
    if (ha_agent_settings.log[0] != '\0') {
        o.log = ha_agent_log_sink;
        o.log_name = ha_agent_settings.log;
    } else if (ha_agent_settings.conf[0] == '\0') {
        o.no_log = 1; /* no config, no HEAPADMIN_LOG: log nowhere */
    }
    if (heapadmin_new(&o, &h, err, sizeof(err)) != 0) {
        ha_agent_log(0, "%s", err);
        return false;
    }
    if (heapadmin_start(h, err, sizeof(err)) != 0) {
        ha_agent_log(0, "cannot serve: %s", err);
        heapadmin_free(h);
        return false;
    }
    atomic_store(&profiler_applied, true);
    snprintf(current_sock, sizeof(current_sock), "%s", sock);
    snprintf(current_agent, sizeof(current_agent), "%s", agent);
    atomic_store(&current_pid, pid);
    atomic_store(&current, h);
    ha_agent_log_serving(h);
    ha_agent_log_flush();
    if (ha_agent_settings.bad_fork_policy)
        ha_agent_log(1, "HEAPADMIN_FORK is not follow, per-process or "
                        "none; using follow");
    ha_agent_log(2, "serving %s (pid %ld) on %s; a host gateway reaches it "
                    "at %s",
                 ha_agent_settings.program, (long)pid, ifaces, agent);
    return true;
}

/* Stops serving, as if it never had: a start that raced the host's
 * change of user is made again (launcher, launch.c). */
void
ha_agent_withdraw(void)
{
    struct heapadmin *h = atomic_exchange(&current, NULL);

    if (h == NULL)
        return;
    ha_agent_log_serving(NULL);
    heapadmin_free(h);
    if (current_sock[0] != '\0')
        (void)unlink(current_sock);
    if (current_agent[0] != '\0')
        (void)unlink(current_agent);
    current_sock[0] = current_agent[0] = '\0';
}

/* In a fork child (fork.c): forgets the instance inherited from the
 * parent, whose thread does not exist here. */
void
ha_agent_forget_inherited(void)
{
    struct heapadmin *h = atomic_exchange(&current, NULL);

    if (h != NULL && atomic_load(&current_pid) != getpid())
        heapadmin_abandon(h);
    ha_agent_log_forget_inherited();
    current_sock[0] = current_agent[0] = '\0';
}

/* The host exits without ever stopping us: take our socket files with
 * us, so no stale endpoint is left for a client to hang on, and let
 * SQLite fold its -wal and -shm files back (the last process of the
 * datadir removes them: heapadmin_tidy_datadir). Only the process that
 * bound them does (a fork child running exit() leaves the parent's
 * alone); the files are the only thing touched, the admin thread ends
 * with the process. True when nothing is left. */
static bool
leave_files(struct heapadmin *h)
{
    bool ok = true;

    if (current_sock[0] != '\0' && unlink(current_sock) != 0 &&
        errno != ENOENT)
        ok = false;
    if (current_agent[0] != '\0' && unlink(current_agent) != 0 &&
        errno != ENOENT)
        ok = false;
    return heapadmin_tidy_datadir(h) == 0 && ok;
}

/* A host that switched its effective user away from root and keeps root
 * as its real or saved uid (squid's master runs as proxy most of the
 * time) cannot remove root's files in root's datadir: this thread, and
 * this thread only (the raw system call, not glibc's, which would change
 * every thread), takes root back for that and gives it up again, with
 * the host's signals blocked meanwhile. It takes nothing the host could
 * not take back itself. */
__attribute__((destructor)) static void
agent_exit(void)
{
    struct heapadmin *h = atomic_load(&current);
    uid_t r, e, sv;
    sigset_t all, old;

    if (h == NULL || atomic_load(&current_pid) != getpid() ||
        leave_files(h) || getresuid(&r, &e, &sv) != 0 || e == 0 ||
        (r != 0 && sv != 0))
        return;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (syscall(SYS_setresuid, -1, 0, -1) == 0) {
        (void)leave_files(h);
        (void)syscall(SYS_setresuid, -1, e, -1);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
