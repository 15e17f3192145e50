/* SPDX-License-Identifier: MIT
 *
 * The push outbox's entries sent (push thread): an entry read and its
 * header parsed, the request built for its target (Pyroscope's /ingest
 * or Parca's /profiles/writeraw, the labels, the Idempotency-Key, the
 * tenant and the credentials) and posted through pushhttp.c; what the
 * receiver said decides whether the entry goes or waits.
 */
#include "engine/push_int.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/pushhttp.h"
#include "prof/pushwire.h"

#define ENTRY_HEADER_MAX 4096 /* an outbox entry's header */
#define ENTRY_MAX ((size_t)1 << 30)

/* ------------------------------------------------------------------
 * Deliver (push thread)
 * ------------------------------------------------------------------ */

struct entry {
    char dump[256], kind[32], reason[256], service[64], program[64], host[65],
        build_id[48];
    int64_t taken;
    const uint8_t *body;
    size_t len;
};

/* Parses an entry file's header; e->body points into buf. */
static int
parse_entry(const uint8_t *buf, size_t n, struct entry *e)
{
    const char *p = (const char *)buf,
               *end = p + (n < ENTRY_HEADER_MAX ? n : ENTRY_HEADER_MAX);
    size_t bytes = 0;
    bool first = true;

    memset(e, 0, sizeof(*e));
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *sp;
        size_t k, v;
        char *field = NULL;
        size_t size = 0;

        if (eol == NULL)
            return -1;
        if (eol == p) {
            p++;
            break;
        }
        if (first) {
            if ((size_t)(eol - p) != 16 || memcmp(p, "heapadmin-push 1", 16))
                return -1;
            first = false;
            p = eol + 1;
            continue;
        }
        sp = memchr(p, ' ', (size_t)(eol - p));
        k = sp != NULL ? (size_t)(sp - p) : (size_t)(eol - p);
        v = sp != NULL ? (size_t)(eol - sp - 1) : 0;
#define F(name, dst)                                                           \
    if (k == strlen(name) && memcmp(p, name, k) == 0) {                        \
        field = dst;                                                           \
        size = sizeof(dst);                                                    \
    }
        F("dump", e->dump)
        F("kind", e->kind)
        F("reason", e->reason)
        F("service_name", e->service)
        F("program", e->program)
        F("host", e->host)
        F("build_id", e->build_id)
#undef F
        if (field != NULL) {
            if (v >= size)
                v = size - 1;
            memcpy(field, sp + 1, v);
            field[v] = '\0';
        } else if (k == 5 && memcmp(p, "taken", 5) == 0 && sp != NULL) {
            e->taken = strtoll(sp + 1, NULL, 10);
        } else if (k == 5 && memcmp(p, "bytes", 5) == 0 && sp != NULL) {
            bytes = (size_t)strtoull(sp + 1, NULL, 10);
        }
        p = eol + 1;
    }
    if (first || e->dump[0] == '\0' ||
        bytes != n - (size_t)(p - (const char *)buf))
        return -1;
    e->body = (const uint8_t *)p;
    e->len = bytes;
    return 0;
}

static int
read_file(const char *path, struct ha_buf *out)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size > ENTRY_MAX) {
        close(fd);
        return -1;
    }
    for (;;) {
        uint8_t chunk[65536];

        n = read(fd, chunk, sizeof(chunk));
        if (n <= 0)
            break;
        ha_buf_append(out, chunk, (size_t)n);
    }
    close(fd);
    return n < 0 || ha_buf_failed(out) ? -1 : 0;
}

/* One entry to target t. Returns 0 sent, 1 refused for good, -1 to be
 * tried again (res says why). */
static int
send_entry(const struct push_conf *c, size_t t, const struct entry *e,
           struct ha_pushhttp_res *res)
{
    const struct ha_push_target *pt = &c->targets[t];
    struct ha_pushwire_label labels[8];
    struct ha_buf url = HA_BUF_INIT, body = HA_BUF_INIT, auth = HA_BUF_INIT;
    char ctype[160], boundary[96], tenant[200], key[300], authz[2200];
    const char *headers[6];
    size_t n = 0, h = 0;
    int rc;

    if (pt->type == HA_PUSH_PARCA)
        labels[n++] = (struct ha_pushwire_label){"__name__", "memory"};
    if (pt->type == HA_PUSH_PARCA)
        labels[n++] = (struct ha_pushwire_label){"service_name", e->service};
    labels[n++] = (struct ha_pushwire_label){"program", e->program};
    labels[n++] = (struct ha_pushwire_label){"host", e->host};
    if (e->build_id[0] != '\0')
        labels[n++] = (struct ha_pushwire_label){"build_id", e->build_id};
    labels[n++] = (struct ha_pushwire_label){"kind", e->kind};
    if (e->reason[0] != '\0')
        labels[n++] = (struct ha_pushwire_label){"reason", e->reason};
    if (pt->type == HA_PUSH_PYROSCOPE) {
        ha_pushwire_pyroscope_url(pt->url, e->service, labels, n, e->taken,
                                  e->taken + 1, &url);
        ha_pushwire_boundary(e->body, e->len,
                             (uint64_t)ha_clock_ns() ^ (uint64_t)c->pid,
                             boundary, sizeof(boundary));
        ha_pushwire_multipart(boundary, e->body, e->len, &body);
        snprintf(ctype, sizeof(ctype),
                 "Content-Type: multipart/form-data; boundary=%s", boundary);
    } else {
        ha_buf_printf(&url, "%s/profiles/writeraw", pt->url);
        ha_pushwire_parca_json(labels, n, e->body, e->len, &body);
        ha_strlcpy(ctype, "Content-Type: application/json", sizeof(ctype));
    }
    headers[h++] = ctype;
    snprintf(key, sizeof(key), "Idempotency-Key: %s", e->dump);
    headers[h++] = key;
    if (pt->tenant[0] != '\0') {
        snprintf(tenant, sizeof(tenant), "X-Scope-OrgID: %s", pt->tenant);
        headers[h++] = tenant;
    }
    if (pt->basic_auth[0] != '\0') {
        ha_pushwire_base64(pt->basic_auth, strlen(pt->basic_auth), &auth);
        ha_buf_append_u8(&auth, 0);
        snprintf(authz, sizeof(authz), "Authorization: Basic %s",
                 ha_buf_failed(&auth) ? "" : (const char *)auth.data);
        headers[h++] = authz;
    } else if (pt->bearer_token[0] != '\0') {
        snprintf(authz, sizeof(authz), "Authorization: Bearer %s",
                 pt->bearer_token);
        headers[h++] = authz;
    }
    headers[h] = NULL;
    ha_buf_append_u8(&url, 0);
    if (ha_buf_failed(&url) || ha_buf_failed(&body)) {
        memset(res, 0, sizeof(*res));
        ha_strlcpy(res->err, "out of memory", sizeof(res->err));
        rc = -1;
    } else {
        struct ha_pushhttp_req req = {
            .url = (const char *)url.data,
            .headers = headers,
            .body = body.data,
            .len = body.len,
            .timeout_s = c->timeout_s,
        };

        rc = ha_pushhttp_post(&req, res);
        if (rc != 0 && !ha_pushhttp_retryable(res->status))
            rc = 1;
    }
    memset(authz, 0, sizeof(authz));
    ha_buf_free(&auth);
    ha_buf_free(&url);
    ha_buf_free(&body);
    return rc;
}

void
ha_push_send_run(struct pjob *j)
{
    const struct push_conf *c = j->conf;
    struct body *v;
    size_t n = ha_push_outbox_list(c, false, &v);
    bool stop[HA_PUSH_TARGETS_MAX] = {false};

    for (size_t i = 0; i < n; i++) {
        int t = v[i].target;
        struct ha_buf buf = HA_BUF_INIT;
        struct ha_pushhttp_res res;
        struct entry e;
        char path[PATH_MAX + 600];
        int rc;

        if (t < 0 || stop[t] || (j->due & (1u << t)) == 0 || v[i].pid != c->pid)
            continue;
        snprintf(path, sizeof(path), "%s/%s", c->outbox, v[i].file);
        if (read_file(path, &buf) != 0 ||
            parse_entry(buf.data, buf.len, &e) != 0) {
            ha_log_warn("push: %s is not an outbox entry heapadmin can "
                        "read; removed",
                        v[i].file);
            (void)unlink(path);
            ha_buf_free(&buf);
            continue;
        }
        j->out[t].attempted = true;
        rc = send_entry(c, (size_t)t, &e, &res);
        if (rc == 0) {
            (void)unlink(path);
            j->out[t].ok = true;
            j->out[t].sent++;
            j->out[t].sent_bytes += (long long)e.len;
        } else if (rc > 0) {
            (void)unlink(path);
            j->out[t].failed++;
            j->out[t].dropped++;
            ha_strlcpy(j->out[t].err, res.err, sizeof(j->out[t].err));
            ha_log_warn("push: %s refused %s for good (%s); removed from "
                        "the outbox",
                        c->targets[t].url, e.dump, res.err);
        } else {
            j->out[t].failed++;
            j->out[t].failed_now = true;
            ha_strlcpy(j->out[t].err, res.err, sizeof(j->out[t].err));
            stop[t] = true;
        }
        ha_buf_free(&buf);
    }
    free(v);
    ha_push_outbox_count(c, j->out);
}
