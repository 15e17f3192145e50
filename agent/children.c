/* SPDX-License-Identifier: MIT
 *
 * What a served process says of the children it starts (see children.h):
 * each one that is not served is named once in this process's log, with
 * its pid, program and why. A child often cannot say so itself: the
 * loader never loaded the agent into it (AT_SECURE), it stays silent by
 * design (a helper, no jemalloc), or it runs as a user who may write
 * nowhere yet. Everything is learnt from /proc, which the parent may
 * read of its children (root may read all), on the admin thread, after
 * a fork and never otherwise: an idle host is not scanned.
 */
#include "agent/children.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/fork.h"
#include "agent/log.h"
#include "agent/proc.h"
#include "agent/users.h"
#include "core/clock.h"
#include "core/dirwalk.h"
#include "core/smallfile.h"

#define TRACKED_MAX 256     /* children remembered as reported */
#define FIRST_LOOK_MS 1500  /* after a fork: it has exec'd by then */
#define LAST_LOOK_MS 4000   /* after its start delay: it serves by then */

/* Shells and launchers: they start the program that is served and pass
 * the agent on to it. */
static const char *const launchers[] = {
    "sh",      "dash",       "bash",     "zsh",       "ksh",      "mksh",
    "busybox", "env",        "nice",     "ionice",    "nohup",    "timeout",
    "stdbuf",  "taskset",    "chrt",     "setpriv",   "runuser",  "su",
    "sudo",    "setsid",     "tini",     "dumb-init", "catatonit", "chpst",
    "xargs",   "flock",      "numactl",  "prlimit",   "unshare",  "nsenter",
    "start-stop-daemon",     "s6-setuidgid", "s6-envdir", "capsh",
};

bool
ha_agent_is_launcher(const char *program)
{
    for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++)
        if (strcmp(program, launchers[i]) == 0)
            return true;
    return false;
}

bool
ha_agent_in_list(const char *list, const char *program)
{
    size_t n = strlen(program);

    for (const char *p = list; *p != '\0';) {
        size_t k = strcspn(p, ", ");

        if ((k == 1 && *p == '*') || (k == n && strncmp(p, program, n) == 0))
            return true;
        p += k;
        p += strspn(p, ", ");
    }
    return false;
}

/* ------------------------------------------------------------------
 * What /proc says of a child
 * ------------------------------------------------------------------ */

struct child {
    pid_t pid;
    long long start;        /* its start time (ticks): pids are reused */
    char program[128];
    long ruid, euid, rgid, egid;
    long suid, fsuid, sgid, fsgid; /* saved and file-system ids */
    int at_secure;          /* AT_SECURE from its auxv: 1, 0, or -1 when
                               unreadable (it is not dumpable) */
    bool maps_read;         /* /proc/<pid>/maps could be read */
    bool agent;             /* the agent is mapped in it */
    bool agent_same_base;   /* ... where it is here: a fork, no exec */
    bool jemalloc;          /* a jemalloc is mapped in it */
    bool agent_thread;      /* it has the agent's thread */
};

/* Scans a child's maps line by line (it may be large) for the agent's
 * file and a jemalloc. */
static void
read_maps(struct child *c, const struct ha_agent_self *self)
{
    char path[64], buf[16384];
    size_t have = 0;
    int fd;
    ssize_t n;

    snprintf(path, sizeof(path), "/proc/%ld/maps", (long)c->pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    while ((n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
        char *p = buf, *eol;

        have += (size_t)n;
        buf[have] = '\0';
        c->maps_read = true;
        while ((eol = strchr(p, '\n')) != NULL) {
            *eol = '\0';
            if (self->so_path[0] != '\0' && strstr(p, self->so_path) != NULL) {
                unsigned long start = strtoul(p, NULL, 16);

                if (!c->agent && start == self->so_base)
                    c->agent_same_base = true;
                c->agent = true;
            }
            if (strstr(p, "jemalloc") != NULL)
                c->jemalloc = true;
            p = eol + 1;
        }
        have = strlen(p);
        memmove(buf, p, have);
        if (have >= sizeof(buf) - 1)
            have = 0; /* a line longer than the buffer: skipped */
    }
    close(fd);
}

/* AT_SECURE in pid's auxiliary vector (/proc/<pid>/auxv: pairs of
 * words): 1 or 0, or -1 when it cannot be read (the kernel allows it
 * only to who may ptrace the process). */
static int
read_at_secure(pid_t pid)
{
    char path[64];
    unsigned long v[2 * 64];
    ssize_t n;
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/auxv", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    n = read(fd, v, sizeof(v));
    close(fd);
    for (ssize_t i = 0; n > 0 && i + 1 < n / (ssize_t)sizeof(v[0]); i += 2) {
        if (v[i] == 0) /* AT_NULL */
            break;
        if (v[i] == 23) /* AT_SECURE */
            return v[i + 1] != 0;
    }
    return -1;
}

/* Whether the kernel ran c's exec in secure mode (AT_SECURE): said by
 * its auxv when readable, else by its ids, which differ among real,
 * effective, saved and file-system for a process that changed
 * credentials at exec, or that keeps root to regain it (squid's kid,
 * exec'd with real uid root and effective uid proxy, then 13 13 0 13). */
static bool
secure_exec(const struct child *c)
{
    if (c->at_secure >= 0)
        return c->at_secure == 1;
    return !(c->ruid == c->euid && c->euid == c->suid &&
             c->suid == c->fsuid && c->rgid == c->egid &&
             c->egid == c->sgid && c->sgid == c->fsgid);
}

static bool
describe(pid_t pid, struct child *c, const struct ha_agent_self *self)
{
    char path[64], buf[4096], *p;

    memset(c, 0, sizeof(*c));
    c->pid = pid;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0 ||
        (p = strrchr(buf, ')')) == NULL)
        return false;
    {
        int field = 2;

        for (; field < 22 && p != NULL; field++)
            p = strchr(p + 1, ' ');
        if (p == NULL || sscanf(p + 1, "%lld", &c->start) != 1)
            return false;
    }
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)pid);
    if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0 ||
        (p = strstr(buf, "\nUid:")) == NULL ||
        sscanf(p + 5, "%ld %ld %ld %ld", &c->ruid, &c->euid, &c->suid,
               &c->fsuid) != 4 ||
        (p = strstr(buf, "\nGid:")) == NULL ||
        sscanf(p + 5, "%ld %ld %ld %ld", &c->rgid, &c->egid, &c->sgid,
               &c->fsgid) != 4)
        return false;
    c->at_secure = read_at_secure(pid);
    snprintf(path, sizeof(path), "/proc/%ld/exe", (long)pid);
    {
        ssize_t n = readlink(path, buf, sizeof(buf) - 1);

        if (n > 0) {
            buf[n] = '\0';
            p = strrchr(buf, '/');
            ha_agent_fmt(c->program, sizeof(c->program), "%s",
                     p != NULL ? p + 1 : buf);
        } else {
            snprintf(path, sizeof(path), "/proc/%ld/comm", (long)pid);
            if (ha_smallfile_read(path, buf, sizeof(buf)) > 0) {
                buf[strcspn(buf, "\n")] = '\0';
                ha_agent_fmt(c->program, sizeof(c->program), "%s", buf);
            }
        }
    }
    read_maps(c, self);
    c->agent_thread = ha_agent_proc_has_thread(pid, "heapadmin");
    return true;
}

/* ------------------------------------------------------------------
 * The reports
 * ------------------------------------------------------------------ */

static struct {
    pid_t pid;
    long long start;
} reported[TRACKED_MAX];
static size_t n_reported;
static bool told_follow;

static bool
was_reported(const struct child *c)
{
    for (size_t i = 0; i < n_reported; i++)
        if (reported[i].pid == c->pid && reported[i].start == c->start)
            return true;
    return false;
}

static void
mark_reported(const struct child *c)
{
    if (n_reported == TRACKED_MAX) {
        memmove(reported, reported + 1, (TRACKED_MAX - 1) * sizeof(*reported));
        n_reported--;
    }
    reported[n_reported].pid = c->pid;
    reported[n_reported].start = c->start;
    n_reported++;
}

/* No name service on the agent's thread (agent.h ha_agent_user_name). */
static void
user_of(long uid, char *out, size_t len)
{
    (void)ha_agent_user_name(uid, out, len);
}

/* Why a child that should serve does not, when its user is the cause:
 * into why; false when that is not it. */
static bool
dir_problem(const struct child *c, const struct ha_agent_self *self,
            char *why, size_t len)
{
    char user[64], dir[4200];
    struct stat st;

    if (c->euid == 0 || (stat(self->datadir, &st) == 0 &&
                         (long)st.st_uid == c->euid))
        return false;
    user_of(c->euid, user, sizeof(user));
    snprintf(dir, sizeof(dir), "%s/%s", self->datadir, user);
    if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
        (long)st.st_uid == c->euid && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0)
        return false;
    ha_agent_fmt(why, len,
             "it runs as %s, who may not write the datadir %s, and %s is "
             "not a directory of %s's (set HEAPADMIN_USERS=%s: the first "
             "process, as root, makes it before the privilege drop)",
             user, self->datadir, dir, user, user);
    return true;
}

/* Looks at child pid; final: its start delay has passed. Returns true
 * once nothing more is to be said of it. */
static bool
look(pid_t pid, const struct ha_agent_self *self, bool final)
{
    struct child c;
    char why[1024];

    if (!describe(pid, &c, self) || was_reported(&c))
        return true;
    why[0] = '\0';
    if (!c.agent && secure_exec(&c)) {
        /* Never loaded: the loader drops LD_PRELOAD for a process that
         * changes credentials at exec. */
        snprintf(why, sizeof(why),
                 "AT_SECURE (%s): its uids are %ld %ld %ld %ld and gids "
                 "%ld %ld %ld %ld (real, effective, saved, file system), "
                 "so the loader ignored LD_PRELOAD and jemalloc ignores "
                 "MALLOC_CONF; a process started so cannot be attached",
                 c.at_secure == 1 ? "its auxiliary vector says so"
                                  : "its ids differ",
                 c.ruid, c.euid, c.suid, c.fsuid, c.rgid, c.egid, c.sgid,
                 c.fsgid);
    } else if (!c.maps_read || !c.agent) {
        return true; /* not ours to judge (its environment was cleared) */
    } else if (c.agent_same_base) {
        /* A fork child (no exec): the fork policy decides. */
        if (self->fork == HA_AGENT_FORK_FOLLOW) {
            if (!told_follow && final)
                ha_agent_log(3,
                             "fork children whose parent lives on, such as "
                             "pid %ld (%s), are not served: "
                             "HEAPADMIN_FORK=follow serves only the child "
                             "that outlives a daemonizing parent; "
                             "HEAPADMIN_FORK=per-process serves every "
                             "process (further ones are not reported)",
                             (long)c.pid, c.program);
            told_follow = told_follow || final;
            return final;
        }
        if (self->fork == HA_AGENT_FORK_NONE)
            return true;
        if (c.agent_thread || !final)
            return false; /* it serves, or is about to */
        if (!dir_problem(&c, self, why, sizeof(why)))
            snprintf(why, sizeof(why), "its agent stopped (its own log "
                                       "says why)");
    } else if (c.agent_thread) {
        return false; /* an exec'd process it serves (or starts to) */
    } else if (ha_agent_is_launcher(c.program)) {
        return true; /* a shell passes the agent on, silently */
    } else if (!c.jemalloc) {
        snprintf(why, sizeof(why),
                 "no jemalloc in it (LD_PRELOAD=\"heapadmin-agent.so "
                 "libjemalloc.so.2\" would give it one)");
    } else if (self->programs[0] != '\0' || final) {
        if (!dir_problem(&c, self, why, sizeof(why)))
            snprintf(why, sizeof(why),
                     "not the served program: this process serves %s, "
                     "and %s is a program it runs (HEAPADMIN_PROGRAMS "
                     "names the programs to serve%s%s)",
                     self->program, c.program,
                     self->programs[0] ? "; now: " : "", self->programs);
    } else {
        return false;
    }
    {
        char user[64];

        user_of(c.euid, user, sizeof(user));
        ha_agent_log(1, "child %ld (%s, user %s) is not served: %s",
                     (long)c.pid, c.program, user, why);
    }
    mark_reported(&c);
    return true;
}

/* This process's children, from every thread's children list. */
struct kids {
    pid_t *out;
    size_t n, max;
};

static bool
add_thread_children(long tid, void *arg)
{
    struct kids *k = arg;
    char path[96], list[8192];

    snprintf(path, sizeof(path), "/proc/self/task/%ld/children", tid);
    if (ha_smallfile_read(path, list, sizeof(list)) <= 0)
        return true;
    for (char *p = list; *p != '\0' && k->n < k->max;) {
        char *end;
        long v = strtol(p, &end, 10);

        if (end == p)
            break;
        k->out[k->n++] = (pid_t)v;
        p = end;
    }
    return k->n < k->max;
}

static size_t
children(pid_t *out, size_t max)
{
    struct kids k = {.out = out, .n = 0, .max = max};

    (void)ha_dirwalk_numbers("/proc/self/task", add_thread_children, &k);
    return k.n;
}

void
ha_agent_children_tick(const struct ha_agent_self *self)
{
    static unsigned long seen = (unsigned long)-1;
    static int64_t first_at, last_at;
    static pid_t owner;
    unsigned long forks = ha_agent_forks();
    int64_t now = ha_clock_ms();

    /* A fork child starts with its parent's state: its own children are
     * new to it. */
    if (owner != getpid()) {
        owner = getpid();
        seen = (unsigned long)-1;
        n_reported = 0;
        told_follow = false;
    }
    if (forks != seen) {
        /* Children forked since (and, at the first tick, those forked
         * while this process waited to serve). */
        seen = forks;
        first_at = now + FIRST_LOOK_MS;
        last_at = now + self->delay_ms + LAST_LOOK_MS;
    }
    if ((first_at == 0 || now < first_at) && (last_at == 0 || now < last_at))
        return;
    {
        bool final = last_at != 0 && now >= last_at;
        pid_t kids[512];
        size_t n = children(kids, sizeof(kids) / sizeof(kids[0]));

        for (size_t i = 0; i < n; i++)
            (void)look(kids[i], self, final);
        if (now >= first_at)
            first_at = 0;
        if (final)
            last_at = 0;
    }
}
