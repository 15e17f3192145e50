/* SPDX-License-Identifier: MIT
 *
 * Config-driven start-up profiling (jemalloc_variables).
 *
 * Options jemalloc reads only while it initialises (lg_prof_interval,
 * prof_final, prof_leak, prof_accum) are honoured by re-executing the
 * daemon once, early in main(), with the equivalent MALLOC_CONF placed
 * before any MALLOC_CONF the operator set, so the operator's environment
 * still wins (jemalloc applies later pairs over earlier ones). The rest
 * (prof_active, lg_prof_sample, prof_gdump, prefix) is applied at runtime
 * through mallctl.
 */
#ifndef HA_PROFCONF_H
#define HA_PROFCONF_H

#include <stddef.h>

#include "config.h"
#include "mallctl.h"

/* Environment variable that marks the re-executed process (no loop). */
#define HA_PROFCONF_REEXEC_ENV "HEAPADMIN_REEXECED"

/* Builds the MALLOC_CONF pairs for the init-only options of jc into out
 * (outlen bytes), e.g. "lg_prof_interval:20,prof_final:true"; "" when
 * none is set. Returns 0, or -1 when out is too small. Pure. */
int ha_profconf_init_only_conf(const struct ha_jemalloc_config *jc,
                               char *out, size_t outlen);

/* If jc sets init-only options that jemalloc does not already have (read
 * back through ops) and this process was not already re-executed, execv()s
 * /proc/self/exe with argv and the combined MALLOC_CONF. Returns only when
 * no re-exec is needed, or with -1 and err set when execv failed. */
int ha_profconf_reexec_if_needed(const struct ha_mallctl_ops *ops,
                                 const struct ha_jemalloc_config *jc,
                                 char *const argv[], char *err,
                                 size_t errlen);

/* Applies the runtime options: prof.prefix = "<datadir>/<dump_prefix>",
 * prof.active, prof.reset(lg_prof_sample), prof.gdump. With profiling
 * unavailable (opt.prof=false) the prefix is skipped and each requested
 * option fails with the operator-facing message. Returns 0, or -1 with err
 * set. */
int ha_profconf_apply(const struct ha_mallctl_ops *ops,
                      const struct ha_jemalloc_config *jc,
                      const char *datadir, char *err, size_t errlen);

/* Logs the effective settings read back from the opt.* and prof.*
 * mallctls, in one line. */
void ha_profconf_log_effective(const struct ha_mallctl_ops *ops);

#endif /* HA_PROFCONF_H */
