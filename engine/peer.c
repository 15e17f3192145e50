/* SPDX-License-Identifier: MIT
 *
 * Peer identity from the kernel (see peer.h).
 */
#include "engine/peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "core/util.h"

static void
set_ipv4(struct ha_peer *p, const uint8_t a[4], uint16_t port)
{
    p->family = HA_PEER_IPV4;
    memcpy(p->addr, a, 4);
    p->port = port;
    p->local = a[0] == 127;
    inet_ntop(AF_INET, a, p->host, sizeof(p->host));
    snprintf(p->name, sizeof(p->name), "%s:%u", p->host, (unsigned)port);
}

static void
set_unknown(struct ha_peer *p)
{
    memset(p, 0, sizeof(*p));
    p->family = HA_PEER_UNKNOWN;
    p->uid = (uid_t)-1;
    ha_strlcpy(p->host, "?", sizeof(p->host));
    ha_strlcpy(p->name, "?", sizeof(p->name));
}

void
ha_peer_from_addr(struct ha_peer *p, const struct sockaddr *sa,
                  socklen_t len)
{
    set_unknown(p);
    if (sa == NULL || len < (socklen_t)sizeof(sa_family_t))
        return;
    if (sa->sa_family == AF_INET && len >= (socklen_t)sizeof(struct
                                                            sockaddr_in)) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

        set_ipv4(p, (const uint8_t *)&in->sin_addr, ntohs(in->sin_port));
    } else if (sa->sa_family == AF_INET6 &&
               len >= (socklen_t)sizeof(struct sockaddr_in6)) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

        if (IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
            set_ipv4(p, &in6->sin6_addr.s6_addr[12], ntohs(in6->sin6_port));
            return;
        }
        p->family = HA_PEER_IPV6;
        memcpy(p->addr, &in6->sin6_addr, 16);
        p->port = ntohs(in6->sin6_port);
        p->local = IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
        inet_ntop(AF_INET6, &in6->sin6_addr, p->host, sizeof(p->host));
        snprintf(p->name, sizeof(p->name), "[%s]:%u", p->host,
                 (unsigned)p->port);
    } else if (sa->sa_family == AF_UNIX) {
        p->family = HA_PEER_UNIX;
        p->local = true;
        ha_strlcpy(p->host, "localhost", sizeof(p->host));
        ha_strlcpy(p->name, "unix socket", sizeof(p->name));
    }
}

int
ha_peer_from_fd(struct ha_peer *p, int fd)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);

    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) != 0) {
        int e = fd < 0 ? EBADF : errno;

        set_unknown(p);
        errno = e;
        return -1;
    }
    ha_peer_from_addr(p, (const struct sockaddr *)&ss, sl);
    if (p->family == HA_PEER_UNIX) {
        struct ucred cr;
        socklen_t cl = sizeof(cr);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == 0) {
            p->uid = cr.uid;
            p->pid = cr.pid;
        }
    }
    return 0;
}

bool
ha_peer_same_host(const struct ha_peer *a, const struct ha_peer *b)
{
    if (a->family != b->family)
        return false;
    switch (a->family) {
    case HA_PEER_IPV4:
        return memcmp(a->addr, b->addr, 4) == 0;
    case HA_PEER_IPV6:
        return memcmp(a->addr, b->addr, 16) == 0;
    case HA_PEER_UNIX:
        return a->uid == b->uid;
    default:
        return false;
    }
}
