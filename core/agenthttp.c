/* SPDX-License-Identifier: MIT
 *
 * Asking the agents of a datadir: one HTTP/1.0 request per connection
 * over their registry sockets (see agenthttp.h).
 */
#include "core/agenthttp.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/util.h"

/* ------------------------------------------------------------------
 * Asking: HTTP/1.0 over the registry sockets
 * ------------------------------------------------------------------ */

struct exchange {
    int fd;
    struct ha_buf out;           /* the request, sent from sent */
    size_t sent;
    struct ha_buf in;            /* the answer as read */
    bool done;
};

/* A Retry-After value of len bytes: 1 to 4 digits, at most 3600 (what
 * the gateway passes on), else -1. */
static int
retry_after(const char *v, size_t len)
{
    int s = 0;

    if (len == 0 || len > 4)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (v[i] < '0' || v[i] > '9')
            return -1;
        s = s * 10 + (v[i] - '0');
    }
    return s <= 3600 ? s : -1;
}

/* Splits a whole answer into status, headers and body. */
static void
parse_reply(struct exchange *x, struct ha_agent_reply *r)
{
    const char *s = (const char *)x->in.data, *eoh, *line, *end;
    size_t len = x->in.len, hdr_len;
    char first[64]; /* the status line, NUL-terminated for sscanf */
    int status = 0;

    if (len == 0) {
        ha_strlcpy(r->err, "closed without an answer", sizeof(r->err));
        return;
    }
    eoh = memmem(s, len, "\r\n\r\n", 4);
    /* The answer has no NUL after it: sscanf on it would look for one
     * past its end (a gateway crashed so under TSan's allocator, which
     * handed back a 10 MB answer's memory). */
    if (eoh != NULL)
        snprintf(first, sizeof(first), "%.*s",
                 (int)((size_t)(eoh - s) < sizeof(first) - 1
                           ? (size_t)(eoh - s) : sizeof(first) - 1), s);
    if (eoh == NULL || sscanf(first, "HTTP/1.%*d %d", &status) != 1) {
        ha_strlcpy(r->err, "not an HTTP answer", sizeof(r->err));
        return;
    }
    hdr_len = (size_t)(eoh - s) + 4;
    for (line = memchr(s, '\n', hdr_len); line != NULL && line < eoh;
         line = end) {
        const char *v;
        size_t n;

        line++;
        end = memchr(line, '\n', (size_t)(eoh + 2 - line));
        if (end == NULL)
            break;
        n = (size_t)(end - line);
        if (n > 0 && line[n - 1] == '\r')
            n--;
        v = memchr(line, ':', n);
        if (v == NULL)
            continue;
        for (v++; v < line + n && *v == ' '; v++) {
        }
        if (strncasecmp(line, "Content-Type:", 13) == 0)
            snprintf(r->content_type, sizeof(r->content_type), "%.*s",
                     (int)(line + n - v), v);
        else if (strncasecmp(line, "Content-Disposition:", 20) == 0)
            snprintf(r->content_disposition,
                     sizeof(r->content_disposition), "%.*s",
                     (int)(line + n - v), v);
        else if (strncasecmp(line, "Retry-After:", 12) == 0)
            r->retry_after_s = retry_after(v, (size_t)(line + n - v));
    }
    ha_buf_append(&r->body, s + hdr_len, len - hdr_len);
    if (ha_buf_failed(&r->body)) {
        ha_buf_free(&r->body);
        ha_strlcpy(r->err, "out of memory", sizeof(r->err));
        return;
    }
    r->status = status;
}

void
ha_agenthttp_get(const struct ha_agent *agents, size_t n, const char *method,
                const char *target, const char *headers,
                const struct ha_buf *body, int timeout_ms, size_t max_body,
                struct ha_agent_reply *replies)
{
    struct exchange *xs = calloc(n ? n : 1, sizeof(*xs));
    struct pollfd *pfd = calloc(n ? n : 1, sizeof(*pfd));
    int64_t deadline = ha_clock_ms() + timeout_ms;
    size_t open_n = 0;

    for (size_t i = 0; i < n; i++) {
        memset(&replies[i], 0, sizeof(replies[i]));
        ha_buf_init(&replies[i].body);
        replies[i].retry_after_s = -1;
    }
    if (xs == NULL || pfd == NULL) {
        for (size_t i = 0; i < n; i++)
            ha_strlcpy(replies[i].err, "out of memory",
                       sizeof(replies[i].err));
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        struct exchange *x = &xs[i];

        x->fd = -1;
        ha_buf_init(&x->out);
        ha_buf_init(&x->in);
        if (agents[i].state != HA_AGENT_SERVING) {
            snprintf(replies[i].err, sizeof(replies[i].err), "%s",
                     agents[i].why[0] ? agents[i].why : "not serving");
            x->done = true;
            continue;
        }
        x->fd = ha_agentreg_connect(&agents[i], replies[i].err,
                                    sizeof(replies[i].err));
        if (x->fd < 0) {
            x->done = true;
            continue;
        }
        ha_buf_printf(&x->out,
                      "%s %s HTTP/1.0\r\nHost: agent\r\nConnection: "
                      "close\r\n%s",
                      method, target, headers != NULL ? headers : "");
        if (body != NULL)
            ha_buf_printf(&x->out, "Content-Length: %zu\r\n", body->len);
        ha_buf_append_str(&x->out, "\r\n");
        if (body != NULL && body->len > 0)
            ha_buf_append(&x->out, body->data, body->len);
        if (ha_buf_failed(&x->out)) {
            ha_strlcpy(replies[i].err, "out of memory",
                       sizeof(replies[i].err));
            close(x->fd);
            x->fd = -1;
            x->done = true;
            continue;
        }
        open_n++;
    }
    while (open_n > 0) {
        int64_t left = deadline - ha_clock_ms();
        size_t k = 0;
        int rc;

        if (left <= 0)
            break;
        for (size_t i = 0; i < n; i++) {
            if (xs[i].done)
                continue;
            pfd[k].fd = xs[i].fd;
            pfd[k].events =
                xs[i].sent < xs[i].out.len ? POLLOUT : POLLIN;
            pfd[k].revents = 0;
            k++;
        }
        rc = poll(pfd, k, (int)left);
        if (rc < 0 && errno == EINTR)
            continue;
        if (rc <= 0)
            break;
        k = 0;
        for (size_t i = 0; i < n; i++) {
            struct exchange *x = &xs[i];
            struct ha_agent_reply *r = &replies[i];
            short ev;

            if (x->done)
                continue;
            ev = pfd[k++].revents;
            if (ev == 0)
                continue;
            if (x->sent < x->out.len) {
                ssize_t w = send(x->fd, x->out.data + x->sent,
                                 x->out.len - x->sent, MSG_NOSIGNAL);

                if (w < 0 && errno != EAGAIN && errno != EINTR) {
                    snprintf(r->err, sizeof(r->err), "send: %s",
                             strerror(errno));
                    x->done = true;
                    open_n--;
                } else if (w > 0) {
                    x->sent += (size_t)w;
                }
                continue;
            }
            for (;;) {
                ssize_t got;

                if (ha_buf_reserve(&x->in, 65536) != 0) {
                    ha_strlcpy(r->err, "out of memory", sizeof(r->err));
                    x->done = true;
                    open_n--;
                    break;
                }
                got = read(x->fd, x->in.data + x->in.len, 65536);
                if (got > 0) {
                    x->in.len += (size_t)got;
                    if (x->in.len > max_body + 16384) { /* body and headers */
                        snprintf(r->err, sizeof(r->err),
                                 "answer larger than %zu bytes", max_body);
                        r->too_large = true;
                        x->done = true;
                        open_n--;
                        /* Closed now: a writer blocked on it is freed
                         * at once, not at the others' deadline. */
                        close(x->fd);
                        x->fd = -1;
                        break;
                    }
                    continue;
                }
                if (got < 0 && (errno == EAGAIN || errno == EINTR))
                    break;
                if (got < 0) {
                    snprintf(r->err, sizeof(r->err), "read: %s",
                             strerror(errno));
                } else {
                    parse_reply(x, r);
                }
                x->done = true;
                open_n--;
                break;
            }
        }
    }
    for (size_t i = 0; i < n; i++) {
        struct exchange *x = &xs[i];

        if (!x->done)
            snprintf(replies[i].err, sizeof(replies[i].err),
                     "no answer within %d ms", timeout_ms);
        if (x->fd >= 0)
            close(x->fd);
        ha_buf_free(&x->out);
        ha_buf_free(&x->in);
    }
out:
    free(xs);
    free(pfd);
}

void
ha_agenthttp_replies_free(struct ha_agent_reply *replies, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ha_buf_free(&replies[i].body);
}

/* ------------------------------------------------------------------
 * Fanning out: every agent of a datadir, or one
 * ------------------------------------------------------------------ */

/* Keeps only pid's entry of list (n entries): its serving one, else
 * its first. Returns how many are left, 0 or 1. */
static size_t
keep_only(struct ha_agent *list, size_t n, pid_t pid)
{
    size_t pick = n;

    for (size_t i = 0; i < n; i++)
        if (list[i].pid == pid &&
            (pick == n || (list[pick].state != HA_AGENT_SERVING &&
                           list[i].state == HA_AGENT_SERVING)))
            pick = i;
    if (pick == n)
        return 0;
    if (pick != 0)
        list[0] = list[pick];
    return 1;
}

int
ha_agenthttp_fan(const char *datadir, pid_t only, const char *role,
                 const char *method, const char *target,
                 const struct ha_buf *body, int timeout_ms, size_t max_body,
                 struct ha_agent_fan *fan, char *err, size_t errlen)
{
    char headers[160];

    memset(fan, 0, sizeof(*fan));
    if (ha_agentreg_list(datadir, &fan->agents, &fan->n, err, errlen) != 0)
        return -1;
    if (only != 0)
        fan->n = keep_only(fan->agents, fan->n, only);
    fan->replies = calloc(fan->n ? fan->n : 1, sizeof(*fan->replies));
    if (fan->replies == NULL) {
        ha_agenthttp_fan_free(fan);
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    snprintf(headers, sizeof(headers),
             "X-Heapadmin-Role: %.64s\r\nAccept: text/plain\r\n", role);
    ha_agenthttp_get(fan->agents, fan->n, method, target, headers, body,
                     timeout_ms, max_body, fan->replies);
    return 0;
}

void
ha_agenthttp_fan_free(struct ha_agent_fan *fan)
{
    if (fan->replies != NULL)
        ha_agenthttp_replies_free(fan->replies, fan->n);
    free(fan->replies);
    free(fan->agents);
    memset(fan, 0, sizeof(*fan));
}
