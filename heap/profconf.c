/* SPDX-License-Identifier: MIT
 *
 * Config-driven start-up profiling (see profconf.h): the once-only
 * MALLOC_CONF re-exec for options jemalloc reads at initialisation, the
 * runtime options through mallctl, and the log line with the result.
 */
#include "heap/profconf.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"
#include "heap/dumpfiles.h"
#include "heap/value.h"

/* ------------------------------------------------------------------
 * MALLOC_CONF strings (pure)
 * ------------------------------------------------------------------ */

/* Appends ",key:value" (no comma first) to out; -1 when it does not fit. */
static int
conf_append(char *out, size_t outlen, const char *key, const char *value)
{
    size_t used = strlen(out);
    int n = snprintf(out + used, outlen - used, "%s%s:%s",
                     used ? "," : "", key, value);

    return n < 0 || (size_t)n >= outlen - used ? -1 : 0;
}

int
ha_profconf_init_only_conf(const struct ha_jemalloc_config *jc, char *out,
                           size_t outlen)
{
    char num[24];

    if (outlen == 0)
        return -1;
    out[0] = '\0';
    if (jc->lg_prof_interval != HA_LG_INTERVAL_UNSET) {
        snprintf(num, sizeof(num), "%d", jc->lg_prof_interval);
        if (conf_append(out, outlen, "lg_prof_interval", num) < 0)
            return -1;
    }
    if (jc->prof_accum != HA_UNSET &&
        conf_append(out, outlen, "prof_accum",
                    ha_value_bool_str(jc->prof_accum)) < 0)
        return -1;
    if (jc->prof_final != HA_UNSET &&
        conf_append(out, outlen, "prof_final",
                    ha_value_bool_str(jc->prof_final)) < 0)
        return -1;
    if (jc->prof_leak != HA_UNSET &&
        conf_append(out, outlen, "prof_leak",
                    ha_value_bool_str(jc->prof_leak)) < 0)
        return -1;
    return 0;
}

bool
ha_profconf_conf_has_key(const char *conf, const char *key)
{
    size_t klen = strlen(key);

    if (conf == NULL)
        return false;
    for (const char *p = conf; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end != NULL ? (size_t)(end - p) : strlen(p);

        if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == ':')
            return true;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return false;
}

int
ha_profconf_reexec_conf(const struct ha_jemalloc_config *jc,
                        const struct ha_profconf_opts *cur,
                        const char *env_conf, char *out, size_t outlen)
{
    char num[24];

    if (outlen == 0)
        return -1;
    out[0] = '\0';
    if (jc->lg_prof_interval != HA_LG_INTERVAL_UNSET &&
        jc->lg_prof_interval != cur->lg_prof_interval &&
        !ha_profconf_conf_has_key(env_conf, "lg_prof_interval")) {
        snprintf(num, sizeof(num), "%d", jc->lg_prof_interval);
        if (conf_append(out, outlen, "lg_prof_interval", num) < 0)
            return -1;
    }
#define WANT_BOOL(field)                                                   \
    if (jc->field != HA_UNSET && (jc->field != 0) != cur->field &&         \
        !ha_profconf_conf_has_key(env_conf, #field) &&                     \
        conf_append(out, outlen, #field, ha_value_bool_str(jc->field)) < 0) \
        return -1;
    WANT_BOOL(prof_accum)
    WANT_BOOL(prof_final)
    WANT_BOOL(prof_leak)
#undef WANT_BOOL
    if (out[0] != '\0' && env_conf != NULL && env_conf[0] != '\0') {
        size_t used = strlen(out);
        int n = snprintf(out + used, outlen - used, ",%s", env_conf);

        if (n < 0 || (size_t)n >= outlen - used)
            return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------
 * Re-exec
 * ------------------------------------------------------------------ */

static void
read_opts(const struct ha_mallctl_ops *ops, struct ha_profconf_opts *cur)
{
    /* A failed read leaves a value no config matches, so the option is
     * passed on (jemalloc then reports it itself). */
    cur->lg_prof_interval = -2;
    if (ha_mallctl_read_ssize(ops, "opt.lg_prof_interval",
                              &cur->lg_prof_interval) != 0)
        cur->lg_prof_interval = -2;
    cur->prof_accum = cur->prof_final = cur->prof_leak = false;
    (void)ha_mallctl_read_bool(ops, "opt.prof_accum", &cur->prof_accum);
    (void)ha_mallctl_read_bool(ops, "opt.prof_final", &cur->prof_final);
    (void)ha_mallctl_read_bool(ops, "opt.prof_leak", &cur->prof_leak);
}

int
ha_profconf_startup_conf(const struct ha_mallctl_ops *ops,
                         const struct ha_jemalloc_config *jc,
                         const char *env_conf, char *out, size_t outlen)
{
    struct ha_profconf_opts cur;
    size_t n;

    if (outlen == 0)
        return -1;
    out[0] = '\0';
    /* Without profiling the init-only options mean nothing, and a
     * jemalloc built without it would complain about each pair. */
    if (!ha_mallctl_prof_enabled(ops))
        return 0;
    read_opts(ops, &cur);
    if (ha_profconf_reexec_conf(jc, &cur, NULL, out, outlen) != 0)
        return -1;
    if (env_conf == NULL || env_conf[0] == '\0' || out[0] == '\0')
        return 0;
    /* Drop the pairs the operator's MALLOC_CONF sets: theirs win. */
    n = 0;
    for (char *p = out, *next; *p != '\0'; p = next) {
        size_t len = strcspn(p, ",");
        char key[64];
        size_t klen = strcspn(p, ":");

        next = p + len + (p[len] == ',');
        if (klen >= sizeof(key) || klen > len)
            klen = 0;
        memcpy(key, p, klen);
        key[klen] = '\0';
        if (klen > 0 && ha_profconf_conf_has_key(env_conf, key))
            continue;
        if (n > 0)
            out[n++] = ',';
        memmove(out + n, p, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

/* ------------------------------------------------------------------
 * Runtime options
 * ------------------------------------------------------------------ */

/* Records the first failure in err; later ones only go to the log. */
static void
apply_fail(int *status, char *err, size_t errlen, const char *msg)
{
    if (*status == 0)
        ha_err_set(err, errlen, "%s", msg);
    else
        ha_log_warn("%s", msg);
    *status = -1;
}

static void
apply_mallctl_fail(int *status, char *err, size_t errlen, int errnum,
                   const char *mallctl, const char *variable,
                   const char *value, bool prof_built)
{
    struct ha_mallctl_failure f = {
        .errnum = errnum,
        .mallctl = mallctl,
        .variable = variable,
        .value = value,
        .prof_built = prof_built,
    };
    char msg[512];

    ha_mallctl_errmsg(&f, msg, sizeof(msg));
    apply_fail(status, err, errlen, msg);
}

/* "<absolute datadir>/<stem>" into out; -1 when it does not fit. */
static int
build_prefix(const char *datadir, const char *stem, char *out, size_t outlen)
{
    char abs[PATH_MAX];
    const char *dir = datadir;
    int n;

    if (realpath(datadir, abs) != NULL)
        dir = abs;
    if (stem == NULL || stem[0] == '\0')
        stem = HA_DEFAULT_DUMP_PREFIX;
    n = snprintf(out, outlen, "%s%s%s", dir,
                 dir[0] != '\0' && dir[strlen(dir) - 1] == '/' ? "" : "/",
                 stem);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

int
ha_profconf_apply(const struct ha_mallctl_ops *ops,
                  const struct ha_jemalloc_config *jc, const char *datadir,
                  char *err, size_t errlen)
{
    bool prof_built = ha_mallctl_prof_built(ops);
    bool prof = ha_mallctl_prof_enabled(ops);
    char prefix[PATH_MAX], num[24], msg[PATH_MAX + 128];
    int status = 0, rc;

    if (prof && datadir != NULL) {
        /* Leave room for ".<pid>.<seq>.m<mseq>.heap". */
        if (build_prefix(datadir, jc->dump_prefix, prefix,
                         sizeof(prefix) - 64) < 0) {
            snprintf(msg, sizeof(msg),
                     "dump prefix '%s/%s' is too long for a file name",
                     datadir, jc->dump_prefix);
            apply_fail(&status, err, errlen, msg);
        } else if ((rc = ha_mallctl_set_prof_prefix(ops, prefix)) != 0) {
            apply_mallctl_fail(&status, err, errlen, rc, "prof.prefix",
                               "jemalloc prof.prefix", prefix, prof_built);
        } else {
            /* Before this run dumps anything: an earlier run's files
             * under this pid are moved aside, interrupted dumps removed. */
            (void)ha_dumpfiles_start(prefix, (long)getpid());
        }
    }
    if (jc->prof_active != HA_UNSET && (prof || jc->prof_active)) {
        rc = prof ? ha_mallctl_write_bool(ops, "prof.active",
                                          jc->prof_active != 0, NULL)
                  : ENOENT;
        if (rc != 0)
            apply_mallctl_fail(&status, err, errlen, rc, "prof.active",
                               "jemalloc_variables.prof_active",
                               ha_value_bool_str(jc->prof_active),
                               prof_built);
    }
    if (jc->lg_prof_sample != HA_UNSET) {
        size_t cur = 0;

        snprintf(num, sizeof(num), "%d", jc->lg_prof_sample);
        rc = prof ? ha_mallctl_read_size(ops, "prof.lg_sample", &cur)
                  : ENOENT;
        if (rc == 0 && cur != (size_t)jc->lg_prof_sample)
            rc = ha_mallctl_write_size(ops, "prof.reset",
                                       (size_t)jc->lg_prof_sample);
        if (rc != 0)
            apply_mallctl_fail(&status, err, errlen, rc, "prof.reset",
                               "jemalloc_variables.lg_prof_sample", num,
                               prof_built);
    }
    if (jc->prof_gdump != HA_UNSET && (prof || jc->prof_gdump)) {
        rc = prof ? ha_mallctl_write_bool(ops, "prof.gdump",
                                          jc->prof_gdump != 0, NULL)
                  : ENOENT;
        if (rc != 0)
            apply_mallctl_fail(&status, err, errlen, rc, "prof.gdump",
                               "jemalloc_variables.prof_gdump",
                               ha_value_bool_str(jc->prof_gdump),
                               prof_built);
    }
    /* Decay: every arena now and those to come. */
    for (int k = 0; k < 2; k++) {
        long long ms = k == 0 ? jc->dirty_decay_ms : jc->muzzy_decay_ms;
        const char *kind = k == 0 ? "dirty" : "muzzy";
        char ctl[64], var[64];

        if (ms == HA_DECAY_UNSET)
            continue;
        snprintf(num, sizeof(num), "%lld", ms);
        snprintf(ctl, sizeof(ctl), "arenas.%s_decay_ms", kind);
        snprintf(var, sizeof(var), "jemalloc_variables.%s_decay_ms", kind);
        rc = ha_mallctl_set_decay(ops, kind, (ssize_t)ms, NULL);
        if (rc != 0)
            apply_mallctl_fail(&status, err, errlen, rc, ctl, var, num,
                               prof_built);
    }
    return status;
}

int
ha_profconf_recent(const struct ha_mallctl_ops *ops, const char *env_conf,
                   char *what, size_t whatlen)
{
    ssize_t cur = 0;
    int rc;

    ha_err_set(what, whatlen, "%s", "");
    if (!ha_mallctl_prof_enabled(ops) ||
        ha_mallctl_read_ssize(ops, "experimental.prof_recent.alloc_max",
                              &cur) != 0)
        return 0;
    if (cur != 0) {
        ha_err_set(what, whatlen,
                   "jemalloc keeps its last %zd sampled allocations, as set "
                   "before heapadmin started (kept)",
                   cur);
        return 0;
    }
    if (ha_profconf_conf_has_key(env_conf, "prof_recent_alloc_max")) {
        ha_err_set(what, whatlen,
                   "MALLOC_CONF sets prof_recent_alloc_max:0: "
                   "heap_fragmentation estimates every sample's size class");
        return 0;
    }
    rc = ha_mallctl_write_ssize(ops, "experimental.prof_recent.alloc_max",
                                HA_PROFCONF_RECENT_MAX, NULL);
    if (rc != 0) {
        ha_err_set(what, whatlen,
                   "experimental.prof_recent.alloc_max could not be set to "
                   "%d: %s",
                   HA_PROFCONF_RECENT_MAX, strerror(rc));
        return -1;
    }
    ha_err_set(what, whatlen,
               "jemalloc keeps its last %d sampled allocations "
               "(jemalloc-recent_alloc_max, about %d KiB of its metadata at "
               "most): heap_fragmentation places each live sample by its "
               "own size",
               HA_PROFCONF_RECENT_MAX, HA_PROFCONF_RECENT_MAX * 85 / 1024);
    return 1;
}

/* ------------------------------------------------------------------
 * Effective settings
 * ------------------------------------------------------------------ */

static const char *
bool_or_unknown(const struct ha_mallctl_ops *ops, const char *name)
{
    bool b;

    if (ha_mallctl_read_bool(ops, name, &b) != 0)
        return "?";
    return ha_value_bool_str(b);
}

void
ha_profconf_effective(const struct ha_mallctl_ops *ops, char *out,
                      size_t outlen)
{
    const char *version = "?";
    char prefix[PATH_MAX], sample[24] = "?", interval[24] = "?";
    size_t lg;
    ssize_t lgi;

    (void)ha_mallctl_read_str(ops, "version", &version);
    if (!ha_mallctl_prof_built(ops)) {
        snprintf(out, outlen,
                 "jemalloc %s: heap profiling not available (built without "
                 "--enable-prof)",
                 version);
        return;
    }
    if (!ha_mallctl_prof_enabled(ops)) {
        snprintf(out, outlen,
                 "jemalloc %s: heap profiling off (opt.prof=false; start "
                 "with MALLOC_CONF=prof:true,prof_active:false,"
                 "prof_time_resolution:high to enable it)",
                 version);
        return;
    }
    if (ha_mallctl_read_size(ops, "prof.lg_sample", &lg) == 0)
        snprintf(sample, sizeof(sample), "%zu", lg);
    if (ha_mallctl_read_ssize(ops, "opt.lg_prof_interval", &lgi) == 0)
        snprintf(interval, sizeof(interval), "%zd", lgi);
    if (ha_mallctl_prof_prefix(ops, prefix, sizeof(prefix)) != 0)
        ha_strlcpy(prefix, "?", sizeof(prefix));
    snprintf(out, outlen,
             "jemalloc %s: opt.prof=true prof.active=%s lg_prof_sample=%s "
             "lg_prof_interval=%s prof_gdump=%s prof_final=%s prof_leak=%s "
             "prof_accum=%s prefix=%s",
             version, bool_or_unknown(ops, "prof.active"), sample, interval,
             bool_or_unknown(ops, "prof.gdump"),
             bool_or_unknown(ops, "opt.prof_final"),
             bool_or_unknown(ops, "opt.prof_leak"),
             bool_or_unknown(ops, "opt.prof_accum"), prefix);
}

void
ha_profconf_log_effective(const struct ha_mallctl_ops *ops)
{
    char line[PATH_MAX + 512];

    ha_profconf_effective(ops, line, sizeof(line));
    ha_log_info("%s", line);
}
