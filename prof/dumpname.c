/* SPDX-License-Identifier: MIT
 *
 * jemalloc's dump file names (see dumpname.h). Pure.
 */
#include "prof/dumpname.h"

#include <string.h>

/* Digits-only field [s, e) as a number; -1 when it is not one. */
static long long
number(const char *s, const char *e)
{
    long long v = 0;

    if (s >= e || e - s > 18)
        return -1;
    for (; s < e; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        v = v * 10 + (*s - '0');
    }
    return v;
}

bool
ha_dumpname_parse(const char *name, struct ha_dump_name *d)
{
    size_t len = strlen(name);
    const char *end, *k, *seq, *pid;

    d->log = false;
    if (len >= 6 && strcmp(name + len - 5, ".json") == 0) {
        /* <prefix>.<pid>.<seq>.json */
        end = name + len - 5;
        for (seq = end; seq > name && seq[-1] != '.'; seq--)
            ;
        for (pid = seq - 1; pid > name && pid[-1] != '.'; pid--)
            ;
        if (seq == name || pid <= name + 1)
            return false;
        d->seq = number(seq, end);
        d->pid = number(pid, seq - 1);
        d->kind = "log";
        d->kind_seq = -1;
        d->log = true;
        return d->seq >= 0 && d->pid >= 0;
    }
    if (len < 6 || strcmp(name + len - 5, ".heap") != 0)
        return false;
    end = name + len - 5;
    for (k = end; k > name && k[-1] != '.'; k--)
        ;
    if (k == name || k == end)
        return false;
    for (seq = k - 1; seq > name && seq[-1] != '.'; seq--)
        ;
    for (pid = seq - 1; pid > name && pid[-1] != '.'; pid--)
        ;
    if (pid <= name + 1) /* an empty prefix is no jemalloc name */
        return false;
    d->seq = number(seq, k - 1);
    d->pid = number(pid, seq - 1);
    if (d->seq < 0 || d->pid < 0)
        return false;
    if (end - k == 1 && *k == 'f') {
        d->kind = "final";
        d->kind_seq = -1;
        return true;
    }
    switch (*k) {
    case 'm':
        d->kind = "manual";
        break;
    case 'i':
        d->kind = "interval";
        break;
    case 'u':
        d->kind = "high-water";
        break;
    default:
        return false;
    }
    d->kind_seq = number(k + 1, end);
    return d->kind_seq >= 0;
}

