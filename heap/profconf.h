/* SPDX-License-Identifier: MIT
 *
 * Config-driven start-up profiling (jemalloc_variables).
 *
 * Options jemalloc reads only while it initialises (lg_prof_interval,
 * prof_final, prof_leak, prof_accum) need a process started with the
 * equivalent MALLOC_CONF: ha_profconf_startup_conf() says which, and
 * heapadmind re-executes itself with them placed before any MALLOC_CONF
 * the operator set, so the operator's environment still wins (jemalloc
 * applies later pairs over earlier ones). The library never re-executes
 * its host. The rest (prof_active, lg_prof_sample, prof_gdump, prefix) is
 * applied at runtime through mallctl by ha_profconf_apply() (with the
 * decay settings, which reach every arena), then
 * ha_profconf_log_effective() logs what is in force.
 */
#ifndef HA_PROFCONF_H
#define HA_PROFCONF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "heap/jeconfig.h"
#include "heap/mallctl.h"

/* Builds the MALLOC_CONF pairs for the init-only options of jc into out
 * (outlen bytes), e.g. "lg_prof_interval:20,prof_final:true"; "" when
 * none is set. Returns 0, or -1 when out is too small. Pure. */
int ha_profconf_init_only_conf(const struct ha_jemalloc_config *jc,
                               char *out, size_t outlen);

/* True when the MALLOC_CONF string conf ("k:v,k:v") sets key. Pure. */
bool ha_profconf_conf_has_key(const char *conf, const char *key);

/* The init-only options jemalloc started with (opt.* read back). */
struct ha_profconf_opts {
    ssize_t lg_prof_interval; /* opt.lg_prof_interval */
    bool prof_accum;          /* opt.prof_accum */
    bool prof_final;          /* opt.prof_final */
    bool prof_leak;           /* opt.prof_leak */
};

/* Decides the MALLOC_CONF for a re-exec into out (outlen bytes): the
 * init-only options jc sets that differ from cur and that the operator's
 * env_conf (MALLOC_CONF, may be NULL) does not set itself, followed by
 * ",<env_conf>". out is "" when no re-exec is needed. Returns 0, or -1
 * when out is too small. Pure. */
int ha_profconf_reexec_conf(const struct ha_jemalloc_config *jc,
                            const struct ha_profconf_opts *cur,
                            const char *env_conf, char *out, size_t outlen);

/* The MALLOC_CONF pairs for the init-only options jc sets that the
 * running jemalloc (read through ops) lacks and that the operator's
 * env_conf (MALLOC_CONF, may be NULL) does not set itself, into out
 * (outlen bytes), e.g. "lg_prof_interval:20,prof_final:true"; "" when
 * none, or when profiling is unavailable. A process that wants them must
 * be started again with them (heapadmind re-executes itself). Returns 0,
 * or -1 when out is too small. */
int ha_profconf_startup_conf(const struct ha_mallctl_ops *ops,
                             const struct ha_jemalloc_config *jc,
                             const char *env_conf, char *out, size_t outlen);

/* Applies the runtime options: prof.prefix = "<datadir>/<dump_prefix>"
 * (datadir made absolute), prof.active, prof.reset(lg_prof_sample) when
 * the rate differs, prof.gdump, and dirty/muzzy_decay_ms for new arenas
 * and every arena in use (ha_mallctl_set_decay). With profiling unavailable (opt.prof=false)
 * the prefix is skipped and each option that needs profiling (prof_active
 * or prof_gdump true, lg_prof_sample set) fails with the operator-facing
 * message. Every option is attempted; returns 0, or -1 with err holding
 * the first failure. The daemon still serves statistics, so the caller
 * may log -1 as a warning. */
int ha_profconf_apply(const struct ha_mallctl_ops *ops,
                      const struct ha_jemalloc_config *jc,
                      const char *datadir, char *err, size_t errlen);

/* How many of the last sampled allocations jemalloc is asked to keep
 * when no one else said (ha_profconf_recent): the samples of the last
 * 256 MiB allocated at lg_prof_sample 16, of the last 2 GiB at jemalloc's
 * default 19, for about 85 bytes of jemalloc's metadata each (340 KiB
 * in all), measured in redis-server 7.0 (docs/rss-and-leaks.md,
 * heap_fragmentation). */
#define HA_PROFCONF_RECENT_MAX 4096

/* Has jemalloc keep its last HA_PROFCONF_RECENT_MAX sampled allocations
 * (experimental.prof_recent.alloc_max), whose usable sizes
 * heap_fragmentation places each live sample by (prof/livesizes.h), when
 * profiling is available and no one set it: the running value is 0
 * (jemalloc's default: the program, its malloc_conf or a MALLOC_CONF
 * with another value set none) and env_conf (the operator's MALLOC_CONF,
 * may be NULL) does not name prof_recent_alloc_max (not even as 0). Call
 * it before the saved variables are applied: a saved
 * jemalloc-recent_alloc_max (0 included) wins, as does a later UPDATE.
 * Records accrue only while sampling is on (prof.active). what gets a
 * line for the log. Returns 1 when it switched them on, 0 when it left
 * them alone, -1 when the write failed (what says why). */
int ha_profconf_recent(const struct ha_mallctl_ops *ops, const char *env_conf,
                       char *what, size_t whatlen);

/* Writes the effective settings read back from the opt.* and prof.*
 * mallctls into out as one line (pure formatting over ops reads). */
void ha_profconf_effective(const struct ha_mallctl_ops *ops, char *out,
                           size_t outlen);

/* Logs ha_profconf_effective()'s line at info level. */
void ha_profconf_log_effective(const struct ha_mallctl_ops *ops);

#endif /* HA_PROFCONF_H */
