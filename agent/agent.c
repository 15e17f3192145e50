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
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <libconfig.h>

#include "agent/attached.h"
#include "agent/attachreq.h"
#include "agent/children.h"
#include "agent/codepages.h"
#include "agent/fork.h"
#include "agent/log.h"
#include "agent/proc.h"
#include "agent/stacktrim.h"
#include "agent/users.h"
#include "core/smallfile.h"
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
#define LISTENER_CHECK_MS 1000
#define CONFIG_MAX (1u << 20)  /* bytes of config text kept */
#define DROP_SETTLE_MS 250     /* a root process's fork child, with
                                  HEAPADMIN_USERS: time to drop its
                                  privileges before the agent looks */
#define IDS_RETRIES 5          /* starts, when the host changes its ids */
#define IDS_SETTLE_MS 500      /* ... this long apart */

/* Settings, read once in the constructor. */
static struct {
    bool active;                 /* this process is one to serve */
    char conf[PATH_MAX];         /* HEAPADMIN_CONF, "" if none */
    char datadir[PATH_MAX];      /* absolute: the top datadir */
    char socket_tmpl[PATH_MAX];  /* HEAPADMIN_SOCKET, "" if none */
    char tcp[256];               /* HEAPADMIN_TCP, "" if none */
    char log[PATH_MAX];          /* HEAPADMIN_LOG, "" if none */
    char programs[1024];         /* HEAPADMIN_PROGRAMS, "" if none */
    char users[1024];            /* HEAPADMIN_USERS, "" if none */
    char cfg_ifaces[PATH_MAX];   /* the config's mysql_ifaces, "" */
    char program[128];           /* this process's program name */
    char so_path[PATH_MAX];      /* this agent's file */
    unsigned long so_base;       /* ... and where it is mapped */
    unsigned delay_ms;
    enum ha_agent_fork fork;
    bool bad_fork_policy;        /* HEAPADMIN_FORK was not understood */
    pid_t first_pid;             /* the process the agent was loaded in */
    char *conf_text;             /* the config, read once (mmap'd: never
                                    in the host's heap); NULL if none */
    char conf_err[512];          /* why it could not be read */
} settings;


/* While heapadmin_agent_attach() runs: its request, read instead of
 * the environment (an attached process's is its own). */
static const char *attach_req;

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

/* ------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------ */

/* A setting: the environment's variable, or the attach request's line
 * of that name (buf, len bytes, holds it then). NULL when unset. */
static const char *
setting(const char *name, char *buf, size_t len)
{
    if (attach_req != NULL)
        return ha_agent_attachreq_get(attach_req, name, buf, len) ? buf
                                                                  : NULL;
    return getenv(name);
}

static void
copy_env(char *dst, size_t len, const char *name)
{
    char buf[PATH_MAX];
    const char *v = setting(name, buf, sizeof(buf));

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

static const char *
base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s != NULL ? s + 1 : path;
}

/* jemalloc in this process (or a prefixed copy)? */
static bool
have_jemalloc(void)
{
    return dlsym(RTLD_DEFAULT, "mallctl") != NULL ||
           dlsym(RTLD_DEFAULT, "je_mallctl") != NULL;
}

/* The program's name, from what the host cannot rewrite: the path it
 * was executed as (the kernel's copy, above the environment that
 * setproctitle overwrites; read here, before the host runs) when it is
 * the running file or a link to it ("redis-server", not the
 * "redis-check-rdb" it links to), else /proc/self/exe (a script is named
 * by its interpreter). exe gets the latter in any case. */
static void
self_program(char *out, size_t len, char *exe, size_t exelen)
{
    char path[PATH_MAX];
    const char *fn = (const char *)getauxval(AT_EXECFN);
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);
    struct stat a, b;

    out[0] = exe[0] = '\0';
    if (n > 0) {
        path[n] = '\0';
        ha_agent_fmt(exe, exelen, "%s", base_name(path));
        ha_agent_fmt(out, len, "%s", exe);
    }
    if (fn != NULL && stat(fn, &a) == 0 && stat("/proc/self/exe", &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
        *base_name(fn) != '\0')
        snprintf(out, len, "%s", base_name(fn));
    if (out[0] == '\0')
        snprintf(out, len, "unknown");
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
            add = settings.program;
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

/* ------------------------------------------------------------------
 * Which processes are served
 * ------------------------------------------------------------------ */

/* The name of pid's program as another process can learn it: its exe
 * (when readable), else its comm. */
static void
proc_program(pid_t pid, char *out, size_t len)
{
    char path[64], buf[PATH_MAX];
    ssize_t n;

    out[0] = '\0';
    snprintf(path, sizeof(path), "/proc/%ld/exe", (long)pid);
    n = readlink(path, buf, sizeof(buf) - 1);
    if (n > 0) {
        buf[n] = '\0';
        ha_agent_fmt(out, len, "%s", base_name(buf));
        return;
    }
    snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) > 0) {
        buf[strcspn(buf, "\n")] = '\0';
        ha_agent_fmt(out, len, "%s", buf);
    }
}

static pid_t
proc_ppid(pid_t pid)
{
    char path[64], buf[512], *p;
    long ppid = 0;

    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0)
        return 0;
    p = strrchr(buf, ')');
    if (p == NULL || sscanf(p + 1, " %*c %ld", &ppid) != 1)
        return 0;
    return (pid_t)ppid;
}

/* Whether this exec'd process is one to serve, and if not, why (for the
 * parent's report; the process itself stays silent). Without
 * HEAPADMIN_PROGRAMS: the program the operator started, which is the
 * first that is not a launcher, so a process is a helper when an
 * ancestor is served (has the agent's thread) and runs another program. */
static bool
is_served(const char *exe)
{
    pid_t p = getppid();

    if (ha_agent_is_launcher(exe) || ha_agent_is_launcher(settings.program))
        return false;
    if (settings.programs[0] != '\0')
        return ha_agent_in_list(settings.programs, settings.program) ||
               ha_agent_in_list(settings.programs, exe);
    for (int depth = 0; p > 1 && depth < 64; depth++) {
        char prog[128];

        if (ha_agent_proc_has_thread(p, "heapadmin")) {
            proc_program(p, prog, sizeof(prog));
            return strcmp(prog, settings.program) == 0 ||
                   strcmp(prog, exe) == 0;
        }
        p = proc_ppid(p);
    }
    return true;
}

/* ------------------------------------------------------------------
 * The config and the datadir, as the first process sees them
 * ------------------------------------------------------------------ */

/* Reads HEAPADMIN_CONF into mmap'd memory: no heap of the host's holds
 * it, and fork children keep it. */
static void
read_config(void)
{
    struct stat st;
    char *text;
    ssize_t n;
    int fd;

    if (settings.conf[0] == '\0')
        return;
    if (attach_req != NULL && ha_agent_attachreq_body(attach_req) != NULL) {
        /* heapadmin-attach read the file (as root, in its namespace). */
        const char *body = ha_agent_attachreq_body(attach_req);

        n = (ssize_t)strlen(body);
        text = n < (ssize_t)CONFIG_MAX
                   ? mmap(NULL, (size_t)n + 1, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                   : MAP_FAILED;
        if (text != MAP_FAILED) {
            memcpy(text, body, (size_t)n + 1);
            settings.conf_text = text;
        }
        return;
    }
    fd = open(settings.conf, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        ha_agent_fmt(settings.conf_err, sizeof(settings.conf_err),
                 "%s: cannot read: %s", settings.conf, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    if (st.st_size >= (off_t)CONFIG_MAX) {
        ha_agent_fmt(settings.conf_err, sizeof(settings.conf_err),
                 "%s: larger than %u bytes", settings.conf, CONFIG_MAX);
        close(fd);
        return;
    }
    text = mmap(NULL, (size_t)st.st_size + 1, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (text == MAP_FAILED) {
        close(fd);
        return;
    }
    n = read(fd, text, (size_t)st.st_size);
    close(fd);
    if (n < 0) {
        ha_agent_fmt(settings.conf_err, sizeof(settings.conf_err),
                 "%s: cannot read: %s", settings.conf, strerror(errno));
        munmap(text, (size_t)st.st_size + 1);
        return;
    }
    text[n] = '\0';
    settings.conf_text = text;
}

/* The config's datadir and mysql_ifaces (the rest is for
 * heapadmin_new). */
static void
config_keys(char *datadir, size_t dlen)
{
    config_t c;
    const char *v = NULL;

    datadir[0] = '\0';
    if (settings.conf_text == NULL)
        return;
    config_init(&c);
    if (config_read_string(&c, settings.conf_text) == CONFIG_TRUE) {
        if (config_lookup_string(&c, "datadir", &v) == CONFIG_TRUE &&
            v != NULL)
            snprintf(datadir, dlen, "%s", v);
        v = NULL;
        if (config_lookup_string(&c, "admin_variables.mysql_ifaces", &v) ==
                CONFIG_TRUE &&
            v != NULL && strlen(v) < sizeof(settings.cfg_ifaces))
            memcpy(settings.cfg_ifaces, v, strlen(v) + 1);
    }
    config_destroy(&c);
}

/* The datadir, made absolute now: the host may chdir later (redis does,
 * to its --dir). */
static void
choose_datadir(void)
{
    char d[PATH_MAX], cwd[PATH_MAX];

    copy_env(d, sizeof(d), "HEAPADMIN_DATADIR");
    if (d[0] == '\0')
        config_keys(d, sizeof(d));
    else
        config_keys(cwd, sizeof(cwd)); /* for mysql_ifaces */
    if (d[0] == '\0') {
        if (geteuid() == 0 || access("/var/lib/heapadmin", W_OK | X_OK) == 0)
            snprintf(d, sizeof(d), "/var/lib/heapadmin");
        else
            snprintf(d, sizeof(d), "/tmp/heapadmin-%ld", (long)getuid());
    }
    if (d[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL &&
        strlen(cwd) + strlen(d) + 2 < sizeof(settings.datadir))
        ha_agent_fmt(settings.datadir, sizeof(settings.datadir), "%s/%s", cwd,
                 d);
    else
        snprintf(settings.datadir, sizeof(settings.datadir), "%s", d);
}

/* As root, before the host drops privileges: <datadir>/<user>/ (0700,
 * the user's) for each of HEAPADMIN_USERS, where that user's processes
 * are served. The datadir stays root's and writable by root alone;
 * nothing in a user's directory is ever followed by root. */
static void
prepare_users(void)
{
    char list[sizeof(settings.users)], *save = NULL, *u;
    int top;
    struct stat st;

    if (settings.users[0] == '\0' || geteuid() != 0)
        return;
    /* The datadir itself: made traversable (not listable, not writable)
     * for the users when it is new. */
    if (mkdir(settings.datadir, 0711) != 0 && errno != EEXIST) {
        ha_agent_log_later(1, "HEAPADMIN_USERS: cannot make the datadir %s: %s",
                  settings.datadir, strerror(errno));
        return;
    }
    top = open(settings.datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0 || fstat(top, &st) != 0) {
        if (top >= 0)
            close(top);
        return;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_uid != 0) {
        ha_agent_log_later(1, "HEAPADMIN_USERS: the datadir %s must be root's and "
                  "writable by root alone (mode %04o, uid %u): no user "
                  "directories made",
                  settings.datadir, (unsigned)(st.st_mode & 07777),
                  (unsigned)st.st_uid);
        close(top);
        return;
    }
    snprintf(list, sizeof(list), "%s", settings.users);
    for (u = strtok_r(list, ", ", &save); u != NULL;
         u = strtok_r(NULL, ", ", &save)) {
        struct passwd pw, *found = NULL;
        char buf[1024];
        int fd;

        if (getpwnam_r(u, &pw, buf, sizeof(buf), &found) != 0 ||
            found == NULL) {
            ha_agent_log_later(1, "HEAPADMIN_USERS: no user named '%s'", u);
            continue;
        }
        if (pw.pw_uid == 0 || strchr(u, '/') != NULL || u[0] == '.')
            continue;
        if ((st.st_mode & S_IXOTH) == 0)
            ha_agent_log_later(1, "HEAPADMIN_USERS: %s (mode %04o) cannot be "
                      "traversed by %s: chmod o+x %s (it stays unlistable "
                      "and unwritable)",
                      settings.datadir, (unsigned)(st.st_mode & 07777), u,
                      settings.datadir);
        (void)mkdirat(top, u, 0700);
        /* O_NOFOLLOW: a link at the name is never made anyone's. */
        fd = openat(top, u, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            ha_agent_log_later(1, "HEAPADMIN_USERS: %s/%s: %s", settings.datadir, u,
                      strerror(errno));
            continue;
        }
        {
            struct stat ds;

            if (fstat(fd, &ds) == 0 && ds.st_uid == 0 &&
                (fchown(fd, pw.pw_uid, pw.pw_gid) != 0 ||
                 fchmod(fd, 0700) != 0))
                ha_agent_log_later(1, "HEAPADMIN_USERS: %s/%s: %s", settings.datadir,
                          u, strerror(errno));
            else if (ds.st_uid != 0 && ds.st_uid != pw.pw_uid)
                ha_agent_log_later(1, "HEAPADMIN_USERS: %s/%s belongs to uid %u, "
                          "not %s: left alone",
                          settings.datadir, u, (unsigned)ds.st_uid, u);
        }
        close(fd);
    }
    close(top);
}

/* This process's own directory: the datadir for its owner (or root),
 * <datadir>/<user>/ for another user, which must be that user's alone.
 * Returns 0, or -1 with why. */
static int
own_dir(char *out, size_t len, char *why, size_t whylen)
{
    char name[64];
    struct stat st;

    if (stat(settings.datadir, &st) != 0 && errno == ENOENT) {
        /* heapadmin_new makes it. */
        snprintf(out, len, "%s", settings.datadir);
        return 0;
    }
    if (geteuid() == 0 || (stat(settings.datadir, &st) == 0 &&
                           st.st_uid == geteuid())) {
        snprintf(out, len, "%s", settings.datadir);
        return 0;
    }
    if (!ha_agent_user_name((long)geteuid(), name, sizeof(name))) {
        snprintf(why, whylen,
                 "uid %u is not one of HEAPADMIN_USERS (set "
                 "HEAPADMIN_USERS to the user it runs as: the first "
                 "process, as root, makes its directory)",
                 (unsigned)geteuid());
        return -1;
    }
    if ((size_t)snprintf(out, len, "%s/%s", settings.datadir, name) >=
        len) {
        snprintf(why, whylen, "path too long");
        return -1;
    }
    if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        ha_agent_fmt(why, whylen,
                 "the datadir %s is not %s's, and %s is not a directory "
                 "of %s's alone (HEAPADMIN_USERS=%s makes it, as root, "
                 "before the privilege drop)",
                 settings.datadir, name, out, name, name);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------
 * Serving
 * ------------------------------------------------------------------ */

static void
tick(void *arg)
{
    struct ha_agent_self self = {
        .program = settings.program,
        .so_path = settings.so_path,
        .so_base = settings.so_base,
        .datadir = settings.datadir,
        .programs = settings.programs,
        .fork = settings.fork,
        .delay_ms = settings.delay_ms,
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
static bool
serve(pid_t parent)
{
    struct heapadmin_options o;
    struct heapadmin *h = NULL;
    char dir[PATH_MAX], sock[PATH_MAX], agent[PATH_MAX];
    char ifaces[PATH_MAX + 300], err[1024];
    pid_t pid = getpid();
    bool first = pid == settings.first_pid, fork_child = !first;
    bool own_endpoint;

    if (!have_jemalloc())
        return false;
    if (settings.conf[0] != '\0' && settings.conf_text == NULL) {
        ha_agent_log(0, "not serving %s (pid %ld): %s", settings.program,
                     (long)pid, settings.conf_err);
        return false;
    }
    if (own_dir(dir, sizeof(dir), err, sizeof(err)) != 0) {
        /* Said by the parent too (children.c), which can write its log;
         * this process may not be able to. */
        ha_agent_log(1, "not serving %s (pid %ld): %s", settings.program,
                     (long)pid, err);
        return false;
    }
    if (strcmp(dir, settings.datadir) != 0)
        ha_agent_log_fallback(dir);
    if ((size_t)snprintf(agent, sizeof(agent), "%s/%s.%ld.http", dir,
                         settings.program, (long)pid) >= sizeof(agent) ||
        strlen(agent) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        ha_agent_log(0, "not serving %s (pid %ld): the socket path %s is "
                     "longer than a unix socket's %zu bytes: choose a "
                     "shorter datadir",
                     settings.program, (long)pid, agent,
                     sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
        return false;
    }
    if (settings.socket_tmpl[0] != '\0') {
        if (expand(settings.socket_tmpl, pid, sock, sizeof(sock)) != 0) {
            ha_agent_log(0, "HEAPADMIN_SOCKET is too long");
            return false;
        }
    } else {
        ha_agent_fmt(sock, sizeof(sock), "%s/%s.%ld.sock", dir, settings.program,
                 (long)pid);
    }
    /* The config's interfaces belong to the service's own process: the
     * first one, or the child that took over from a daemonizing parent.
     * Other children (per-process) get the socket named after their pid,
     * as the config's addresses are taken. */
    own_endpoint = first || parent > 0;
    if (settings.socket_tmpl[0] == '\0' && settings.cfg_ifaces[0] != '\0' &&
        own_endpoint) {
        if (expand(settings.cfg_ifaces, pid, ifaces, sizeof(ifaces)) != 0) {
            ha_agent_log(0, "mysql_ifaces is too long");
            return false;
        }
    } else if (settings.tcp[0] != '\0' && first) {
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

    memset(&o, 0, sizeof(o));
    o.config_text = settings.conf_text;
    o.config_name = settings.conf[0] != '\0' ? settings.conf : NULL;
    o.datadir = dir;
    o.mysql_ifaces = ifaces;
    o.listener_check_ms = LISTENER_CHECK_MS;
    o.agent_socket = agent;
    /* One fixed address fits one process: a host of several is served
     * by the gateway instead. */
    o.refuse_http_ifaces = settings.fork == HA_AGENT_FORK_PER_PROCESS;
    o.inherit_profiler = fork_child && atomic_load(&profiler_applied);
    o.tick = tick;
    if (settings.log[0] != '\0') {
        o.log = ha_agent_log_sink;
        o.log_name = settings.log;
    } else if (settings.conf[0] == '\0') {
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
    if (settings.bad_fork_policy)
        ha_agent_log(1, "HEAPADMIN_FORK is not follow, per-process or "
                        "none; using follow");
    ha_agent_log(2, "serving %s (pid %ld) on %s; a host gateway reaches it "
                    "at %s",
                 settings.program, (long)pid, ifaces, agent);
    return true;
}

/* Stops serving, as if it never had: a start that raced the host's
 * change of user is made again (launcher). */
static void
withdraw(void)
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

/* The process's user and group ids, which a host may change while the
 * agent starts (squid's master drops to proxy and back in its first
 * second). */
struct ids {
    uid_t u[3];
    gid_t g[3];
};

static struct ids
ids_now(void)
{
    struct ids x;

    memset(&x, 0, sizeof(x));
    (void)getresuid(&x.u[0], &x.u[1], &x.u[2]);
    (void)getresgid(&x.g[0], &x.g[1], &x.g[2]);
    return x;
}

static _Atomic bool launcher_named;

static struct launch {
    unsigned delay_ms;
    bool wait_parent;
    pid_t parent;
} launch_args;

static void *
launcher(void *arg)
{
    struct launch l = *(struct launch *)arg;

    pthread_setname_np(pthread_self(), "heapadmin");
    atomic_store(&launcher_named, true);
    /* From here on, what the agent allocates is in its own arena. */
    (void)heapadmin_adopt_thread();
    /* A child whose parent lives on is never served: its thread ends
     * here (fork.c). */
    if (l.wait_parent && !ha_agent_await_parent(l.parent, l.delay_ms))
        return NULL;
    if (l.wait_parent)
        ha_agent_log(3, "parent %ld is gone: taking over", (long)l.parent);
    /* A worker a root master forks drops privileges right after the
     * fork: its directory is decided once it has, not before. */
    if (getpid() != settings.first_pid && geteuid() == 0 &&
        settings.users[0] != '\0' && l.delay_ms < DROP_SETTLE_MS)
        l.delay_ms = DROP_SETTLE_MS;
    sleep_ms(l.delay_ms);
    /* A host that changed its user or group while the instance started
     * may have made it fail (bind: EACCES) or left it files it can no
     * longer write: it starts again once the ids held still. */
    for (int attempt = 1;; attempt++) {
        struct ids before = ids_now(), after;
        bool ok = serve(l.wait_parent ? l.parent : 0);

        after = ids_now();
        if (memcmp(&before, &after, sizeof(before)) == 0 ||
            attempt == IDS_RETRIES)
            break;
        withdraw();
        ha_agent_log(2, "the host changed its user or group while the "
                        "agent started (uids %ld %ld %ld, gids %ld %ld %ld; "
                        "then uids %ld %ld %ld, gids %ld %ld %ld)%s: "
                        "starting again in %d ms",
                     (long)before.u[0], (long)before.u[1], (long)before.u[2],
                     (long)before.g[0], (long)before.g[1], (long)before.g[2],
                     (long)after.u[0], (long)after.u[1], (long)after.u[2],
                     (long)after.g[0], (long)after.g[1], (long)after.g[2],
                     ok ? "" : ", which it could not finish", IDS_SETTLE_MS);
        sleep_ms(IDS_SETTLE_MS);
    }
    return NULL;
}

/* Starts serving from this process on a detached thread after delay_ms
 * (0: at once). When wait_parent is set, the thread first waits until
 * the parent it had when forked is gone (ha_agent_await_parent) and
 * serves only then: a child whose parent lives on (a BGSAVE) never
 * serves, and its thread ends. */
static void
launch(unsigned delay_ms, bool wait_parent, pid_t parent)
{
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;

    if (!settings.active)
        return;
    /* Static, not malloc'd: this runs on the host's thread (at load, or
     * in a fork child), whose heap is the host's. One launch at a time
     * per process. */
    launch_args.delay_ms = delay_ms;
    launch_args.wait_parent = wait_parent;
    launch_args.parent = parent;
    /* No signal of the host's is ever delivered to our threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Named before this returns: a helper the host execs at once looks
     * for this name among its ancestors' threads (is_served). The thread
     * names itself (it is detached: its handle is not ours to use) and
     * this waits for it, a few microseconds. */
    atomic_store(&launcher_named, false);
    /* Attached (heapadmin-attach): no helper the host execs has the
     * agent (nothing preloads it), and the host's thread waits. */
    if (pthread_create(&t, &attr, launcher, &launch_args) == 0 &&
        attach_req == NULL)
        for (int i = 0; i < 100000 && !atomic_load(&launcher_named); i++)
            sched_yield();
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* In a fork child (fork.c): forgets the instance inherited from the
 * parent, whose thread does not exist here. */
static void
forget_inherited(void)
{
    struct heapadmin *h = atomic_exchange(&current, NULL);

    if (h != NULL && atomic_load(&current_pid) != getpid())
        heapadmin_abandon(h);
    ha_agent_log_forget_inherited();
    current_sock[0] = current_agent[0] = '\0';
}

/* ------------------------------------------------------------------
 * Loading and exit
 * ------------------------------------------------------------------ */

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

/* Reads the settings, decides whether this process is served, and
 * starts the agent's thread: in the constructor of a preloaded agent,
 * or in heapadmin_agent_attach(). */
static void
agent_setup(void)
{
    char exe[128], buf[64];
    const char *v;
    Dl_info info;

    v = setting("HEAPADMIN_DISABLE", buf, sizeof(buf));
    if ((v != NULL && strcmp(v, "1") == 0) || !have_jemalloc())
        return; /* inert: no thread, no file, no word */
    self_program(settings.program, sizeof(settings.program), exe,
                 sizeof(exe));
    copy_env(settings.programs, sizeof(settings.programs),
             "HEAPADMIN_PROGRAMS");
    if (attach_req != NULL && settings.programs[0] == '\0')
        settings.programs[0] = '*'; /* the operator chose this process */
    /* A shell, a launcher, a helper of the served program: the agent
     * passes through it silently (its parent says why, if served). */
    if (!is_served(exe))
        return;
    settings.active = true;
    if (dladdr((void *)agent_setup, &info) != 0 && info.dli_fname != NULL) {
        snprintf(settings.so_path, sizeof(settings.so_path), "%s",
                 info.dli_fname);
        settings.so_base = (unsigned long)info.dli_fbase;
        /* Now: dl_iterate_phdr takes the loader's lock, which a heapadmin
         * thread must never hold while the host may fork. */
        ha_agent_code_find(settings.so_base);
    }
    copy_env(settings.conf, sizeof(settings.conf), "HEAPADMIN_CONF");
    copy_env(settings.socket_tmpl, sizeof(settings.socket_tmpl),
             "HEAPADMIN_SOCKET");
    copy_env(settings.tcp, sizeof(settings.tcp), "HEAPADMIN_TCP");
    copy_env(settings.log, sizeof(settings.log), "HEAPADMIN_LOG");
    ha_agent_log_init(settings.log);
    copy_env(settings.users, sizeof(settings.users), "HEAPADMIN_USERS");
    /* Attached: the host has long finished starting. */
    settings.delay_ms = attach_req != NULL ? 0 : DEFAULT_DELAY_MS;
    v = setting("HEAPADMIN_START_DELAY_MS", buf, sizeof(buf));
    if (v != NULL && *v != '\0') {
        char *end;
        unsigned long ms = strtoul(v, &end, 10);

        if (*end == '\0' && ms <= 3600000UL)
            settings.delay_ms = (unsigned)ms;
    }
    settings.fork = HA_AGENT_FORK_FOLLOW;
    v = setting("HEAPADMIN_FORK", buf, sizeof(buf));
    if (v != NULL && strcmp(v, "per-process") == 0)
        settings.fork = HA_AGENT_FORK_PER_PROCESS;
    else if (v != NULL && strcmp(v, "none") == 0)
        settings.fork = HA_AGENT_FORK_NONE;
    settings.bad_fork_policy = v != NULL &&
                               settings.fork == HA_AGENT_FORK_FOLLOW &&
                               strcmp(v, "follow") != 0;
    settings.first_pid = getpid();
    /* Now, with the rights the process started with: the config (0600,
     * root's) and the users' directories. No descriptor stays open: the
     * host may close them all at start-up. */
    read_config();
    choose_datadir();
    ha_agent_users_learn(settings.users);
    prepare_users();
    {
        const struct ha_agent_fork_hooks hooks = {
            .policy = settings.fork,
            .delay_ms = settings.delay_ms,
            .forget_inherited = forget_inherited,
            .launch = launch,
        };

        ha_agent_fork_init(&hooks);
    }
    launch(settings.delay_ms, false, 0);
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

    if (atomic_exchange(&called, true) || settings.active) {
        ha_agent_fmt(msg, msglen, "the agent is already running in this "
                                  "process");
        return -1;
    }
    ha_agent_attached_begin();
    attach_req = request;
    agent_setup();
    attach_req = NULL;
    if (!settings.active) {
        ha_agent_fmt(msg, msglen, "not served: %s",
                     have_jemalloc() ? "HEAPADMIN_DISABLE, or a launcher"
                                     : "no jemalloc in this process");
        errno = saved;
        return -1;
    }
    if (own_dir(dir, sizeof(dir), why, sizeof(why)) != 0) {
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
                 dir, settings.program, (long)getpid(),
                 prof ? "available (jemalloc was started with prof:true)"
                      : "not available: jemalloc was started without "
                        "prof:true, which only a restart changes "
                        "(MALLOC_CONF=" HEAPADMIN_MALLOC_CONF "); the "
                        "statistics tables, arenas, bins, purge and the "
                        "limit watch work now");
    errno = saved;
    return 0;
}
