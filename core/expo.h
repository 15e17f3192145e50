/* SPDX-License-Identifier: MIT
 *
 * Metrics in the Prometheus text exposition format (version 0.0.4) and
 * in OpenMetrics 1.0, written into a buffer. Pure: no I/O.
 *
 * Rules followed (Prometheus "Exposition formats"; OpenMetrics 1.0
 * specification):
 *   - a family is announced once, "# HELP name text" then "# TYPE name
 *     type", and its samples follow;
 *   - a counter's samples are named <family>_total. Prometheus text
 *     announces the family with the _total name; OpenMetrics announces
 *     the bare family name and then requires the suffix on samples;
 *   - HELP text escapes '\' and newline; label values escape '\', '"'
 *     and newline;
 *   - values are printed as integers when integral (so large byte counts
 *     keep every digit), otherwise with 17 significant digits; NaN and
 *     +Inf/-Inf as the formats spell them;
 *   - OpenMetrics ends with "# EOF".
 * Names must match [a-zA-Z_:][a-zA-Z0-9_:]*; a bad name or label name is
 * a programming error and marks the writer failed (ha_expo_failed()).
 */
#ifndef HA_EXPO_H
#define HA_EXPO_H

#include <stdbool.h>

#include "core/buf.h"

enum ha_expo_format {
    HA_EXPO_PROMETHEUS,  /* text/plain; version=0.0.4 */
    HA_EXPO_OPENMETRICS, /* application/openmetrics-text; version=1.0.0 */
};

enum ha_expo_type {
    HA_EXPO_GAUGE,
    HA_EXPO_COUNTER,
};

struct ha_expo {
    struct ha_buf *out;
    enum ha_expo_format format;
    char family[128];         /* the family being written */
    enum ha_expo_type type;
    bool failed;              /* a bad name, or out of memory */
};

/* Starts writing into out (appended to). */
void ha_expo_init(struct ha_expo *e, struct ha_buf *out,
                  enum ha_expo_format format);

/* Announces a family: name without any _total suffix. */
void ha_expo_family(struct ha_expo *e, const char *name,
                    enum ha_expo_type type, const char *help);

/* One sample of the current family. labels: NULL-terminated list of
 * name, value pairs (NULL for none). */
void ha_expo_sample(struct ha_expo *e, const char *const *labels, double v);

/* Shorthand: a family with one unlabelled sample. */
void ha_expo_one(struct ha_expo *e, const char *name, enum ha_expo_type type,
                 const char *help, double v);

/* Ends the exposition (OpenMetrics' "# EOF"). Returns 0, or -1 when the
 * writer failed. */
int ha_expo_finish(struct ha_expo *e);

/* The Content-Type header value for format. */
const char *ha_expo_content_type(enum ha_expo_format format);

/* The format a scraper asks for in its Accept header (NULL: Prometheus
 * text): OpenMetrics when it lists application/openmetrics-text with a
 * q-value above 0, else Prometheus text. */
enum ha_expo_format ha_expo_negotiate(const char *accept);

#endif /* HA_EXPO_H */
