/* SPDX-License-Identifier: MIT
 *
 * The agent's pieces that need no host: the sizes it allocates
 * (agent/slabsize.c, linked here with the same --wrap as the agent) and
 * elfutils loaded at the first call (agent/lazydw.c: this binary, like
 * the agent, does not link libdw).
 */
#include <check.h>
#include <errno.h>
#include <gelf.h>
#include <libelf.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/attachreq.h"
#include "agent/slabsize.h"
#include "test/check_main.h"

START_TEST(slab_sizes)
{
    static const struct {
        size_t n, want;
    } cases[] = {
        {1, 8},         {8, 8},         {9, 16},        {48, 64},
        {80, 128},      {112, 128},     {129, 256},     {896, 1024},
        {4095, 4096},   {4096, 4096},   {4097, 8192},   {5120, 8192},
        {8192, 8192},   {8193, 16384},  {14336, 16384}, {16384, 16384},
        {16385, 16385}, {20000, 20000},
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        ck_assert_msg(ha_agent_slab_size(cases[i].n) == cases[i].want,
                      "%zu -> %zu, not %zu", cases[i].n,
                      ha_agent_slab_size(cases[i].n), cases[i].want);
    /* Never less than asked, never more than twice (up to a page). */
    for (size_t n = 1; n <= 70000; n++) {
        size_t r = ha_agent_slab_size(n);

        ck_assert_uint_ge(r, n);
        ck_assert_uint_le(r, n <= 16384 ? 2 * n + 8 : n);
    }
    ck_assert_uint_eq(ha_agent_slab_size(SIZE_MAX), SIZE_MAX);
}
END_TEST

/* Through the wrapped calls: what jemalloc hands out is the rounded
 * class, and calloc's overflow is still refused. */
START_TEST(wrapped_calls)
{
    char *p = malloc(80), *q;
    unsigned char *z;

    ck_assert_ptr_nonnull(p);
    ck_assert_uint_ge(malloc_usable_size(p), 128);
    memset(p, 'x', 80);
    q = realloc(p, 900);
    ck_assert_ptr_nonnull(q);
    ck_assert_uint_ge(malloc_usable_size(q), 1024);
    ck_assert_int_eq(q[79], 'x');
    free(q);
    z = calloc(10, 9);
    ck_assert_ptr_nonnull(z);
    ck_assert_uint_ge(malloc_usable_size(z), 128);
    for (size_t i = 0; i < 128; i++)
        ck_assert_uint_eq(z[i], 0);
    free(z);
    errno = 0;
    ck_assert_ptr_null(calloc(SIZE_MAX / 2, 4));
    ck_assert_int_eq(errno, ENOMEM);
}
END_TEST

/* Whether a file whose name holds what is mapped in this process. */
static int
mapped(const char *what)
{
    char line[4096];
    int found = 0;
    FILE *f = fopen("/proc/self/maps", "r");

    ck_assert_ptr_nonnull(f);
    while (!found && fgets(line, sizeof(line), f) != NULL)
        found = strstr(line, what) != NULL;
    fclose(f);
    return found;
}

START_TEST(elfutils_at_first_call)
{
    ck_assert_msg(!mapped("/libdw"), "libdw is mapped before any call");
    ck_assert_msg(!mapped("/libelf"), "libelf is mapped before any call");
    ck_assert_uint_eq(elf_version(EV_CURRENT), EV_CURRENT);
    ck_assert_msg(mapped("/libdw"), "libdw is not mapped after a call");
    /* A call that fails still fails as elfutils says. */
    ck_assert_ptr_null(elf_begin(-1, ELF_C_READ_MMAP, NULL));
}
END_TEST

/* heapadmin-attach's request: its lines up to the empty line, then the
 * config's text. */
START_TEST(attach_request)
{
    static const char req[] = "HEAPADMIN_DATADIR=/var/lib/heapadmin\n"
                              "HEAPADMIN_CONF=/etc/h.cnf\n"
                              "HEAPADMIN_LOG=\n"
                              "\n"
                              "datadir = \"/x\"\nHEAPADMIN_FORK=none\n";
    char v[64];

    ck_assert(ha_agent_attachreq_get(req, "HEAPADMIN_DATADIR", v, sizeof(v)));
    ck_assert_str_eq(v, "/var/lib/heapadmin");
    ck_assert(ha_agent_attachreq_get(req, "HEAPADMIN_CONF", v, sizeof(v)));
    ck_assert_str_eq(v, "/etc/h.cnf");
    ck_assert(ha_agent_attachreq_get(req, "HEAPADMIN_LOG", v, sizeof(v)));
    ck_assert_str_eq(v, "");
    /* After the empty line is the config, not a setting. */
    ck_assert(!ha_agent_attachreq_get(req, "HEAPADMIN_FORK", v, sizeof(v)));
    ck_assert(!ha_agent_attachreq_get(req, "HEAPADMIN", v, sizeof(v)));
    ck_assert(!ha_agent_attachreq_get(req, "HEAPADMIN_DATADI", v, sizeof(v)));
    /* Too long for the buffer: not found, not cut. */
    ck_assert(!ha_agent_attachreq_get(req, "HEAPADMIN_DATADIR", v, 10));
    ck_assert_str_eq(v, "");
    ck_assert_str_eq(ha_agent_attachreq_body(req),
                     "datadir = \"/x\"\nHEAPADMIN_FORK=none\n");
    ck_assert_ptr_null(ha_agent_attachreq_body("A=1\nB=2\n"));
    ck_assert_ptr_null(ha_agent_attachreq_body("A=1\n\n"));
    ck_assert_str_eq(ha_agent_attachreq_body("\ntext"), "text");
    ck_assert(!ha_agent_attachreq_get("", "A", v, sizeof(v)));
}
END_TEST

static Suite *
agent_suite(void)
{
    Suite *s = suite_create("agent");
    TCase *tc = tcase_create("slabsize");

    tcase_add_test(tc, slab_sizes);
    tcase_add_test(tc, wrapped_calls);
    suite_add_tcase(s, tc);
    tc = tcase_create("lazydw");
    tcase_add_test(tc, elfutils_at_first_call);
    suite_add_tcase(s, tc);
    tc = tcase_create("attachreq");
    tcase_add_test(tc, attach_request);
    suite_add_tcase(s, tc);
    return s;
}

HA_CHECK_MAIN(agent_suite)
