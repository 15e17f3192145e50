/* SPDX-License-Identifier: MIT
 *
 * Test fixture shared by the suites that drive sessions without a socket
 * (check_session, check_authorizer): a shared memdb admin database kept
 * open by a keeper connection, the virtual tables on the fake mallctl
 * backend (fake_mallctl.h), the engine's client registry, and sessions opened and
 * given their role the way conn.c does after a login. Header-only.
 */
#ifndef HA_TEST_SESSION_FIXTURE_H
#define HA_TEST_SESSION_FIXTURE_H

#include <check.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_mallctl.h"
#include "engine/config.h"
#include "admin/session.h"
#include "core/util.h"
#include "vtab/vtab.h"

struct sf_fixture {
    struct ha_config cfg;             /* only the fields the vtabs read */
    struct ha_heap heap;              /* fake jemalloc, datadir /tmp */
    struct ha_vtab_ctx ctx;           /* over heap */
    struct ha_clients reg;            /* PROCESSLIST, KILL, Questions */
    struct ha_session_shared shared;
    sqlite3 *keeper;                  /* holds the memdb database open */
};

/* Resets the fake backend and creates a fresh shared database named after
 * suite (unique per call, so no state leaks between tests). */
static inline void
sf_setup(struct sf_fixture *f, const char *suite, char *admin_credentials,
         char *stats_credentials)
{
    static unsigned n;

    fake_reset(true);
    memset(f, 0, sizeof(*f));
    f->cfg.admin_credentials = admin_credentials;
    f->cfg.stats_credentials = stats_credentials;
    f->cfg.mysql_ifaces = "127.0.0.1:6032";
    f->ctx.heap = &f->heap;
    f->heap.ops = &fake_ops;
    f->heap.admin_value = ha_config_admin_value;
    f->heap.admin_arg = &f->cfg;
    f->heap.datadir = "/tmp";
    ha_clients_init(&f->reg);
    snprintf(f->shared.db_uri, sizeof(f->shared.db_uri),
             "file:/%s-%ld-%u?vfs=memdb", suite, (long)getpid(), ++n);
    f->shared.vtab = &f->ctx;
    f->shared.clients = &f->reg;
    ck_assert_int_eq(sqlite3_open_v2(f->shared.db_uri, &f->keeper,
                                     SQLITE_OPEN_READWRITE |
                                         SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                                     NULL),
                     SQLITE_OK);
}

/* Opens session id as user from 127.0.0.1 with role, as conn.c does once
 * a login succeeded (ha_session_set_role arms that role's authorizer). */
static inline void
sf_open(struct sf_fixture *f, struct ha_session *s, uint32_t id,
        const char *user, enum ha_role role)
{
    char err[256] = "";

    ck_assert_msg(ha_session_open(s, &f->shared, id, err, sizeof(err)) == 0,
                  "open: %s", err);
    ha_strlcpy(s->user, user, sizeof(s->user));
    ha_strlcpy(s->host, "127.0.0.1", sizeof(s->host));
    ha_session_set_role(s, role);
    ha_session_set_multi_statements(s, false);
}

static inline void
sf_teardown(struct sf_fixture *f)
{
    sqlite3_close(f->keeper);
}

#endif /* HA_TEST_SESSION_FIXTURE_H */
