/* SPDX-License-Identifier: MIT
 *
 * push_targets and service_names parsed (see pushcfg.h). Pure.
 */
#include "engine/pushcfg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static const struct {
    const char *name;
    unsigned bit;
} kinds[] = {
    {"manual", HA_PUSH_KIND_MANUAL},   {"automatic", HA_PUSH_KIND_AUTOMATIC},
    {"interval", HA_PUSH_KIND_INTERVAL}, {"peak", HA_PUSH_KIND_PEAK},
    {"limit", HA_PUSH_KIND_LIMIT},     {"leak", HA_PUSH_KIND_LEAK},
    {"final", HA_PUSH_KIND_FINAL},     {"live", HA_PUSH_KIND_LIVE},
};

#define KINDS_ALLOWED                                                      \
    "manual, automatic, interval, peak, limit, leak, final, live"

const char *
ha_pushcfg_kind_name(unsigned kind)
{
    for (size_t i = 0; i < HA_ARRAY_SIZE(kinds); i++)
        if (kinds[i].bit == kind)
            return kinds[i].name;
    return "";
}

const char *
ha_pushcfg_type_name(enum ha_push_type t)
{
    return t == HA_PUSH_PARCA ? "parca" : "pyroscope";
}

int
ha_pushcfg_parse_kinds(const char *list, unsigned *out, char *err,
                       size_t errlen)
{
    const char *p = list;
    unsigned bits = 0;

    while (*p != '\0') {
        size_t n = strcspn(p, ",");
        bool found = false;

        for (size_t i = 0; i < HA_ARRAY_SIZE(kinds); i++)
            if (n == strlen(kinds[i].name) &&
                strncmp(p, kinds[i].name, n) == 0) {
                bits |= kinds[i].bit;
                found = true;
            }
        if (!found) {
            ha_err_set(err, errlen,
                       "kinds: '%.*s' is not a kind of dump; allowed, "
                       "comma-separated: " KINDS_ALLOWED,
                       (int)(n > 40 ? 40 : n), p);
            return -1;
        }
        p += n;
        if (*p == ',')
            p++;
    }
    if (bits == 0) {
        ha_err_set(err, errlen,
                   "kinds is empty; give one or more of " KINDS_ALLOWED);
        return -1;
    }
    *out = bits;
    return 0;
}

unsigned
ha_pushcfg_kind_of(const char *name_kind, const char *trigger)
{
    if (strcmp(name_kind, "final") == 0)
        return HA_PUSH_KIND_FINAL;
    if (strcmp(name_kind, "interval") == 0)
        return HA_PUSH_KIND_INTERVAL;
    if (strcmp(name_kind, "high-water") == 0)
        return HA_PUSH_KIND_PEAK;
    if (strcmp(name_kind, "manual") != 0)
        return 0;
    /* heapadmin's own dumps are all jemalloc "manual" (prof.dump): the
     * trigger tells them apart. */
    if (strcmp(trigger, "limit") == 0)
        return HA_PUSH_KIND_LIMIT;
    if (strcmp(trigger, "leak-watch") == 0)
        return HA_PUSH_KIND_LEAK;
    if (strcmp(trigger, "automatic") == 0)
        return HA_PUSH_KIND_AUTOMATIC;
    if (strcmp(trigger, "manual") == 0 || trigger[0] == '\0')
        return HA_PUSH_KIND_MANUAL;
    return 0;
}

/* ------------------------------------------------------------------
 * push_targets
 * ------------------------------------------------------------------ */

static bool
is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* FNV-1a, 32 bits: a short stable name, not a secret. */
static uint32_t
fnv1a(uint32_t h, const char *s)
{
    for (; *s != '\0'; s++) {
        h ^= (unsigned char)*s;
        h *= 16777619u;
    }
    return h;
}

/* Copies the value v (n bytes) into field (size bytes) for target t's
 * key; -1 with err when too long or holding a control byte. */
static int
set_field(char *field, size_t size, const char *v, size_t n, size_t t,
          const char *key, bool secret, char *err, size_t errlen)
{
    if (n == 0 || n >= size) {
        ha_err_set(err, errlen, "target %zu: %s must be 1..%zu characters",
                   t, key, size - 1);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
            ha_err_set(err, errlen,
                       "target %zu: %s has a control character%s", t, key,
                       secret ? "" : "; a value is printable text");
            return -1;
        }
    memcpy(field, v, n);
    field[n] = '\0';
    return 0;
}

static int
check_url(const char *url, size_t t, char *err, size_t errlen)
{
    const char *host;

    if (strncmp(url, "http://", 7) == 0)
        host = url + 7;
    else if (strncmp(url, "https://", 8) == 0)
        host = url + 8;
    else {
        ha_err_set(err, errlen,
                   "target %zu: url must start with http:// or https:// "
                   "(the receiver's base URL, e.g. http://10.0.0.5:4040)",
                   t);
        return -1;
    }
    if (*host == '\0' || *host == '/' || strchr(url, '?') != NULL ||
        strchr(url, '#') != NULL || strchr(host, '@') != NULL) {
        ha_err_set(err, errlen,
                   "target %zu: url needs a host and no query, fragment "
                   "or user:password@ (give basic_auth instead)",
                   t);
        return -1;
    }
    return 0;
}

/* One target's fields, item[0 .. len). */
static int
parse_target(const char *item, size_t len, size_t t,
             struct ha_push_target *pt, char *err, size_t errlen)
{
    const char *p = item, *end = item + len;
    bool have_type = false, have_kinds = false;
    char kinds_text[256];

    memset(pt, 0, sizeof(*pt));
    while (p < end) {
        const char *f, *eq, *v;
        size_t fn, kn, vn;

        while (p < end && is_space(*p))
            p++;
        if (p >= end)
            break;
        f = p;
        while (p < end && !is_space(*p))
            p++;
        fn = (size_t)(p - f);
        eq = memchr(f, '=', fn);
        if (eq == NULL) {
            ha_err_set(err, errlen,
                       "target %zu: '%.*s' is not key=value; keys: type, "
                       "url, kinds, basic_auth, bearer_token, tenant",
                       t, (int)(fn > 40 ? 40 : fn), f);
            return -1;
        }
        kn = (size_t)(eq - f);
        v = eq + 1;
        vn = fn - kn - 1;
#define KEY(k) (kn == strlen(k) && strncmp(f, k, kn) == 0)
        if (KEY("type")) {
            if (vn == 9 && strncmp(v, "pyroscope", 9) == 0)
                pt->type = HA_PUSH_PYROSCOPE;
            else if (vn == 5 && strncmp(v, "parca", 5) == 0)
                pt->type = HA_PUSH_PARCA;
            else {
                ha_err_set(err, errlen,
                           "target %zu: type '%.*s' is not one heapadmin "
                           "pushes to; allowed: pyroscope, parca",
                           t, (int)(vn > 40 ? 40 : vn), v);
                return -1;
            }
            have_type = true;
        } else if (KEY("url")) {
            if (set_field(pt->url, sizeof(pt->url), v, vn, t, "url", false,
                          err, errlen) != 0 ||
                check_url(pt->url, t, err, errlen) != 0)
                return -1;
            while (strlen(pt->url) > 8 && pt->url[strlen(pt->url) - 1] == '/')
                pt->url[strlen(pt->url) - 1] = '\0';
        } else if (KEY("kinds")) {
            char why[256];

            if (set_field(kinds_text, sizeof(kinds_text), v, vn, t, "kinds",
                          false, err, errlen) != 0)
                return -1;
            if (ha_pushcfg_parse_kinds(kinds_text, &pt->kinds, why,
                                       sizeof(why)) != 0) {
                ha_err_set(err, errlen, "target %zu: %s", t, why);
                return -1;
            }
            have_kinds = true;
        } else if (KEY("basic_auth")) {
            if (set_field(pt->basic_auth, sizeof(pt->basic_auth), v, vn, t,
                          "basic_auth", true, err, errlen) != 0)
                return -1;
            if (strchr(pt->basic_auth, ':') == NULL) {
                ha_err_set(err, errlen,
                           "target %zu: basic_auth must be user:password",
                           t);
                return -1;
            }
        } else if (KEY("bearer_token")) {
            if (set_field(pt->bearer_token, sizeof(pt->bearer_token), v, vn,
                          t, "bearer_token", true, err, errlen) != 0)
                return -1;
        } else if (KEY("tenant")) {
            if (set_field(pt->tenant, sizeof(pt->tenant), v, vn, t, "tenant",
                          false, err, errlen) != 0)
                return -1;
        } else {
            ha_err_set(err, errlen,
                       "target %zu: unknown key '%.*s'; keys: type, url, "
                       "kinds, basic_auth, bearer_token, tenant",
                       t, (int)(kn > 40 ? 40 : kn), f);
            return -1;
        }
#undef KEY
    }
    if (!have_type || pt->url[0] == '\0') {
        ha_err_set(err, errlen, "target %zu: type and url are required", t);
        return -1;
    }
    if (pt->basic_auth[0] != '\0' && pt->bearer_token[0] != '\0') {
        ha_err_set(err, errlen,
                   "target %zu: give basic_auth or bearer_token, not both",
                   t);
        return -1;
    }
    if (!have_kinds)
        pt->kinds = HA_PUSH_KINDS_DEFAULT;
    snprintf(pt->id, sizeof(pt->id), "t%08x",
             (unsigned)fnv1a(fnv1a(2166136261u,
                                   ha_pushcfg_type_name(pt->type)),
                             pt->url));
    return 0;
}

int
ha_pushcfg_parse(const char *spec, struct ha_push_target **targets,
                 size_t *n, char *err, size_t errlen)
{
    struct ha_push_target *list = NULL;
    size_t count = 0, t = 0;
    const char *p = spec != NULL ? spec : "";

    *targets = NULL;
    *n = 0;
    while (*p != '\0') {
        size_t len = strcspn(p, ";");
        const char *q = p;
        bool blank = true;

        for (size_t i = 0; i < len; i++)
            if (!is_space(q[i]))
                blank = false;
        t++;
        if (!blank) {
            struct ha_push_target *g;

            if (count == HA_PUSH_TARGETS_MAX) {
                ha_err_set(err, errlen, "at most %d push targets",
                           HA_PUSH_TARGETS_MAX);
                goto fail;
            }
            g = realloc(list, (count + 1) * sizeof(*list));
            if (g == NULL) {
                ha_err_set(err, errlen, "out of memory");
                goto fail;
            }
            list = g;
            if (parse_target(p, len, t, &list[count], err, errlen) != 0)
                goto fail;
            for (size_t i = 0; i < count; i++)
                if (strcmp(list[i].id, list[count].id) == 0) {
                    ha_err_set(err, errlen,
                               "target %zu: the same type and url as "
                               "another target",
                               t);
                    goto fail;
                }
            count++;
        }
        p += len;
        if (*p == ';')
            p++;
    }
    *targets = list;
    *n = count;
    return 0;
fail:
    if (list != NULL)
        memset(list, 0, (count + 1) * sizeof(*list)); /* secrets */
    free(list);
    return -1;
}

void
ha_pushcfg_mask(const char *spec, char *out, size_t outlen)
{
    size_t o = 0;
    const char *p = spec != NULL ? spec : "";

    if (outlen == 0)
        return;
    while (*p != '\0' && o + 1 < outlen) {
        bool basic = strncmp(p, "basic_auth=", 11) == 0;
        bool bearer = strncmp(p, "bearer_token=", 13) == 0;
        bool at_start = p == spec || is_space(p[-1]) || p[-1] == ';';

        if (at_start && (basic || bearer)) {
            size_t k = basic ? 11 : 13;
            const char *v = p + k, *colon;
            size_t vn = strcspn(v, " \t\n\r;");

            colon = basic ? memchr(v, ':', vn) : NULL;
            /* key= and, for basic_auth, the user */
            k += colon != NULL ? (size_t)(colon - v) + 1 : 0;
            for (size_t i = 0; i < k && o + 1 < outlen; i++)
                out[o++] = p[i];
            for (const char *m = "****"; *m != '\0' && o + 1 < outlen; m++)
                out[o++] = *m;
            p = v + vn;
            continue;
        }
        out[o++] = *p++;
    }
    out[o] = '\0';
}

/* ------------------------------------------------------------------
 * service_names
 * ------------------------------------------------------------------ */

static bool
service_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

int
ha_pushcfg_parse_services(const char *spec, struct ha_service_name **out,
                          size_t *n, char *err, size_t errlen)
{
    struct ha_service_name *list = NULL;
    size_t count = 0, item = 0;
    const char *p = spec != NULL ? spec : "";

    *out = NULL;
    *n = 0;
    while (*p != '\0') {
        size_t len = strcspn(p, ";"), a, b;
        const char *s = p, *e = p + len, *eq;
        struct ha_service_name *g;

        item++;
        while (s < e && is_space(*s))
            s++;
        while (e > s && is_space(e[-1]))
            e--;
        p += len;
        if (*p == ';')
            p++;
        if (s == e)
            continue;
        eq = memchr(s, '=', (size_t)(e - s));
        if (eq == NULL) {
            ha_err_set(err, errlen,
                       "item %zu is not program=service (e.g. "
                       "redis-server=cache)",
                       item);
            goto fail;
        }
        a = (size_t)(eq - s);
        b = (size_t)(e - eq - 1);
        for (size_t i = 0; i < a; i++)
            if ((unsigned char)s[i] <= 0x20 || s[i] == 0x7f)
                a = 0;
        for (size_t i = 0; i < b; i++)
            if (!service_char(eq[1 + i]))
                b = 0;
        if (a == 0 || a >= sizeof(list->program) || b == 0 ||
            b >= sizeof(list->service)) {
            ha_err_set(err, errlen,
                       "item %zu: a program is 1..63 characters without "
                       "spaces, a service 1..63 of [A-Za-z0-9_.-]",
                       item);
            goto fail;
        }
        g = realloc(list, (count + 1) * sizeof(*list));
        if (g == NULL) {
            ha_err_set(err, errlen, "out of memory");
            goto fail;
        }
        list = g;
        memcpy(list[count].program, s, a);
        list[count].program[a] = '\0';
        memcpy(list[count].service, eq + 1, b);
        list[count].service[b] = '\0';
        for (size_t i = 0; i < count; i++)
            if (strcmp(list[i].program, list[count].program) == 0) {
                ha_err_set(err, errlen, "item %zu: program '%s' is given "
                           "twice", item, list[count].program);
                goto fail;
            }
        count++;
    }
    *out = list;
    *n = count;
    return 0;
fail:
    free(list);
    return -1;
}

const char *
ha_pushcfg_service_of(const struct ha_service_name *map, size_t n,
                      const char *program)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(map[i].program, program) == 0)
            return map[i].service;
    return program;
}
