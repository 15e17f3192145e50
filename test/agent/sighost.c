/* SPDX-License-Identifier: MIT
 *
 * A host the way careful daemons handle signals: SIGTERM is blocked in
 * every thread and read from a signalfd, SIGPIPE is left at its default
 * (a write to a closed socket kills the process), and malloc is
 * jemalloc's. With the agent loaded, the agent's thread must neither take
 * the host's SIGTERM (the host would miss its clean shutdown) nor die of
 * SIGPIPE when an admin client goes away mid-reply.
 *
 * Prints "ready" once running, and "clean shutdown after signal N" when
 * SIGTERM arrives through the signalfd; exits 0 then.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

int
main(void)
{
    struct signalfd_siginfo si;
    sigset_t set;
    char *keep;
    int fd;

    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
        (fd = signalfd(-1, &set, SFD_CLOEXEC)) < 0) {
        perror("sighost: signalfd");
        return 2;
    }
    /* Some heap for the profiler to see. */
    keep = malloc(4 << 20);
    if (keep == NULL)
        return 2;
    memset(keep, 1, 4 << 20);
    printf("ready\n");
    fflush(stdout);
    if (read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si)) {
        perror("sighost: read");
        return 2;
    }
    printf("clean shutdown after signal %u\n", si.ssi_signo);
    free(keep);
    return 0;
}
