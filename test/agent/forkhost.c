/* SPDX-License-Identifier: MIT
 *
 * A host that forks while the agent's thread is starting, as nginx
 * daemonizes and starts its workers: N children, one every STEP_US
 * microseconds from the first instant, each of which stays (pause())
 * until SIGTERM. With HEAPADMIN_FORK=per-process and no start delay,
 * every child should be served; a child that inherited a lock the
 * parent's admin thread held at the fork never would be.
 *
 *   forkhost N STEP_US
 *
 * Prints each child's pid on a line, then "ready", and on stderr how
 * long its longest fork() took ("longest fork: N us": what the agent's
 * fork handlers cost the host); on SIGTERM (read through a signalfd)
 * kills the children and exits 0. malloc is jemalloc's (linked).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 8;
    long step_us = argc > 2 ? atol(argv[2]) : 5000;
    pid_t kids[256];
    char *held[256];
    struct signalfd_siginfo si;
    long long longest_ns = 0;
    sigset_t set;
    int sfd;

    if (n < 1 || n > 256 || step_us < 0)
        return 2;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigprocmask(SIG_BLOCK, &set, NULL);
    for (int i = 0; i < n; i++) {
        struct timespec ts = {step_us / 1000000, (step_us % 1000000) * 1000};
        struct timespec t0, t1;
        pid_t pid;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        pid = fork();

        if (pid == 0) {
            sigprocmask(SIG_UNBLOCK, &set, NULL);
            for (;;)
                pause();
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        if ((t1.tv_sec - t0.tv_sec) * 1000000000LL + t1.tv_nsec - t0.tv_nsec >
            longest_ns)
            longest_ns = (t1.tv_sec - t0.tv_sec) * 1000000000LL + t1.tv_nsec -
                         t0.tv_nsec;
        kids[i] = pid;
        held[i] = malloc(1000 + (size_t)i); /* the host's own work */
        if (held[i] != NULL)
            held[i][0] = (char)i;
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < n; i++)
        printf("%ld\n", (long)kids[i]);
    printf("ready\n");
    fflush(stdout);
    fprintf(stderr, "longest fork: %lld us\n", longest_ns / 1000);
    sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd >= 0)
        (void)read(sfd, &si, sizeof(si));
    for (int i = 0; i < n; i++)
        if (kids[i] > 0)
            kill(kids[i], SIGTERM);
    for (int i = 0; i < n; i++) {
        if (kids[i] > 0)
            waitpid(kids[i], NULL, 0);
        free(held[i]);
    }
    return 0;
}
