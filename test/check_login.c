/* SPDX-License-Identifier: MIT
 *
 * Unit tests for the one login of every front-end: peer identity from
 * the kernel's addresses (engine/peer.c) and the login sequence
 * (engine/login.c). An IPv4 peer and the same peer seen as an
 * IPv4-mapped IPv6 address are one peer; IPv6 loopback and the unix
 * socket are local; nothing else is.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "check_main.h"

#include "engine/accounts.h"
#include "engine/credentials.h"
#include "engine/login.h"
#include "engine/peer.h"

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
    ha_accounts_init(&f->accounts, f->users, f->n_users);
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
                                        prove_arg, &yes, &u),
                         local[i] ? HA_LOGIN_OK : HA_LOGIN_NOT_FROM_HERE);
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "stats",
                                        prove_arg, &yes, &u),
                         local[i] ? HA_LOGIN_OK : HA_LOGIN_NOT_FROM_HERE);
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "ops",
                                        prove_arg, &yes, &u),
                         HA_LOGIN_OK);
        ck_assert_str_eq(u->name, "ops");
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "ops",
                                        prove_arg, &no, &u),
                         HA_LOGIN_BAD_PASSWORD);
        ck_assert_int_eq(ha_login_check(&f.accounts, &peers[i], "nobody",
                                        prove_arg, &yes, &u),
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
                                 &u);
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
    return s;
}

HA_CHECK_MAIN(login_suite)
