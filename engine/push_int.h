/* SPDX-License-Identifier: MIT
 *
 * The push's insides, shared by its files and private to them: push.c
 * (the loop's side: what is queued when, the encoding, the retries'
 * back-off, each target's row), push_outbox.c (the outbox's files: the
 * scan for dumps, an entry stored, the bound) and push_send.c (an entry
 * sent: the request, its labels and headers). The last two run on the
 * push thread only, on a job's copy of struct push_conf. What callers
 * use is push.h, which this header does not include: the files below
 * push.c do not reach up to it.
 */
#ifndef HA_PUSH_INT_H
#define HA_PUSH_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "core/buf.h"
#include "core/worker.h"
#include "engine/labels.h"
#include "engine/pushcfg.h"

struct ha_push;

/* What the push thread reads: set on the loop before the thread starts,
 * never changed after. */
struct push_conf {
    char dir[PATH_MAX];    /* the dump directory */
    char outbox[PATH_MAX]; /* <dir>/push-outbox */
    char stem[256];        /* the dump prefix's file name stem */
    long pid;
    struct ha_push_target targets[HA_PUSH_TARGETS_MAX];
    size_t n;
    long long max_bytes;
    int timeout_s;
    struct ha_labels labels;
};

/* A profile to queue: a dump, or the live profile. */
struct item {
    char name[256]; /* the dump's file name; live-<pid>-<ms> */
    bool live;
    unsigned kind;    /* one HA_PUSH_KIND_* bit */
    unsigned targets; /* bit i: targets[i] takes it */
    char reason[256];
    int64_t taken_s;
};

/* One target's side of a job's result. */
struct tgt_out {
    long long queued, queued_bytes;
    long long sent, sent_bytes, failed, dropped;
    bool attempted, ok, failed_now;
    char err[256];
};

enum job_kind { JOB_SCAN, JOB_STORE, JOB_DELIVER };

struct pjob {
    struct ha_job job; /* first: the worker's */
    struct ha_push *p;
    const struct push_conf *conf;
    enum job_kind kind;
    bool adopt;         /* scan: gone processes' too */
    struct item *items; /* scan: found */
    size_t n_items;
    struct item item;   /* store: what, for whom */
    struct ha_buf body; /* store: the profile */
    unsigned due;       /* deliver: targets to try */
    struct tgt_out out[HA_PUSH_TARGETS_MAX];
};

/* An entry found in the outbox. */
struct body {
    char file[512];
    int target;
    long pid;
    time_t mtime;
    long long size;
};

/* Every entry still to send in the outbox, oldest first (*out malloc'd,
 * the count returned), the entries of gone processes taken over first
 * when adopt. */
size_t ha_push_outbox_list(const struct push_conf *c, bool adopt,
                           struct body **out);

/* Each target's entries and bytes in the outbox into out[].queued. */
void ha_push_outbox_count(const struct push_conf *c, struct tgt_out *out);

/* A JOB_SCAN: the dumps of the directory to queue into j->items. */
void ha_push_outbox_scan(struct pjob *j);

/* A JOB_STORE: j->body queued as an entry for each of j->item's
 * targets, then the outbox held to its bound. */
void ha_push_outbox_store(struct pjob *j);

/* A JOB_DELIVER: the outbox's entries sent to the targets in j->due,
 * the results into j->out. */
void ha_push_send_run(struct pjob *j);

#endif
