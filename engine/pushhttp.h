/* SPDX-License-Identifier: MIT
 *
 * One HTTP POST for a push (engine/push.h), with libcurl, loaded with
 * dlopen at the first push (libcurl.so.4, else libcurl-gnutls.so.4):
 * no face carries libcurl until push_targets is set, and the agent
 * never loads it into a host that does not push.
 *
 * A guest's rules, as for elfutils (agent/lazydw.c): RTLD_LOCAL, never
 * closed, loaded inside the fork gate (core/forkguard.h), and so is
 * curl_global_init (it initialises OpenSSL, which reads its config and
 * may load providers). libcurl never resolves a name itself: the host
 * is looked up here with getaddrinfo inside the gate and handed to it
 * (CURLOPT_RESOLVE), so it starts no resolver thread and the resolver's
 * locks are never held at a host's fork; CURLOPT_NOSIGNAL, so it never
 * touches the process's signals; its sockets are made close-on-exec;
 * proxies from the environment are not used (a host's http_proxy is
 * the host's business). Blocking: the push worker's, never the loop's
 * or a host thread's.
 */
#ifndef HA_PUSHHTTP_H
#define HA_PUSHHTTP_H

#include <stdbool.h>
#include <stddef.h>

struct ha_pushhttp_req {
    const char *url;
    const char *const *headers; /* "Name: value", ..., NULL */
    const void *body;
    size_t len;
    int timeout_s;              /* the whole exchange; connecting gets
                                   at most 5 s of it */
};

struct ha_pushhttp_res {
    long status;                /* the receiver's HTTP status; 0: none */
    char err[256];              /* why, when status is not 2xx */
};

/* POSTs req. Returns 0 when the receiver answered 2xx, else -1 with
 * res->status (0 when it did not answer: refused, timed out, no
 * libcurl) and res->err. Never quotes the receiver's body. */
int ha_pushhttp_post(const struct ha_pushhttp_req *req,
                     struct ha_pushhttp_res *res);

/* Whether a failed push may succeed if tried again: no answer, 408,
 * 429 and 5xx; a 4xx the receiver will answer again (400, 401, 413:
 * the profile is too large for it) is not. */
bool ha_pushhttp_retryable(long status);

#endif /* HA_PUSHHTTP_H */
