/* SPDX-License-Identifier: MIT
 *
 * Reading Prometheus text expositions back (version 0.0.4, as core/expo.c
 * writes them), so a host gateway can serve the metrics of many
 * processes as one: each process's samples get labels of their own
 * (pid, program) and families of the same name are merged, announced
 * once, then written again through core/expo.h in the format the
 * scraper asked for. Pure: no I/O.
 *
 * What is understood: "# HELP", "# TYPE" (gauge, counter; anything else
 * is read as a gauge), other comments skipped, samples
 * `name{label="value",...} value [timestamp]` with the label value
 * escapes \\, \" and \n. A counter family announced as `x_total` is kept
 * as family `x` (expo.h adds the suffix back as the format wants). The
 * text is from processes of our own, but is handled as untrusted: a
 * malformed line is skipped and counted, never trusted past its end.
 */
#ifndef HA_EXPOSCAN_H
#define HA_EXPOSCAN_H

#include <stddef.h>

#include "core/expo.h"

struct ha_exposcan_sample {
    char **labels;          /* name, value, ..., NULL */
    double v;
};

struct ha_exposcan_family {
    char *name;             /* without a counter's _total */
    enum ha_expo_type type;
    char *help;
    struct ha_exposcan_sample *samples;
    size_t n, cap;
};

struct ha_exposcan {
    struct ha_exposcan_family *families; /* in order of first appearance */
    size_t n, cap;
    size_t skipped;         /* malformed lines */
    int failed;             /* out of memory */
};

#define HA_EXPOSCAN_INIT {NULL, 0, 0, 0, 0}

/* Adds the samples of text (len bytes) to s, each with extra (name,
 * value, ..., NULL; may be NULL) before its own labels. Families already
 * in s get the new samples appended. Returns 0, or -1 when out of
 * memory. */
int ha_exposcan_add(struct ha_exposcan *s, const char *text, size_t len,
                    const char *const *extra);

/* Writes every family of s into e. */
void ha_exposcan_write(const struct ha_exposcan *s, struct ha_expo *e);

void ha_exposcan_free(struct ha_exposcan *s);

#endif /* HA_EXPOSCAN_H */
