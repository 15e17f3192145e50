/* SPDX-License-Identifier: MIT
 *
 * Who is at the other end of a connection, as the kernel says it
 * (getpeername, SO_PEERCRED), never as the peer says: one description
 * for every front-end, so the login rules (engine/login.h) and the
 * throttle judge a client alike whichever port it came through.
 *
 * An IPv4-mapped IPv6 address (::ffff:a.b.c.d, what a dual-stack
 * listener on [::] sees of an IPv4 client) is the IPv4 peer a.b.c.d:
 * same address text, same throttle entry, same loopback rule. Local
 * means loopback (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) or a unix
 * socket; nothing else is, whatever its address (RFC 6890's special
 * ranges included).
 */
#ifndef HA_PEER_H
#define HA_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

enum ha_peer_family {
    HA_PEER_UNKNOWN,   /* getpeername failed: judged remote */
    HA_PEER_IPV4,      /* AF_INET, or an IPv4-mapped AF_INET6 */
    HA_PEER_IPV6,
    HA_PEER_UNIX,
    HA_PEER_FAMILY_MAX
};

struct ha_peer {
    enum ha_peer_family family;
    uint8_t addr[16];     /* IPv4: the first 4 bytes; IPv6: all 16;
                             network order; zero for unix */
    uint16_t port;        /* TCP port, host order; 0 for unix */
    bool local;           /* loopback or unix socket */
    uid_t uid;            /* unix: SO_PEERCRED; (uid_t)-1 otherwise or
                             when the kernel would not say */
    pid_t pid;            /* unix: SO_PEERCRED; 0 otherwise */
    char host[64];        /* the address without port ("127.0.0.1",
                             "::1"); "localhost" for unix: what ERR 1045
                             and PROCESSLIST's host show */
    char name[80];        /* for the log: "127.0.0.1:52044",
                             "[::1]:52044", "unix socket" */
};

/* Describes the peer at sa (len bytes, as accept() gave it); a unix
 * peer's credentials are not known from an address (uid (uid_t)-1). */
void ha_peer_from_addr(struct ha_peer *p, const struct sockaddr *sa,
                       socklen_t len);

/* Describes the peer of connected socket fd (getpeername, and
 * SO_PEERCRED for a unix socket). Returns 0, or -1 (errno set) with p
 * an HA_PEER_UNKNOWN, non-local peer named "?". */
int ha_peer_from_fd(struct ha_peer *p, int fd);

/* True when a and b are the same address (the port ignored; two unix
 * peers are the same when their uids are). */
bool ha_peer_same_host(const struct ha_peer *a, const struct ha_peer *b);

#endif /* HA_PEER_H */
