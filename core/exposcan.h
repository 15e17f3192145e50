/* SPDX-License-Identifier: MIT
 *
 * Reading Prometheus text expositions back (version 0.0.4, as core/expo.c
 * writes them), so a host gateway can serve the metrics of many
 * processes as one. Pure: no I/O.
 *
 * What an agent answers is untrusted (any process of a served user can
 * listen under an agent's name), so nothing is copied through: each
 * sample is parsed, checked against a policy and re-emitted by
 * core/expo.c in the format the scraper asked for:
 *   - only the policy's families (a fixed list), each with the type,
 *     HELP and label names the policy gives; the text's own "# HELP" and
 *     "# TYPE" lines are ignored, so one HELP/TYPE per family whatever
 *     the agents say;
 *   - the labels the caller sets (`extra`: pid, program) come first; an
 *     agent's own label of a name the policy reserves (pid, program,
 *     user) is renamed exported_<name>, as Prometheus does when
 *     honor_labels is false, unless it has the value the caller knows
 *     for it (`expect`; by default the caller's own labels): then it
 *     is dropped, having said nothing new (an agent's
 *     heapadmin_build_info{program} under the gateway's program);
 *   - label names valid and not repeated, values valid UTF-8 with only
 *     the escapes \\, \" and \n;
 *   - values that parse as a finite number (a counter's never negative);
 *     timestamps are dropped;
 *   - no series twice, and at most max_series series and max_bytes bytes
 *     from one text.
 * What is refused is counted by reason (ha_exposcan_report), never
 * silently dropped.
 */
#ifndef HA_EXPOSCAN_H
#define HA_EXPOSCAN_H

#include <stddef.h>

#include "core/expo.h"

/* One family a gateway accepts. */
struct ha_exposcan_rule {
    const char *name;       /* family name, without a counter's _total */
    enum ha_expo_type type;
    const char *labels;     /* its own label names, space-separated; ""
                               for none */
    const char *help;
};

struct ha_exposcan_policy {
    const struct ha_exposcan_rule *rules;
    size_t n_rules;
    const char *reserved;   /* label names the caller sets, space-
                               separated: a text's own label of one of
                               these names is renamed exported_<name> */
    size_t max_series;      /* per text (ha_exposcan_add call) */
    size_t max_bytes;       /* per text: a longer one is refused whole */
};

/* Why a sample was refused (the "reason" label of
 * heapadmin_gateway_refused_samples_total). */
enum ha_exposcan_refusal {
    HA_EXPOSCAN_MALFORMED,  /* "malformed": the line does not parse */
    HA_EXPOSCAN_FAMILY,     /* "family": not one of the policy's families,
                               or a sample name its type does not have */
    HA_EXPOSCAN_LABEL,      /* "label": a label the family does not have */
    HA_EXPOSCAN_DUP_LABEL,  /* "duplicate_label" */
    HA_EXPOSCAN_DUP_SERIES, /* "duplicate_series": the same labels twice */
    HA_EXPOSCAN_VALUE,      /* "value": NaN, an infinity, or a negative
                               counter */
    HA_EXPOSCAN_SERIES_CAP, /* "series_limit": past max_series */
    HA_EXPOSCAN_BYTES_CAP,  /* "bytes_limit": the whole text, counted as
                               one */
    HA_EXPOSCAN_REFUSAL_MAX
};

/* What one ha_exposcan_add made of a text. */
struct ha_exposcan_report {
    size_t accepted;        /* samples kept */
    size_t renamed;         /* ... of which had a label renamed
                               exported_<name> */
    size_t refused[HA_EXPOSCAN_REFUSAL_MAX];
};

struct ha_exposcan_sample {
    char **labels;          /* name, value, ..., NULL */
    double v;
    unsigned text;          /* which ha_exposcan_add it came from */
};

struct ha_exposcan_family {
    const struct ha_exposcan_rule *rule;
    struct ha_exposcan_sample *samples;
    size_t n, cap;
};

struct ha_exposcan {
    const struct ha_exposcan_policy *policy;
    struct ha_exposcan_family *families; /* in order of first appearance */
    size_t n, cap;
    unsigned texts;         /* ha_exposcan_add calls so far */
    int failed;             /* out of memory */
};

/* Starts a merge under policy (which must outlive s). */
void ha_exposcan_init(struct ha_exposcan *s,
                      const struct ha_exposcan_policy *policy);

/* Adds the samples of text (len bytes) to s, each with extra (name,
 * value, ..., NULL; may be NULL) before its own labels. report (may be
 * NULL) gets what was kept and refused. Returns 0, or -1 when out of
 * memory. */
int ha_exposcan_add(struct ha_exposcan *s, const char *text, size_t len,
                    const char *const *extra,
                    struct ha_exposcan_report *report);

/* ha_exposcan_add, with the labels whose values the caller knows
 * (expect: name, value, ..., NULL; may be NULL) apart from those it
 * sets: a sample's label of such a name is dropped when it has that
 * value, renamed exported_<name> otherwise. ha_exposcan_add expects its
 * extra. For a scrape of one process whose target labels (Prometheus')
 * say its program: extra NULL, expect program. */
int ha_exposcan_add_expect(struct ha_exposcan *s, const char *text,
                           size_t len, const char *const *extra,
                           const char *const *expect,
                           struct ha_exposcan_report *report);

/* Writes every family of s into e. */
void ha_exposcan_write(const struct ha_exposcan *s, struct ha_expo *e);

void ha_exposcan_free(struct ha_exposcan *s);

/* The reason's label value ("malformed", "family", ...). */
const char *ha_exposcan_refusal_name(enum ha_exposcan_refusal r);

#endif /* HA_EXPOSCAN_H */
