/* SPDX-License-Identifier: MIT
 *
 * /debug/pprof/ and /pprof/ handlers (see pprof.h).
 */
#include "http/pprof.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/maps.h"
#include "prof/pprof.h"
#include "prof/symbolize.h"
#include "prof/symfile.h"
#include "prof/syms.h"
#include "heap/dumptext.h"
#include "heap/profiles.h"

#define SYMBOL_MAX_ADDRS 200000 /* addresses one symbol request may ask */
#define DUMP_TEXT_PIECE (64u << 10) /* bytes of a dump's text read at a
                                       time: a streamed reply holds its
                                       window plus one piece */

/* Reads a /proc file whole (its size is not known in advance). */
static int
read_proc(const char *path, struct ha_buf *out)
{
    char chunk[65536];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    while ((n = read(fd, chunk, sizeof(chunk))) > 0)
        ha_buf_append(out, chunk, (size_t)n);
    close(fd);
    return n < 0 || ha_buf_failed(out) ? -1 : 0;
}

void
ha_http_pprof_cmdline(struct ha_http_req *hr)
{
    struct ha_buf b = HA_BUF_INIT;

    if (read_proc("/proc/self/cmdline", &b) != 0) {
        ha_buf_free(&b);
        ha_http_req_text(hr, 500, "Internal Server Error",
                         "cannot read /proc/self/cmdline\n");
        return;
    }
    ha_buf_append_u8(&b, '\n');
    ha_http_req_body(hr, "text/plain; charset=utf-8", b.data, b.len);
    ha_buf_free(&b);
}

/* ------------------------------------------------------------------
 * Symbols (worker thread)
 * ------------------------------------------------------------------ */

static int
cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

struct symbol_job {
    struct ha_heap *heap;     /* its symbolizer is the worker's */
    struct ha_buf body;          /* the request's addresses */
    struct ha_buf out;
    int code;                    /* 200, or the error's */
    char err[256];
};

/* Parses the addresses, names them in this process's mappings now. */
static void
symbol_run(void *arg)
{
    struct symbol_job *j = arg;
    struct ha_buf maps_text = HA_BUF_INIT;
    struct ha_maps maps = {0};
    struct ha_syms syms = {0};
    struct ha_symbolize_ops ops;
    uint64_t *pcs = malloc((j->body.len / 3 + 1) * sizeof(*pcs));
    size_t n = 0, u = 0;
    char *p, why[256];

    j->code = 500;
    ha_strlcpy(j->err, "out of memory\n", sizeof(j->err));
    if (pcs == NULL)
        return;
    ha_buf_append_u8(&j->body, '\0');
    if (ha_buf_failed(&j->body))
        goto done;
    for (p = (char *)j->body.data; *p;) {
        char *end;
        uint64_t v;

        while (*p == '+' || *p == ' ' || *p == '\n' || *p == '\r' ||
               *p == '\t')
            p++;
        if (*p == '\0')
            break;
        if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X') ||
            (v = strtoull(p + 2, &end, 16), end == p + 2) ||
            (*end != '\0' && *end != '+' && *end != ' ' && *end != '\n' &&
             *end != '\r' && *end != '\t')) {
            j->code = 400;
            ha_strlcpy(j->err,
                       "expected 0x-prefixed hexadecimal addresses joined "
                       "by '+'\n",
                       sizeof(j->err));
            goto done;
        }
        if (n == SYMBOL_MAX_ADDRS) {
            j->code = 413;
            ha_strlcpy(j->err, "at most 200000 addresses per request\n",
                       sizeof(j->err));
            goto done;
        }
        pcs[n++] = v;
        p = end;
    }
    if (n > 1)
        qsort(pcs, n, sizeof(*pcs), cmp_u64);
    for (size_t i = 0; i < n; i++)
        if (u == 0 || pcs[u - 1] != pcs[i])
            pcs[u++] = pcs[i];
    if (read_proc("/proc/self/maps", &maps_text) != 0 ||
        ha_maps_parse((const char *)maps_text.data, maps_text.len, &maps, why,
                      sizeof(why)) != 0) {
        ha_strlcpy(j->err, "cannot read this process's mappings\n",
                   sizeof(j->err));
        goto done;
    }
    if (ha_heap_symbolizer(j->heap) == NULL)
        goto done;
    ops = ha_symbolizer_ops(j->heap->symbolizer);
    if (ops.symbolize(ops.ctx, &maps, pcs, u, &syms, why, sizeof(why)) != 0)
        goto done;
    ha_symfile_symbols(&syms, &j->out);
    if (!ha_buf_failed(&j->out))
        j->code = 200;
done:
    ha_syms_free(&syms);
    ha_maps_free(&maps);
    ha_buf_free(&maps_text);
    free(pcs);
}

static void
symbol_free(void *arg)
{
    struct symbol_job *j = arg;

    ha_buf_free(&j->body);
    ha_buf_free(&j->out);
    free(j);
}

void
ha_http_pprof_symbol(struct ha_http_req *hr)
{
    struct symbol_job *j;

    if (hr->method != EVHTTP_REQ_POST) {
        ha_http_req_text(hr, 200, "OK", "num_symbols: 1\n");
        return;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    j->heap = ha_engine_heap(hr->engine);
    /* Made on the loop before any job uses it (heap/profiles.h). */
    if (ha_heap_symbolizer(j->heap) == NULL) {
        free(j);
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    j->body = hr->body;
    ha_buf_init(&hr->body);
    if (ha_task_offload(symbol_run, symbol_free, j) != 0) {
        ha_http_req_stopped(hr);
        return;
    }
    if (j->code != 200)
        ha_http_req_text(hr, j->code,
                         j->code == 400   ? "Bad Request"
                         : j->code == 413 ? "Payload Too Large"
                                          : "Internal Server Error",
                         j->err);
    else
        ha_http_req_body(hr, "text/plain; charset=utf-8",
                         j->out.len ? (const void *)j->out.data : "",
                         j->out.len);
    symbol_free(j);
}

/* ------------------------------------------------------------------
 * Heap profiles
 * ------------------------------------------------------------------ */

/* Build-ids for pprof's mappings: the file's on disk (read once per file
 * by the symbolizer's cache). Worker thread. */
static const char *
disk_build_id(void *arg, const char *path)
{
    struct ha_heap *heap = arg;

    if (ha_heap_symbolizer(heap) == NULL)
        return NULL;
    return ha_symbolizer_build_id(heap->symbolizer, path);
}

/* The pprof encoding of a profile (and a base), made off the loop and
 * kept with a dump's profile (heap/products.h). */
#define PPROF_PRODUCT "pprof.proto.gz"
#define PPROF_ALLOCS_PRODUCT "pprof.allocs.proto.gz"

struct encode_job {
    struct ha_heap *heap;
    struct ha_heap_profile *pr, *pb; /* references held */
    struct ha_pprof_opts opts;
};

static int
encode_make(void *arg, struct ha_buf *out, char *err, size_t errlen)
{
    struct encode_job *j = arg;
    struct ha_pprof_input in[2];
    size_t n = 1;

    memset(in, 0, sizeof(in));
    in[0].p = &j->pr->p;
    in[0].maps = &j->pr->maps;
    in[0].syms = &j->pr->syms;
    in[0].build_id = disk_build_id;
    in[0].build_id_arg = j->heap;
    in[0].weight = 1;
    if (j->pb != NULL) {
        in[1] = in[0];
        in[1].p = &j->pb->p;
        in[1].maps = &j->pb->maps;
        in[1].syms = &j->pb->syms;
        in[1].weight = -1;
        in[1].wrappers = j->pr->syms.wrappers; /* one cut for both */
        n = 2;
    }
    return ha_pprof_encode_opts(in, n, &j->opts, out, err, errlen);
}

static void
encode_free(void *arg)
{
    struct encode_job *j = arg;

    ha_heap_profile_put(j->pb);
    ha_heap_profile_put(j->pr);
    free(j);
}

static void
reply_pprof(struct ha_http_req *hr, const struct ha_buf *gz)
{
    ha_http_req_add_header(hr, "Content-Disposition",
                           "attachment; filename=\"heap.pb.gz\"");
    ha_http_req_body(hr, "application/octet-stream", gz->data, gz->len);
}

static void
serve_pprof(struct ha_http_req *hr, const char *dump, const char *base,
            int seconds, bool allocs)
{
    struct ha_heap *heap = ha_engine_heap(hr->engine);
    struct ha_heap_profile *pr = NULL, *pb = NULL;
    struct encode_job *j;
    struct ha_product made;
    struct timespec now;
    char err[1024];
    int rc;

    if (seconds > 0)
        rc = ha_heap_profile_delta(heap, seconds, hr->admin, &pr, NULL,
                                   err, sizeof(err));
    else
        rc = ha_heap_profile_get(heap, dump != NULL ? dump : HA_HEAP_LIVE,
                                 hr->admin, &pr, err, sizeof(err));
    if (rc != 0 ||
        (base != NULL && (rc = ha_heap_profile_get(heap, base, hr->admin,
                                                   &pb, err,
                                                   sizeof(err))) != 0)) {
        ha_http_req_heap_failed(hr, rc, err);
        goto out;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        goto out;
    }
    j->heap = heap;
    j->pr = ha_heap_profile_ref(pr);
    j->pb = ha_heap_profile_ref(pb);
    /* A dump's profile is dated when it was written, so its encoding
     * never changes and is kept with the cached profile: a repeated
     * request (a dashboard, pprof -http reloading) costs no encoding. A
     * live profile is dated now. */
    if (pr->live)
        clock_gettime(CLOCK_REALTIME, &now);
    else
        now = pr->mtime;
    j->opts.time_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    /* A delta is dated when its second profile was taken, its window
     * the duration (Go's serveDeltaProfile does the same). */
    if (pr->window_ns > 0) {
        j->opts.time_nanos = pr->taken_ns;
        j->opts.duration_nanos = pr->window_ns;
    }
    j->opts.alloc_default = allocs;
    rc = ha_heap_profile_product(pr,
                                 allocs ? PPROF_ALLOCS_PRODUCT
                                        : PPROF_PRODUCT,
                                 pb == NULL, encode_make, j, encode_free,
                                 &made, err, sizeof(err));
    if (rc == HA_HEAP_STOPPED) {
        ha_http_req_stopped(hr);
    } else if (rc != 0) {
        char msg[1100];

        snprintf(msg, sizeof(msg), "%s\n", err);
        ha_http_req_text(hr, 500, "Internal Server Error", msg);
    } else {
        reply_pprof(hr, made.bytes);
        ha_product_done(&made);
    }
out:
    ha_heap_profile_put(pb);
    ha_heap_profile_put(pr);
}

/* A dump's text as written (checked to parse), streamed from the file a
 * window at a time: the reply holds one piece, never the dump, and a
 * client that stops reading pauses it (request.h). */
static void
serve_dump_text(struct ha_http_req *hr, const char *dump)
{
    struct ha_dump_text *t;
    unsigned long long size, off = 0;
    char err[1024];
    int rc = ha_dump_text_open(ha_engine_heap(hr->engine), dump, &t, &size,
                               err, sizeof(err));

    if (rc != 0) {
        ha_http_req_heap_failed(hr, rc, err);
        return;
    }
    rc = ha_http_req_stream_start(hr, "text/plain; charset=utf-8", size);
    while (rc == 0 && off < size) {
        char *piece;
        size_t len;

        rc = ha_dump_text_read(t, off, DUMP_TEXT_PIECE, &piece, &len, err,
                               sizeof(err));
        if (rc == HA_HEAP_ERROR)
            ha_log_warn("http: %s: %s; the reply is cut short", hr->peer,
                        err);
        if (rc != 0)
            break;
        rc = ha_http_req_stream_give(hr, piece, len);
        off += len;
    }
    ha_http_req_stream_end(hr); /* short of its length: the connection
                                   closes */
    ha_dump_text_close(t);
}

/* jemalloc's text, as written (a dump's, checked to parse), or a fresh
 * one of this process. */
static void
serve_text(struct ha_http_req *hr, const char *dump)
{
    struct ha_heap *heap = ha_engine_heap(hr->engine);
    char *text = NULL, err[1024];
    size_t len = 0;
    int rc;

    if (dump != NULL) {
        serve_dump_text(hr, dump);
        return;
    }
    rc = ha_heap_live_text(heap, &text, &len, err, sizeof(err));
    if (rc != 0) {
        ha_http_req_heap_failed(hr, rc, err);
        return;
    }
    ha_http_req_body(hr, "text/plain; charset=utf-8", text, len);
    free(text);
}

/* The parameters both heap routes take: dump, base, debug, format, and
 * on Go's routes (deltas) seconds (*seconds 0 when absent; jeprof's
 * routes ignore it: jeprof sends ?seconds=30 to /pprof/profile). Returns
 * 0, or -1 once it has answered (malformed, refused). */
static int
heap_params(struct ha_http_req *hr, bool deltas, char **dump, char **base,
            bool *text, int *seconds)
{
    char *debug = NULL, *format = NULL, *secs = NULL, err[256], msg[300];
    int ret = -1;

    *dump = *base = NULL;
    *seconds = 0;
    if (ha_http_req_param(hr, "dump", dump, err, sizeof(err)) < 0 ||
        ha_http_req_param(hr, "base", base, err, sizeof(err)) < 0 ||
        ha_http_req_param(hr, "debug", &debug, err, sizeof(err)) < 0 ||
        ha_http_req_param(hr, "format", &format, err, sizeof(err)) < 0 ||
        (deltas &&
         ha_http_req_param(hr, "seconds", &secs, err, sizeof(err)) < 0)) {
        snprintf(msg, sizeof(msg), "%s\n", err);
        ha_http_req_text(hr, 400, "Bad Request", msg);
        goto out;
    }
    /* Go's delta profile: ?seconds=N, N whole seconds in 1..60. */
    if (secs != NULL) {
        char *end;
        long v = strtol(secs, &end, 10);

        if (secs[0] < '0' || secs[0] > '9' || *end != '\0' || v < 1 ||
            v > HA_HEAP_DELTA_MAX_S) {
            snprintf(msg, sizeof(msg),
                     "seconds: a whole number of seconds from 1 to %d (the "
                     "window of a delta profile)\n",
                     HA_HEAP_DELTA_MAX_S);
            ha_http_req_text(hr, 400, "Bad Request", msg);
            goto out;
        }
        *seconds = (int)v;
    }
    /* "" and "live" (SQL's name for it) both mean this process now. */
    if (*dump != NULL &&
        ((*dump)[0] == '\0' || strcmp(*dump, HA_HEAP_LIVE) == 0)) {
        free(*dump);
        *dump = NULL;
    }
    if (*base != NULL && (*base)[0] == '\0') {
        free(*base);
        *base = NULL;
    }
    if (format != NULL && strcmp(format, "jemalloc") != 0 &&
        strcmp(format, "pprof") != 0) {
        ha_http_req_text(hr, 400, "Bad Request",
                         "format: 'pprof' (gzipped profile.proto) or "
                         "'jemalloc' (heap_v2 text, for jeprof)\n");
        goto out;
    }
    if (debug != NULL && strcmp(debug, "0") != 0 && strcmp(debug, "1") != 0 &&
        strcmp(debug, "2") != 0) {
        ha_http_req_text(hr, 400, "Bad Request",
                         "debug: 0 (gzipped profile.proto), 1 or 2 "
                         "(jemalloc's heap_v2 text)\n");
        goto out;
    }
    if (format != NULL)
        *text = strcmp(format, "jemalloc") == 0;
    else if (debug != NULL)
        *text = strcmp(debug, "0") != 0;
    if (ha_http_req_dump_refused(hr, *dump) ||
        ha_http_req_dump_refused(hr, *base))
        goto out;
    if (*dump == NULL && !hr->admin) {
        ha_http_req_text(hr, 403, "Forbidden",
                         "a live profile needs an admin user; stats users "
                         "may read dumps: ?dump=<file name from "
                         "stats_heap_dumps>\n");
        goto out;
    }
    if (*text && *base != NULL) {
        ha_http_req_text(hr, 400, "Bad Request",
                         "base= needs the pprof format; jeprof subtracts a "
                         "base itself (--base)\n");
        goto out;
    }
    if (*seconds > 0 && (*dump != NULL || *base != NULL || *text)) {
        ha_http_req_text(hr, 400, "Bad Request",
                         "seconds= makes a delta of the live profile, in "
                         "the pprof format: not with dump=, base=, "
                         "debug=1 or format=jemalloc\n");
        goto out;
    }
    ret = 0;
out:
    if (ret != 0) {
        free(*dump);
        free(*base);
        *dump = *base = NULL;
    }
    free(debug);
    free(format);
    free(secs);
    return ret;
}

/* Every heap route: the same parameters and answers. text is the format
 * when neither debug= nor format= names one (jeprof's routes, which take
 * no seconds=); allocs puts the cumulative sample types first in
 * profile.proto (Go's /allocs). */
static void
serve_heap(struct ha_http_req *hr, bool text, bool allocs)
{
    char *dump, *base;
    int seconds;

    if (heap_params(hr, !text, &dump, &base, &text, &seconds) != 0)
        return;
    if (text)
        serve_text(hr, dump);
    else
        serve_pprof(hr, dump, base, seconds, allocs);
    free(dump);
    free(base);
}

void
ha_http_pprof_heap(struct ha_http_req *hr)
{
    serve_heap(hr, false, false); /* Go's convention: profile.proto */
}

void
ha_http_pprof_allocs(struct ha_http_req *hr)
{
    serve_heap(hr, false, true);
}

void
ha_http_jeprof_heap(struct ha_http_req *hr)
{
    serve_heap(hr, true, false); /* jeprof's: jemalloc's heap_v2 text */
}

/* ------------------------------------------------------------------
 * A push's profile (engine/push.h)
 * ------------------------------------------------------------------ */

int
ha_http_pprof_push_encode(void *arg, const char *dump, struct ha_buf *out,
                          char *err, size_t errlen)
{
    struct ha_heap *heap = ha_engine_heap(arg);
    struct ha_heap_profile *pr = NULL;
    struct encode_job *j;
    struct ha_product made;
    struct timespec now;
    int rc;

    /* What /debug/pprof/allocs?dump= serves (serve_pprof's dump path,
     * no base): the same product, kept with the dump's profile, so a
     * pushed dump and a fetched one are the same bytes. */
    if ((rc = ha_heap_profile_get(heap, dump != NULL ? dump : HA_HEAP_LIVE,
                                  true, &pr, err, errlen)) != 0)
        return rc;
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_heap_profile_put(pr);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->heap = heap;
    j->pr = ha_heap_profile_ref(pr);
    if (pr->live)
        clock_gettime(CLOCK_REALTIME, &now);
    else
        now = pr->mtime;
    j->opts.time_nanos = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    j->opts.alloc_default = true;
    rc = ha_heap_profile_product(pr, PPROF_ALLOCS_PRODUCT, true, encode_make,
                                 j, encode_free, &made, err, errlen);
    if (rc == 0) {
        ha_buf_append(out, made.bytes->data, made.bytes->len);
        ha_product_done(&made);
        if (ha_buf_failed(out)) {
            ha_err_set(err, errlen, "out of memory");
            rc = HA_HEAP_ERROR;
        }
    }
    ha_heap_profile_put(pr);
    return rc;
}
