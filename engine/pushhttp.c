/* SPDX-License-Identifier: MIT
 *
 * A push's HTTP POST with libcurl loaded on demand (see pushhttp.h).
 */
#include "engine/pushhttp.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "core/forkguard.h"
#include "core/util.h"

/* libcurl's entry points this file calls, found with dlsym. */
static struct {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *c, CURLoption o, ...);
    CURLcode (*easy_perform)(CURL *c);
    CURLcode (*easy_getinfo)(CURL *c, CURLINFO i, ...);
    void (*easy_cleanup)(CURL *c);
    const char *(*easy_strerror)(CURLcode e);
    struct curl_slist *(*slist_append)(struct curl_slist *l, const char *s);
    void (*slist_free_all)(struct curl_slist *l);
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_err[200];
static int loaded;

static void
load(void)
{
    static const char *const names[] = {"libcurl.so.4",
                                        "libcurl-gnutls.so.4"};
    void *h = NULL;

    ha_forkguard_enter();
    for (size_t i = 0; i < HA_ARRAY_SIZE(names) && h == NULL; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        ha_forkguard_leave();
        ha_strlcpy(load_err,
                   "libcurl is not installed (Debian package: libcurl4); "
                   "push needs it",
                   sizeof(load_err));
        return;
    }
#define SYM(field, name) *(void **)&curl.field = dlsym(h, name)
    SYM(global_init, "curl_global_init");
    SYM(easy_init, "curl_easy_init");
    SYM(easy_setopt, "curl_easy_setopt");
    SYM(easy_perform, "curl_easy_perform");
    SYM(easy_getinfo, "curl_easy_getinfo");
    SYM(easy_cleanup, "curl_easy_cleanup");
    SYM(easy_strerror, "curl_easy_strerror");
    SYM(slist_append, "curl_slist_append");
    SYM(slist_free_all, "curl_slist_free_all");
#undef SYM
    if (curl.global_init == NULL || curl.easy_init == NULL ||
        curl.easy_setopt == NULL || curl.easy_perform == NULL ||
        curl.easy_getinfo == NULL || curl.easy_cleanup == NULL ||
        curl.easy_strerror == NULL || curl.slist_append == NULL ||
        curl.slist_free_all == NULL) {
        ha_forkguard_leave();
        ha_strlcpy(load_err, "libcurl lacks a function push needs",
                   sizeof(load_err));
        return;
    }
    /* Once, before any transfer: OpenSSL's set-up is process-wide. */
    if (curl.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        ha_forkguard_leave();
        ha_strlcpy(load_err, "libcurl could not be initialised",
                   sizeof(load_err));
        return;
    }
    ha_forkguard_leave();
    loaded = 1;
}

bool
ha_pushhttp_retryable(long status)
{
    return status == 0 || status == 408 || status == 429 || status >= 500;
}

/* The receiver's answer is not kept: only its status says anything. */
static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
    (void)p;
    (void)arg;
    return size * n;
}

static curl_socket_t
open_socket(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
    (void)arg;
    (void)purpose;
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

/* host and port of url ("http://h:p/...", "https://[::1]/..."). */
static int
url_host(const char *url, char *host, size_t hostlen, int *port)
{
    const char *p = strstr(url, "://"), *end, *colon = NULL;
    size_t n;

    if (p == NULL)
        return -1;
    *port = strncmp(url, "https", 5) == 0 ? 443 : 80;
    p += 3;
    if (*p == '[') {
        end = strchr(p, ']');
        if (end == NULL)
            return -1;
        n = (size_t)(end - p - 1);
        if (n == 0 || n >= hostlen)
            return -1;
        memcpy(host, p + 1, n);
        host[n] = '\0';
        colon = end[1] == ':' ? end + 1 : NULL;
    } else {
        end = p + strcspn(p, ":/");
        n = (size_t)(end - p);
        if (n == 0 || n >= hostlen)
            return -1;
        memcpy(host, p, n);
        host[n] = '\0';
        colon = *end == ':' ? end : NULL;
    }
    if (colon != NULL)
        *port = atoi(colon + 1);
    return *port > 0 && *port < 65536 ? 0 : -1;
}

/* "host:port:address" for CURLOPT_RESOLVE, the name looked up here
 * inside the fork gate; "" when host is an address already. */
static int
resolve(const char *url, char *entry, size_t len, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    char host[256], addr[INET6_ADDRSTRLEN];
    unsigned char probe[sizeof(struct in6_addr)];
    int port, rc;

    entry[0] = '\0';
    if (url_host(url, host, sizeof(host), &port) != 0) {
        ha_err_set(err, errlen, "the url has no host:port that can be read");
        return -1;
    }
    if (inet_pton(AF_INET, host, probe) == 1 ||
        inet_pton(AF_INET6, host, probe) == 1)
        return 0;
    memset(&hints, 0, sizeof(hints));
    hints.ai_socktype = SOCK_STREAM;
    ha_forkguard_enter();
    rc = getaddrinfo(host, NULL, &hints, &res);
    ha_forkguard_leave();
    if (rc != 0 || res == NULL) {
        ha_err_set(err, errlen, "cannot resolve %s: %s", host,
                   gai_strerror(rc));
        return -1;
    }
    if (res->ai_family == AF_INET6)
        inet_ntop(AF_INET6,
                  &((struct sockaddr_in6 *)(void *)res->ai_addr)->sin6_addr,
                  addr, sizeof(addr));
    else
        inet_ntop(AF_INET,
                  &((struct sockaddr_in *)(void *)res->ai_addr)->sin_addr,
                  addr, sizeof(addr));
    snprintf(entry, len, res->ai_family == AF_INET6 ? "%s:%d:[%s]"
                                                    : "%s:%d:%s",
             host, port, addr);
    ha_forkguard_enter();
    freeaddrinfo(res);
    ha_forkguard_leave();
    return 0;
}

int
ha_pushhttp_post(const struct ha_pushhttp_req *req,
                 struct ha_pushhttp_res *res)
{
    struct curl_slist *headers = NULL, *resolved = NULL;
    char entry[512];
    CURLcode rc;
    CURL *c;
    int ret = -1;

    memset(res, 0, sizeof(*res));
    pthread_once(&load_once, load);
    if (!loaded) {
        ha_strlcpy(res->err, load_err, sizeof(res->err));
        return -1;
    }
    if (resolve(req->url, entry, sizeof(entry), res->err,
                sizeof(res->err)) != 0)
        return -1;
    if ((c = curl.easy_init()) == NULL) {
        ha_strlcpy(res->err, "out of memory", sizeof(res->err));
        return -1;
    }
    for (size_t i = 0; req->headers != NULL && req->headers[i] != NULL; i++)
        headers = curl.slist_append(headers, req->headers[i]);
    /* libcurl adds "Expect: 100-continue" to large POSTs and waits for
     * an answer a receiver may never give. */
    headers = curl.slist_append(headers, "Expect:");
    if (entry[0] != '\0')
        resolved = curl.slist_append(NULL, entry);
    curl.easy_setopt(c, CURLOPT_URL, req->url);
    curl.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl.easy_setopt(c, CURLOPT_PROXY, "");
    curl.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl.easy_setopt(c, CURLOPT_OPENSOCKETFUNCTION, open_socket);
    curl.easy_setopt(c, CURLOPT_POST, 1L);
    curl.easy_setopt(c, CURLOPT_POSTFIELDS, req->body);
    curl.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->len);
    curl.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    if (resolved != NULL)
        curl.easy_setopt(c, CURLOPT_RESOLVE, resolved);
    curl.easy_setopt(c, CURLOPT_TIMEOUT, (long)req->timeout_s);
    curl.easy_setopt(c, CURLOPT_CONNECTTIMEOUT,
                     (long)(req->timeout_s < 5 ? req->timeout_s : 5));
    curl.easy_setopt(c, CURLOPT_WRITEFUNCTION, discard);
    curl.easy_setopt(c, CURLOPT_USERAGENT, "heapadmin-push");
    rc = curl.easy_perform(c);
    if (rc != CURLE_OK) {
        ha_err_set(res->err, sizeof(res->err), "%s", curl.easy_strerror(rc));
    } else {
        curl.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &res->status);
        if (res->status >= 200 && res->status < 300)
            ret = 0;
        else
            ha_err_set(res->err, sizeof(res->err),
                       "the receiver answered HTTP %ld", res->status);
    }
    curl.easy_cleanup(c);
    curl.slist_free_all(headers);
    if (resolved != NULL)
        curl.slist_free_all(resolved);
    return ret;
}
