/* SPDX-License-Identifier: MIT
 *
 * The memory cgroup files, parsed (see cgparse.h). Pure.
 */
#include "prof/cgparse.h"

#include <stdio.h>
#include <string.h>

#include "core/util.h"

/* The next line of buf[*pos, len) as [*s, *e) without its newline;
 * false at the end. */
static bool
next_line(const char *buf, size_t len, size_t *pos, const char **s,
          const char **e)
{
    const char *nl;

    if (*pos >= len)
        return false;
    *s = buf + *pos;
    nl = memchr(*s, '\n', len - *pos);
    *e = nl != NULL ? nl : buf + len;
    *pos = (size_t)(*e - buf) + (nl != NULL ? 1 : 0);
    return true;
}

/* [s, e) into out as a string; false when it does not fit. */
static bool
copy_span(const char *s, const char *e, char *out, size_t outlen)
{
    size_t n = (size_t)(e - s);

    if (n >= outlen)
        return false;
    memcpy(out, s, n);
    out[n] = '\0';
    return true;
}

/* Whether the comma-separated list [s, e) holds word. */
static bool
list_has(const char *s, const char *e, const char *word)
{
    size_t wl = strlen(word);

    while (s < e) {
        const char *c = memchr(s, ',', (size_t)(e - s));
        const char *end = c != NULL ? c : e;

        if ((size_t)(end - s) == wl && memcmp(s, word, wl) == 0)
            return true;
        s = end + 1;
    }
    return false;
}

/* ------------------------------------------------------------------
 * /proc/<pid>/cgroup
 * ------------------------------------------------------------------ */

int
ha_cgparse_procfile(const char *buf, size_t len,
                    struct ha_cgparse_groups *out, char *err,
                    size_t errlen)
{
    const char *s, *e;
    size_t pos = 0;
    unsigned line = 0;

    memset(out, 0, sizeof(*out));
    while (next_line(buf, len, &pos, &s, &e)) {
        const char *c1, *c2;

        line++;
        if (s == e)
            continue;
        c1 = memchr(s, ':', (size_t)(e - s));
        c2 = c1 != NULL ? memchr(c1 + 1, ':', (size_t)(e - c1 - 1)) : NULL;
        if (c1 == NULL || c2 == NULL || c2 + 1 >= e || c2[1] != '/') {
            ha_err_set(err, errlen,
                       "line %u: expected ID:CONTROLLERS:/PATH", line);
            return -1;
        }
        if (c1 - s == 1 && s[0] == '0' && c2 == c1 + 1) {
            if (!copy_span(c2 + 1, e, out->v2_path, sizeof(out->v2_path)))
                goto too_long;
            out->v2 = true;
        } else if (list_has(c1 + 1, c2, "memory") && !out->v1_memory) {
            if (!copy_span(c2 + 1, e, out->v1_path, sizeof(out->v1_path)))
                goto too_long;
            out->v1_memory = true;
        }
        continue;
too_long:
        ha_err_set(err, errlen, "line %u: path longer than %d bytes", line,
                   HA_CGPARSE_PATH_MAX - 1);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------
 * /proc/<pid>/mountinfo
 * ------------------------------------------------------------------ */

/* Field [s, e) with mountinfo's octal escapes (\040 for a space,
 * \011, \012, \134) decoded, into out. */
static bool
unescape(const char *s, const char *e, char *out, size_t outlen)
{
    size_t n = 0;

    for (; s < e; s++) {
        char c = *s;

        if (c == '\\' && e - s >= 4 && s[1] >= '0' && s[1] <= '3' &&
            s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
            c = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 3;
        }
        if (n + 1 >= outlen || c == '\0')
            return false;
        out[n++] = c;
    }
    out[n] = '\0';
    return true;
}

/* Splits [s, e) at spaces into up to max fields; returns how many. */
static size_t
fields(const char *s, const char *e, const char **fs, const char **fe,
       size_t max)
{
    size_t n = 0;

    while (s < e && n < max) {
        while (s < e && *s == ' ')
            s++;
        if (s == e)
            break;
        fs[n] = s;
        while (s < e && *s != ' ')
            s++;
        fe[n++] = s;
    }
    return n;
}

int
ha_cgparse_mountinfo(const char *buf, size_t len,
                     struct ha_cgparse_mounts *out)
{
    const char *s, *e;
    size_t pos = 0;

    memset(out, 0, sizeof(*out));
    while (next_line(buf, len, &pos, &s, &e)) {
        const char *fs[64], *fe[64];
        size_t n = fields(s, e, fs, fe, 64), dash;
        struct ha_cgparse_mount *m = NULL;

        /* id parent maj:min root point options [optional...] - fstype
         * source superoptions */
        for (dash = 6; dash < n; dash++)
            if (fe[dash] - fs[dash] == 1 && fs[dash][0] == '-')
                break;
        if (dash + 3 >= n)
            continue;
        if ((size_t)(fe[dash + 1] - fs[dash + 1]) == 7 &&
            memcmp(fs[dash + 1], "cgroup2", 7) == 0)
            m = &out->v2;
        else if ((size_t)(fe[dash + 1] - fs[dash + 1]) == 6 &&
                 memcmp(fs[dash + 1], "cgroup", 6) == 0 &&
                 list_has(fs[dash + 3], fe[dash + 3], "memory"))
            m = &out->v1_memory;
        if (m == NULL || m->found)
            continue;
        if (!unescape(fs[3], fe[3], m->root, sizeof(m->root)) ||
            !unescape(fs[4], fe[4], m->point, sizeof(m->point)) ||
            m->root[0] != '/' || m->point[0] != '/') {
            memset(m, 0, sizeof(*m));
            continue;
        }
        m->found = true;
    }
    return 0;
}

int
ha_cgparse_dir(const struct ha_cgparse_mount *m, const char *path, char *out,
               size_t outlen)
{
    size_t rl = strlen(m->root);
    const char *rest;
    int n;

    if (!m->found || path[0] != '/')
        return -1;
    /* "/" mounts everything; else the path must be the root or below
     * it, on a component boundary. */
    if (rl == 1) {
        rest = path;
    } else if (strncmp(path, m->root, rl) == 0 &&
               (path[rl] == '\0' || path[rl] == '/')) {
        rest = path + rl;
    } else {
        return -1;
    }
    if (strstr(rest, "/../") != NULL ||
        (strlen(rest) >= 3 && strcmp(rest + strlen(rest) - 3, "/..") == 0))
        return -1;
    if (strcmp(rest, "/") == 0)
        rest = "";
    n = snprintf(out, outlen, "%s%s",
                 strcmp(m->point, "/") == 0 && rest[0] != '\0' ? ""
                                                              : m->point,
                 rest);
    return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* ------------------------------------------------------------------
 * Values
 * ------------------------------------------------------------------ */

int
ha_cgparse_bytes(const char *buf, size_t len, int64_t *out)
{
    const char *e = buf + len;
    uint64_t v;

    while (e > buf && (e[-1] == '\n' || e[-1] == ' '))
        e--;
    if (e - buf == 3 && memcmp(buf, "max", 3) == 0) {
        *out = HA_CGPARSE_UNLIMITED;
        return 0;
    }
    if (!ha_decimal(buf, e, &v))
        return -1;
    *out = (int64_t)v >= HA_CGPARSE_V1_UNLIMITED_MIN ? HA_CGPARSE_UNLIMITED
                                                    : (int64_t)v;
    return 0;
}

int
ha_cgparse_key(const char *buf, size_t len, const char *key,
               uint64_t *out)
{
    size_t kl = strlen(key), pos = 0;
    const char *s, *e;

    while (next_line(buf, len, &pos, &s, &e)) {
        const char *v;

        if ((size_t)(e - s) <= kl || memcmp(s, key, kl) != 0 || s[kl] != ' ')
            continue;
        for (v = s + kl; v < e && *v == ' '; v++)
            ;
        return ha_decimal(v, e, out) ? 0 : -1;
    }
    return -1;
}

/* "12.34" [s, e) as a number, without the C library: a host's locale
 * may want a decimal comma. */
static bool
span_decimal(const char *s, const char *e, double *out)
{
    const char *dot = memchr(s, '.', (size_t)(e - s));
    uint64_t whole, frac = 0;
    double scale = 1;

    if (!ha_decimal(s, dot != NULL ? dot : e, &whole))
        return false;
    if (dot != NULL) {
        if (dot + 1 == e || e - dot > 10 || !ha_decimal(dot + 1, e, &frac))
            return false;
        for (const char *p = dot + 1; p < e; p++)
            scale *= 10;
    }
    *out = (double)whole + (double)frac / scale;
    return true;
}

/* "name=<decimal>" field [s, e) into dout, or an integer into uout. */
static bool
psi_field(const char *s, const char *e, const char *name, double *dout,
          uint64_t *uout)
{
    size_t nl = strlen(name);

    if ((size_t)(e - s) <= nl + 1 || memcmp(s, name, nl) != 0 ||
        s[nl] != '=')
        return false;
    s += nl + 1;
    if (uout != NULL)
        return ha_decimal(s, e, uout);
    return span_decimal(s, e, dout) && *dout <= 100;
}

int
ha_cgparse_psi(const char *buf, size_t len, struct ha_psi *out,
               char *err, size_t errlen)
{
    const char *s, *e;
    size_t pos = 0;
    unsigned line = 0;

    memset(out, 0, sizeof(*out));
    while (next_line(buf, len, &pos, &s, &e)) {
        const char *fs[5], *fe[5];
        struct ha_psi_line *l, v;

        line++;
        if (s == e)
            continue;
        memset(&v, 0, sizeof(v));
        if (fields(s, e, fs, fe, 5) != 5)
            goto bad;
        if (fe[0] - fs[0] == 4 && memcmp(fs[0], "some", 4) == 0)
            l = &out->some;
        else if (fe[0] - fs[0] == 4 && memcmp(fs[0], "full", 4) == 0)
            l = &out->full;
        else
            goto bad;
        if (!psi_field(fs[1], fe[1], "avg10", &v.avg10, NULL) ||
            !psi_field(fs[2], fe[2], "avg60", &v.avg60, NULL) ||
            !psi_field(fs[3], fe[3], "avg300", &v.avg300, NULL) ||
            !psi_field(fs[4], fe[4], "total", NULL, &v.total_us))
            goto bad;
        v.present = true;
        *l = v;
    }
    if (!out->some.present) {
        ha_err_set(err, errlen, "no \"some\" line");
        return -1;
    }
    return 0;
bad:
    memset(out, 0, sizeof(*out));
    ha_err_set(err, errlen,
               "line %u: expected some|full avg10=N avg60=N avg300=N "
               "total=N",
               line);
    return -1;
}

int
ha_cgparse_psi_trigger(double pct, unsigned window_ms, char *out,
                       size_t outlen)
{
    unsigned long long window_us, stall_us;
    int n;

    if (!(pct > 0 && pct <= 100))
        return -1;
    /* The kernel takes 500 ms to 10 s; unprivileged writers only whole
     * multiples of 2 s. */
    window_ms = (window_ms + 1999) / 2000 * 2000;
    if (window_ms < 2000)
        window_ms = 2000;
    if (window_ms > 10000)
        window_ms = 10000;
    window_us = (unsigned long long)window_ms * 1000;
    stall_us = (unsigned long long)(pct / 100.0 * (double)window_us);
    if (stall_us == 0)
        stall_us = 1;
    n = snprintf(out, outlen, "some %llu %llu", stall_us, window_us);
    if (n < 0 || (size_t)n + 1 > outlen)
        return -1;
    return n + 1;
}
