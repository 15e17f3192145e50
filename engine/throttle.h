/* SPDX-License-Identifier: MIT
 *
 * Failed logins throttled per peer address: the first few failures from
 * an address are answered at once; after that each ERR 1045 waits, longer
 * the more failures there were, and failures from one address are
 * answered one at a time, HA_THROTTLE_SPACING_MS apart, so guessing
 * passwords in a loop gets a few answers a second instead of thousands.
 * A successful login, or HA_THROTTLE_FORGET_MS without a failure, clears
 * the address. A bounded table (least recently failed out). Pure: time
 * comes in as an argument.
 */
#ifndef HA_THROTTLE_H
#define HA_THROTTLE_H

#include <stdint.h>

#define HA_THROTTLE_SLOTS 256       /* addresses remembered */
#define HA_THROTTLE_FREE 3          /* failures answered at once */
#define HA_THROTTLE_STEP_MS 250     /* added wait per further failure */
#define HA_THROTTLE_MAX_MS 3000     /* longest wait */
#define HA_THROTTLE_SPACING_MS 250  /* between two answers to one address */
#define HA_THROTTLE_FORGET_MS 60000 /* a quiet address starts afresh */

struct ha_throttle {
    struct ha_throttle_entry {
        char host[64];     /* "" = free */
        unsigned fails;
        int64_t last_ms;   /* last failure */
        int64_t next_ms;   /* earliest time for the next answer */
    } e[HA_THROTTLE_SLOTS];
};

/* A failed login from host at now_ms (monotonic). Returns the ms to wait
 * before answering it (0: at once). */
int64_t ha_throttle_failed(struct ha_throttle *t, const char *host,
                           int64_t now_ms);

/* A successful login from host: its failures are forgotten. */
void ha_throttle_succeeded(struct ha_throttle *t, const char *host);

#endif /* HA_THROTTLE_H */
