/* SPDX-License-Identifier: MIT
 *
 * The host gateway's /metrics and ?pid=N, and every process's /agent
 * (see gateway.h).
 */
#include "http/gateway.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/agenthttp.h"
#include "core/agentnote.h"
#include "core/agentreg.h"
#include "core/buf.h"
#include "core/expo.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "engine/hostmetrics.h"
#include "engine/metrics.h"
#include "http/paths.h"
#include "heap/mallctl.h"

#define METRICS_TIMEOUT_MS 3000   /* all agents together, per scrape */
#define PROXY_MAX_BODY ((size_t)512 << 20)
#define PROXY_TIMEOUT_MS 60000    /* when max_execution_time is 0 */

/* ------------------------------------------------------------------
 * Asking the agents (worker thread)
 * ------------------------------------------------------------------ */

struct ask_job {
    char datadir[4096];
    pid_t only;                    /* 0: every agent; else this one */
    char method[8];
    char target[8192];
    char role[16];                 /* the caller's (X-Heapadmin-Role) */
    struct ha_buf body;            /* a POST's, or empty */
    int timeout_ms;
    size_t max_body;
    struct ha_agent_fan fan;       /* as listed, with their answers */
    char err[512];
};

static void
ask_run(void *arg)
{
    struct ask_job *j = arg;

    (void)ha_agenthttp_fan(j->datadir, j->only, j->role, j->method,
                           j->target,
                           j->body.len > 0 || strcmp(j->method, "POST") == 0
                               ? &j->body
                               : NULL,
                           j->timeout_ms, j->max_body, &j->fan, j->err,
                           sizeof(j->err));
}

static void
ask_free(void *arg)
{
    struct ask_job *j = arg;

    ha_agenthttp_fan_free(&j->fan);
    ha_buf_free(&j->body);
    free(j);
}

static struct ask_job *
ask_new(struct ha_http_req *hr, const char *method, const char *target,
        int timeout_ms, size_t max_body)
{
    struct ask_job *j = calloc(1, sizeof(*j));

    if (j == NULL)
        return NULL;
    ha_strlcpy(j->datadir, ha_engine_datadir(hr->engine), sizeof(j->datadir));
    ha_strlcpy(j->method, method, sizeof(j->method));
    ha_strlcpy(j->target, target, sizeof(j->target));
    ha_strlcpy(j->role, ha_credentials_role_name(hr->user->role),
               sizeof(j->role));
    ha_buf_init(&j->body);
    j->timeout_ms = timeout_ms;
    j->max_body = max_body;
    return j;
}

/* ------------------------------------------------------------------
 * /metrics
 * ------------------------------------------------------------------ */

/* This process's own exposition, in Prometheus text. */
static int
own_metrics(struct ha_http_req *hr, struct ha_buf *out)
{
    struct ha_admin_counters c;

    ha_admin_counters_of(ha_engine_clients(hr->engine), true, &c);
    c.proxysql_names = false;
    return ha_admin_metrics(ha_engine_heap(hr->engine), &c,
                            HA_EXPO_PROMETHEUS, out);
}

/* How long a scrape waits for its agents: METRICS_TIMEOUT_MS, or less
 * when the scraper says it gives up sooner (Prometheus sends its scrape
 * timeout): an answer after the scraper left helps no one, and the
 * worker thread it holds is the gateway's only one. */
static int
metrics_timeout_ms(const struct ha_http_req *hr)
{
    const char *t = ha_http_req_header(hr, "X-Prometheus-Scrape-Timeout-Seconds");
    double s = t != NULL ? strtod(t, NULL) : 0;
    int ms = s > 0 ? (int)(s * 800) : METRICS_TIMEOUT_MS;

    if (ms > METRICS_TIMEOUT_MS)
        ms = METRICS_TIMEOUT_MS;
    return ms < 100 ? 100 : ms;
}

/* /metrics?pid=N: process N's alone, as a target of /sd. */
static void
metrics_of(struct ha_http_req *hr, long pid, enum ha_expo_format fmt)
{
    const struct ha_config *cfg = ha_engine_config(hr->engine);
    struct ha_buf out = HA_BUF_INIT;
    char err[512], msg[600];
    int rc = ha_hostmetrics_collect_one(
        ha_engine_hostmetrics(hr->engine), ha_engine_datadir(hr->engine),
        pid, cfg->services, cfg->n_services, fmt, metrics_timeout_ms(hr),
        &out, err, sizeof(err));

    if (rc != 0 && ha_task_stopped(ha_task_current()) != HA_TASK_GO) {
        ha_http_req_stopped(hr);
    } else if (rc != 0) {
        snprintf(msg, sizeof(msg), "%s\n", err);
        ha_http_req_text(hr, rc == -2 ? 404 : 502,
                         rc == -2 ? "Not Found" : "Bad Gateway", msg);
    } else {
        ha_http_req_body(hr, ha_expo_content_type(fmt), out.data, out.len);
    }
    ha_buf_free(&out);
}

void
ha_gateway_metrics(struct ha_http_req *hr)
{
    enum ha_expo_format fmt =
        ha_expo_negotiate(ha_http_req_header(hr, "Accept"));
    struct ha_buf own = HA_BUF_INIT, out = HA_BUF_INIT;
    char err[512], msg[600], *val = NULL;
    int rc = ha_http_req_param(hr, "pid", &val, err, sizeof(err));

    if (rc != 0) {
        long pid = rc > 0 ? ha_http_parse_pid(val, strlen(val)) : 0;

        free(val);
        if (pid == 0) {
            ha_http_req_text(hr, 400, "Bad Request",
                             "pid: the decimal pid of a process in "
                             "stats_agents (digits only, no sign, no "
                             "leading zero)\n");
            return;
        }
        if (pid != (long)getpid()) {
            metrics_of(hr, pid, fmt);
            return;
        }
    }

    if (own_metrics(hr, &own) != 0) {
        ha_buf_free(&own);
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    if (ha_hostmetrics_collect(ha_engine_hostmetrics(hr->engine),
                               ha_engine_datadir(hr->engine),
                               (const char *)own.data, own.len,
                               (long)getpid(), ha_engine_program(hr->engine),
                               fmt, metrics_timeout_ms(hr), &out, err,
                               sizeof(err)) != 0) {
        if (ha_task_stopped(ha_task_current()) != HA_TASK_GO) {
            ha_http_req_stopped(hr);
        } else {
            snprintf(msg, sizeof(msg), "%s\n", err);
            ha_http_req_text(hr, 500, "Internal Server Error", msg);
        }
    } else {
        ha_http_req_body(hr, ha_expo_content_type(fmt), out.data, out.len);
    }
    ha_buf_free(&own);
    ha_buf_free(&out);
}

/* ------------------------------------------------------------------
 * ?pid=N
 * ------------------------------------------------------------------ */

/* Paths answered by another process on request. */
static bool
proxied_path(const char *path)
{
    return strncmp(path, "/debug/pprof/", 13) == 0 ||
           strncmp(path, "/pprof/", 7) == 0 ||
           strncmp(path, "/heap/", 6) == 0;
}

/* path?query without its pid= parameter, into out. */
static int
target_without_pid(const struct ha_http_req *hr, const char *path, char *out,
                   size_t len)
{
    struct ha_buf b = HA_BUF_INIT;
    const char *q = hr->query;
    bool first = true;
    int rc;

    ha_buf_append_str(&b, path);
    while (q != NULL && *q != '\0') {
        const char *amp = strchr(q, '&');
        size_t n = amp != NULL ? (size_t)(amp - q) : strlen(q);

        if (n > 0 && !(n >= 4 && strncmp(q, "pid=", 4) == 0) &&
            !(n == 3 && strncmp(q, "pid", 3) == 0)) {
            ha_buf_append_u8(&b, first ? '?' : '&');
            ha_buf_append(&b, q, n);
            first = false;
        }
        q = amp != NULL ? amp + 1 : NULL;
    }
    ha_buf_append_u8(&b, 0);
    rc = ha_buf_failed(&b) ? -1 : ha_strlcpy(out, (const char *)b.data, len);
    ha_buf_free(&b);
    return rc;
}

static const char *
reason_of(int code)
{
    switch (code) {
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Payload Too Large";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    default:
        return code >= 500 ? "Internal Server Error" : "Error";
    }
}

bool
ha_gateway_proxy(struct ha_http_req *hr)
{
    const struct ha_config *cfg = ha_engine_config(hr->engine);
    char *val = NULL, err[256], target[8192], msg[1024];
    struct ask_job *j;
    const struct ha_agent *a;
    const struct ha_agent_reply *r;
    const char *inner;
    long pid = 0;
    int rc;

    if (!ha_engine_is_gateway(hr->engine))
        return false;
    inner = ha_http_path_strip_pid(hr->path, &pid);
    if (inner != NULL) {
        /* /pid/N/<path>: the prefix jeprof keeps as its base URL. */
        if (pid == 0 || !proxied_path(inner)) {
            ha_http_req_text(hr, pid == 0 ? 400 : 404,
                             pid == 0 ? "Bad Request" : "Not Found",
                             pid == 0 ? "/pid/N/: N is the decimal pid of a "
                                        "process in stats_agents (digits "
                                        "only, no sign, no leading zero)\n"
                                      : "/pid/N/ serves /debug/pprof/, "
                                        "/pprof/ and /heap/ of process N\n");
            return true;
        }
    } else {
        if (!proxied_path(hr->path))
            return false;
        rc = ha_http_req_param(hr, "pid", &val, err, sizeof(err));
        if (rc == 0)
            return false;
        pid = rc > 0 ? ha_http_parse_pid(val, strlen(val)) : 0;
        free(val);
        if (pid == 0) {
            ha_http_req_text(hr, 400, "Bad Request",
                             "pid: the decimal pid of a process in "
                             "stats_agents (digits only, no sign, no "
                             "leading zero)\n");
            return true;
        }
        inner = hr->path;
    }
    if (pid == (long)getpid())
        return false;
    if (target_without_pid(hr, inner, target, sizeof(target)) != 0) {
        ha_http_req_text(hr, 414, "URI Too Long", "request too long\n");
        return true;
    }
    j = ask_new(hr, hr->method == EVHTTP_REQ_POST ? "POST" : "GET", target,
                cfg->max_execution_time > 0 ? cfg->max_execution_time
                                            : PROXY_TIMEOUT_MS,
                PROXY_MAX_BODY);
    if (j == NULL) {
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return true;
    }
    j->only = (pid_t)pid;
    if (hr->method == EVHTTP_REQ_POST) {
        j->body = hr->body;
        ha_buf_init(&hr->body);
    }
    if (ha_task_offload_ask(ask_run, ask_free, j) != 0) {
        ha_http_req_stopped(hr);
        return true;
    }
    if (j->fan.n == 0) {
        snprintf(msg, sizeof(msg),
                 "no agent with pid %ld in %.400s%s%.400s (SELECT * FROM "
                 "stats_agents lists them)\n",
                 pid, j->datadir, j->err[0] ? ": " : "", j->err);
        ha_http_req_text(hr, 404, "Not Found", msg);
        ask_free(j);
        return true;
    }
    a = &j->fan.agents[0];
    r = &j->fan.replies[0];
    if (a->state == HA_AGENT_MISMATCH) {
        /* Not what its name says: nothing is asked of it, nothing it
         * says is passed on as that program's. */
        snprintf(msg, sizeof(msg), "process %ld is not served through the "
                 "gateway: %s\n", pid, a->why);
        ha_http_req_text(hr, 403, "Forbidden", msg);
    } else if (a->state == HA_AGENT_NO_SOCKET) {
        snprintf(msg, sizeof(msg), "process %ld (%s) is served but "
                 "unreachable now: %s\n", pid, a->program, a->why);
        ha_http_req_add_header(hr, "Retry-After", "1");
        ha_http_req_text(hr, 503, "Service Unavailable", msg);
    } else if (r->status == 0) {
        snprintf(msg, sizeof(msg), "process %ld (%s) did not answer: %s\n",
                 pid, a->program, r->err);
        ha_http_req_text(hr, a->state == HA_AGENT_GONE ? 404 : 502,
                         a->state == HA_AGENT_GONE ? "Not Found"
                                                   : "Bad Gateway",
                         msg);
    } else if (r->status == 200) {
        if (r->content_disposition[0] != '\0')
            ha_http_req_add_header(hr, "Content-Disposition",
                                   r->content_disposition);
        ha_http_req_body(hr,
                         r->content_type[0] ? r->content_type
                                            : "application/octet-stream",
                         r->body.len > 0 ? (const void *)r->body.data : "",
                         r->body.len);
    } else {
        struct ha_buf t = HA_BUF_INIT;

        ha_buf_append(&t, r->body.data, r->body.len);
        ha_buf_append_u8(&t, 0);
        /* The agent is busy (a dump being written), not gone: its
         * Retry-After, a number checked in core/agenthttp.c, goes on. */
        if ((r->status == 503 || r->status == 429) && r->retry_after_s >= 0) {
            char after[16];

            snprintf(after, sizeof(after), "%d", r->retry_after_s);
            ha_http_req_add_header(hr, "Retry-After", after);
        }
        ha_http_req_text(hr, r->status, reason_of(r->status),
                         ha_buf_failed(&t) ? "" : (const char *)t.data);
        ha_buf_free(&t);
    }
    ask_free(j);
    return true;
}

/* ------------------------------------------------------------------
 * /agent
 * ------------------------------------------------------------------ */

void
ha_gateway_agent_info(struct ha_http_req *hr)
{
    struct ha_heap *heap = ha_engine_heap(hr->engine);
    struct ha_buf b = HA_BUF_INIT;
    size_t allocated = 0, resident = 0;
    bool have = false;
    char user[64];

    if (heap->ops != NULL) {
        ha_heap_refresh_stats(heap);
        have = ha_mallctl_read_size(heap->ops, "stats.allocated",
                                    &allocated) == 0 &&
               ha_mallctl_read_size(heap->ops, "stats.resident",
                                    &resident) == 0;
    }
    snprintf(user, sizeof(user), "%u", (unsigned)geteuid());
    ha_buf_printf(&b,
                  "pid: %ld\nprogram: %s\nuid: %s\nstarted: %lld\n"
                  "endpoint: %s\n",
                  (long)getpid(), ha_engine_program(hr->engine), user,
                  (long long)ha_agentreg_started(getpid()),
                  ha_engine_endpoint(hr->engine));
    if (have)
        ha_buf_printf(&b, "allocated: %zu\nresident: %zu\n", allocated,
                      resident);
    if (ha_agentnote_attached() > 0) {
        long pids[HA_AGENTNOTE_CHILDREN_MAX];
        size_t more, n = ha_agentnote_unserved(pids, HA_ARRAY_SIZE(pids),
                                               &more);

        /* Attached to a running process (heapadmin-attach), and its
         * children from before, which are not served. */
        ha_buf_printf(&b, "attached: %lld\nunserved_children: ",
                      (long long)ha_agentnote_attached());
        for (size_t i = 0; i < n; i++)
            ha_buf_printf(&b, "%s%ld", i > 0 ? "," : "", pids[i]);
        ha_buf_printf(&b, "\nunserved_more: %zu\n", more);
    }
    ha_buf_append_u8(&b, 0);
    if (ha_buf_failed(&b)) {
        ha_buf_free(&b);
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    ha_http_req_text(hr, 200, "OK", (const char *)b.data);
    ha_buf_free(&b);
}
