/* SPDX-License-Identifier: MIT
 *
 * "<dump>.mem": memory when a dump was taken (see dumpmem.h). Pure.
 */
#include "prof/dumpmem.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

#define HEADER "heapadmin-dump-memory 1"

void
ha_dumpmem_init(struct ha_dumpmem *m)
{
    memset(m, 0, sizeof(*m));
    m->resident = m->cgroup_usage = m->cgroup_working_set = -1;
    m->allocated = -1;
    m->cgroup_limit = HA_DUMPMEM_LIMIT_UNKNOWN;
}

int
ha_dumpmem_format(const struct ha_dumpmem *m, char *buf, size_t len)
{
    char trigger[sizeof(m->trigger)], reason[sizeof(m->reason)];
    char path[sizeof(m->cgroup_path)];
    size_t at = 0;
    bool ok;

    ha_one_line(m->trigger, trigger, sizeof(trigger));
    for (char *p = trigger; *p; p++)
        if (*p == ' ')
            *p = '-';
    ha_one_line(m->reason, reason, sizeof(reason));
    ha_one_line(m->cgroup_path, path, sizeof(path));
    ok = ha_appendf(buf, len, &at, "%s\n", HEADER) &&
         ha_appendf(buf, len, &at, "taken_ns %lld\n", (long long)m->taken_ns) &&
         ha_appendf(buf, len, &at, "trigger %s\n",
                    trigger[0] ? trigger : "unknown") &&
         (reason[0] == '\0' ||
          ha_appendf(buf, len, &at, "reason %s\n", reason)) &&
         (m->resident < 0 ||
          ha_appendf(buf, len, &at, "resident %lld\n", (long long)m->resident));
    if (ok && m->cgroup_version != 0)
        ok = ha_appendf(buf, len, &at, "cgroup %d %s\n", m->cgroup_version,
                        path[0] ? path : "/");
    if (ok && m->cgroup_limit == -1)
        ok = ha_appendf(buf, len, &at, "cgroup_limit max\n");
    else if (ok && m->cgroup_limit >= 0)
        ok = ha_appendf(buf, len, &at, "cgroup_limit %lld\n",
                        (long long)m->cgroup_limit);
    if (ok && m->cgroup_usage >= 0)
        ok = ha_appendf(buf, len, &at, "cgroup_usage %lld\n",
                        (long long)m->cgroup_usage);
    if (ok && m->cgroup_working_set >= 0)
        ok = ha_appendf(buf, len, &at, "cgroup_working_set %lld\n",
                        (long long)m->cgroup_working_set);
    if (ok && m->sampling_since == -1)
        ok = ha_appendf(buf, len, &at, "sampling_since start\n");
    else if (ok && m->sampling_since > 0)
        ok = ha_appendf(buf, len, &at, "sampling_since %lld\n",
                        (long long)m->sampling_since);
    if (ok && m->cgroup_looked_ns > 0)
        ok = ha_appendf(buf, len, &at, "cgroup_looked_ns %lld\n",
                        (long long)m->cgroup_looked_ns);
    if (ok && m->allocated >= 0)
        ok = ha_appendf(buf, len, &at, "allocated %lld\n",
                        (long long)m->allocated);
    for (size_t i = 0; ok && i < m->n_bins && i < HA_DUMPMEM_BINS_MAX; i++)
        ok = ha_appendf(buf, len, &at, "bin %llu %llu %llu %llu %llu\n",
                        (unsigned long long)m->bins[i].size,
                        (unsigned long long)m->bins[i].nregs,
                        (unsigned long long)m->bins[i].slab_size,
                        (unsigned long long)m->bins[i].curregs,
                        (unsigned long long)m->bins[i].curslabs);
    return ok ? (int)at : -1;
}

/* The next space-separated word of [*s, e). */
static bool
word(const char **s, const char *e, const char **ws, const char **we)
{
    const char *p = *s;

    while (p < e && *p == ' ')
        p++;
    if (p == e)
        return false;
    *ws = p;
    while (p < e && *p != ' ')
        p++;
    *we = p;
    *s = p;
    return true;
}

static bool
key_is(const char *ks, const char *ke, const char *k)
{
    return (size_t)(ke - ks) == strlen(k) && memcmp(ks, k, strlen(k)) == 0;
}

/* [s, e) into out as text, cut to fit. */
static void
text(const char *s, const char *e, char *out, size_t outlen)
{
    size_t n = (size_t)(e - s) < outlen - 1 ? (size_t)(e - s) : outlen - 1;

    memcpy(out, s, n);
    out[n] = '\0';
}

int
ha_dumpmem_parse(const char *buf, size_t len, struct ha_dumpmem *m,
                 char *err, size_t errlen)
{
    const char *p = buf, *end = buf + len;
    unsigned line = 0;

    ha_dumpmem_init(m);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl != NULL ? nl : end, *s = p, *ks, *ke, *vs, *ve;
        uint64_t v[5];

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
        if (!word(&s, e, &ks, &ke))
            continue;
        while (s < e && *s == ' ')
            s++;
        vs = s;
        ve = e;
        if (key_is(ks, ke, "trigger") || key_is(ks, ke, "reason")) {
            if (key_is(ks, ke, "trigger"))
                text(vs, ve, m->trigger, sizeof(m->trigger));
            else
                text(vs, ve, m->reason, sizeof(m->reason));
            continue;
        }
        if (key_is(ks, ke, "cgroup")) {
            const char *ns, *ne;

            if (!word(&s, e, &ns, &ne) || !ha_decimal(ns, ne, &v[0]) ||
                (v[0] != 1 && v[0] != 2))
                goto bad;
            while (s < e && *s == ' ')
                s++;
            m->cgroup_version = (int)v[0];
            text(s, e, m->cgroup_path, sizeof(m->cgroup_path));
            continue;
        }
        if (key_is(ks, ke, "cgroup_limit") && ve - vs == 3 &&
            memcmp(vs, "max", 3) == 0) {
            m->cgroup_limit = -1;
            continue;
        }
        if (key_is(ks, ke, "sampling_since") && ve - vs == 5 &&
            memcmp(vs, "start", 5) == 0) {
            m->sampling_since = -1;
            continue;
        }
        if (key_is(ks, ke, "bin")) {
            for (int k = 0; k < 5; k++) {
                const char *ns, *ne;

                if (!word(&s, e, &ns, &ne) || !ha_decimal(ns, ne, &v[k]))
                    goto bad;
            }
            if (m->n_bins < HA_DUMPMEM_BINS_MAX)
                m->bins[m->n_bins++] =
                    (struct ha_dumpmem_bin){v[0], v[1], v[2], v[3], v[4]};
            continue;
        }
        {
            int64_t *dst = key_is(ks, ke, "taken_ns")       ? &m->taken_ns
                           : key_is(ks, ke, "resident")     ? &m->resident
                           : key_is(ks, ke, "cgroup_limit") ? &m->cgroup_limit
                           : key_is(ks, ke, "cgroup_usage") ? &m->cgroup_usage
                           : key_is(ks, ke, "cgroup_working_set")
                               ? &m->cgroup_working_set
                           : key_is(ks, ke, "sampling_since")
                               ? &m->sampling_since
                           : key_is(ks, ke, "cgroup_looked_ns")
                               ? &m->cgroup_looked_ns
                           : key_is(ks, ke, "allocated") ? &m->allocated
                                                          : NULL;

            if (dst == NULL)
                continue; /* a later version's key */
            if (!ha_decimal(vs, ve, &v[0]))
                goto bad;
            *dst = (int64_t)v[0];
        }
        continue;
bad:
        ha_err_set(err, errlen, "line %u: a value that is not a number",
                   line);
        return -1;
    }
    if (line == 0) {
        ha_err_set(err, errlen, "empty");
        return -1;
    }
    return 0;
}

bool
ha_dumpmem_higher(int64_t a, int64_t a_ns, int64_t b, int64_t b_ns)
{
    if (a != b)
        return a > b;
    return a_ns > b_ns;
}
