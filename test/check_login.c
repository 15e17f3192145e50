/* SPDX-License-Identifier: MIT
 *
 * Unit tests for the one login of every front-end: peer identity from
 * the kernel's addresses (engine/peer.c) and the login sequence
 * (engine/login.c). An IPv4 peer and the same peer seen as an
 * IPv4-mapped IPv6 address are one peer; IPv6 loopback and the unix
 * socket are local; nothing else is.
 */
#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check_main.h"

#include "engine/accounts.h"
#include "engine/clients.h"
#include "engine/credentials.h"
#include "engine/login.h"
#include "engine/peer.h"
#include "engine/throttle.h"

static void
peer4(struct ha_peer *p, const char *addr, uint16_t port)
{
    struct sockaddr_in in;

    memset(&in, 0, sizeof(in));
    in.sin_family = AF_INET;
    in.sin_port = htons(port);
    ck_assert_int_eq(inet_pton(AF_INET, addr, &in.sin_addr), 1);
    ha_peer_from_addr(p, (const struct sockaddr *)&in, sizeof(in));
}

static void
peer6(struct ha_peer *p, const char *addr, uint16_t port)
{
    struct sockaddr_in6 in6;

    memset(&in6, 0, sizeof(in6));
    in6.sin6_family = AF_INET6;
    in6.sin6_port = htons(port);
    ck_assert_int_eq(inet_pton(AF_INET6, addr, &in6.sin6_addr), 1);
    ha_peer_from_addr(p, (const struct sockaddr *)&in6, sizeof(in6));
}

static void
peer_unix(struct ha_peer *p)
{
    struct sockaddr_un un;

    memset(&un, 0, sizeof(un));
    un.sun_family = AF_UNIX;
    ha_peer_from_addr(p, (const struct sockaddr *)&un, sizeof(sa_family_t));
}

/* ------------------------------------------------------------------ */
/* Peers                                                                */
/* ------------------------------------------------------------------ */

START_TEST(test_peer_families)
{
    static const struct {
        const char *addr;
        bool v6;
        enum ha_peer_family family;
        bool local;
        const char *host, *name;
    } cases[] = {
        {"127.0.0.1", false, HA_PEER_IPV4, true, "127.0.0.1", "127.0.0.1:4242"},
        {"127.9.8.7", false, HA_PEER_IPV4, true, "127.9.8.7", "127.9.8.7:4242"},
        {"::ffff:127.0.0.1", true, HA_PEER_IPV4, true, "127.0.0.1",
         "127.0.0.1:4242"},
        {"::ffff:127.9.8.7", true, HA_PEER_IPV4, true, "127.9.8.7",
         "127.9.8.7:4242"},
        {"::1", true, HA_PEER_IPV6, true, "::1", "[::1]:4242"},
        {"192.0.2.7", false, HA_PEER_IPV4, false, "192.0.2.7",
         "192.0.2.7:4242"},
        {"::ffff:192.0.2.7", true, HA_PEER_IPV4, false, "192.0.2.7",
         "192.0.2.7:4242"},
        {"2001:db8::1", true, HA_PEER_IPV6, false, "2001:db8::1",
         "[2001:db8::1]:4242"},
        /* Neither the v4-compatible ::127.0.0.1 nor an address that
         * merely ends in 127.x is loopback. */
        {"::7f00:1", true, HA_PEER_IPV6, false, "::127.0.0.1",
         "[::127.0.0.1]:4242"},
        {"10.127.0.1", false, HA_PEER_IPV4, false, "10.127.0.1",
         "10.127.0.1:4242"},
        {"0.0.0.0", false, HA_PEER_IPV4, false, "0.0.0.0", "0.0.0.0:4242"},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct ha_peer p;

        if (cases[i].v6)
            peer6(&p, cases[i].addr, 4242);
        else
            peer4(&p, cases[i].addr, 4242);
        ck_assert_msg(p.family == cases[i].family, "%zu %s: family %d", i,
                      cases[i].addr, (int)p.family);
        ck_assert_msg(p.local == cases[i].local, "%zu %s: local %d", i,
                      cases[i].addr, (int)p.local);
        ck_assert_msg(strcmp(p.host, cases[i].host) == 0, "%zu %s: host %s",
                      i, cases[i].addr, p.host);
        ck_assert_msg(strcmp(p.name, cases[i].name) == 0, "%zu %s: name %s",
                      i, cases[i].addr, p.name);
        ck_assert_uint_eq(p.port, 4242);
    }
}
END_TEST

START_TEST(test_peer_mapped_is_ipv4)
{
    struct ha_peer a, b, c;

    peer4(&a, "198.51.100.3", 1);
    peer6(&b, "::ffff:198.51.100.3", 2);
    peer4(&c, "198.51.100.4", 1);
    ck_assert(ha_peer_same_host(&a, &b));
    ck_assert(!ha_peer_same_host(&a, &c));
    ck_assert_mem_eq(a.addr, b.addr, 4);
}
END_TEST

START_TEST(test_peer_unix_from_fd)
{
    struct ha_peer p;
    int sv[2];

    peer_unix(&p);
    ck_assert(p.family == HA_PEER_UNIX);
    ck_assert(p.local);
    ck_assert_str_eq(p.host, "localhost");
    ck_assert_str_eq(p.name, "unix socket");
    /* From a socket: the kernel's credentials. */
    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(ha_peer_from_fd(&p, sv[0]), 0);
    ck_assert(p.family == HA_PEER_UNIX);
    ck_assert_uint_eq(p.uid, geteuid());
    ck_assert_int_eq(p.pid, getpid());
    close(sv[0]);
    close(sv[1]);
    /* A descriptor that is no socket: unknown, and not local. */
    ck_assert_int_eq(ha_peer_from_fd(&p, -1), -1);
    ck_assert(p.family == HA_PEER_UNKNOWN);
    ck_assert(!p.local);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The login sequence                                                   */
/* ------------------------------------------------------------------ */

/* The proof a front-end would make (a scramble, a password in clear):
 * here, arg says whether it holds. */
static bool
prove_arg(const struct ha_user *u, void *arg)
{
    return u != NULL && *(const bool *)arg;
}

struct login_fixture {
    struct ha_user *users;
    size_t n_users;
    struct ha_accounts accounts;
};

static void
fixture_init(struct login_fixture *f)
{
    char err[256];

    memset(f, 0, sizeof(*f));
    ck_assert_int_eq(ha_credentials_parse("admin:admin;ops:S3cret",
                                          HA_ROLE_ADMIN, &f->users,
                                          &f->n_users, err, sizeof(err)),
                     0);
    ck_assert_int_eq(ha_credentials_parse("stats:stats", HA_ROLE_STATS,
                                          &f->users, &f->n_users, err,
                                          sizeof(err)),
                     0);
    ha_accounts_init(&f->accounts, f->users, f->n_users, NULL);
}

static void
fixture_free(struct login_fixture *f)
{
    ha_accounts_free(&f->accounts);
    free(f->users);
}

START_TEST(test_login_alike_for_every_family)
{
    /* Each local peer, and each remote one, judged the same way. */
    struct ha_peer peers[8];
    const bool local[8] = {true, true, true, true, false, false, false};
    size_t n = 0;
    bool yes = true, no = false;

    peer4(&peers[n++], "127.0.0.1", 1000);
    peer6(&peers[n++], "::ffff:127.0.0.1", 1000);
    peer6(&peers[n++], "::1", 1000);
    peer_unix(&peers[n++]);
    peer4(&peers[n++], "192.0.2.7", 1000);
    peer6(&peers[n++], "::ffff:192.0.2.8", 1000);
    peer6(&peers[n++], "2001:db8::9", 1000);
    for (size_t i = 0; i < n; i++) {
        struct login_fixture f;
        const struct ha_user *u;

        fixture_init(&f);
        ck_assert_int_eq(ha_login_admit(&f.accounts, &peers[i]), 0);
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "admin",
                                        prove_arg, &yes, &u, NULL),
                         local[i] ? HA_LOGIN_OK : HA_LOGIN_NOT_FROM_HERE);
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "stats",
                                        prove_arg, &yes, &u, NULL),
                         local[i] ? HA_LOGIN_OK : HA_LOGIN_NOT_FROM_HERE);
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "ops",
                                        prove_arg, &yes, &u, NULL),
                         HA_LOGIN_OK);
        ck_assert_str_eq(u->name, "ops");
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "ops",
                                        prove_arg, &no, &u, NULL),
                         HA_LOGIN_BAD_PASSWORD);
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "nobody",
                                        prove_arg, &yes, &u, NULL),
                         HA_LOGIN_UNKNOWN_USER);
        ck_assert_ptr_null(u);
        fixture_free(&f);
    }
}
END_TEST

START_TEST(test_login_mapped_peer_shares_the_throttle)
{
    struct login_fixture f;
    struct ha_peer v4, mapped, other;
    const struct ha_user *u;
    bool no = false;

    fixture_init(&f);
    peer4(&v4, "192.0.2.7", 1000);
    peer6(&mapped, "::ffff:192.0.2.7", 2000);
    peer6(&other, "2001:db8::7", 1000);
    /* Failures over a dual-stack listener count for the IPv4 address. */
    for (int i = 0; i < 8; i++) {
        if (ha_login_admit(&f.accounts, &mapped) == 0)
            (void)ha_login_check(&f.accounts, &mapped, "ops", prove_arg, &no,
                                 &u, NULL);
    }
    ck_assert_int_gt(ha_login_admit(&f.accounts, &v4), 0);
    ck_assert_int_eq(ha_login_admit(&f.accounts, &other), 0);
    fixture_free(&f);
}
END_TEST

START_TEST(test_login_agent_socket)
{
    struct ha_peer p;
    const struct ha_user *u;
    const char *why = NULL;
    int sv[2];

    ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    ck_assert_int_eq(ha_peer_from_fd(&p, sv[0]), 0);
    u = ha_login_agent_socket(&p, "admin", &why);
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(u->role, HA_ROLE_ADMIN);
    u = ha_login_agent_socket(&p, NULL, &why);
    ck_assert_ptr_nonnull(u);
    ck_assert_int_eq(u->role, HA_ROLE_STATS);
    /* Another user: refused. */
    p.uid = geteuid() + 1 == 0 ? 2 : geteuid() + 1;
    if (p.uid != 0)
        ck_assert_ptr_null(ha_login_agent_socket(&p, "admin", &why));
    /* A TCP peer never speaks on it. */
    peer4(&p, "127.0.0.1", 1);
    ck_assert_ptr_null(ha_login_agent_socket(&p, "admin", &why));
    ck_assert_ptr_nonnull(why);
    close(sv[0]);
    close(sv[1]);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The throttle                                                         */
/* ------------------------------------------------------------------ */

/* Per address: a few failures free, then each further one makes the
 * next check wait longer, up to the bound; checks arriving together are
 * spaced; refused attempts never lengthen the wait; a quiet minute
 * forgets. */
START_TEST(test_throttle_address)
{
    struct ha_throttle t;
    struct ha_peer p, q;
    enum ha_throttle_why why;
    int64_t now = 1000000;

    ha_throttle_init(&t, 0, 42);
    peer4(&p, "192.0.2.1", 1);
    peer4(&q, "198.51.100.1", 1);
    for (int i = 0; i < HA_THROTTLE_FREE; i++) {
        ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
        ha_throttle_failed(&t, &p, "ops", now);
    }
    /* Past the free ones: the next check waits a step... */
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why),
                     HA_THROTTLE_STEP_MS);
    ck_assert_int_eq(why, HA_THROTTLE_ADDRESS);
    /* ... however many attempts are refused meanwhile. */
    for (int i = 0; i < 1000; i++)
        ck_assert_int_eq(ha_throttle_admit(&t, &p, now + 1, &why),
                         HA_THROTTLE_STEP_MS - 1);
    ck_assert_int_eq(ha_throttle_peek(&t, &p, now + 1, &why),
                     HA_THROTTLE_STEP_MS - 1);
    /* Once it is over, one check goes; the next one with it is spaced. */
    now += HA_THROTTLE_STEP_MS;
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why),
                     HA_THROTTLE_SPACING_MS);
    /* Another address (another prefix) is checked at once. */
    ck_assert_int_eq(ha_throttle_admit(&t, &q, now, &why), 0);
    /* Each failure adds a step, up to the bound: a lock-out is bounded
     * and counts failed checks only. */
    for (int i = 0; i < 40; i++) {
        now += 5000;
        ha_throttle_failed(&t, &p, "ops", now);
    }
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why),
                     HA_THROTTLE_MAX_MS);
    /* A success as another account does not forget them (a stats login
     * between guesses at the admin's password clears nothing)... */
    now += HA_THROTTLE_MAX_MS;
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    ha_throttle_succeeded(&t, &p, "stats", now);
    ha_throttle_failed(&t, &p, "ops", now);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why),
                     HA_THROTTLE_MAX_MS);
    /* ... nor after failures for several accounts... */
    now += HA_THROTTLE_MAX_MS;
    ha_throttle_failed(&t, &p, "admin", now);
    ha_throttle_succeeded(&t, &p, "ops", now);
    ck_assert_int_gt(ha_throttle_admit(&t, &p, now, &why), 0);
    /* ... a quiet minute does. */
    now += HA_THROTTLE_MAX_MS + HA_THROTTLE_FORGET_MS;
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    ha_throttle_failed(&t, &p, "ops", now);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    /* Someone who mistyped their own password, then got it right, is let
     * off. */
    for (int i = 0; i < 10; i++)
        ha_throttle_failed(&t, &p, "ops", now);
    ck_assert_int_gt(ha_throttle_admit(&t, &p, now, &why), 0);
    ha_throttle_succeeded(&t, &p, "ops", now);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    ha_throttle_free(&t);
}
END_TEST

/* Per prefix: a guesser rotating over the addresses of one /24 (one /64)
 * is one guesser; another prefix is not held up. */
START_TEST(test_throttle_prefix)
{
    struct ha_throttle t;
    struct ha_peer p;
    enum ha_throttle_why why;
    char a[32];
    int64_t now = 1000000;

    ha_throttle_init(&t, 0, 42);
    for (int i = 0; i < HA_THROTTLE_PREFIX_FREE; i++) {
        snprintf(a, sizeof(a), "203.0.113.%d", i + 1);
        peer4(&p, a, 1);
        ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
        ha_throttle_failed(&t, &p, "ops", now);
    }
    peer4(&p, "203.0.113.200", 1);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why),
                     HA_THROTTLE_PREFIX_STEP_MS);
    ck_assert_int_eq(why, HA_THROTTLE_PREFIX);
    peer4(&p, "203.0.114.200", 1);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    /* IPv6: a /64. */
    for (int i = 0; i < HA_THROTTLE_PREFIX_FREE; i++) {
        snprintf(a, sizeof(a), "2001:db8:1:2::%x", i + 1);
        peer6(&p, a, 1);
        ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
        ha_throttle_failed(&t, &p, "ops", now);
    }
    peer6(&p, "2001:db8:1:2:ffff::1", 1);
    ck_assert_int_gt(ha_throttle_admit(&t, &p, now, &why), 0);
    ck_assert_int_eq(why, HA_THROTTLE_PREFIX);
    peer6(&p, "2001:db8:1:3::1", 1);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    ha_throttle_free(&t);
}
END_TEST

/* In all: 300 addresses in 300 prefixes, each guessing as fast as it is
 * let, get the total bound (its burst, then its rate), not 300 times a
 * per-address rate. A known-good address and a unix-socket peer are not
 * held by it. */
START_TEST(test_throttle_global_bound)
{
    struct ha_throttle t;
    struct ha_peer p, good, sock;
    enum ha_throttle_why why;
    char a[32];
    int64_t now = 1000000, checks = 0;
    const int64_t seconds = 10;

    ha_throttle_init(&t, 0, 42);
    peer4(&good, "198.51.100.7", 1);
    ck_assert_int_eq(ha_throttle_admit(&t, &good, now, &why), 0);
    ha_throttle_succeeded(&t, &good, "ops", now);
    peer_unix(&sock);
    for (int64_t ms = 0; ms < seconds * 1000; ms += 10) {
        for (int i = 0; i < 300; i++) {
            snprintf(a, sizeof(a), "10.%d.%d.1", i / 256 + 1, i % 256);
            peer4(&p, a, 1);
            if (ha_throttle_admit(&t, &p, now + ms, &why) == 0) {
                checks++;
                ha_throttle_failed(&t, &p, "ops", now + ms);
            }
        }
    }
    ck_assert_msg(checks <= HA_THROTTLE_GLOBAL_BURST +
                               HA_THROTTLE_GLOBAL_PER_S * seconds + 1,
                  "%lld checks in %lld s", (long long)checks,
                  (long long)seconds);
    ck_assert_msg(checks >= HA_THROTTLE_GLOBAL_PER_S * seconds / 2,
                  "only %lld checks in %lld s", (long long)checks,
                  (long long)seconds);
    now += seconds * 1000 - 10; /* the loop's last moment */
    peer4(&p, "172.16.0.1", 1);
    ck_assert_int_gt(ha_throttle_admit(&t, &p, now, &why), 0);
    ck_assert_int_eq(why, HA_THROTTLE_GLOBAL);
    /* The admin where it logged in before, and on the unix socket. */
    ck_assert_int_eq(ha_throttle_admit(&t, &good, now, &why), 0);
    ck_assert_int_eq(ha_throttle_admit(&t, &sock, now, &why), 0);
    /* A right password gives its token back: only failures count. */
    now += 1000;
    for (int i = 0; i < 100; i++) {
        peer4(&p, "172.16.0.2", 1);
        if (ha_throttle_admit(&t, &p, now, &why) == 0)
            ha_throttle_succeeded(&t, &p, "ops", now);
    }
    peer4(&p, "172.16.0.3", 1);
    ck_assert_int_eq(ha_throttle_admit(&t, &p, now, &why), 0);
    ha_throttle_free(&t);
}
END_TEST

/* Sized by memory: the table stops growing at its bound, and an entry
 * that still holds a wait is never dropped to make room for a new
 * address; the addresses it has no room for are held by the total
 * bound, and counted. */
START_TEST(test_throttle_memory_bound)
{
    struct ha_throttle t;
    struct ha_throttle_report r;
    struct ha_peer p, first;
    enum ha_throttle_why why;
    char a[32];
    int64_t now = 1000000;

    ha_throttle_init(&t, 16 << 10, 42); /* 16 KiB */
    ck_assert_uint_le(ha_throttle_max_capacity(&t) * 64, 32 << 10);
    peer4(&first, "192.0.2.1", 1);
    for (int i = 0; i < 2 * HA_THROTTLE_FREE; i++)
        ha_throttle_failed(&t, &first, "ops", now);
    ck_assert_int_gt(ha_throttle_admit(&t, &first, now, &why), 0);
    for (int i = 0; i < 5000; i++) {
        snprintf(a, sizeof(a), "10.%d.%d.%d", i / 62500, (i / 250) % 250,
                 i % 250 + 1);
        peer4(&p, a, 1);
        ha_throttle_failed(&t, &p, "ops", now + 1);
    }
    ck_assert_uint_le(ha_throttle_capacity(&t), ha_throttle_max_capacity(&t));
    ck_assert_int_gt(ha_throttle_admit(&t, &first, now + 1, &why), 0);
    ck_assert_int_eq(why, HA_THROTTLE_ADDRESS);
    ck_assert(ha_throttle_report(&t, now + HA_THROTTLE_REPORT_MS, &r));
    ck_assert_uint_gt(r.untracked, 0);
    ck_assert_uint_eq(r.failed, 2 * HA_THROTTLE_FREE + 5000);
    ha_throttle_free(&t);
}
END_TEST

/* One summary per interval, with the most refused peer; none when
 * nothing happened. */
START_TEST(test_throttle_report)
{
    struct ha_throttle t;
    struct ha_throttle_report r;
    struct ha_peer p;
    int64_t now = 1000000;

    ha_throttle_init(&t, 0, 42);
    ck_assert(!ha_throttle_report(&t, now, &r));
    peer4(&p, "192.0.2.9", 1);
    for (int i = 0; i < HA_THROTTLE_FREE; i++)
        ha_throttle_failed(&t, &p, "ops", now);
    for (int i = 0; i < 500; i++)
        ck_assert_int_gt(ha_throttle_peek(&t, &p, now + 1, NULL), 0);
    ck_assert(!ha_throttle_report(&t, now + HA_THROTTLE_REPORT_MS - 1, &r));
    ck_assert(ha_throttle_report(&t, now + HA_THROTTLE_REPORT_MS, &r));
    ck_assert_uint_eq(r.failed, HA_THROTTLE_FREE);
    ck_assert_uint_eq(r.refused[HA_THROTTLE_ADDRESS], 500);
    ck_assert_uint_eq(r.peers, 1);
    ck_assert_str_eq(r.top, "192.0.2.9");
    ck_assert_uint_eq(r.top_refused, 500);
    /* Nothing since: nothing to say. */
    ck_assert(!ha_throttle_report(&t, now + 3 * HA_THROTTLE_REPORT_MS, &r));
    ha_throttle_free(&t);
}
END_TEST

/* The engine's one output budget (engine/clients.h): what every listed
 * client holds unsent, whichever front-end it came through, is taken off
 * max_output_total; a client that went is no longer counted. */
struct held_client {
    struct ha_client c;
    size_t bytes;
};

static size_t
fake_held(const struct ha_client *c)
{
    return ((const struct held_client *)c)->bytes;
}

static const struct ha_client_ops held_ops = {.held = fake_held};
static const struct ha_client_ops no_held_ops = {.held = NULL};

START_TEST(test_output_budget)
{
    struct ha_clients reg;
    struct held_client a = {.bytes = 300}, b = {.bytes = 200},
                       idle = {.bytes = 999};

    ha_clients_init(&reg);
    a.c.ops = &held_ops;
    b.c.ops = &held_ops;
    idle.c.ops = &no_held_ops;
    a.c.id = ha_clients_next_id(&reg);
    ha_clients_add(&reg, &a.c);
    b.c.id = ha_clients_next_id(&reg);
    ha_clients_add(&reg, &b.c);
    idle.c.id = ha_clients_next_id(&reg);
    ha_clients_add(&reg, &idle.c);
    ck_assert_uint_eq(ha_clients_held(&reg), 500);
    ck_assert(ha_clients_output_left(&reg, 0) == LLONG_MAX);
    ck_assert_int_eq(ha_clients_output_left(&reg, 1000), 500);
    ck_assert_int_eq(ha_clients_output_left(&reg, 400), -100);
    /* A streamed reply's window, then the client goes. */
    a.bytes = HA_CLIENTS_STREAM_BYTES;
    ck_assert_int_eq(ha_clients_output_left(&reg, 1 << 20),
                     (1 << 20) - (long long)HA_CLIENTS_STREAM_BYTES - 200);
    ha_clients_remove(&reg, &a.c);
    ck_assert_int_eq(ha_clients_output_left(&reg, 1000), 800);
    ha_clients_remove(&reg, &b.c);
    ha_clients_remove(&reg, &idle.c);
}
END_TEST

static Suite *
login_suite(void)
{
    Suite *s = suite_create("login");
    TCase *tc;

    tc = tcase_create("core");
    tcase_add_test(tc, test_peer_families);
    tcase_add_test(tc, test_peer_mapped_is_ipv4);
    tcase_add_test(tc, test_peer_unix_from_fd);
    tcase_add_test(tc, test_login_alike_for_every_family);
    tcase_add_test(tc, test_login_mapped_peer_shares_the_throttle);
    tcase_add_test(tc, test_login_agent_socket);
    suite_add_tcase(s, tc);

    tc = tcase_create("limits");
    tcase_add_test(tc, test_throttle_address);
    tcase_add_test(tc, test_throttle_prefix);
    tcase_add_test(tc, test_throttle_global_bound);
    tcase_add_test(tc, test_throttle_memory_bound);
    tcase_add_test(tc, test_throttle_report);
    tcase_add_test(tc, test_output_budget);
    suite_add_tcase(s, tc);
    return s;
}

HA_CHECK_MAIN(login_suite)
