/* SPDX-License-Identifier: MIT
 *
 * /debug/pprof/ routes (see pprof.h).
 */
#include "http/pprof.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "prof/maps.h"
#include "prof/pprof.h"
#include "prof/symbolize.h"
#include "prof/symfile.h"
#include "prof/syms.h"
#include "http/reply.h"
#include "vtab/heap_load.h"

#define SYMBOL_MAX_ADDRS 200000 /* addresses one symbol request may ask */

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

static void
serve_cmdline(struct evhttp_request *req)
{
    struct ha_buf b = HA_BUF_INIT;

    if (read_proc("/proc/self/cmdline", &b) != 0) {
        ha_buf_free(&b);
        ha_http_reply_text(req, 500, "Internal Server Error",
                           "cannot read /proc/self/cmdline\n");
        return;
    }
    ha_buf_append_u8(&b, '\n');
    ha_http_reply_body(req, "text/plain; charset=utf-8", b.data, b.len);
    ha_buf_free(&b);
}

static int
cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

/* Names each address of the POST body (gperftools' symbol protocol). */
static void
serve_symbol(struct evhttp_request *req, struct ha_vtab_ctx *ctx)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in), n = 0, u = 0;
    char *body = NULL, *p, why[256];
    uint64_t *pcs = NULL;
    struct ha_buf maps_text = HA_BUF_INIT, out = HA_BUF_INIT;
    struct ha_maps maps = {0};
    struct ha_syms syms = {0};
    struct ha_symbolize_ops ops;

    if (evhttp_request_get_command(req) != EVHTTP_REQ_POST) {
        ha_http_reply_text(req, 200, "OK", "num_symbols: 1\n");
        return;
    }
    body = malloc(len + 1);
    pcs = malloc((len / 3 + 1) * sizeof(*pcs));
    if (body == NULL || pcs == NULL)
        goto oom;
    evbuffer_remove(in, body, len);
    body[len] = '\0';
    for (p = body; *p;) {
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
            ha_http_reply_text(req, 400, "Bad Request",
                               "expected 0x-prefixed hexadecimal addresses "
                               "joined by '+'\n");
            goto done;
        }
        if (n == SYMBOL_MAX_ADDRS) {
            ha_http_reply_text(req, 413, "Payload Too Large",
                               "at most 200000 addresses per request\n");
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
        ha_http_reply_text(req, 500, "Internal Server Error",
                           "cannot read this process's mappings\n");
        goto done;
    }
    if (ha_heap_symbolizer(ctx) == NULL)
        goto oom;
    ops = ha_symbolizer_ops(ctx->symbolizer);
    if (ops.symbolize(ops.ctx, &maps, pcs, u, &syms, why, sizeof(why)) != 0)
        goto oom;
    ha_symfile_symbols(&syms, &out);
    if (ha_buf_failed(&out))
        goto oom;
    ha_http_reply_body(req, "text/plain; charset=utf-8",
                       out.len ? (const void *)out.data : "", out.len);
    goto done;
oom:
    ha_http_reply_text(req, 500, "Internal Server Error", "out of memory\n");
done:
    ha_syms_free(&syms);
    ha_maps_free(&maps);
    ha_buf_free(&maps_text);
    ha_buf_free(&out);
    free(pcs);
    free(body);
}

/* jeprof's fetchers: curl and wget. */
static bool
wants_jemalloc_text(struct evhttp_request *req, const char *format)
{
    const char *ua;

    if (format != NULL)
        return strcmp(format, "jemalloc") == 0;
    ua = evhttp_find_header(evhttp_request_get_input_headers(req),
                            "User-Agent");
    return ua != NULL &&
           (strncasecmp(ua, "curl/", 5) == 0 || strncasecmp(ua, "Wget/", 5) == 0);
}

/* Build-ids for pprof's mappings: the file's on disk (read once per file
 * by the symbolizer's cache). A module whose recorded build-id differs
 * has its addresses unnamed already (heap_load.h). */
static const char *
disk_build_id(void *arg, const char *path)
{
    return ha_symbolizer_build_id(arg, path);
}

static void
reply_pprof(struct evhttp_request *req, const struct ha_buf *gz)
{
    evhttp_add_header(evhttp_request_get_output_headers(req),
                      "Content-Disposition",
                      "attachment; filename=\"heap.pb.gz\"");
    ha_http_reply_body(req, "application/octet-stream", gz->data, gz->len);
}

static void
serve_pprof(struct evhttp_request *req, struct ha_vtab_ctx *ctx, bool admin,
            const char *dump, const char *base)
{
    struct ha_heap_profile *pr = NULL, *pb = NULL;
    struct ha_pprof_input in[2];
    struct ha_buf out = HA_BUF_INIT;
    struct timespec now;
    char err[1024];
    size_t n = 1;

    if (ha_heap_profile_get(ctx, dump != NULL ? dump : HA_HEAP_LIVE, admin,
                            &pr, err, sizeof(err)) != 0 ||
        (base != NULL && ha_heap_profile_get(ctx, base, admin, &pb, err,
                                             sizeof(err)) != 0)) {
        size_t at = strlen(err);

        snprintf(err + at, sizeof(err) - at, "\n");
        ha_http_reply_text(req, 404, "Not Found", err);
        goto done;
    }
    memset(in, 0, sizeof(in));
    in[0].p = &pr->p;
    in[0].maps = &pr->maps;
    in[0].syms = &pr->syms;
    in[0].build_id = disk_build_id;
    in[0].build_id_arg = ctx->symbolizer;
    in[0].weight = 1;
    if (pb != NULL) {
        in[1] = in[0];
        in[1].p = &pb->p;
        in[1].maps = &pb->maps;
        in[1].syms = &pb->syms;
        in[1].weight = -1;
        n = 2;
    }
    /* A dump's profile is dated when it was written, so its encoding
     * never changes and is kept with the cached profile: a repeated
     * request (a dashboard, pprof -http reloading) costs no encoding,
     * and nothing that holds the event loop. A live profile is dated
     * now. */
    if (pr->live)
        clock_gettime(CLOCK_REALTIME, &now);
    else
        now = pr->mtime;
    if (pb == NULL && !pr->live && pr->encoded.len > 0) {
        reply_pprof(req, &pr->encoded);
        goto done;
    }
    if (ha_pprof_encode(in, n,
                        (int64_t)now.tv_sec * 1000000000 + now.tv_nsec,
                        &out, err, sizeof(err)) != 0) {
        ha_http_reply_text(req, 500, "Internal Server Error", err);
        goto done;
    }
    reply_pprof(req, &out);
    if (pb == NULL && !pr->live) {
        pr->encoded = out; /* the profile owns it now */
        out = (struct ha_buf)HA_BUF_INIT;
        ha_heap_profile_account(pr);
    }
done:
    ha_buf_free(&out);
    ha_heap_profile_put(pb);
    ha_heap_profile_put(pr);
}

static void
serve_heap(struct evhttp_request *req, struct ha_vtab_ctx *ctx, bool admin)
{
    char *dump = ha_http_query(req, "dump"), *base = ha_http_query(req, "base");
    char *format = ha_http_query(req, "format"), *text = NULL, err[1024];
    size_t len = 0;
    struct stat st;

    if (format != NULL && strcmp(format, "jemalloc") != 0 &&
        strcmp(format, "pprof") != 0) {
        ha_http_reply_text(req, 400, "Bad Request",
                           "format: 'pprof' (gzipped profile.proto) or "
                           "'jemalloc' (heap_v2 text, for jeprof)\n");
        goto done;
    }
    if (dump == NULL && !admin) {
        ha_http_reply_text(req, 403, "Forbidden",
                           "a live profile needs an admin user; stats users "
                           "may read dumps: ?dump=<file name from "
                           "stats_heap_dumps>\n");
        goto done;
    }
    if (wants_jemalloc_text(req, format)) {
        if (base != NULL) {
            ha_http_reply_text(req, 400, "Bad Request",
                               "base= needs format=pprof; jeprof subtracts "
                               "a base itself (--base)\n");
            goto done;
        }
        if (dump != NULL
                ? (!ha_heap_plain_name(dump, err, sizeof(err)) ||
                   ha_heap_read_file(ctx->datadir, dump, &text, &len, &st,
                                     err, sizeof(err)) != 0)
                : ha_heap_live_text(ctx, &text, &len, err, sizeof(err)) !=
                      0) {
            size_t at = strlen(err);

            snprintf(err + at, sizeof(err) - at, "\n");
            ha_http_reply_text(req, dump != NULL ? 404 : 500,
                               dump != NULL ? "Not Found"
                                            : "Internal Server Error",
                               err);
            goto done;
        }
        ha_http_reply_body(req, "text/plain; charset=utf-8", text, len);
        goto done;
    }
    serve_pprof(req, ctx, admin, dump, base);
done:
    free(text);
    free(dump);
    free(base);
    free(format);
}

bool
ha_http_pprof(struct evhttp_request *req, struct ha_vtab_ctx *ctx,
              bool admin)
{
    const char *path = ha_http_path(req);

    if (path == NULL || strncmp(path, "/debug/pprof/", 13) != 0)
        return false;
    path += 13;
    if (strcmp(path, "heap") == 0 || strcmp(path, "allocs") == 0)
        serve_heap(req, ctx, admin);
    else if (strcmp(path, "symbol") == 0)
        serve_symbol(req, ctx);
    else if (strcmp(path, "cmdline") == 0)
        serve_cmdline(req);
    else
        return false;
    return true;
}
