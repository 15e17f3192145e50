/* SPDX-License-Identifier: MIT
 *
 * Password guessing throttled per peer address, for every front-end:
 * the first few failures from an address cost nothing; after that, the
 * next credential from that address is not even checked before a wait
 * that grows with the failures (HA_THROTTLE_STEP_MS more each, at most
 * HA_THROTTLE_MAX_MS), and credentials from it are checked one at a
 * time, HA_THROTTLE_SPACING_MS apart, however many arrive at once. The
 * wait comes before the check, not before the answer: a flood of
 * parallel guesses from one address gets a few checks a second, and the
 * right password is no quicker to find. Other addresses are not held
 * up. A successful login, or HA_THROTTLE_FORGET_MS without a failure,
 * clears the address. A bounded table (least recently failed out).
 * Pure: time comes in as an argument.
 */
#ifndef HA_THROTTLE_H
#define HA_THROTTLE_H

#include <stdbool.h>
#include <stdint.h>

#define HA_THROTTLE_SLOTS 256       /* addresses remembered */
#define HA_THROTTLE_FREE 3          /* failures answered at once */
#define HA_THROTTLE_STEP_MS 250     /* added wait per further failure */
#define HA_THROTTLE_MAX_MS 3000     /* longest wait */
#define HA_THROTTLE_SPACING_MS 250  /* between two checks for one address */
#define HA_THROTTLE_FORGET_MS 60000 /* a quiet address starts afresh */
#define HA_THROTTLE_SAY_MS 10000    /* between two log lines for one address */

struct ha_throttle {
    struct ha_throttle_entry {
        char host[64];     /* "" = free */
        unsigned fails;
        int64_t last_ms;   /* last failure */
        int64_t next_ms;   /* earliest time for the next check */
        int64_t said_ms;   /* last log line about it (0: none yet) */
        unsigned unsaid;   /* checks held since that line */
    } e[HA_THROTTLE_SLOTS];
};

/* A credential from host arrived at now_ms (monotonic): returns the ms
 * to wait before checking it (0: at once), and reserves that moment, so
 * the next one from host waits for the one after. */
int64_t ha_throttle_admit(struct ha_throttle *t, const char *host,
                          int64_t now_ms);

/* A check from host is being held (admit returned > 0) at now_ms:
 * returns true when it is time to say so in the log (the first time, then
 * at most once per HA_THROTTLE_SAY_MS per address, so a flood of
 * connections does not become a flood of lines), with *held set to the
 * checks held since the last line, this one included. */
bool ha_throttle_say(struct ha_throttle *t, const char *host, int64_t now_ms,
                     unsigned *held);

/* A check from host failed at now_ms. */
void ha_throttle_failed(struct ha_throttle *t, const char *host,
                        int64_t now_ms);

/* A successful login from host: its failures are forgotten. */
void ha_throttle_succeeded(struct ha_throttle *t, const char *host);

#endif /* HA_THROTTLE_H */
