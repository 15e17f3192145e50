/* SPDX-License-Identifier: MIT
 *
 * What stats_push shows of one push target (engine/push.h fills it,
 * vtab/stats_push.c shows it): here, beneath both, so the table needs
 * nothing from the engine.
 */
#ifndef HA_PUSHROW_H
#define HA_PUSHROW_H

struct ha_push_row {
    char target[12];        /* its outbox name, "t" and 8 hex digits */
    char type[16];          /* pyroscope, parca */
    char url[256];
    char kinds[128];        /* as configured, comma-separated */
    long long queued;       /* entries in the outbox now */
    long long queued_bytes;
    long long sent;         /* taken by the receiver, since the start */
    long long sent_bytes;
    long long failed;       /* attempts that failed, since the start */
    long long dropped;      /* entries dropped: the outbox's bound, or
                               refused for good */
    char last_error[256];   /* "" none yet */
    long long last_attempt; /* Unix s; 0 none */
    long long last_sent;    /* Unix s; 0 none */
    long long next_attempt; /* Unix s of the next retry; 0 none due */
};

#endif /* HA_PUSHROW_H */
