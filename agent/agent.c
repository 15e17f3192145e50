/* SPDX-License-Identifier: MIT
 *
 * The LD_PRELOAD agent: gives an unmodified jemalloc daemon the admin
 * port, through the public API (include/heapadmin.h).
 *
 *   LD_PRELOAD=/usr/lib/<arch>/heapadmin/heapadmin-agent.so \
 *   MALLOC_CONF=prof:true,prof_active:false,prof_time_resolution:high \
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
 *
 * A guest in an unmodified daemon: it exports nothing but malloc_conf
 * (and heapadmin_agent_attach, which heapadmin-attach calls),
 * writes nothing to stdout or stderr, touches no signal disposition,
 * holds no descriptor until the start delay has passed, allocates from
 * an arena of its own (reported apart from the host's memory), and stays
 * inert in every process it should not serve (LD_PRELOAD is inherited by
 * each helper a daemon exec()s: sh, cc, a logging helper, ...). Its own
 * copies of libevent, SQLite and libconfig are linked in privately
 * (deps/), so the host's symbols can neither replace nor see them.
 *
 * Loaded later into a running process by heapadmin-attach (attach/),
 * the agent does nothing in its constructor (attached.c tells the two
 * apart): heapadmin_agent_attach(), which the tool calls next on a
 * thread of the host's it holds, starts it the same way, with the
 * tool's request for the environment (attachreq.h) and no start delay.
 *
 * What the host may rewrite is read before it runs: the constructor
 * takes the program's name from the exec itself (not argv[0], which
 * nginx overwrites with its process title), reads the config while the
 * process still has its first user's rights, and, as root, makes the
 * directories of the users the host drops privileges to. A fork child
 * keeps all of it.
 *
 * This file is the two ways in (the constructor and
 * heapadmin_agent_attach) and the order of the start-up; each step is in
 * a file named for it: settings.c (what was read), program.c (which
 * processes are served), config.c and datadir.c (HEAPADMIN_CONF, the
 * datadir and the users' directories), launch.c (the start-up thread)
 * and instance.c (the instance it starts, and what it leaves at exit).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agent_int.h"
#include "agent/attached.h"
#include "agent/codepages.h"
#include "agent/fork.h"
#include "agent/log.h"
#include "agent/users.h"
#include "include/heapadmin.h"

/* jemalloc reads this when it initialises, before any constructor runs
 * (ld.so has applied data relocations by then), so it must be static
 * data: profiling compiled in and idle. An executable that defines its
 * own malloc_conf shadows this one: MALLOC_CONF covers that case. An
 * unmodified daemon names its threads only through the kernel, so
 * jemalloc reads that name at each sampled allocation
 * (prof_sys_thread_name: a prctl and a copy per sample, about half a
 * sample's own cost; nothing while sampling is off) and heap_threads can
 * say which thread holds the memory. jemalloc 5.2 knows neither this nor
 * prof_time_resolution. */
#ifdef HEAPADMIN_NO_PROF_TIME_RESOLUTION
#define AGENT_MALLOC_CONF HEAPADMIN_MALLOC_CONF
#else
#define AGENT_MALLOC_CONF HEAPADMIN_MALLOC_CONF ",prof_sys_thread_name:true"
#endif
__attribute__((visibility("default"))) const char *malloc_conf =
    AGENT_MALLOC_CONF;

#define DEFAULT_DELAY_MS 1000

/* ------------------------------------------------------------------
 * Loading
 * ------------------------------------------------------------------ */

/* Reads the settings, decides whether this process is served, and
 * starts the agent's thread: in the constructor of a preloaded agent,
 * or in heapadmin_agent_attach(). */
static void
agent_setup(void)
{
    char exe[128], buf[64];
    const char *v;
    Dl_info info;

    v = ha_agent_setting("HEAPADMIN_DISABLE", buf, sizeof(buf));
    if ((v != NULL && strcmp(v, "1") == 0) || !ha_agent_have_jemalloc())
        return; /* inert: no thread, no file, no word */
    ha_agent_self_program(ha_agent_settings.program,
                          sizeof(ha_agent_settings.program), exe, sizeof(exe));
    ha_agent_copy_env(ha_agent_settings.programs,
                      sizeof(ha_agent_settings.programs), "HEAPADMIN_PROGRAMS");
    if (ha_agent_attach_req != NULL &&
        ha_agent_settings.programs[0] == '\0')
        ha_agent_settings.programs[0] = '*'; /* the operator chose it */
    /* A shell, a launcher, a helper of the served program: the agent
     * passes through it silently (its parent says why, if served). */
    if (!ha_agent_is_served(exe))
        return;
    ha_agent_settings.active = true;
    if (dladdr((void *)agent_setup, &info) != 0 && info.dli_fname != NULL) {
        snprintf(ha_agent_settings.so_path, sizeof(ha_agent_settings.so_path),
                 "%s", info.dli_fname);
        ha_agent_settings.so_base = (unsigned long)info.dli_fbase;
        /* Now: dl_iterate_phdr takes the loader's lock, which a heapadmin
         * thread must never hold while the host may fork. */
        ha_agent_code_find(ha_agent_settings.so_base);
    }
    ha_agent_copy_env(ha_agent_settings.conf, sizeof(ha_agent_settings.conf),
                      "HEAPADMIN_CONF");
    ha_agent_copy_env(ha_agent_settings.socket_tmpl,
                      sizeof(ha_agent_settings.socket_tmpl),
                      "HEAPADMIN_SOCKET");
    ha_agent_copy_env(ha_agent_settings.tcp, sizeof(ha_agent_settings.tcp),
                      "HEAPADMIN_TCP");
    ha_agent_copy_env(ha_agent_settings.log, sizeof(ha_agent_settings.log),
                      "HEAPADMIN_LOG");
    ha_agent_log_init(ha_agent_settings.log);
    ha_agent_copy_env(ha_agent_settings.users, sizeof(ha_agent_settings.users),
                      "HEAPADMIN_USERS");
    /* Attached: the host has long finished starting. */
    ha_agent_settings.delay_ms =
        ha_agent_attach_req != NULL ? 0 : DEFAULT_DELAY_MS;
    v = ha_agent_setting("HEAPADMIN_START_DELAY_MS", buf, sizeof(buf));
    if (v != NULL && *v != '\0') {
        char *end;
        unsigned long ms = strtoul(v, &end, 10);

        if (*end == '\0' && ms <= 3600000UL)
            ha_agent_settings.delay_ms = (unsigned)ms;
    }
    ha_agent_settings.fork = HA_AGENT_FORK_FOLLOW;
    v = ha_agent_setting("HEAPADMIN_FORK", buf, sizeof(buf));
    if (v != NULL && strcmp(v, "per-process") == 0)
        ha_agent_settings.fork = HA_AGENT_FORK_PER_PROCESS;
    else if (v != NULL && strcmp(v, "none") == 0)
        ha_agent_settings.fork = HA_AGENT_FORK_NONE;
    ha_agent_settings.bad_fork_policy =
        v != NULL && ha_agent_settings.fork == HA_AGENT_FORK_FOLLOW &&
        strcmp(v, "follow") != 0;
    ha_agent_settings.first_pid = getpid();
    /* Now, with the rights the process started with: the config (0600,
     * root's) and the users' directories. No descriptor stays open: the
     * host may close them all at start-up. */
    ha_agent_read_config();
    ha_agent_choose_datadir();
    ha_agent_users_learn(ha_agent_settings.users);
    ha_agent_prepare_users();
    {
        const struct ha_agent_fork_hooks hooks = {
            .policy = ha_agent_settings.fork,
            .delay_ms = ha_agent_settings.delay_ms,
            .forget_inherited = ha_agent_forget_inherited,
            .launch = ha_agent_launch,
        };

        ha_agent_fork_init(&hooks);
    }
    ha_agent_launch(ha_agent_settings.delay_ms, false, 0);
}

__attribute__((constructor)) static void
agent_init(void)
{
    /* dlopen()ed into a running process: heapadmin_agent_attach(), which
     * heapadmin-attach calls next, starts it (with its settings). */
    if (!ha_agent_preloaded((void *)agent_init))
        return;
    agent_setup();
}

/* ------------------------------------------------------------------
 * Attached to a running process (heapadmin-attach)
 * ------------------------------------------------------------------ */

/* Called once by heapadmin-attach on a thread of the host's it holds
 * (attach/inject.c), right after it dlopen()ed the agent: starts the
 * agent as the constructor would have at the process's start, with
 * request's settings (agent/attachreq.h) for the environment's. Returns
 * 0 when the agent's thread starts serving, msg (msglen bytes) saying
 * where ("registry: <path>") and whether heap profiles can be had;
 * -1 with msg saying why not. Quick and allocation-light: the host's
 * thread waits for it. The only symbol but malloc_conf the agent
 * exports (agent.map). */
__attribute__((visibility("default"))) int
heapadmin_agent_attach(const char *request, char *msg, size_t msglen)
{
    static _Atomic bool called;
    typedef int mallctl_fn(const char *, void *, size_t *, void *, size_t);
    mallctl_fn *ctl;
    char dir[PATH_MAX], why[512];
    bool prof = false;
    size_t sz = sizeof(prof);
    int saved = errno;

    if (atomic_exchange(&called, true) || ha_agent_settings.active) {
        ha_agent_fmt(msg, msglen, "the agent is already running in this "
                                  "process");
        return -1;
    }
    ha_agent_attached_begin();
    ha_agent_attach_req = request;
    agent_setup();
    ha_agent_attach_req = NULL;
    if (!ha_agent_settings.active) {
        ha_agent_fmt(msg, msglen, "not served: %s",
                     ha_agent_have_jemalloc()
                         ? "HEAPADMIN_DISABLE, or a launcher"
                         : "no jemalloc in this process");
        errno = saved;
        return -1;
    }
    if (ha_agent_own_dir(dir, sizeof(dir), why, sizeof(why)) != 0) {
        ha_agent_fmt(msg, msglen, "not served: %s", why);
        errno = saved;
        return -1;
    }
    ctl = (mallctl_fn *)dlsym(RTLD_DEFAULT, "mallctl");
    if (ctl == NULL)
        ctl = (mallctl_fn *)dlsym(RTLD_DEFAULT, "je_mallctl");
    if (ctl == NULL || ctl("opt.prof", &prof, &sz, NULL, 0) != 0)
        prof = false;
    ha_agent_fmt(msg, msglen,
                 "registry: %s/%s.%ld.http\n"
                 "profiles: %s\n",
                 dir, ha_agent_settings.program, (long)getpid(),
                 prof ? "available (jemalloc was started with prof:true)"
                      : "not available: jemalloc was started without "
                        "prof:true, which only a restart changes "
                        "(MALLOC_CONF=" HEAPADMIN_MALLOC_CONF "); the "
                        "statistics tables, arenas, bins, purge and the "
                        "limit watch work now");
    errno = saved;
    return 0;
}
