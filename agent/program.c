/* SPDX-License-Identifier: MIT
 *
 * Which processes the agent serves. LD_PRELOAD is inherited by each
 * helper a daemon exec()s (sh, cc, a logging helper, ...), so the agent
 * must tell, in every process it is loaded in and before the host can
 * rewrite its name, whether this is the program the operator started:
 * the name is taken from the exec itself, and HEAPADMIN_PROGRAMS, the
 * launchers (children.c) and the served ancestors decide.
 */
#include "agent/agent_int.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/children.h"
#include "agent/log.h"
#include "agent/proc.h"
#include "core/smallfile.h"

static const char *
base_name(const char *path)
{
    const char *s = strrchr(path, '/');

    return s != NULL ? s + 1 : path;
}

/* jemalloc in this process (or a prefixed copy)? */
bool
ha_agent_have_jemalloc(void)
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
void
ha_agent_self_program(char *out, size_t len, char *exe, size_t exelen)
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
bool
ha_agent_is_served(const char *exe)
{
    pid_t p = getppid();

    if (ha_agent_is_launcher(exe) ||
        ha_agent_is_launcher(ha_agent_settings.program))
        return false;
    if (ha_agent_settings.programs[0] != '\0')
        return ha_agent_in_list(ha_agent_settings.programs,
                                ha_agent_settings.program) ||
               ha_agent_in_list(ha_agent_settings.programs, exe);
    for (int depth = 0; p > 1 && depth < 64; depth++) {
        char prog[128];

        if (ha_agent_proc_has_thread(p, "heapadmin")) {
            proc_program(p, prog, sizeof(prog));
            return strcmp(prog, ha_agent_settings.program) == 0 ||
                   strcmp(prog, exe) == 0;
        }
        p = proc_ppid(p);
    }
    return true;
}
