/* SPDX-License-Identifier: MIT
 *
 * A run's record (see runrec.h). Pure.
 */
#include "prof/runrec.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"
#include "prof/breakdown.h"

#define HEADER "heapadmin-run 1"

void
ha_runrec_init(struct ha_runrec *r)
{
    memset(r, 0, sizeof(*r));
    r->limit = r->oom_kills = r->usage = r->resident = r->peak_resident = -1;
    r->working_set = -1;
}

void
ha_runrec_add_limit_dump(struct ha_runrec *r, const struct ha_runrec_dump *d)
{
    if (r->n_limit_dumps == HA_RUNREC_LIMIT_DUMPS) {
        memmove(&r->limit_dumps[0], &r->limit_dumps[1],
                (HA_RUNREC_LIMIT_DUMPS - 1) * sizeof(r->limit_dumps[0]));
        r->n_limit_dumps--;
    }
    r->limit_dumps[r->n_limit_dumps++] = *d;
}

int
ha_runrec_format(const struct ha_runrec *r, char *buf, size_t len)
{
    char program[sizeof(r->program)], path[sizeof(r->cgroup_path)];
    char dir[sizeof(r->cgroup_dir)], detail[sizeof(r->detail)];
    char prefix[sizeof(r->prefix)];
    size_t at = 0;
    bool ok;

    ha_one_line(r->program, program, sizeof(program));
    ha_one_line(r->prefix, prefix, sizeof(prefix));
    ha_one_line(r->cgroup_path, path, sizeof(path));
    ha_one_line(r->cgroup_dir, dir, sizeof(dir));
    ha_one_line(r->detail, detail, sizeof(detail));
    ok = ha_appendf(buf, len, &at, "%s\npid %lld\n", HEADER,
                    (long long)r->pid) &&
         (program[0] == '\0' ||
          ha_appendf(buf, len, &at, "program %s\n", program)) &&
         ha_appendf(buf, len, &at, "started_ns %lld\n",
                    (long long)r->started_ns) &&
         (prefix[0] == '\0' ||
          ha_appendf(buf, len, &at, "prefix %s\n", prefix));
    if (ok && r->cgroup_version != 0)
        ok = ha_appendf(buf, len, &at, "cgroup %d %s\n", r->cgroup_version,
                        path[0] ? path : "/");
    if (ok && dir[0] != '\0')
        ok = ha_appendf(buf, len, &at, "cgroup_dir %s\n", dir);
    if (ok && r->limit >= 0)
        ok = ha_appendf(buf, len, &at, "limit %lld\n", (long long)r->limit);
    else if (ok && r->cgroup_version != 0)
        ok = ha_appendf(buf, len, &at, "limit max\n");
    if (ok && r->oom_kills >= 0)
        ok = ha_appendf(buf, len, &at, "oom_kills %lld\n",
                        (long long)r->oom_kills);
    if (ok && r->last_seen_ns > 0)
        ok = ha_appendf(buf, len, &at, "last_seen_ns %lld\n",
                        (long long)r->last_seen_ns);
    if (ok && r->usage >= 0)
        ok = ha_appendf(buf, len, &at, "usage %lld\n", (long long)r->usage);
    if (ok && r->working_set >= 0)
        ok = ha_appendf(buf, len, &at, "working_set %lld\n",
                        (long long)r->working_set);
    if (ok && r->resident >= 0)
        ok = ha_appendf(buf, len, &at, "resident %lld\n",
                        (long long)r->resident);
    if (ok && r->peak_resident >= 0)
        ok = ha_appendf(buf, len, &at, "peak_resident %lld\n",
                        (long long)r->peak_resident);
    for (size_t i = 0; ok && i < r->n_limit_dumps; i++) {
        const struct ha_runrec_dump *d = &r->limit_dumps[i];
        char file[sizeof(d->file)];

        ha_one_line(d->file, file, sizeof(file));
        for (char *p = file; *p; p++)
            if (*p == ' ')
                *p = '_'; /* the name is the line's last word */
        ok = ha_appendf(buf, len, &at, "limit_dump %lld %lld %lld %s\n",
                        (long long)d->ns, (long long)d->usage,
                        (long long)d->working_set, file[0] ? file : "-");
    }
    if (ok && r->how[0] != '\0')
        ok = ha_appendf(buf, len, &at, "how %s\n", r->how) &&
             (detail[0] == '\0' ||
              ha_appendf(buf, len, &at, "detail %s\n", detail)) &&
             (r->ended_ns <= 0 || ha_appendf(buf, len, &at, "ended_ns %lld\n",
                                             (long long)r->ended_ns));
    return ok ? (int)at : -1;
}

/* [s, e) as an int64_t, which every number of the record is. */
static bool
number(const char *s, const char *e, int64_t *out)
{
    uint64_t v;

    if (!ha_decimal(s, e, &v))
        return false;
    *out = (int64_t)v;
    return true;
}

static void
text(const char *s, const char *e, char *out, size_t outlen)
{
    size_t n = (size_t)(e - s) < outlen - 1 ? (size_t)(e - s) : outlen - 1;

    memcpy(out, s, n);
    out[n] = '\0';
}

int
ha_runrec_parse(const char *buf, size_t len, struct ha_runrec *r, char *err,
                size_t errlen)
{
    const char *p = buf, *end = buf + len;
    unsigned line = 0;
    bool has_pid = false, has_start = false;

    ha_runrec_init(r);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl != NULL ? nl : end, *s = p, *sp, *v;
        size_t kl;

        p = nl != NULL ? nl + 1 : end;
        line++;
        if (line == 1) {
            if ((size_t)(e - s) != strlen(HEADER) ||
                memcmp(s, HEADER, strlen(HEADER)) != 0) {
                ha_err_set(err, errlen, "line 1: expected \"%s\"", HEADER);
                return -1;
            }
            continue;
        }
        sp = memchr(s, ' ', (size_t)(e - s));
        if (sp == NULL)
            continue;
        kl = (size_t)(sp - s);
        v = sp + 1;
#define KEY(k) (kl == strlen(k) && memcmp(s, k, kl) == 0)
        if (KEY("program")) {
            text(v, e, r->program, sizeof(r->program));
        } else if (KEY("prefix")) {
            text(v, e, r->prefix, sizeof(r->prefix));
        } else if (KEY("cgroup_dir")) {
            text(v, e, r->cgroup_dir, sizeof(r->cgroup_dir));
        } else if (KEY("how")) {
            text(v, e, r->how, sizeof(r->how));
        } else if (KEY("detail")) {
            text(v, e, r->detail, sizeof(r->detail));
        } else if (KEY("cgroup")) {
            if (e - v < 2 || (v[0] != '1' && v[0] != '2') || v[1] != ' ')
                goto bad;
            r->cgroup_version = v[0] - '0';
            text(v + 2, e, r->cgroup_path, sizeof(r->cgroup_path));
        } else if (KEY("limit") && e - v == 3 && memcmp(v, "max", 3) == 0) {
            r->limit = -1;
        } else if (KEY("limit_dump")) {
            struct ha_runrec_dump d;
            int64_t *f[3] = {&d.ns, &d.usage, &d.working_set};
            const char *q = v, *sp2;

            memset(&d, 0, sizeof(d));
            for (int k = 0; k < 3; k++) {
                sp2 = memchr(q, ' ', (size_t)(e - q));
                if (sp2 == NULL || !number(q, sp2, f[k]))
                    goto bad;
                q = sp2 + 1;
            }
            text(q, e, d.file, sizeof(d.file));
            ha_runrec_add_limit_dump(r, &d);
        } else {
            int64_t *dst = KEY("pid")             ? &r->pid
                           : KEY("started_ns")    ? &r->started_ns
                           : KEY("limit")         ? &r->limit
                           : KEY("oom_kills")     ? &r->oom_kills
                           : KEY("last_seen_ns")  ? &r->last_seen_ns
                           : KEY("usage")         ? &r->usage
                           : KEY("working_set")   ? &r->working_set
                           : KEY("resident")      ? &r->resident
                           : KEY("peak_resident") ? &r->peak_resident
                           : KEY("ended_ns")      ? &r->ended_ns
                                                  : NULL;

            if (dst == NULL)
                continue; /* a later version's key */
            if (!number(v, e, dst))
                goto bad;
            has_pid = has_pid || dst == &r->pid;
            has_start = has_start || dst == &r->started_ns;
        }
#undef KEY
        continue;
bad:
        ha_err_set(err, errlen, "line %u: a value that does not parse",
                   line);
        return -1;
    }
    if (!has_pid || !has_start) {
        ha_err_set(err, errlen, "no pid or started_ns");
        return -1;
    }
    return 0;
}

int
ha_runrec_parse_end(const char *buf, size_t len, char *how, size_t howlen,
                    int64_t *ended_ns)
{
    const char *sp = memchr(buf, ' ', len), *e = buf + len;

    while (e > buf && (e[-1] == '\n' || e[-1] == ' '))
        e--;
    if (sp == NULL || sp >= e || !number(sp + 1, e, ended_ns))
        return -1;
    if (!((sp - buf == 7 && memcmp(buf, "stopped", 7) == 0) ||
          (sp - buf == 6 && memcmp(buf, "exited", 6) == 0)))
        return -1;
    text(buf, sp, how, howlen);
    return 0;
}

/* ", usage 186.3 MiB at its last look (working set 185.9 MiB, 0.970 of
 * the limit)" into out, or "" when the record has no usage. */
static void
last_look(const struct ha_runrec *r, char *out, size_t outlen)
{
    char use[32], ws[32];

    out[0] = '\0';
    if (r->usage < 0)
        return;
    ha_breakdown_format_bytes(r->usage, use, sizeof(use));
    ha_breakdown_format_bytes(r->working_set, ws, sizeof(ws));
    if (r->working_set >= 0 && r->limit > 0)
        snprintf(out, outlen,
                 ", usage %s at its last look (working set %s, %.3f of the "
                 "limit)",
                 use, ws, (double)r->working_set / (double)r->limit);
    else
        snprintf(out, outlen, ", usage %s at its last look", use);
}

void
ha_runrec_settle(struct ha_runrec *r, const struct ha_runrec_after *a)
{
    char lim[32], look[160], group[300];

    snprintf(group, sizeof(group), "cgroup v%d %s", r->cgroup_version,
             r->cgroup_path[0] ? r->cgroup_path : "/");
    ha_breakdown_format_bytes(r->limit, lim, sizeof(lim));
    last_look(r, look, sizeof(look));
    r->ended_ns = 0;
    if (a->newest_dump_ns > r->last_seen_ns)
        r->last_seen_ns = a->newest_dump_ns;
    if (a->has_end) {
        ha_strlcpy(r->how, a->end_how, sizeof(r->how));
        r->ended_ns = a->end_ns;
        snprintf(r->detail, sizeof(r->detail),
                 strcmp(a->end_how, "stopped") == 0
                     ? "stopped cleanly (heapadmin was shut down first)"
                     : "the process exited (exit() with heapadmin still "
                       "running, as a host ends)");
        return;
    }
    if (r->cgroup_version != 0 && r->oom_kills >= 0 &&
        a->oom_kills_now > r->oom_kills) {
        ha_strlcpy(r->how, "oom-killed", sizeof(r->how));
        snprintf(r->detail, sizeof(r->detail),
                 "the kernel's OOM killer: the oom_kill count of its %s "
                 "went from %lld to %lld after its last look; memory limit "
                 "%s%s",
                 group, (long long)r->oom_kills,
                 (long long)a->oom_kills_now,
                 r->limit >= 0 ? lim : "none", look);
        return;
    }
    if (r->cgroup_version != 0 && a->oom_kills_now < 0) {
        ha_strlcpy(r->how, "ended", sizeof(r->how));
        snprintf(r->detail, sizeof(r->detail),
                 "no clean stop was recorded, and its %s is gone (a "
                 "container restarted?), so the kernel cannot say whether "
                 "it was OOM-killed",
                 group);
        return;
    }
    ha_strlcpy(r->how, "killed", sizeof(r->how));
    if (r->cgroup_version != 0)
        snprintf(r->detail, sizeof(r->detail),
                 "no clean stop was recorded and the oom_kill count of its "
                 "%s did not move (%lld): killed by a signal (kill -9), "
                 "crashed, or the machine went down",
                 group, (long long)a->oom_kills_now);
    else
        snprintf(r->detail, sizeof(r->detail),
                 "no clean stop was recorded (no memory cgroup to ask about "
                 "an OOM kill): killed by a signal, the OOM killer, a "
                 "crash, or the machine went down");
}
