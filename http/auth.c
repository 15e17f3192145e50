/* SPDX-License-Identifier: MIT
 *
 * Who may ask the HTTP front-end (see http_int.h): a request's method
 * checked against its path (405), then its HTTP Basic credentials
 * (RFC 7617) through the engine's one login, or on the agent socket the
 * kernel's word on the peer and X-Heapadmin-Role; then its route runs on
 * a task. Refusals (401, 403, 405, 429) are logged within a budget.
 *
 * A credential from an address whose logins failed too often waits as
 * long as the engine's throttle says before it is checked (the MySQL
 * port's rule: a few checks a second per address, however many
 * connections); a wrong one gets 401 and the connection closes.
 */
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/lograte.h"
#include "engine/accounts.h"
#include "engine/login.h"
#include "engine/peer.h"
#include "http/http_int.h"
#include "http/parse.h"
#include "http/routes.h"

/* A Basic password, in clear. */
struct clear_pw {
    const char *pw;
    size_t len;
};

static bool
prove_clear(const struct ha_user *u, void *arg)
{
    const struct clear_pw *given = arg;

    return ha_accounts_check_clear(u, (const uint8_t *)given->pw, given->len);
}

/* Checks the request's Basic credentials with the engine's login.
 * Returns the user, or NULL with *why (for the log) and *counted (a
 * password was tried: the throttle counted it). */
static const struct ha_user *
authenticate(struct ha_http *h, const struct http_conn *c,
             struct evhttp_request *req, const char **why, bool *counted,
             bool *say)
{
    const char *hdr = evhttp_find_header(evhttp_request_get_input_headers(req),
                                         "Authorization");
    char user[HA_USER_MAX + 1], pw[HA_HTTP_BASIC_MAX + 1];
    size_t pw_len = 0;
    const struct ha_user *u;
    struct clear_pw given;
    enum ha_login_result r;

    *counted = false;
    if (ha_http_basic_parse(hdr, user, sizeof(user), pw, sizeof(pw), &pw_len,
                            why) != 0)
        return NULL;
    *counted = true;
    given.pw = pw;
    given.len = pw_len;
    r = ha_login_check(ha_engine_accounts(h->engine), &c->peer, user,
                       prove_clear, &given, &u, say);
    OPENSSL_cleanse(pw, sizeof(pw));
    if (r != HA_LOGIN_OK) {
        *why = ha_login_result_text(r);
        return NULL;
    }
    return u;
}

/* A refused request's line, within the log's budget: the first ones of
 * each window say who and why, the rest are counted and said in one line
 * when the window ends. */
static void refused_say_cb(evutil_socket_t fd, short what, void *arg);

static void
log_refused(struct ha_http *h, const struct http_conn *c,
            const struct ha_http_req *hr, int code, const char *why)
{
    uint64_t flushed;
    int64_t now = ha_clock_ms();
    struct timeval tv = {HA_LOGRATE_WINDOW_MS / 1000, 0};

    if (ha_lograte_take(&h->refused_log, now, &flushed)) {
        /* The path as sent, but never its raw control bytes. */
        char path[128];

        char uid[32] = "";

        ha_http_printable(hr->path, path, sizeof(path));
        if (c->peer.family == HA_PEER_UNIX)
            snprintf(uid, sizeof(uid), " (uid %u)", (unsigned)c->peer.uid);
        ha_log_warn("http: %s%s: %s %s refused: %s (HTTP %d)", c->peer.name,
                    uid, ha_http_reqlife_method(hr->method), path, why, code);
    } else {
        h->refused_unsaid++;
        if (h->refused_say == NULL)
            h->refused_say = evtimer_new(h->base, refused_say_cb, h);
        if (h->refused_say != NULL && !evtimer_pending(h->refused_say, NULL))
            evtimer_add(h->refused_say, &tv);
    }
    (void)flushed;
}

static void
refused_say_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_http *h = arg;

    (void)fd;
    (void)what;
    (void)ha_lograte_due(&h->refused_log, ha_clock_ms());
    if (h->refused_unsaid > 0)
        ha_log_warn("http: %llu more requests refused in the last %d s "
                    "(not logged one by one)",
                    (unsigned long long)h->refused_unsaid,
                    HA_LOGRATE_WINDOW_MS / 1000);
    h->refused_unsaid = 0;
}

/* Answers hr with code and text without running it, and logs it within
 * the budget; close: the connection closes once it is written. */
static void
refuse_req(struct ha_http *h, struct http_conn *c, struct ha_http_req *hr,
           int code, const char *reason, const char *text, const char *why,
           bool close)
{
    log_refused(h, c, hr, code, why);
    hr->close_after = close;
    ha_http_req_text(hr, code, reason, text);
    c->cur = NULL;
    ha_http_conn_set_phase(c, PHASE_IDLE);
    ha_http_reqlife_free(hr);
}

/* The credential is checked: the route runs on a task, or 401 and
 * close. */
static void
check_and_run(struct ha_http *h, struct http_conn *c, struct ha_http_req *hr)
{
    const struct ha_user *u;
    const char *why;
    bool counted, say = false;

    /* Without a password the kernel's word on the peer decides
     * (engine/agentrole.h); a password is checked as on any port. */
    if (c->agent_socket &&
        evhttp_find_header(evhttp_request_get_input_headers(hr->req),
                           "Authorization") == NULL) {
        u = ha_login_agent_socket(
            &c->peer,
            evhttp_find_header(evhttp_request_get_input_headers(hr->req),
                               "X-Heapadmin-Role"),
            &why);
        if (u == NULL) {
            refuse_req(h, c, hr, 403, "Forbidden", why, why, true);
            return;
        }
        goto admitted;
    }
    u = authenticate(h, c, hr->req, &why, &counted, &say);
    if (u == NULL) {
        ha_http_req_add_header(hr, "WWW-Authenticate",
                               "Basic realm=\"heapadmin\", charset=\"UTF-8\"");
        /* Closed once written: a guesser reconnects, and pays for it. A
         * failed check is logged within the failures' budget (the
         * throttle's summary counts the rest); a request without
         * credentials within the refusals'. */
        if (counted && say) {
            char path[128];

            ha_log_warn("http: %s: %s %s refused: %s", c->peer.name,
                        ha_http_reqlife_method(hr->method),
                        ha_http_printable(hr->path, path, sizeof(path)), why);
        }
        if (counted) {
            hr->close_after = true;
            ha_http_req_text(hr, 401, "Unauthorized",
                             "authentication required: HTTP Basic with an "
                             "admin_credentials or stats_credentials "
                             "account\n");
            c->cur = NULL;
            ha_http_conn_set_phase(c, PHASE_IDLE);
            ha_http_reqlife_free(hr);
            return;
        }
        refuse_req(h, c, hr, 401, "Unauthorized",
                   "authentication required: HTTP Basic with an "
                   "admin_credentials or stats_credentials account\n",
                   why, false);
        return;
    }
admitted:
    c->authed = true;
    hr->user = u;
    /* Live profiles: admins, and the profile role, which reads
     * profiles and nothing else (routes.c keeps it to them). */
    hr->admin = u->role == HA_ROLE_ADMIN || u->role == HA_ROLE_PROFILE;
    hr->client.id = ha_clients_next_id(ha_engine_clients(h->engine));
    hr->client.role = u->role;
    hr->client.user = u->name;
    hr->client.ops = &ha_http_reqlife_client_ops;
    ha_clients_add(ha_engine_clients(h->engine), &hr->client);
    ha_engine_clients(h->engine)->http_requests++;
    ha_engine_clients(h->engine)->questions++;
    c->phase = PHASE_BUSY;
    ha_task_init(&hr->task, ha_engine_tasks(h->engine));
    if (h->cfg->max_execution_time > 0)
        ha_task_set_deadline(&hr->task,
                             ha_clock_ns() +
                                 (int64_t)h->cfg->max_execution_time * 1000000);
    if (ha_task_run(&hr->task, ha_http_reqlife_run, ha_http_reqlife_done, hr) ==
        0)
        ha_http_reqlife_done(hr);
}

/* Answers 429 Too Many Requests (RFC 6585) with Retry-After, and
 * closes: the peer must wait wait_ms before its next credential is
 * checked, and holds nothing meanwhile. */
static void
too_many(struct ha_http *h, struct http_conn *c, struct ha_http_req *hr,
         int64_t wait_ms)
{
    char after[32], text[160];

    snprintf(after, sizeof(after), "%lld",
             (long long)ha_login_retry_s(wait_ms));
    snprintf(text, sizeof(text),
             "too many failed logins from %s: try again in %s s\n",
             c->peer.host, after);
    ha_http_req_add_header(hr, "Retry-After", after);
    refuse_req(h, c, hr, 429, "Too Many Requests", text,
               "its address must wait (the login throttle)", true);
}

/* A new request from an allocated hr (path, query, method, peer set):
 * the method, the throttle's word on its credential, then the check. */
void
ha_http_auth_dispatch(struct ha_http *h, struct http_conn *c,
                      struct ha_http_req *hr)
{
    char allow[64];
    int64_t wait = 0;

    /* A method the path does not take: 405 before any password is
     * checked (nothing to guess with). */
    if (!ha_http_route_allows(hr->path, hr->method, allow, sizeof(allow))) {
        ha_http_req_add_header(hr, "Allow", allow);
        refuse_req(h, c, hr, 405, "Method Not Allowed",
                   "this path takes only the methods in Allow\n",
                   "a method the path does not take", false);
        return;
    }
    if (evhttp_find_header(evhttp_request_get_input_headers(hr->req),
                           "Authorization") != NULL)
        wait = ha_login_admit(ha_engine_accounts(h->engine), &c->peer);
    if (wait > 0) {
        too_many(h, c, hr, wait);
        return;
    }
    check_and_run(h, c, hr);
}
