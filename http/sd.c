/* SPDX-License-Identifier: MIT
 *
 * A host gateway's /sd (see sd.h).
 */
#include "http/sd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "core/agentreg.h"
#include "core/task.h"
#include "core/util.h"
#include "engine/pushcfg.h"
#include "http/calltree.h"

static void
pair(struct ha_buf *b, const char *name, const char *value, bool first)
{
    ha_buf_append_str(b, first ? "\"" : ",\"");
    ha_json_str(b, name);
    ha_buf_append_str(b, "\":\"");
    ha_json_str(b, value);
    ha_buf_append_u8(b, '"');
}

void
ha_sd_document(const char *gateway, const char *node,
               const struct ha_sd_process *procs, size_t n,
               struct ha_buf *out)
{
    ha_buf_append_str(out, "[{\"targets\":[\"");
    ha_json_str(out, gateway);
    ha_buf_append_str(out, "\"],\"labels\":{");
    pair(out, "__meta_heapadmin_scope", "host", true);
    pair(out, "host", node, false);
    ha_buf_append_str(out, "}}");
    for (size_t i = 0; i < n; i++) {
        const struct ha_sd_process *p = &procs[i];
        char pid[24], instance[512];
        size_t same = 0;

        /* Several processes of one program and user (nginx's workers):
         * only the pid tells their series apart. */
        for (size_t k = 0; k < n; k++)
            if (strcmp(procs[k].program, p->program) == 0 &&
                strcmp(procs[k].user, p->user) == 0)
                same++;
        snprintf(pid, sizeof(pid), "%ld", (long)p->pid);
        if (same > 1)
            snprintf(instance, sizeof(instance), "%s/%s/%s", gateway,
                     p->service, pid);
        else
            snprintf(instance, sizeof(instance), "%s/%s", gateway,
                     p->service);
        ha_buf_append_str(out, ",{\"targets\":[\"");
        ha_json_str(out, gateway);
        ha_buf_append_str(out, "\"],\"labels\":{");
        pair(out, "__metrics_path__", "/metrics", true);
        pair(out, "__param_pid", pid, false);
        pair(out, "__meta_heapadmin_scope", "process", false);
        pair(out, "__meta_heapadmin_pid", pid, false);
        pair(out, "instance", instance, false);
        pair(out, "service_name", p->service, false);
        pair(out, "program", p->program, false);
        pair(out, "user", p->user, false);
        pair(out, "host", node, false);
        if (same > 1)
            pair(out, "pid", pid, false);
        ha_buf_append_str(out, "}}");
    }
    ha_buf_append_str(out, "]\n");
}

bool
ha_sd_host_ok(const char *host)
{
    size_t n = host != NULL ? strlen(host) : 0;

    if (n == 0 || n > 255)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = host[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '-' || c == ':' ||
              c == '[' || c == ']'))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------------
 * The listing (an asker thread)
 * ------------------------------------------------------------------ */

struct sd_job {
    char datadir[4096];
    struct ha_agent *agents;
    size_t n;
    int rc;
    char err[512];
};

static void
sd_run(void *arg)
{
    struct sd_job *j = arg;

    j->rc = ha_agentreg_list(j->datadir, &j->agents, &j->n, j->err,
                             sizeof(j->err));
}

static void
sd_free(void *arg)
{
    struct sd_job *j = arg;

    free(j->agents);
    free(j);
}

void
ha_http_sd(struct ha_http_req *hr)
{
    const struct ha_config *cfg = ha_engine_config(hr->engine);
    const char *host = ha_http_req_header(hr, "Host");
    struct ha_sd_process *procs = NULL;
    struct ha_buf out = HA_BUF_INIT;
    struct sd_job *j;
    struct utsname u;
    char gateway[300], msg[700];
    size_t n = 0;

    if (!ha_engine_is_gateway(hr->engine)) {
        ha_http_req_text(hr, 404, "Not Found",
                         "/sd is a host gateway's (heapadmind --gateway): "
                         "it lists the processes it serves\n");
        return;
    }
    if (ha_sd_host_ok(host))
        ha_strlcpy(gateway, host, sizeof(gateway));
    else if (cfg->n_http > 0)
        snprintf(gateway, sizeof(gateway), "%s%s%s:%d",
                 strchr(cfg->http[0].host, ':') ? "[" : "",
                 cfg->http[0].host[0] ? cfg->http[0].host : "127.0.0.1",
                 strchr(cfg->http[0].host, ':') ? "]" : "",
                 cfg->http[0].port);
    else
        ha_strlcpy(gateway, "127.0.0.1", sizeof(gateway));
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    ha_strlcpy(j->datadir, ha_engine_datadir(hr->engine), sizeof(j->datadir));
    if (ha_task_offload_ask(sd_run, sd_free, j) != 0) {
        ha_http_req_stopped(hr);
        return;
    }
    if (j->rc != 0) {
        snprintf(msg, sizeof(msg), "%s\n", j->err);
        ha_http_req_text(hr, 500, "Internal Server Error", msg);
        sd_free(j);
        return;
    }
    procs = calloc(j->n ? j->n : 1, sizeof(*procs));
    if (procs == NULL) {
        sd_free(j);
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
        return;
    }
    for (size_t i = 0; i < j->n; i++) {
        const struct ha_agent *a = &j->agents[i];

        if (a->state != HA_AGENT_SERVING)
            continue;
        procs[n].pid = a->pid;
        procs[n].program = a->program;
        procs[n].service = ha_pushcfg_service_of(cfg->services,
                                                 cfg->n_services, a->program);
        procs[n].user = a->user;
        n++;
    }
    if (uname(&u) != 0)
        ha_strlcpy(u.nodename, "", sizeof(u.nodename));
    ha_sd_document(gateway, u.nodename, procs, n, &out);
    if (ha_buf_failed(&out))
        ha_http_req_text(hr, 500, "Internal Server Error", "out of memory\n");
    else
        ha_http_req_body(hr, "application/json", out.data, out.len);
    ha_buf_free(&out);
    free(procs);
    sd_free(j);
}
