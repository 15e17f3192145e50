/* SPDX-License-Identifier: MIT
 *
 * Password guessing throttled for every front-end, so that nobody
 * without a password gets more than a few checks a second, however many
 * connections or addresses they have, and nobody without a password can
 * lock out the admin. What counts is failed checks, never attempts: an
 * attempt refused because its peer must wait is answered at once (the
 * front-end says when to come back: HTTP 429 with Retry-After, MySQL ERR
 * 1129) and costs neither side anything more; it never makes a wait
 * longer. Every wait is bounded (HA_THROTTLE_MAX_MS).
 *
 * Four bounds, each with its own rule:
 *   - per address (an IPv4 address, an IPv6 address; a unix-socket peer
 *     by its uid): HA_THROTTLE_FREE failures are free, then each further
 *     one adds HA_THROTTLE_STEP_MS to the wait before the next check, up
 *     to HA_THROTTLE_MAX_MS, and checks are spaced HA_THROTTLE_SPACING_MS
 *     apart however many arrive at once;
 *   - per prefix (IPv4 /24, IPv6 /64: what one party holds), the same
 *     with HA_THROTTLE_PREFIX_FREE free failures and a shorter step: a
 *     guesser rotating over the addresses of a prefix is one guesser;
 *   - in total: at most HA_THROTTLE_GLOBAL_PER_S failed checks a second
 *     (a token bucket of HA_THROTTLE_GLOBAL_BURST; a check takes a token
 *     when it starts and gives it back when the password was right):
 *     with hundreds of prefixes, the rate is still this bound;
 *   - none of the prefix and total bounds holds a known-good address
 *     (one that logged in within HA_THROTTLE_GOOD_MS) or a unix-socket
 *     peer (whose uid the kernel vouches for): a flood from elsewhere
 *     never locks the admin out of where it logs in from.
 * HA_THROTTLE_FORGET_MS without a failure forgets an entry's failures.
 * A successful login forgets its address's failures only when they were
 * all for the account that got in (someone who mistyped their own
 * password): a guesser who holds one password (a stats account) must
 * not clear its address's count by logging in with it between guesses
 * at another (COM_CHANGE_USER, a new connection).
 *
 * Memory: entries live in a hash table keyed with a secret (nobody can
 * aim collisions), allocated at the first failure and grown up to
 * HA_THROTTLE_MEMORY bytes. An entry that holds anything (failures not
 * yet forgotten, a wait, known-good) is never evicted to admit a new
 * one; a peer that finds no room is held by the prefix and total bounds
 * alone.
 *
 * Pure: time comes in as an argument (monotonic ms); no I/O, no log.
 * The caller reads a summary per interval (ha_throttle_report) and logs
 * it: one line, never one per refusal.
 */
#ifndef HA_THROTTLE_H
#define HA_THROTTLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/peer.h"

#define HA_THROTTLE_FREE 3            /* failures per address at once */
#define HA_THROTTLE_STEP_MS 250       /* added wait per further failure */
#define HA_THROTTLE_SPACING_MS 250    /* between two checks, past FREE */
#define HA_THROTTLE_PREFIX_FREE 12    /* failures per prefix at once */
#define HA_THROTTLE_PREFIX_STEP_MS 100
#define HA_THROTTLE_PREFIX_SPACING_MS 100
#define HA_THROTTLE_MAX_MS 3000       /* longest wait, any rule */
#define HA_THROTTLE_FORGET_MS 60000   /* a quiet entry starts afresh */
#define HA_THROTTLE_GLOBAL_PER_S 20   /* failed checks a second, in all */
#define HA_THROTTLE_GLOBAL_BURST 40
#define HA_THROTTLE_GOOD_MS (24 * 3600 * 1000LL) /* known-good address */
#define HA_THROTTLE_MEMORY (2u << 20) /* bytes the table may take */
#define HA_THROTTLE_REPORT_MS 10000   /* summary interval */

/* Why a credential must wait (the bound that said so). */
enum ha_throttle_why {
    HA_THROTTLE_NONE,       /* it may be checked now */
    HA_THROTTLE_ADDRESS,    /* its address failed too often */
    HA_THROTTLE_PREFIX,     /* its /24 or /64 did */
    HA_THROTTLE_GLOBAL,     /* failed checks in total are at the bound */
    HA_THROTTLE_WHY_MAX
};

struct ha_throttle_entry;

/* What happened in one interval, for one log line. */
struct ha_throttle_report {
    int64_t interval_ms;        /* since the last report */
    uint64_t failed;            /* checks that failed */
    uint64_t refused[HA_THROTTLE_WHY_MAX]; /* attempts refused, per bound */
    uint64_t untracked;         /* failures of peers the table had no
                                   room for */
    size_t peers;               /* addresses and uids refused */
    char top[64];               /* the most refused of them ("" none) */
    uint64_t top_refused;
    size_t entries;             /* entries in use now */
    size_t capacity;            /* ... of this many */
};

struct ha_throttle {
    struct ha_throttle_entry *e;  /* n_buckets * HA_THROTTLE_WAYS, or NULL */
    size_t n_buckets;             /* a power of two */
    size_t max_buckets;           /* what HA_THROTTLE_MEMORY allows */
    size_t used;
    uint64_t seed;                /* the hash's secret */
    double tokens;                /* the total bound's bucket */
    int64_t tokens_at;            /* when it was last filled */
    bool started;
    struct ha_throttle_report cur; /* counts of the running interval */
    int64_t report_from;
};

/* An empty throttle whose table may take memory bytes (0: the default,
 * HA_THROTTLE_MEMORY); seed keys its hash (0: one is drawn). Allocates
 * nothing until the first failure. */
void ha_throttle_init(struct ha_throttle *t, size_t memory, uint64_t seed);
void ha_throttle_free(struct ha_throttle *t);

/* How long a credential from p must wait before it may be checked, at
 * now_ms: 0 when it may be checked now. Reserves nothing; a refusal (>0)
 * is counted for the report, with *why (may be NULL). Asked when a
 * connection arrives, so that a peer that must wait is answered at once
 * and holds nothing. */
int64_t ha_throttle_peek(struct ha_throttle *t, const struct ha_peer *p,
                         int64_t now_ms, enum ha_throttle_why *why);

/* A credential from p is to be checked now: returns 0 and reserves the
 * check (the next one from its address and prefix is spaced after it, a
 * token of the total bound is taken), or the ms to wait (nothing
 * reserved; the refusal counted), with *why. */
int64_t ha_throttle_admit(struct ha_throttle *t, const struct ha_peer *p,
                          int64_t now_ms, enum ha_throttle_why *why);

/* A check of a credential for account user from p failed at now_ms. */
void ha_throttle_failed(struct ha_throttle *t, const struct ha_peer *p,
                        const char *user, int64_t now_ms);

/* A check for account user from p succeeded: the token it took is given
 * back, the address is known-good for HA_THROTTLE_GOOD_MS, and its
 * failures are forgotten if they were all user's. */
void ha_throttle_succeeded(struct ha_throttle *t, const struct ha_peer *p,
                           const char *user, int64_t now_ms);

/* When HA_THROTTLE_REPORT_MS have passed since the last report and
 * something was failed or refused meanwhile: fills *r, starts a new
 * interval and returns true. Else false. */
bool ha_throttle_report(struct ha_throttle *t, int64_t now_ms,
                        struct ha_throttle_report *r);

/* Entries the table can hold now, and at most. */
size_t ha_throttle_capacity(const struct ha_throttle *t);
size_t ha_throttle_max_capacity(const struct ha_throttle *t);

#endif /* HA_THROTTLE_H */
