/* SPDX-License-Identifier: MIT
 *
 * The listener grammar of mysql_ifaces and http_ifaces (see iface.h).
 */
#include "engine/iface.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

static int
parse_port(const char *item, const char *s, int *port, char *why, size_t whylen)
{
    long v = 0;

    if (*s == '\0') {
        ha_err_set(why, whylen,
                   "'%s' has no port after ':'; allowed ports "
                   "are 1..65535",
                   item);
        return -1;
    }
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            ha_err_set(why, whylen,
                       "'%s': port '%s' is not a number; allowed ports are "
                       "1..65535",
                       item, s);
            return -1;
        }
        if (v <= 65535)
            v = v * 10 + (*p - '0');
    }
    if (v < 1 || v > 65535) {
        ha_err_set(why, whylen,
                   "'%s': port %s is out of range; allowed ports are "
                   "1..65535",
                   item, s);
        return -1;
    }
    *port = (int)v;
    return 0;
}

static bool
is_host_char(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
           (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
}

/* Parses one trimmed, non-empty mysql_ifaces item (a NUL-terminated
 * copy). */
static int
parse_iface(char *item, struct ha_iface *out, char *why, size_t whylen)
{
    size_t len = strlen(item);
    char *host, *port, *end;

    memset(out, 0, sizeof(*out));
    if (item[0] == '/') {
        if (len >= sizeof(out->path)) {
            ha_err_set(why, whylen,
                       "Unix socket path '%s' is %zu bytes long; at most "
                       "%zu are allowed",
                       item, len, sizeof(out->path) - 1);
            return -1;
        }
        out->kind = HA_IFACE_UNIX;
        memcpy(out->path, item, len + 1);
        return 0;
    }

    out->kind = HA_IFACE_TCP;
    if (item[0] == '[') {
        struct in6_addr a6;

        end = strchr(item, ']');
        if (end == NULL) {
            ha_err_set(why, whylen,
                       "'%s' has no ']' after the IPv6 address; expected "
                       "[ipv6]:port such as [::1]:6032",
                       item);
            return -1;
        }
        if (end[1] != ':') {
            ha_err_set(why, whylen,
                       "'%s' needs ':port' right after ']'; expected "
                       "[ipv6]:port such as [::1]:6032",
                       item);
            return -1;
        }
        *end = '\0';
        host = item + 1;
        port = end + 2;
        if (inet_pton(AF_INET6, host, &a6) != 1) {
            ha_err_set(why, whylen,
                       "'[%s]:%s': '%s' is not an IPv6 address; expected "
                       "[ipv6]:port such as [::1]:6032",
                       host, port, host);
            *end = ']';
            return -1;
        }
        *end = ']';
    } else {
        end = strrchr(item, ':');
        if (end == NULL) {
            ha_err_set(why, whylen,
                       "'%s' is neither host:port, [ipv6]:port nor an "
                       "absolute Unix socket path (starting with '/')",
                       item);
            return -1;
        }
        if (memchr(item, ':', (size_t)(end - item)) != NULL) {
            ha_err_set(why, whylen,
                       "'%s': an IPv6 address needs brackets, as in "
                       "[::1]:6032",
                       item);
            return -1;
        }
        if (end == item) {
            ha_err_set(why, whylen,
                       "'%s' has no host before ':'; use 0.0.0.0 to listen "
                       "on every IPv4 address",
                       item);
            return -1;
        }
        for (const char *p = item; p < end; p++) {
            if (!is_host_char(*p)) {
                ha_err_set(why, whylen,
                           "'%s': the host has a character outside "
                           "[A-Za-z0-9._-]; expected an IPv4 address or "
                           "a host name",
                           item);
                return -1;
            }
        }
        host = item;
        port = end + 1;
    }

    if (parse_port(item, port, &out->port, why, whylen) < 0)
        return -1;
    len = (size_t)(port - 1 - host);
    if (item[0] == '[')
        len--; /* the ']' */
    if (len >= sizeof(out->host)) {
        ha_err_set(why, whylen, "'%s': the host is longer than %zu bytes", item,
                   sizeof(out->host) - 1);
        return -1;
    }
    memcpy(out->host, host, len);
    out->host[len] = '\0';
    return 0;
}

static bool
same_iface(const struct ha_iface *a, const struct ha_iface *b)
{
    if (a->kind != b->kind)
        return false;
    if (a->kind == HA_IFACE_UNIX)
        return strcmp(a->path, b->path) == 0;
    return a->port == b->port && strcmp(a->host, b->host) == 0;
}

int
ha_iface_parse(const char *spec, struct ha_iface **ifaces, size_t *n_ifaces,
               char *err, size_t errlen)
{
    struct ha_iface *list = NULL, *grown;
    size_t n = 0;
    const char *p = spec;

    if (spec == NULL)
        spec = p = "";
    while (*p != '\0') {
        const char *start = p, *stop;
        char item[512];
        size_t len;

        stop = strchr(p, ';');
        if (stop == NULL)
            stop = p + strlen(p);
        p = *stop == ';' ? stop + 1 : stop;
        while (start < stop && (*start == ' ' || *start == '\t'))
            start++;
        while (stop > start && (stop[-1] == ' ' || stop[-1] == '\t'))
            stop--;
        len = (size_t)(stop - start);
        if (len == 0)
            continue;
        if (len >= sizeof(item)) {
            ha_err_set(err, errlen,
                       "interface '%.40s...' is longer than %zu bytes", start,
                       sizeof(item) - 1);
            goto fail;
        }
        memcpy(item, start, len);
        item[len] = '\0';

        grown = realloc(list, (n + 1) * sizeof(*list));
        if (grown == NULL) {
            ha_err_set(err, errlen, "out of memory");
            goto fail;
        }
        list = grown;
        if (parse_iface(item, &list[n], err, errlen) < 0)
            goto fail;
        for (size_t i = 0; i < n; i++) {
            if (same_iface(&list[i], &list[n])) {
                ha_err_set(err, errlen,
                           "'%s' is listed twice; each listener may appear "
                           "once",
                           item);
                goto fail;
            }
        }
        n++;
    }
    if (n == 0) {
        ha_err_set(err, errlen,
                   "no interface given; expected a ';'-separated list of "
                   "host:port, [ipv6]:port or absolute Unix socket paths, "
                   "such as \"%s\"",
                   HA_DEFAULT_MYSQL_IFACES);
        goto fail;
    }
    *ifaces = list;
    *n_ifaces = n;
    return 0;

fail:
    free(list);
    return -1;
}

bool
ha_iface_is_local(const struct ha_iface *f)
{
    struct in_addr a4;
    struct in6_addr a6;

    if (f->kind == HA_IFACE_UNIX)
        return true;
    if (strcmp(f->host, "localhost") == 0)
        return true;
    if (inet_pton(AF_INET, f->host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, f->host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) ||
               (IN6_IS_ADDR_V4MAPPED(&a6) && a6.s6_addr[12] == 127);
    return false;
}

bool
ha_iface_dual_stack(const struct ha_iface *list, size_t n, size_t i)
{
    struct in6_addr a6;

    if (i >= n || list[i].kind != HA_IFACE_TCP ||
        inet_pton(AF_INET6, list[i].host, &a6) != 1 ||
        !IN6_IS_ADDR_UNSPECIFIED(&a6))
        return false;
    for (size_t j = 0; j < n; j++)
        if (j != i && list[j].kind == HA_IFACE_TCP &&
            list[j].port == list[i].port && list[i].port != 0 &&
            strcmp(list[j].host, "0.0.0.0") == 0)
            return false;
    return true;
}
