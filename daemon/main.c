/* SPDX-License-Identifier: MIT
 *
 * heapadmind: the admin port as a stand-alone daemon, a thin main over
 * the public API (include/heapadmin.h). What is here is what a daemon has
 * and a library must not: argv, re-executing for jemalloc's start-up
 * options, daemonizing, the pid file, the log file and signals.
 */
#include <errno.h>
#include <stdarg.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#include "daemon/daemon.h"
#include "daemon/logq.h"
#include "daemon/notify.h"
#include "include/heapadmin.h"

/* Profiling compiled in and switched off, so an operator can turn it on
 * over SQL at no cost until then. MALLOC_CONF in the environment still
 * overrides it (jemalloc applies the environment after this symbol). */
HEAPADMIN_DEFINE_MALLOC_CONF;

#ifndef HA_SYSCONFDIR
#define HA_SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONFIG HA_SYSCONFDIR "/heapadmin.cnf"

/* Marks the re-executed process, so it never loops. */
#define REEXEC_ENV "HEAPADMIN_REEXECED"

struct options {
    bool foreground;
    const char *config;
    bool config_given;
    const char *datadir;
    bool initial;           /* --initial: saved variables discarded */
    bool gateway;           /* --gateway: one endpoint for the host */
};

/* Log lines go to stderr in the foreground. In daemon mode they are held
 * until the log file is open, so start-up messages land in the log rather
 * than on the terminal the daemon leaves. */
struct daemon_log {
    int fd;                  /* where lines go, or -1 while held */
    char *held;              /* lines waiting for the log file */
    size_t held_len;
    const char *path;        /* the log file (daemon mode) */
    struct ha_logq *q;       /* writes them once the loop runs: a log
                                in a datadir whose disk stopped
                                answering never holds the loop up */
};

/* How long the stop waits for the last lines to reach the log, and for
 * the pid file's removal: the disk may have stopped answering, and
 * SIGTERM ends the daemon within 5 s whatever it does. */
#define STOP_LOG_WAIT_MS 300
#define STOP_PIDFILE_WAIT_MS 300
#define STOP_CLOSE_WAIT_MS 200

static void
daemon_log_line(int level, const char *line, void *arg)
{
    struct daemon_log *dl = arg;
    size_t n = strlen(line);
    char *p;

    (void)level;
    if (dl->fd >= 0) {
        char buf[2100];

        if (n > sizeof(buf) - 1)
            n = sizeof(buf) - 1;
        memcpy(buf, line, n);
        buf[n++] = '\n';
        if (dl->q != NULL)
            (void)ha_logq_put(dl->q, buf, n);
        else if (write(dl->fd, buf, n) < 0) {
        }
        return;
    }
    p = realloc(dl->held, dl->held_len + n + 1);
    if (p == NULL)
        return;
    dl->held = p;
    memcpy(p + dl->held_len, line, n);
    p[dl->held_len + n] = '\n';
    dl->held_len += n + 1;
}

static void
daemon_log_flush(struct daemon_log *dl)
{
    if (dl->fd >= 0 && dl->held_len > 0 &&
        write(dl->fd, dl->held, dl->held_len) < 0) {
    }
    free(dl->held);
    dl->held = NULL;
    dl->held_len = 0;
}

static void
daemon_log_open(struct daemon_log *dl)
{
    int fd = open(dl->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);

    if (fd < 0)
        return;
    /* jemalloc and libraries report on stderr: keep that in the log. */
    dup2(fd, STDERR_FILENO);
    /* The writer takes the new file before the old one is closed. */
    if (dl->q != NULL)
        ha_logq_set_fd(dl->q, fd);
    if (dl->fd > STDERR_FILENO)
        close(dl->fd);
    dl->fd = fd;
}

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: heapadmind [-f] [-c FILE] [-D DATADIR] [--initial] "
            "[--gateway] [-V] [-h]\n"
            "  -f          stay in the foreground and log to stderr\n"
            "  -c FILE     configuration file (default %s)\n"
            "  -D DATADIR  data directory: pid file, log, heap dumps\n"
            "              (overrides the config's datadir)\n"
            "  --initial   discard the jemalloc variables saved with SAVE\n"
            "              JEMALLOC VARIABLES TO DISK: the config file alone\n"
            "              applies (otherwise saved values win, logged)\n"
            "  --gateway   also serve the agents of the datadir (the\n"
            "              LD_PRELOAD agent's processes): stats_agents,\n"
            "              one /metrics for all, /debug/pprof/heap?pid=N\n"
            "  -V          print the version and exit\n"
            "  -h          print this help and exit\n",
            DEFAULT_CONFIG);
}

static int
parse_args(int argc, char **argv, struct options *o)
{
    int ch;

    memset(o, 0, sizeof(*o));
    o->config = DEFAULT_CONFIG;
    static const struct option longopts[] = {
        {"initial", no_argument, NULL, 'I'},
        {"gateway", no_argument, NULL, 'G'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };

    while ((ch = getopt_long(argc, argv, "fc:D:Vh", longopts, NULL)) != -1) {
        switch (ch) {
        case 'I':
            o->initial = true;
            break;
        case 'G':
            o->gateway = true;
            break;
        case 'f':
            o->foreground = true;
            break;
        case 'c':
            o->config = optarg;
            o->config_given = true;
            break;
        case 'D':
            o->datadir = optarg;
            break;
        case 'V':
            printf("heapadmind %s (libheapadmin %s)\n", PACKAGE_VERSION,
                   heapadmin_version());
            exit(0);
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "heapadmind: unexpected argument '%s'\n",
                argv[optind]);
        usage(stderr);
        return -1;
    }
    return 0;
}

/* jemalloc options the config asks for that only a fresh start applies:
 * execute ourselves again (same pid) with them ahead of the operator's
 * MALLOC_CONF, at most once. Returns only when no re-exec happened. */
static void
reexec_if_needed(struct heapadmin *h, char **argv)
{
    const char *env = getenv("MALLOC_CONF");
    char want[1024], conf[4096];
    int n;

    if (getenv(REEXEC_ENV) != NULL)
        return;
    if (heapadmin_startup_malloc_conf(h, want, sizeof(want)) != 0) {
        fprintf(stderr, "heapadmind: warning: jemalloc_variables ask for "
                        "too long a MALLOC_CONF; not re-executing\n");
        return;
    }
    if (want[0] == '\0')
        return;
    n = env != NULL && *env != '\0'
            ? snprintf(conf, sizeof(conf), "%s,%s", want, env)
            : snprintf(conf, sizeof(conf), "%s", want);
    if (n < 0 || (size_t)n >= sizeof(conf))
        return;
    if (setenv("MALLOC_CONF", conf, 1) != 0 || setenv(REEXEC_ENV, "1", 1))
        return;
    execv("/proc/self/exe", argv);
    fprintf(stderr,
            "heapadmind: warning: re-executing with MALLOC_CONF=%s failed: "
            "%s; continuing with jemalloc's start-up settings\n",
            conf, strerror(errno));
    if (env != NULL)
        setenv("MALLOC_CONF", env, 1);
    else
        unsetenv("MALLOC_CONF");
    unsetenv(REEXEC_ENV);
}

struct runtime {
    struct event_base *base;
    struct heapadmin *ha;
    struct daemon_log *log;
};

static void
log_self(struct daemon_log *dl, const char *level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* heapadmind's own lines, in the library's format. */
static void
log_self(struct daemon_log *dl, const char *level, const char *fmt, ...)
{
    char line[1024], ts[32];
    struct timespec now;
    struct tm tm;
    va_list ap;
    int n;

    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    n = snprintf(line, sizeof(line), "%s.%03ldZ [%s] ", ts,
                 now.tv_nsec / 1000000, level);
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    daemon_log_line(0, line, dl);
}

static void
on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
    struct runtime *rt = arg;

    (void)what;
    log_self(rt->log, "notice", "received %s; shutting down",
             sig == SIGTERM ? "SIGTERM" : "SIGINT");
    ha_notify_stopping();
    heapadmin_stop(rt->ha);
    event_base_loopexit(rt->base, NULL);
}

/* SIGTERM and SIGINT: a handler of our own rather than libevent's, which
 * only notes the signal for the loop: while a statement runs the loop
 * does not turn, and the stop would wait for max_execution_time. The
 * handler interrupts the running statement (async-signal-safe) and wakes
 * the loop through a pipe; on_stop_pipe does the rest. The daemon is the
 * process's main, so these two statics are its own. */
static struct heapadmin *stop_target;
static int stop_pipe[2] = {-1, -1};

static void
stop_handler(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;

    heapadmin_interrupt(stop_target);
    if (write(stop_pipe[1], &c, 1) < 0) {
        /* Full: a stop is already pending. */
    }
    errno = saved;
}

static void
on_stop_pipe(evutil_socket_t fd, short what, void *arg)
{
    unsigned char c = 0;

    if (read(fd, &c, 1) == 1)
        on_stop_signal(c, what, arg);
}

/* Installs stop_handler for SIGTERM and SIGINT and an event on the pipe
 * it writes. Returns the event, or NULL. */
static struct event *
install_stop_signals(struct runtime *rt)
{
    struct sigaction sa;
    struct event *ev;

    if (pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
        return NULL;
    ev = event_new(rt->base, stop_pipe[0], EV_READ | EV_PERSIST,
                   on_stop_pipe, rt);
    if (ev == NULL || event_add(ev, NULL) != 0) {
        if (ev != NULL)
            event_free(ev);
        return NULL;
    }
    stop_target = rt->ha;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = stop_handler;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGTERM, &sa, NULL) != 0 ||
        sigaction(SIGINT, &sa, NULL) != 0) {
        event_free(ev);
        return NULL;
    }
    return ev;
}

static void
on_hup_signal(evutil_socket_t sig, short what, void *arg)
{
    struct runtime *rt = arg;

    (void)sig;
    (void)what;
    /* logrotate: reopen the log under its name, on the log's thread
     * when it has one (its disk may not answer). */
    if (rt->log->path == NULL)
        return;
    if (rt->log->q != NULL)
        ha_logq_reopen(rt->log->q, rt->log->path);
    else
        daemon_log_open(rt->log);
    log_self(rt->log, "notice", "SIGHUP: reopened %s", rt->log->path);
}

int
main(int argc, char **argv)
{
    struct options opt;
    struct daemon_log dl = {STDERR_FILENO, NULL, 0, NULL, NULL};
    struct runtime rt = {NULL, NULL, &dl};
    struct heapadmin_options ho;
    struct event *ev_term = NULL, *ev_hup = NULL;
    char err[PATH_MAX + 512], pidpath[PATH_MAX + 32];
    bool have_config;
    int pidfd = -1, ready_fd = -1, status = 1;

    if (parse_args(argc, argv, &opt) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);
    if (!opt.foreground)
        dl.fd = -1; /* hold lines until the log file is open */

    have_config = opt.config_given || access(opt.config, F_OK) == 0;
    memset(&ho, 0, sizeof(ho));
    ho.config_file = have_config ? opt.config : NULL;
    ho.datadir = opt.datadir;
    ho.initial = opt.initial;
    ho.gateway = opt.gateway;
    /* heapadmind links jemalloc: no run-time lookup needed, and the
     * sanitizer build (whose malloc is ASan's) still reads it. */
    ho.mallctl = mallctl;
    ho.mallctlnametomib = mallctlnametomib;
    ho.mallctlbymib = mallctlbymib;
    ho.log = daemon_log_line;
    ho.log_arg = &dl;
    if (heapadmin_new(&ho, &rt.ha, err, sizeof(err)) != 0) {
        fprintf(stderr, "heapadmind: %s\n", err);
        free(dl.held);
        return 1;
    }
    reexec_if_needed(rt.ha, argv);
    /* heapadmind owns its process, and no thread runs yet: the config's
     * debuginfod servers go where elfutils' client reads them (the
     * library itself never writes the environment). */
    if (heapadmin_debuginfod_urls(rt.ha) != NULL &&
        setenv("DEBUGINFOD_URLS", heapadmin_debuginfod_urls(rt.ha), 1) != 0)
        fprintf(stderr, "heapadmind: warning: cannot set DEBUGINFOD_URLS: "
                        "%s\n",
                strerror(errno));

    snprintf(pidpath, sizeof(pidpath), "%s/heapadmind.pid",
             heapadmin_datadir(rt.ha));
    pidfd = ha_daemon_lock_pidfile(pidpath, err, sizeof(err));
    if (pidfd < 0) {
        fprintf(stderr, "heapadmind: %s\n", err);
        goto out;
    }

    ha_notify_init(); /* before the fork: systemd's WATCHDOG_PID is ours */
    if (!opt.foreground) {
        ready_fd = ha_daemon_start(err, sizeof(err));
        if (ready_fd < 0) {
            fprintf(stderr, "heapadmind: %s\n", err);
            goto out;
        }
        dl.path = heapadmin_log_path(rt.ha);
        daemon_log_open(&dl);
        if (dl.fd < 0) {
            snprintf(err, sizeof(err), "cannot open log %s: %s", dl.path,
                     strerror(errno));
            goto out; /* the parent is told there, last */
        }
        daemon_log_flush(&dl);
        /* Relative paths resolve in the datadir, as ProxySQL does. */
        if (chdir(heapadmin_datadir(rt.ha)) != 0)
            log_self(&dl, "warn", "cannot chdir to %s: %s",
                     heapadmin_datadir(rt.ha), strerror(errno));
    }
    if (ha_daemon_write_pid(pidfd, getpid()) != 0)
        log_self(&dl, "warn", "cannot write %s: %s", pidpath,
                 strerror(errno));
    log_self(&dl, "notice", "heapadmind %s starting (pid %ld, config %s)",
             PACKAGE_VERSION, (long)getpid(),
             have_config ? opt.config : "built-in defaults");
    {
        /* Every client is a descriptor: the usual soft limit of 1024
         * is no limit the system imposes. */
        char why[256];
        int rc = ha_daemon_raise_nofile(why, sizeof(why));

        log_self(&dl, rc < 0 ? "warn" : "info", "%s", why);
    }

    /* From here on the lines go through the log's own thread. */
    dl.q = ha_logq_start(dl.fd);
    rt.base = event_base_new();
    if (rt.base == NULL) {
        snprintf(err, sizeof(err), "cannot create the event loop");
        goto fail;
    }
    /* The daemon is the library's host: its loop, its thread. */
    if (heapadmin_start_on_base(rt.ha, rt.base, err, sizeof(err)) != 0)
        goto fail;
    ev_term = install_stop_signals(&rt);
    ev_hup = evsignal_new(rt.base, SIGHUP, on_hup_signal, &rt);
    if (ev_term == NULL || ev_hup == NULL || evsignal_add(ev_hup, NULL)) {
        snprintf(err, sizeof(err), "cannot install signal handlers");
        goto fail;
    }

    log_self(&dl, "notice", "ready for connections");
    ha_notify_ready(rt.base);
    ha_daemon_ready(ready_fd, NULL);
    ready_fd = -1;
    event_base_dispatch(rt.base);
    status = 0;
    log_self(&dl, "notice", "heapadmind stopped");
    goto out;

fail:
    log_self(&dl, "error", "%s", err);
out:
    if (ev_term) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        event_free(ev_term);
    }
    if (ev_hup)
        event_free(ev_hup);
    heapadmin_free(rt.ha);
    if (rt.base)
        event_base_free(rt.base);
    if (pidfd >= 0) {
        if (ha_daemon_unlink_within(pidpath, STOP_PIDFILE_WAIT_MS) != 0 &&
            errno == ETIMEDOUT)
            log_self(&dl, "warn", "%s not removed: the datadir's disk did "
                                  "not answer within %d ms",
                     pidpath, STOP_PIDFILE_WAIT_MS);
        /* Closed with the other files at the end (its close may wait
         * for that disk too); the lock goes with it. */
    }
    /* Lines the log's disk does not take in time are lost with the
     * process: nothing else could say so (stderr is that file too). */
    (void)ha_logq_stop(dl.q, STOP_LOG_WAIT_MS);
    dl.q = NULL;
    daemon_log_flush(&dl);
    /* Last: a file still open on a disk that stopped answering (the pid
     * file, what a worker left behind, the log) would hold the exit in
     * its close for as long. */
    (void)ha_daemon_close_files_within(STOP_CLOSE_WAIT_MS);
    /* A start-up failure reaches the waiting parent only now, once
     * nothing of this run is left (the pid file, closed above): the
     * parent exits the moment it hears. */
    if (ready_fd >= 0)
        ha_daemon_ready(ready_fd, err);
    return status;
}
