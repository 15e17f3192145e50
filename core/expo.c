/* SPDX-License-Identifier: MIT
 *
 * Prometheus / OpenMetrics text writer (see expo.h).
 */
#include "core/expo.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"

static bool
valid_name(const char *s, bool label)
{
    if (s == NULL || *s == '\0')
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                     c == '_' || (!label && c == ':');

        if (!alpha && !(p > s && c >= '0' && c <= '9'))
            return false;
    }
    return true;
}

void
ha_expo_init(struct ha_expo *e, struct ha_buf *out,
             enum ha_expo_format format)
{
    memset(e, 0, sizeof(*e));
    e->out = out;
    e->format = format;
}

/* HELP text: '\' and newline escaped. */
static void
put_help(struct ha_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            ha_buf_append_str(b, "\\\\");
        else if (*s == '\n')
            ha_buf_append_str(b, "\\n");
        else
            ha_buf_append_u8(b, (uint8_t)*s);
    }
}

void
ha_expo_family(struct ha_expo *e, const char *name, enum ha_expo_type type,
               const char *help)
{
    const char *suffix =
        type == HA_EXPO_COUNTER && e->format == HA_EXPO_PROMETHEUS ? "_total"
                                                                   : "";

    if (!valid_name(name, false) || strlen(name) + 7 > sizeof(e->family)) {
        e->failed = true;
        return;
    }
    ha_strlcpy(e->family, name, sizeof(e->family));
    e->type = type;
    ha_buf_printf(e->out, "# HELP %s%s ", name, suffix);
    put_help(e->out, help != NULL ? help : "");
    ha_buf_printf(e->out, "\n# TYPE %s%s %s\n", name, suffix,
                  type == HA_EXPO_COUNTER ? "counter" : "gauge");
}

static void
put_value(struct ha_buf *b, double v)
{
    if (isnan(v))
        ha_buf_append_str(b, "NaN");
    else if (isinf(v))
        ha_buf_append_str(b, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 9.007199254740992e15)
        ha_buf_printf(b, "%.0f", v);
    else
        ha_buf_printf(b, "%.17g", v);
}

void
ha_expo_sample(struct ha_expo *e, const char *const *labels, double v)
{
    if (e->family[0] == '\0') {
        e->failed = true;
        return;
    }
    ha_buf_append_str(e->out, e->family);
    if (e->type == HA_EXPO_COUNTER)
        ha_buf_append_str(e->out, "_total");
    if (labels != NULL && labels[0] != NULL) {
        ha_buf_append_u8(e->out, '{');
        for (size_t i = 0; labels[i] != NULL && labels[i + 1] != NULL;
             i += 2) {
            if (!valid_name(labels[i], true)) {
                e->failed = true;
                return;
            }
            ha_buf_printf(e->out, "%s%s=\"", i ? "," : "", labels[i]);
            for (const char *p = labels[i + 1]; *p; p++) {
                if (*p == '\\' || *p == '"')
                    ha_buf_append_u8(e->out, '\\');
                if (*p == '\n')
                    ha_buf_append_str(e->out, "\\n");
                else
                    ha_buf_append_u8(e->out, (uint8_t)*p);
            }
            ha_buf_append_u8(e->out, '"');
        }
        ha_buf_append_u8(e->out, '}');
    }
    ha_buf_append_u8(e->out, ' ');
    put_value(e->out, v);
    ha_buf_append_u8(e->out, '\n');
}

void
ha_expo_one(struct ha_expo *e, const char *name, enum ha_expo_type type,
            const char *help, double v)
{
    ha_expo_family(e, name, type, help);
    ha_expo_sample(e, NULL, v);
}

int
ha_expo_finish(struct ha_expo *e)
{
    if (e->format == HA_EXPO_OPENMETRICS)
        ha_buf_append_str(e->out, "# EOF\n");
    return e->failed || ha_buf_failed(e->out) ? -1 : 0;
}

const char *
ha_expo_content_type(enum ha_expo_format format)
{
    return format == HA_EXPO_OPENMETRICS
               ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
               : "text/plain; version=0.0.4; charset=utf-8";
}

enum ha_expo_format
ha_expo_negotiate(const char *accept)
{
    const char *p = accept;
    static const char om[] = "application/openmetrics-text";

    /* Each comma-separated media range; a q=0 excludes it. */
    while (p != NULL && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);

        while (len > 0 && (*p == ' ' || *p == '\t')) {
            p++;
            len--;
        }
        if (len >= sizeof(om) - 1 && strncasecmp(p, om, sizeof(om) - 1) == 0 &&
            (len == sizeof(om) - 1 || p[sizeof(om) - 1] == ';' ||
             p[sizeof(om) - 1] == ' ')) {
            const char *q = p;
            bool zero = false;

            while ((q = strchr(q, ';')) != NULL && q < p + len) {
                q++;
                while (*q == ' ')
                    q++;
                if (strncmp(q, "q=", 2) == 0 && strtod(q + 2, NULL) <= 0)
                    zero = true;
            }
            if (!zero)
                return HA_EXPO_OPENMETRICS;
        }
        p = end ? end + 1 : NULL;
    }
    return HA_EXPO_PROMETHEUS;
}
