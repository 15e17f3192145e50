/* SPDX-License-Identifier: MIT
 *
 * heapadmin-attach PID: serves a process that is already running, as
 * if it had been started with the LD_PRELOAD agent, without a restart.
 * A process whose jemalloc was started with prof:true keeps every
 * sampled allocation since its start, so the agent loaded now reads the
 * heap built before it came (see heapadmin-attach(8)).
 *
 *   1. target.c looks at the process from the outside and refuses,
 *      with the reason, anything it should not touch;
 *   2. this file decides the agent's settings (its environment is the
 *      process's own, which says nothing of heapadmin): the config file
 *      read here, the datadir, and for a process of another user than
 *      root its directory in the datadir, made here as root, as the
 *      preloaded agent's first process makes it;
 *   3. inject.c loads the agent on one thread of the process, held at a
 *      safe point for as short a time as it can be, and gives it back
 *      as it was;
 *   4. the agent's endpoint is waited for, and where it is printed.
 *
 * Exit status: 0 served; 1 refused (nothing in the process changed);
 * 2 usage; 3 the agent was loaded but does not serve (why is printed).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <libconfig.h>

#include "attach/inject.h"
#include "attach/target.h"
#include "core/users.h"
#include "core/util.h"

#ifndef HA_AGENT_PATH
#define HA_AGENT_PATH "/usr/lib/heapadmin/heapadmin-agent.so"
#endif
#define DEFAULT_DATADIR "/var/lib/heapadmin"
#define CONFIG_MAX (128u * 1024) /* config text passed on, at most */
#define SEARCH_MS 3000           /* looking for a safe point, at most */
#define SERVE_WAIT_MS 15000      /* for the endpoint, after the attach */

enum {
    EXIT_SERVED = 0,
    EXIT_REFUSED = 1,
    EXIT_USAGE = 2,
    EXIT_NOT_SERVING = 3,
};

struct options {
    pid_t pid;
    const char *config;   /* --config */
    const char *datadir;  /* --datadir */
    const char *log;      /* --log */
    const char *fork;     /* --fork */
    const char *agent;    /* --agent */
    unsigned search_ms;   /* --wait-ms */
    bool check;           /* --check: the refusals only */
    bool no_wait;         /* --no-wait: not for the endpoint */
};

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: heapadmin-attach [options] PID\n"
            "Loads heapadmin's agent into running process PID, which then\n"
            "serves its admin port as if started with the agent.\n"
            "  --config FILE     the agent's config (heapadmind's format),\n"
            "                    read here and handed to the agent\n"
            "  --datadir DIR     its datadir (default: the config's, else "
            DEFAULT_DATADIR ")\n"
            "  --log FILE        its log file (default: the config's "
            "errorlog, else none)\n"
            "  --fork POLICY     follow (default), per-process or none: "
            "what children\n"
            "                    it forks from now on do\n"
            "  --agent FILE      the agent (default " HA_AGENT_PATH ")\n"
            "  --wait-ms N       look for a safe point for at most N ms "
            "(default %u)\n"
            "  --check           say whether PID may be attached; change "
            "nothing\n"
            "  --no-wait         do not wait for the agent's endpoint\n",
            SEARCH_MS);
}

static int
parse_args(int argc, char **argv, struct options *o)
{
    static const struct option longs[] = {
        {"config", required_argument, NULL, 'c'},
        {"datadir", required_argument, NULL, 'd'},
        {"log", required_argument, NULL, 'l'},
        {"fork", required_argument, NULL, 'f'},
        {"agent", required_argument, NULL, 'a'},
        {"wait-ms", required_argument, NULL, 'w'},
        {"check", no_argument, NULL, 'k'},
        {"no-wait", no_argument, NULL, 'n'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    char *end;
    long v;

    memset(o, 0, sizeof(*o));
    o->agent = HA_AGENT_PATH;
    o->search_ms = SEARCH_MS;
    while ((c = getopt_long(argc, argv, "c:d:l:f:a:w:knh", longs, NULL)) !=
           -1) {
        switch (c) {
        case 'c': o->config = optarg; break;
        case 'd': o->datadir = optarg; break;
        case 'l': o->log = optarg; break;
        case 'f':
            if (strcmp(optarg, "follow") != 0 &&
                strcmp(optarg, "per-process") != 0 &&
                strcmp(optarg, "none") != 0) {
                fprintf(stderr, "heapadmin-attach: --fork takes follow, "
                                "per-process or none, not '%s'\n", optarg);
                return -1;
            }
            o->fork = optarg;
            break;
        case 'a': o->agent = optarg; break;
        case 'w':
            v = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end != '\0' || v < 1 || v > 60000) {
                fprintf(stderr, "heapadmin-attach: --wait-ms takes 1 to "
                                "60000 (milliseconds), not '%s'\n", optarg);
                return -1;
            }
            o->search_ms = (unsigned)v;
            break;
        case 'k': o->check = true; break;
        case 'n': o->no_wait = true; break;
        case 'h': usage(stdout); exit(EXIT_SERVED);
        default: return -1;
        }
    }
    if (optind != argc - 1) {
        usage(stderr);
        return -1;
    }
    v = strtol(argv[optind], &end, 10);
    if (argv[optind][0] < '1' || argv[optind][0] > '9' || *end != '\0' ||
        v > INT_MAX) {
        fprintf(stderr, "heapadmin-attach: PID must be a process id (digits, "
                        "no sign), not '%s'\n", argv[optind]);
        return -1;
    }
    o->pid = (pid_t)v;
    return 0;
}

/* ------------------------------------------------------------------
 * The agent's settings
 * ------------------------------------------------------------------ */

/* Reads the config into text (malloc'd) and its datadir (if any) into
 * datadir. Returns 0, or -1 with err. */
static int
read_config(const char *path, char **text, char *datadir, size_t len,
            char *err, size_t errlen)
{
    struct stat st;
    config_t c;
    const char *v = NULL;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    *text = NULL;
    datadir[0] = '\0';
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ha_err_set(err, errlen, "%s: cannot read: %s", path,
                   fd < 0 ? strerror(errno) : "not a regular file");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (st.st_size >= (off_t)CONFIG_MAX) {
        ha_err_set(err, errlen, "%s: larger than %u bytes", path, CONFIG_MAX);
        close(fd);
        return -1;
    }
    *text = calloc(1, (size_t)st.st_size + 1);
    n = *text != NULL ? read(fd, *text, (size_t)st.st_size) : -1;
    close(fd);
    if (n < 0) {
        ha_err_set(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    config_init(&c);
    if (config_read_string(&c, *text) != CONFIG_TRUE) {
        ha_err_set(err, errlen, "%s:%d: %s", path, config_error_line(&c),
                   config_error_text(&c));
        config_destroy(&c);
        return -1;
    }
    if (config_lookup_string(&c, "datadir", &v) == CONFIG_TRUE && v != NULL)
        snprintf(datadir, len, "%s", v);
    config_destroy(&c);
    return 0;
}

/* The datadir, made traversable when new (0711, root's), and for a
 * process of another user than root its directory in it, the user's
 * alone (0700), under a datadir that is root's and writable by root
 * alone: what the preloaded agent's root process makes for
 * HEAPADMIN_USERS, made here through the process's root directory.
 * Returns 0, or -1 with err. */
static int
prepare_user_dir(const struct ha_attach_target *t, const char *datadir,
                 char *err, size_t errlen)
{
    char root[64], top[PATH_MAX + 64], dir[PATH_MAX + 128], passwd[128];
    char user[64];
    long uid = t->status.uid[1], gid = t->status.gid[1];
    struct stat st;

    snprintf(root, sizeof(root), "/proc/%ld/root", (long)t->pid);
    snprintf(top, sizeof(top), "%s%s", root, datadir);
    /* A datadir made here is traversable (not listable, not writable):
     * the processes of other users a root process forked, attached
     * later, reach their directories in it. */
    if (geteuid() == 0 && mkdir(top, 0711) == 0)
        (void)chmod(top, 0711); /* past the umask */
    if (uid == 0)
        return 0;
    if (stat(top, &st) == 0 && st.st_uid == (uid_t)uid)
        return 0; /* the user's own datadir */
    if (geteuid() != 0 && errno == ENOENT)
        return 0; /* the agent makes it, as that user */
    if (geteuid() != 0) {
        ha_err_set(err, errlen, "process %ld runs as uid %ld and the "
                                "datadir %s is not that user's: only root "
                                "can make its directory there",
                   (long)t->pid, uid, datadir);
        return -1;
    }
    snprintf(passwd, sizeof(passwd), "%s/etc/passwd", root);
    if (ha_users_name_in(passwd, (uid_t)uid, user, sizeof(user)) != 0) {
        ha_err_set(err, errlen, "uid %ld, which process %ld runs as, has no "
                                "name in its /etc/passwd: its directory in "
                                "the datadir is named after it",
                   uid, (long)t->pid);
        return -1;
    }
    if (lstat(top, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != 0 ||
        (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        ha_err_set(err, errlen, "the datadir %s must be root's and writable "
                                "by root alone to hold user %s's directory",
                   datadir, user);
        return -1;
    }
    if ((st.st_mode & S_IXOTH) == 0) {
        ha_err_set(err, errlen, "the datadir %s (mode %04o) cannot be "
                                "traversed by %s: chmod o+x %s (it stays "
                                "unlistable and unwritable)",
                   datadir, (unsigned)(st.st_mode & 07777), user, datadir);
        return -1;
    }
    snprintf(dir, sizeof(dir), "%s/%s", top, user);
    if (mkdir(dir, 0700) == 0) {
        if (chown(dir, (uid_t)uid, (gid_t)gid) != 0) {
            ha_err_set(err, errlen, "chown %s/%s: %s", datadir, user,
                       strerror(errno));
            return -1;
        }
    } else if (errno != EEXIST) {
        ha_err_set(err, errlen, "cannot make %s/%s: %s", datadir, user,
                   strerror(errno));
        return -1;
    }
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != (uid_t)uid || (st.st_mode & 077) != 0) {
        ha_err_set(err, errlen, "%s/%s must be a directory of %s's alone "
                                "(mode 0700)",
                   datadir, user, user);
        return -1;
    }
    return 0;
}

/* The request (agent/attachreq.h) into a malloc'd string. */
static char *
make_request(const struct options *o, const char *datadir,
             const char *config_text)
{
    size_t len = 4 * PATH_MAX + 256 +
                 (config_text != NULL ? strlen(config_text) : 0);
    char *req = malloc(len);
    size_t at = 0;

    if (req == NULL)
        return NULL;
    req[0] = '\0';
    (void)ha_appendf(req, len, &at, "HEAPADMIN_DATADIR=%s\n", datadir);
    if (o->config != NULL) {
        char abs[PATH_MAX];

        (void)ha_appendf(req, len, &at, "HEAPADMIN_CONF=%s\n",
                         realpath(o->config, abs) != NULL ? abs : o->config);
    }
    if (o->log != NULL)
        (void)ha_appendf(req, len, &at, "HEAPADMIN_LOG=%s\n", o->log);
    if (o->fork != NULL)
        (void)ha_appendf(req, len, &at, "HEAPADMIN_FORK=%s\n", o->fork);
    if (config_text != NULL)
        (void)ha_appendf(req, len, &at, "\n%s", config_text);
    return req;
}

/* ------------------------------------------------------------------
 * After the attach
 * ------------------------------------------------------------------ */

static const char *
syscall_name(long nr)
{
    switch (nr) {
    case SYS_poll: return "poll";
    case SYS_select: return "select";
    case SYS_pause: return "pause";
    case SYS_nanosleep: return "nanosleep";
    case SYS_accept: return "accept";
    case SYS_wait4: return "wait4";
    case SYS_rt_sigtimedwait: return "sigtimedwait";
    case SYS_epoll_wait: return "epoll_wait";
    case SYS_clock_nanosleep: return "clock_nanosleep";
    case SYS_waitid: return "waitid";
    case SYS_pselect6: return "pselect6";
    case SYS_ppoll: return "ppoll";
    case SYS_epoll_pwait: return "epoll_pwait";
    case SYS_accept4: return "accept4";
    case SYS_rt_sigsuspend: return "sigsuspend";
    default: return "a wait";
    }
}

/* The value of "key: " in the agent's message, into out. */
static bool
message_field(const char *msg, const char *key, char *out, size_t len)
{
    size_t k = strlen(key);

    for (const char *p = msg; *p != '\0';) {
        size_t n = strcspn(p, "\n");

        if (n > k + 2 && strncmp(p, key, k) == 0 && p[k] == ':' &&
            p[k + 1] == ' ') {
            snprintf(out, len, "%.*s", (int)(n - k - 2), p + k + 2);
            return true;
        }
        p += n;
        p += *p == '\n';
    }
    return false;
}

/* The program's name as the agent registers it (the path it was
 * started as: redis-server, which Debian links to redis-check-rdb),
 * from the registry path in its message, into out when there is one. */
static void
program_of(const char *msg, pid_t pid, char *out, size_t len)
{
    char reg[PATH_MAX], tail[32];
    const char *base;
    size_t n, k;

    if (!message_field(msg, "registry", reg, sizeof(reg)))
        return;
    base = strrchr(reg, '/');
    base = base != NULL ? base + 1 : reg;
    n = strlen(base);
    k = (size_t)snprintf(tail, sizeof(tail), ".%ld.http", (long)pid);
    if (n > k && strcmp(base + n - k, tail) == 0)
        snprintf(out, len, "%.*s", (int)(n - k), base);
}

/* Waits for the agent's registry socket (path, as the process sees it)
 * and prints where it serves. Returns 0, or -1 after SERVE_WAIT_MS. */
static int
wait_serving(pid_t pid, const char *registry)
{
    char seen[PATH_MAX + 64], sock[PATH_MAX];
    size_t n = strlen(registry);
    struct stat st;

    snprintf(seen, sizeof(seen), "/proc/%ld/root%s", (long)pid, registry);
    for (int waited = 0; waited < SERVE_WAIT_MS; waited += 50) {
        if (stat(seen, &st) == 0 && S_ISSOCK(st.st_mode))
            break;
        if (kill(pid, 0) != 0 && errno == ESRCH) {
            fprintf(stderr, "heapadmin-attach: process %ld exited\n",
                    (long)pid);
            return -1;
        }
        usleep(50000);
    }
    if (stat(seen, &st) != 0 || !S_ISSOCK(st.st_mode)) {
        fprintf(stderr, "heapadmin-attach: the agent is loaded but %s did "
                        "not appear within %d s: see its log\n",
                registry, SERVE_WAIT_MS / 1000);
        return -1;
    }
    if (n > 5 && strcmp(registry + n - 5, ".http") == 0) {
        size_t at = 0;

        if (!ha_appendf(sock, sizeof(sock), &at, "%.*s.sock", (int)(n - 5),
                        registry))
            sock[0] = '\0';
        at = 0;
        if (!ha_appendf(seen, sizeof(seen), &at, "/proc/%ld/root%s",
                        (long)pid, sock))
            seen[0] = '\0';
        if (stat(seen, &st) == 0 && S_ISSOCK(st.st_mode))
            printf("serving: %s (MySQL: mariadb -S %s)\n", sock, sock);
        else
            printf("serving: on the config's mysql_ifaces\n");
    }
    printf("gateway: %s\n", registry);
    return 0;
}

int
main(int argc, char **argv)
{
    struct options o;
    struct ha_attach_target t;
    struct ha_inject_plan plan;
    struct ha_inject_result res;
    char err[1024], datadir[PATH_MAX], field[PATH_MAX];
    char *config_text = NULL, *request = NULL;
    sigset_t hold, old;
    int rc, nice_was;
    bool reniced;

    if (parse_args(argc, argv, &o) != 0)
        return EXIT_USAGE;
    /* Where it would be served: --datadir, the config's, the default. */
    datadir[0] = '\0';
    if (o.config != NULL &&
        read_config(o.config, &config_text, datadir, sizeof(datadir), err,
                    sizeof(err)) != 0) {
        fprintf(stderr, "heapadmin-attach: %s\n", err);
        free(config_text);
        return EXIT_USAGE;
    }
    if (o.datadir != NULL)
        snprintf(datadir, sizeof(datadir), "%s", o.datadir);
    if (datadir[0] == '\0')
        snprintf(datadir, sizeof(datadir), "%s", DEFAULT_DATADIR);
    if (datadir[0] != '/' || (o.log != NULL && o.log[0] != '/')) {
        fprintf(stderr, "heapadmin-attach: the datadir and the log must be "
                        "absolute paths (the process's working directory "
                        "is its own): %s\n",
                datadir[0] != '/' ? datadir : o.log);
        free(config_text);
        return EXIT_USAGE;
    }
    if (strchr(datadir, '\n') != NULL ||
        (o.log != NULL && strchr(o.log, '\n') != NULL) ||
        (o.config != NULL && strchr(o.config, '\n') != NULL)) {
        fprintf(stderr, "heapadmin-attach: a path holds a newline\n");
        free(config_text);
        return EXIT_USAGE;
    }
    if (ha_target_inspect(o.pid, o.agent, &t, err, sizeof(err)) != 0) {
        fprintf(stderr, "heapadmin-attach: refused: %s\n", err);
        free(config_text);
        return EXIT_REFUSED;
    }
    if (o.check) {
        printf("process %ld (%s) may be attached: jemalloc in %s%s, %u "
               "objects loaded\n",
               (long)o.pid, t.program, t.jemalloc,
               t.prefixed ? " (je_ prefix)" : "", t.n_objects);
        free(config_text);
        return EXIT_SERVED;
    }
    if (prepare_user_dir(&t, datadir, err, sizeof(err)) != 0) {
        fprintf(stderr, "heapadmin-attach: refused: %s\n", err);
        free(config_text);
        return EXIT_REFUSED;
    }
    request = make_request(&o, datadir, config_text);
    free(config_text);
    if (request == NULL) {
        fprintf(stderr, "heapadmin-attach: out of memory\n");
        return EXIT_REFUSED;
    }
    memset(&plan, 0, sizeof(plan));
    plan.pid = o.pid;
    plan.dlopen_fn = t.dlopen_fn;
    plan.dlerror_fn = t.dlerror_fn;
    plan.errno_fn = t.errno_fn;
    plan.agent_path = o.agent;
    plan.attach_value = t.attach_value;
    plan.request = request;
    plan.search_ms = o.search_ms;
    /* While a thread of the process is held, only SIGKILL may end this
     * process (a tracer gone then would leave that thread in our call). */
    sigemptyset(&hold);
    sigaddset(&hold, SIGINT);
    sigaddset(&hold, SIGTERM);
    sigaddset(&hold, SIGHUP);
    sigaddset(&hold, SIGQUIT);
    sigaddset(&hold, SIGTSTP);
    sigaddset(&hold, SIGTTIN);
    sigaddset(&hold, SIGTTOU);
    sigaddset(&hold, SIGPIPE);
    sigprocmask(SIG_BLOCK, &hold, &old);
    /* The held thread waits on this process at every step: on a busy
     * machine, the sooner it runs, the shorter the hold (best effort). */
    errno = 0;
    nice_was = getpriority(PRIO_PROCESS, 0);
    reniced = errno == 0 && setpriority(PRIO_PROCESS, 0, -20) == 0;
    rc = ha_inject_agent(&plan, &res, err, sizeof(err));
    if (reniced)
        (void)setpriority(PRIO_PROCESS, 0, nice_was);
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(request);
    if (rc != 0 && !res.loaded) {
        fprintf(stderr, "heapadmin-attach: %s%s\n",
                res.held_ms > 0 ? "" : "refused: ", err);
        if (res.held_ms > 0)
            fprintf(stderr, "heapadmin-attach: thread %ld was held %.1f ms "
                            "and given back as it was\n",
                    (long)res.tid, res.held_ms);
        return EXIT_REFUSED;
    }
    program_of(res.message, o.pid, t.program, sizeof(t.program));
    printf("attached to %s (pid %ld): thread %ld held %.1f ms (dlopen %.1f "
           "ms, start %.1f ms), taken %s %s after %.1f ms",
           t.program, (long)o.pid, (long)res.tid, res.held_ms,
           res.dlopen_ms, res.attach_ms, res.blocked ? "in" : "back from",
           syscall_name(res.syscall_nr), res.search_ms);
    if (res.syscall_stops > 0)
        printf(" and %u system calls", res.syscall_stops);
    if (res.signals_requeued > 0)
        printf("; %u signals held meanwhile were sent again",
               res.signals_requeued);
    printf("\n");
    fflush(stdout);
    if (rc != 0) {
        fprintf(stderr, "heapadmin-attach: %s\n", err);
        return EXIT_NOT_SERVING;
    }
    if (res.attach_rc != 0) {
        fprintf(stderr, "heapadmin-attach: the agent does not serve: %s\n",
                res.message);
        return EXIT_NOT_SERVING;
    }
    if (message_field(res.message, "profiles", field, sizeof(field)))
        printf("heap profiles: %s\n", field);
    if (!message_field(res.message, "registry", field, sizeof(field)))
        return EXIT_SERVED;
    if (o.no_wait) {
        printf("gateway: %s (starting)\n", field);
        return EXIT_SERVED;
    }
    fflush(stdout);
    return wait_serving(o.pid, field) == 0 ? EXIT_SERVED : EXIT_NOT_SERVING;
}
