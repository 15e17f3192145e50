/* SPDX-License-Identifier: MIT
 *
 * A published lifetime log read with its side files (see logfile.h).
 */
#include "heap/logfile.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"
#include "prof/dumpfile.h"
#include "prof/traces.h"

/* Reads "<name><suffix>" of kind from datadir; NULL when missing. */
static char *
side_file(const char *datadir, const char *name, const char *suffix,
          enum ha_dumpfile_kind kind, size_t *len)
{
    char side[NAME_MAX + 16], *buf = NULL;
    struct stat st;

    if ((size_t)snprintf(side, sizeof(side), "%s%s", name, suffix) >=
            sizeof(side) ||
        ha_dumpfile_read(datadir, side, kind, &buf, len, &st, NULL, 0) != 0)
        return NULL;
    return buf;
}

int
ha_logfile_parse(const char *datadir, const char *name, const char *buf,
                 size_t len, struct ha_logfile *out, struct ha_heapv2 *p,
                 char *err, size_t errlen)
{
    struct ha_proflog *log = &out->log;
    double *objs = NULL, *bytes = NULL;
    char *maps = NULL, *win = NULL, why[256];
    size_t maps_len = 0, win_len = 0;
    uint64_t period;
    int ret = -1;

    memset(out, 0, sizeof(*out));
    if (ha_proflog_parse(buf, len, log, err, errlen) != 0)
        return -1;
    period = ha_proflog_period(log);
    objs = calloc(log->traces.n ? log->traces.n : 1, sizeof(*objs));
    bytes = calloc(log->traces.n ? log->traces.n : 1, sizeof(*bytes));
    if (objs == NULL || bytes == NULL)
        goto oom;
    for (size_t i = 0; i < log->n_allocs; i++) {
        const struct ha_proflog_alloc *a = &log->allocs[i];
        double w = ha_proflog_weight(period, a->usize);

        objs[a->alloc_trace] += w;
        bytes[a->alloc_trace] += w * (double)a->usize;
    }
    maps = side_file(datadir, name, ".maps", HA_DUMPFILE_LOG_MAPS,
                     &maps_len);
    if (ha_traces_as_heapv2(&log->traces, objs, bytes, period,
                            maps != NULL ? maps : "", maps_len, p) != 0)
        goto oom;
    win = side_file(datadir, name, ".window", HA_DUMPFILE_LOG_WINDOW,
                    &win_len);
    if (win != NULL && ha_proflog_window_parse(win, win_len, &out->window,
                                               why, sizeof(why)) == 0)
        out->has_window = true;
    ret = 0;
    goto out;
oom:
    ha_err_set(err, errlen, "out of memory");
    ha_logfile_free(out);
out:
    free(objs);
    free(bytes);
    free(maps);
    free(win);
    return ret;
}

size_t
ha_logfile_bytes(const struct ha_logfile *f)
{
    const struct ha_proflog *log = &f->log;
    size_t b = sizeof(*f) + log->n_allocs * sizeof(*log->allocs) +
               log->n_threads * sizeof(*log->threads) + log->names.buf.cap +
               log->traces.cap_frames * 8 + log->traces.cap * 8 +
               log->traces.index_cap * 4;

    for (int k = 0; k < 2; k++)
        if (f->life[k] != NULL)
            b += sizeof(*f->life[k]) +
                 f->life[k]->n_rows * sizeof(*f->life[k]->rows) +
                 f->life[k]->names.buf.cap + f->life[k]->names.n_slots * 4;
    return b;
}

void
ha_logfile_free(struct ha_logfile *f)
{
    if (f == NULL)
        return;
    ha_proflog_free(&f->log);
    for (int k = 0; k < 2; k++)
        if (f->life[k] != NULL) {
            ha_lifetimes_free(f->life[k]);
            free(f->life[k]);
        }
    memset(f, 0, sizeof(*f));
}
