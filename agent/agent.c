/* SPDX-License-Identifier: MIT
 *
 * The LD_PRELOAD agent (see agent.h for its environment). A guest in an
 * unmodified daemon: it exports nothing but malloc_conf, writes nothing
 * to stdout or stderr, touches no signal disposition, holds no descriptor
 * until the start delay has passed, and stays inert in every process
 * without jemalloc (LD_PRELOAD is inherited by each helper a daemon
 * exec()s: sh, cc, ...). Its own copies of libevent, SQLite and libconfig
 * are linked in privately (deps/), so the host's symbols can neither
 * replace nor see them.
 */
#include "agent/agent.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libconfig.h>

#include "include/heapadmin.h"

/* jemalloc reads this when it initialises, before any constructor runs
 * (ld.so has applied data relocations by then), so it must be static
 * data: profiling compiled in and idle. An executable that defines its
 * own malloc_conf shadows this one: MALLOC_CONF covers that case. */
__attribute__((visibility("default"))) const char *malloc_conf =
    HEAPADMIN_MALLOC_CONF;

#define DEFAULT_DELAY_MS 1000
#define PARENT_POLL_MS 100
#define LISTENER_CHECK_MS 1000

/* Settings, read once in the constructor. */
static struct {
    bool disabled;
    char conf[PATH_MAX];         /* HEAPADMIN_CONF, "" if none */
    char datadir[PATH_MAX];      /* HEAPADMIN_DATADIR, "" if none */
    char socket_tmpl[PATH_MAX];  /* HEAPADMIN_SOCKET, "" if none */
    char tcp[256];               /* HEAPADMIN_TCP, "" if none */
    char log[PATH_MAX];          /* HEAPADMIN_LOG, "" if none */
    unsigned delay_ms;
    enum ha_agent_fork fork;
    pid_t first_pid;             /* the process the agent was loaded in */
} settings;

/* The instance serving this process, and the process it belongs to (a
 * fork child inherits both values but not the thread behind them). */
static _Atomic(struct heapadmin *) current;
static _Atomic pid_t current_pid;
static char current_sock[PATH_MAX]; /* its socket file, for exit() */
static int log_fd = -1;
static dev_t log_dev;            /* the log file's identity: a host that */
static ino_t log_ino;            /* closes every fd may reuse the number */
static bool bad_fork_policy;     /* HEAPADMIN_FORK was not understood */

/* ------------------------------------------------------------------
 * Logging: to HEAPADMIN_LOG only, never to stdout or stderr
 * ------------------------------------------------------------------ */

static void open_log(void);

static void
log_line(int level, const char *line, void *arg)
{
    char buf[2100];
    size_t n = strlen(line);
    struct stat st;

    (void)level;
    (void)arg;
    if (log_fd >= 0 && (fstat(log_fd, &st) != 0 || st.st_dev != log_dev ||
                        st.st_ino != log_ino))
        log_fd = -1; /* not ours any more: never write to it, never close */
    if (log_fd < 0)
        open_log();
    if (log_fd < 0)
        return;
    if (n > sizeof(buf) - 1)
        n = sizeof(buf) - 1;
    memcpy(buf, line, n);
    buf[n++] = '\n';
    if (write(log_fd, buf, n) < 0) {
    }
}

static void agent_log(const char *level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The agent's own lines, in the library's format. */
static void
agent_log(const char *level, const char *fmt, ...)
{
    char line[1024], ts[32];
    struct timespec now;
    struct tm tm;
    va_list ap;
    int n;

    if (settings.log[0] == '\0')
        return;
    clock_gettime(CLOCK_REALTIME, &now);
    gmtime_r(&now.tv_sec, &tm);
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    n = snprintf(line, sizeof(line), "%s.%03ldZ [%s] agent[%ld]: ", ts,
                 now.tv_nsec / 1000000, level, (long)getpid());
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof(line))
        vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    log_line(0, line, NULL);
}

static void
open_log(void)
{
    struct stat st;

    if (log_fd >= 0 || settings.log[0] == '\0')
        return;
    log_fd = open(settings.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
                  0640);
    if (log_fd >= 0 && fstat(log_fd, &st) == 0) {
        log_dev = st.st_dev;
        log_ino = st.st_ino;
    } else if (log_fd >= 0) {
        close(log_fd);
        log_fd = -1;
    }
}

/* ------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------ */

static void
copy_env(char *dst, size_t len, const char *name)
{
    const char *v = getenv(name);

    dst[0] = '\0';
    if (v != NULL && strlen(v) < len)
        memcpy(dst, v, strlen(v) + 1);
}

static void
sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* jemalloc in this process (or a prefixed copy)? */
static bool
have_jemalloc(void)
{
    return dlsym(RTLD_DEFAULT, "mallctl") != NULL ||
           dlsym(RTLD_DEFAULT, "je_mallctl") != NULL;
}

/* This thread's allocations stay out of the host's heap profile. */
static void
quiet_thread(void)
{
    int (*ctl)(const char *, void *, size_t *, void *, size_t);
    bool off = false;

    *(void **)&ctl = dlsym(RTLD_DEFAULT, "mallctl");
    if (ctl != NULL)
        (void)ctl("thread.prof.active", NULL, NULL, &off, sizeof(off));
}

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
            add = program_invocation_short_name;
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

/* The default datadir when neither HEAPADMIN_DATADIR nor a config names
 * one: the system's if this user may write there, else a private one. */
static void
default_datadir(char *out, size_t len)
{
    if (access("/var/lib/heapadmin", W_OK | X_OK) == 0)
        snprintf(out, len, "/var/lib/heapadmin");
    else
        snprintf(out, len, "/tmp/heapadmin-%ld", (long)getuid());
}

/* A socket file left by a process that is gone (a daemonizing parent
 * exits without stopping us) is removed; one something answers on is
 * not. */
static void
remove_if_stale(const char *path)
{
    struct sockaddr_un sun;
    struct stat st;
    int fd;

    if (lstat(path, &st) != 0 || !S_ISSOCK(st.st_mode) ||
        strlen(path) >= sizeof(sun.sun_path))
        return;
    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    memcpy(sun.sun_path, path, strlen(path) + 1);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return;
    if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 &&
        errno == ECONNREFUSED)
        unlink(path);
    close(fd);
}

/* admin_variables.mysql_ifaces from the config file into out ("" when
 * the config sets none or cannot be read: heapadmin_new reports the
 * latter with file and line). */
static void
config_ifaces(char *out, size_t len)
{
    config_t c;
    const char *v = NULL;

    out[0] = '\0';
    if (settings.conf[0] == '\0')
        return;
    config_init(&c);
    if (config_read_file(&c, settings.conf) == CONFIG_TRUE &&
        config_lookup_string(&c, "admin_variables.mysql_ifaces", &v) ==
            CONFIG_TRUE &&
        v != NULL && strlen(v) < len)
        memcpy(out, v, strlen(v) + 1);
    config_destroy(&c);
}

/* ------------------------------------------------------------------
 * Serving
 * ------------------------------------------------------------------ */

static void
fill_options(struct heapadmin_options *o, const char *datadir,
             const char *ifaces)
{
    memset(o, 0, sizeof(*o));
    o->config_file = settings.conf[0] != '\0' ? settings.conf : NULL;
    o->datadir = datadir;
    o->mysql_ifaces = ifaces;
    o->listener_check_ms = LISTENER_CHECK_MS;
    if (settings.log[0] != '\0') {
        o->log = log_line;
    } else if (settings.conf[0] == '\0') {
        o->no_log = 1; /* no config, no HEAPADMIN_LOG: log nowhere */
    }
}

/* Creates and starts this process's instance. */
static void
serve(pid_t parent)
{
    struct heapadmin_options o;
    struct heapadmin *h = NULL;
    char datadir[PATH_MAX], sock[PATH_MAX], ifaces[PATH_MAX + 300];
    char cfg_ifaces[PATH_MAX], err[1024];
    const char *dd = NULL;
    pid_t pid = getpid();

    if (!have_jemalloc()) {
        agent_log("info", "no jemalloc in %s: agent inactive",
                  program_invocation_short_name);
        return;
    }
    if (settings.datadir[0] != '\0') {
        dd = settings.datadir;
    } else if (settings.conf[0] == '\0') {
        default_datadir(datadir, sizeof(datadir));
        dd = datadir;
    } else {
        /* The config decides: learn its datadir first. */
        fill_options(&o, NULL, "/nonexistent/unused.sock");
        if (heapadmin_new(&o, &h, err, sizeof(err)) != 0) {
            agent_log("error", "%s", err);
            return;
        }
        snprintf(datadir, sizeof(datadir), "%s", heapadmin_datadir(h));
        heapadmin_free(h);
        h = NULL;
        dd = datadir;
    }
    if (expand(settings.socket_tmpl[0] != '\0' ? settings.socket_tmpl
                                               : "%d/%n.%p.sock",
               pid, sock, sizeof(sock)) != 0) {
        agent_log("error", "HEAPADMIN_SOCKET is too long");
        return;
    }
    /* "%d" in the default only: the datadir (not offered in the template
     * syntax, so a path containing %d stays literal). */
    if (settings.socket_tmpl[0] == '\0') {
        char tail[PATH_MAX];

        snprintf(tail, sizeof(tail), "%s", sock + 2);
        if ((size_t)snprintf(sock, sizeof(sock), "%s%s", dd, tail) >=
            sizeof(sock)) {
            agent_log("error", "socket path too long");
            return;
        }
    }
    if (parent > 0) {
        char old[PATH_MAX];

        /* The parent we followed is gone and could not clean up. */
        if (settings.socket_tmpl[0] == '\0' &&
            (size_t)snprintf(old, sizeof(old), "%s/%s.%ld.sock", dd,
                             program_invocation_short_name,
                             (long)parent) < sizeof(old))
            remove_if_stale(old);
    }
    /* The config's interfaces belong to the service's own process: the
     * first one, or the child that took over from a daemonizing parent.
     * Other children (per-process) get the socket named after their pid,
     * as the config's addresses are taken. */
    config_ifaces(cfg_ifaces, sizeof(cfg_ifaces));
    if (settings.socket_tmpl[0] == '\0' && cfg_ifaces[0] != '\0' &&
        (pid == settings.first_pid || parent > 0)) {
        if (expand(cfg_ifaces, pid, ifaces, sizeof(ifaces)) != 0) {
            agent_log("error", "mysql_ifaces is too long");
            return;
        }
        /* A stale socket of the parent we followed is replaced by the
         * library's own stale-socket check when it binds. */
    } else if (settings.tcp[0] != '\0' && pid == settings.first_pid) {
        snprintf(ifaces, sizeof(ifaces), "%s;%s", sock, settings.tcp);
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

    fill_options(&o, dd, ifaces);
    if (heapadmin_new(&o, &h, err, sizeof(err)) != 0) {
        agent_log("error", "%s", err);
        return;
    }
    if (heapadmin_start(h, err, sizeof(err)) != 0) {
        agent_log("error", "cannot serve: %s", err);
        heapadmin_free(h);
        return;
    }
    snprintf(current_sock, sizeof(current_sock), "%s", sock);
    atomic_store(&current_pid, pid);
    atomic_store(&current, h);
    agent_log("notice", "serving %s (pid %ld) on %s",
              program_invocation_short_name, (long)pid, ifaces);
}

struct launch {
    unsigned delay_ms;
    bool wait_parent;
    pid_t parent;
};

static void *
launcher(void *arg)
{
    struct launch l = *(struct launch *)arg;

    free(arg);
    pthread_setname_np(pthread_self(), "heapadmin");
    quiet_thread();
    if (bad_fork_policy)
        agent_log("warn", "HEAPADMIN_FORK is not follow, per-process or "
                          "none; using follow");
    if (l.wait_parent) {
        /* A BGSAVE-style child exits while its parent lives: this loop
         * ends with it, and it never serves. */
        while (getppid() == l.parent)
            sleep_ms(PARENT_POLL_MS);
        agent_log("info", "parent %ld is gone: taking over",
                  (long)l.parent);
    }
    sleep_ms(l.delay_ms);
    serve(l.wait_parent ? l.parent : 0);
    return NULL;
}

void
ha_agent_launch(unsigned delay_ms, bool wait_parent, pid_t parent)
{
    struct launch *l = malloc(sizeof(*l));
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;

    if (l == NULL)
        return;
    l->delay_ms = delay_ms;
    l->wait_parent = wait_parent;
    l->parent = parent;
    /* No signal of the host's is ever delivered to our threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, launcher, l) != 0)
        free(l);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

void
ha_agent_forget_inherited(void)
{
    struct heapadmin *h = atomic_exchange(&current, NULL);

    if (h != NULL && atomic_load(&current_pid) != getpid())
        heapadmin_abandon(h);
}

enum ha_agent_fork
ha_agent_fork_policy(void)
{
    return settings.fork;
}

unsigned
ha_agent_start_delay_ms(void)
{
    return settings.delay_ms;
}

/* ------------------------------------------------------------------
 * Loading and exit
 * ------------------------------------------------------------------ */

/* The host exits without ever stopping us: take our socket file with us,
 * so no stale endpoint is left for a client to hang on. Only the process
 * that bound it does (a fork child running exit() leaves the parent's
 * alone); the file is the only thing touched, the admin thread ends with
 * the process. */
__attribute__((destructor)) static void
agent_exit(void)
{
    if (atomic_load(&current) != NULL &&
        atomic_load(&current_pid) == getpid() && current_sock[0] != '\0')
        unlink(current_sock);
}

__attribute__((constructor)) static void
agent_init(void)
{
    const char *v;

    v = getenv("HEAPADMIN_DISABLE");
    if (v != NULL && strcmp(v, "1") == 0)
        return;
    copy_env(settings.conf, sizeof(settings.conf), "HEAPADMIN_CONF");
    copy_env(settings.datadir, sizeof(settings.datadir),
             "HEAPADMIN_DATADIR");
    copy_env(settings.socket_tmpl, sizeof(settings.socket_tmpl),
             "HEAPADMIN_SOCKET");
    copy_env(settings.tcp, sizeof(settings.tcp), "HEAPADMIN_TCP");
    copy_env(settings.log, sizeof(settings.log), "HEAPADMIN_LOG");
    settings.delay_ms = DEFAULT_DELAY_MS;
    v = getenv("HEAPADMIN_START_DELAY_MS");
    if (v != NULL && *v != '\0') {
        char *end;
        unsigned long ms = strtoul(v, &end, 10);

        if (*end == '\0' && ms <= 3600000UL)
            settings.delay_ms = (unsigned)ms;
    }
    settings.fork = HA_AGENT_FORK_FOLLOW;
    v = getenv("HEAPADMIN_FORK");
    if (v != NULL && strcmp(v, "per-process") == 0)
        settings.fork = HA_AGENT_FORK_PER_PROCESS;
    else if (v != NULL && strcmp(v, "none") == 0)
        settings.fork = HA_AGENT_FORK_NONE;
    settings.first_pid = getpid();
    bad_fork_policy = v != NULL && settings.fork == HA_AGENT_FORK_FOLLOW &&
                      strcmp(v, "follow") != 0;
    /* No descriptor now, not even the log: the host may close them all
     * at start-up. The launcher opens what it needs after the delay. */
    ha_agent_fork_init();
    ha_agent_launch(settings.delay_ms, false, 0);
}
