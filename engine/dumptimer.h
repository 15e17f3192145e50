/* SPDX-License-Identifier: MIT
 *
 * Automatic dumps and the housekeeping of jemalloc's own ones, for one
 * server: a dump every jemalloc_variables.dump_interval_s, a dump when
 * stats.resident rises past dump_resident_bytes (the leak evidence
 * ProxySQL's guide asks for, gathered unattended; re-armed once resident
 * falls 10% below it), none while the datadir has less than
 * dump_min_free_bytes free, and dump_retention_* applied after each.
 * jemalloc's own interval and high-water dumps are checked on the same
 * watch: below the floor the new ones are removed (skipped), and
 * retention applies to them too. No timer exists unless something can
 * write a dump on its own: an idle daemon is never woken for this.
 */
#ifndef HA_DUMPTIMER_H
#define HA_DUMPTIMER_H

#include <stdbool.h>
#include <stddef.h>

#include <event2/event.h>

#include "vtab/vtab_util.h"

#define HA_DUMPTIMER_WATCH_S 5 /* resident and jemalloc's own dumps */

struct ha_dumptimer;

/* Arms what ctx->je asks for on base. ctx (ops, prefix, je) must outlive
 * the timer. Returns NULL when nothing needs a timer (or out of memory,
 * logged). */
struct ha_dumptimer *ha_dumptimer_new(struct event_base *base,
                                      struct ha_vtab_ctx *ctx);

/* NULL is a no-op. */
void ha_dumptimer_free(struct ha_dumptimer *t);

/* One automatic dump, as the timers take them, for another trigger (the
 * leak watch): skipped while the datadir's free space is below
 * dump_min_free_bytes (logged; *low_space, when not NULL, remembers the
 * episode so it is logged once), else prof.dump with jemalloc's naming,
 * the build-ids and time recorded beside it, and dump_retention_*
 * applied. variable names the trigger in messages, reason says why.
 * file gets the dump's path. Returns 0, or -1 (logged). */
int ha_dumptimer_dump(struct ha_vtab_ctx *ctx, const char *variable,
                      const char *reason, bool *low_space, char *file,
                      size_t filelen);

#endif /* HA_DUMPTIMER_H */
