/* SPDX-License-Identifier: MIT
 *
 * Closed-loop plumbing shared by the bench tools (loadgen, floor): the
 * options every tool takes and their meaning, the split of a request
 * count over connections, and sleeping through the warm-up and the
 * measured window. Latency recording is lat.h's.
 */
#ifndef BENCH_LOOP_H
#define BENCH_LOOP_H

/* The getopt letters bench_loop_opt() handles. */
#define BENCH_LOOP_GETOPT "c:d:n:w:"

struct bench_loop_opts {
    int conns;                  /* -c: connections = threads, 1..4096 */
    double seconds;             /* -d: measured duration; unused with -n */
    unsigned long long total;   /* -n: requests to measure; 0 = by -d */
    double warmup_s;            /* -w: unrecorded run before measuring, s */
};

#define BENCH_LOOP_DEFAULTS {1, 5, 0, 1}

/* Applies option c with argument arg. Returns 1 when c is one of
 * BENCH_LOOP_GETOPT's and arg is valid, 0 when c is not one of them, and
 * -1 when arg is not a valid value for it. */
int bench_loop_opt(struct bench_loop_opts *o, int c, const char *arg);

/* Requests connection i must measure with -n (an even split, the first
 * ones taking the remainder); 0 when running by duration. */
unsigned long long bench_loop_quota(const struct bench_loop_opts *o, int i);

/* Sleeps s seconds (fractions allowed), resuming after signals. */
void bench_loop_sleep(double s);

#endif /* BENCH_LOOP_H */
