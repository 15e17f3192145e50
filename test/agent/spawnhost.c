/* SPDX-License-Identifier: MIT
 *
 * A host that starts children the ways daemons do, for the agent's
 * report of the ones it does not serve. malloc is jemalloc's (linked), so
 * the agent serves this process; each argument starts one child:
 *
 *   helper:PROG ARG    fork, exec PROG ARG: a helper program (a logging
 *                      daemon, a compiler), not the served program
 *   secure:PROG ARG    fork, set the real uid to nobody's and keep the
 *                      effective one (as squid starts its kid), exec:
 *                      the loader sees AT_SECURE and ignores LD_PRELOAD
 *   plain:PROG ARG     fork, exec PROG ARG with LD_PRELOAD holding the
 *                      agent alone (no jemalloc in the child)
 *   shell:- SECONDS    fork, exec sh -c 'sleep SECONDS; true' (a shell
 *                      that stays, as an entrypoint does)
 *
 * Prints "ready" once the children are started, waits for SIGTERM (read
 * through a signalfd), then kills them and exits 0.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

static pid_t kids[16];
static int n_kids;

static void
start(const char *spec, const char *arg)
{
    const char *prog = strchr(spec, ':') + 1;
    pid_t pid = fork();

    if (pid != 0) {
        if (pid > 0 && n_kids < 16)
            kids[n_kids++] = pid;
        return;
    }
    if (strncmp(spec, "secure:", 7) == 0 && setreuid(65534, 0) != 0)
        _exit(3);
    if (strncmp(spec, "plain:", 6) == 0) {
        const char *p = getenv("LD_PRELOAD");
        char only[4096];

        /* The agent alone: the first word. */
        snprintf(only, sizeof(only), "%s", p != NULL ? p : "");
        only[strcspn(only, " :")] = '\0';
        setenv("LD_PRELOAD", only, 1);
    }
    if (strncmp(spec, "shell:", 6) == 0) {
        char cmd[64];

        snprintf(cmd, sizeof(cmd), "sleep %s; true", arg);
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(4);
    }
    execlp(prog, prog, arg, (char *)NULL);
    _exit(4);
}

int
main(int argc, char **argv)
{
    struct signalfd_siginfo si;
    sigset_t set;
    char *keep;
    int fd;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
        (fd = signalfd(-1, &set, SFD_CLOEXEC)) < 0)
        return 2;
    keep = malloc(1 << 20);
    if (keep == NULL)
        return 2;
    memset(keep, 1, 1 << 20);
    for (int i = 1; i + 1 < argc; i += 2) {
        /* Children inherit the mask: unblock it for them. */
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        start(argv[i], argv[i + 1]);
        sigprocmask(SIG_BLOCK, &set, NULL);
    }
    printf("ready\n");
    fflush(stdout);
    if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
        return 2;
    for (int i = 0; i < n_kids; i++) {
        kill(kids[i], SIGKILL);
        waitpid(kids[i], NULL, 0);
    }
    free(keep);
    return 0;
}
