/* SPDX-License-Identifier: MIT
 *
 * Unit tests for what the fleet's pieces parse and build, pure code all:
 * push_targets and service_names (engine/pushcfg.c), the wire bodies
 * of a push (prof/pushwire.c: Pyroscope's ingest URL and multipart form,
 * Parca's WriteRaw JSON, base64 against RFC 4648's vectors), the
 * build-id note reader (engine/labels.c), the /sd document (http/sd.c)
 * and a gateway's agreement rule for labels (core/exposcan.c).
 */
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"

#include "core/buf.h"
#include "core/exposcan.h"
#include "engine/config.h"
#include "engine/config_write.h"
#include "engine/families.h"
#include "engine/labels.h"
#include "engine/pushcfg.h"
#include "http/sd.h"
#include "prof/pushwire.h"

static const char *
text_of(struct ha_buf *b)
{
    ha_buf_append_u8(b, 0);
    ck_assert(!ha_buf_failed(b));
    return (const char *)b->data;
}

/* ------------------------------------------------------------------
 * push_targets
 * ------------------------------------------------------------------ */

START_TEST(test_pushcfg_parse_targets)
{
    struct ha_push_target *t = NULL;
    size_t n = 0;
    char err[512];

    ck_assert_int_eq(
        ha_pushcfg_parse("type=pyroscope url=http://10.0.0.5:4040/ "
                         "kinds=limit,peak tenant=ops; "
                         "type=parca url=https://parca:7070/prefix "
                         "bearer_token=abc",
                         &t, &n, err, sizeof(err)),
        0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(t[0].type, HA_PUSH_PYROSCOPE);
    ck_assert_str_eq(t[0].url, "http://10.0.0.5:4040");
    ck_assert_uint_eq(t[0].kinds, HA_PUSH_KIND_LIMIT | HA_PUSH_KIND_PEAK);
    ck_assert_str_eq(t[0].tenant, "ops");
    ck_assert_int_eq(t[1].type, HA_PUSH_PARCA);
    ck_assert_str_eq(t[1].url, "https://parca:7070/prefix");
    ck_assert_uint_eq(t[1].kinds, HA_PUSH_KINDS_DEFAULT);
    ck_assert_str_eq(t[1].bearer_token, "abc");
    ck_assert_int_eq(strlen(t[0].id), 9);
    ck_assert_str_ne(t[0].id, t[1].id);
    free(t);
    /* none */
    ck_assert_int_eq(ha_pushcfg_parse("", &t, &n, err, sizeof(err)), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(ha_pushcfg_parse(NULL, &t, &n, err, sizeof(err)), 0);
}
END_TEST

static const struct {
    const char *spec;
    const char *expect; /* in err */
} bad_targets[] = {
    {"url=http://x", "type and url are required"},
    {"type=pyroscope", "type and url are required"},
    {"type=zipkin url=http://x", "allowed: pyroscope, parca"},
    {"type=parca url=ftp://x", "must start with http:// or https://"},
    {"type=parca url=http://u:p@x", "give basic_auth instead"},
    {"type=parca url=http://x?a=1", "no query"},
    {"type=parca url=http://x kinds=limit,oom", "'oom' is not a kind"},
    {"type=parca url=http://x basic_auth=nocolon", "user:password"},
    {"type=parca url=http://x basic_auth=a:b bearer_token=t", "not both"},
    {"type=parca url=http://x colour=red", "unknown key 'colour'"},
    {"type=parca url=http://x; type=parca url=http://x",
     "the same type and url"},
    {"type=parca url=http://x url", "is not key=value"},
};

START_TEST(test_pushcfg_parse_refused)
{
    struct ha_push_target *t = NULL;
    size_t n = 7;
    char err[512];

    ck_assert_int_eq(ha_pushcfg_parse(bad_targets[_i].spec, &t, &n, err,
                                      sizeof(err)),
                     -1);
    ck_assert_msg(strstr(err, bad_targets[_i].expect) != NULL,
                  "case %d: '%s' lacks '%s'", _i, err,
                  bad_targets[_i].expect);
    ck_assert_ptr_null(t);
    ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_pushcfg_secrets_masked)
{
    char out[512], err[512];
    struct ha_push_target *t = NULL;
    size_t n;

    ha_pushcfg_mask("type=parca url=http://x basic_auth=ops:hunter2; "
                    "type=pyroscope url=http://y bearer_token=tok3n",
                    out, sizeof(out));
    ck_assert_str_eq(out, "type=parca url=http://x basic_auth=ops:****; "
                          "type=pyroscope url=http://y bearer_token=****");
    /* an error never quotes a secret */
    ck_assert_int_eq(ha_pushcfg_parse("type=parca url=http://x "
                                      "bearer_token=se\001cret",
                                      &t, &n, err, sizeof(err)),
                     -1);
    ck_assert_ptr_null(strstr(err, "cret"));
}
END_TEST

START_TEST(test_pushcfg_kinds)
{
    unsigned k;
    char err[256];

    ck_assert_uint_eq(ha_pushcfg_kind_of("manual", "limit"),
                      HA_PUSH_KIND_LIMIT);
    ck_assert_uint_eq(ha_pushcfg_kind_of("manual", "leak-watch"),
                      HA_PUSH_KIND_LEAK);
    ck_assert_uint_eq(ha_pushcfg_kind_of("manual", "automatic"),
                      HA_PUSH_KIND_AUTOMATIC);
    ck_assert_uint_eq(ha_pushcfg_kind_of("manual", "manual"),
                      HA_PUSH_KIND_MANUAL);
    ck_assert_uint_eq(ha_pushcfg_kind_of("manual", ""), HA_PUSH_KIND_MANUAL);
    ck_assert_uint_eq(ha_pushcfg_kind_of("high-water", "jemalloc"),
                      HA_PUSH_KIND_PEAK);
    ck_assert_uint_eq(ha_pushcfg_kind_of("interval", ""),
                      HA_PUSH_KIND_INTERVAL);
    ck_assert_uint_eq(ha_pushcfg_kind_of("final", ""), HA_PUSH_KIND_FINAL);
    ck_assert_uint_eq(ha_pushcfg_kind_of("log", ""), 0);
    ck_assert_int_eq(ha_pushcfg_parse_kinds("live,final", &k, err,
                                            sizeof(err)),
                     0);
    ck_assert_uint_eq(k, HA_PUSH_KIND_LIVE | HA_PUSH_KIND_FINAL);
    ck_assert_str_eq(ha_pushcfg_kind_name(HA_PUSH_KIND_PEAK), "peak");
}
END_TEST

START_TEST(test_pushcfg_services)
{
    struct ha_service_name *m = NULL;
    size_t n = 0;
    char err[256];

    ck_assert_int_eq(ha_pushcfg_parse_services(
                         " redis-server=cache ; nginx=web;", &m, &n, err,
                         sizeof(err)),
                     0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(ha_pushcfg_service_of(m, n, "redis-server"), "cache");
    ck_assert_str_eq(ha_pushcfg_service_of(m, n, "nginx"), "web");
    ck_assert_str_eq(ha_pushcfg_service_of(m, n, "memcached"), "memcached");
    free(m);
    ck_assert_int_eq(ha_pushcfg_parse_services("a=b;a=c", &m, &n, err,
                                               sizeof(err)),
                     -1);
    ck_assert_ptr_nonnull(strstr(err, "given twice"));
    ck_assert_int_eq(ha_pushcfg_parse_services("redis=ca che", &m, &n, err,
                                               sizeof(err)),
                     -1);
    ck_assert_int_eq(ha_pushcfg_parse_services("redis", &m, &n, err,
                                               sizeof(err)),
                     -1);
}
END_TEST

START_TEST(test_pushcfg_config_list_form)
{
    struct ha_config cfg, back;
    struct ha_buf b = HA_BUF_INIT;
    char err[512];

    ha_config_init(&cfg);
    ck_assert_msg(
        ha_config_load_string(
            &cfg,
            "admin_variables = {\n"
            "  service_names = \"redis-server=cache\"\n"
            "  profile_credentials = \"scraper:s3cret\"\n"
            "  push_targets = (\n"
            "    { type = \"pyroscope\"; url = \"http://h:4040\"; "
            "kinds = \"limit\"; },\n"
            "    { type = \"parca\"; url = \"http://p:7070\"; "
            "basic_auth = \"u:pw\"; }\n"
            "  )\n"
            "  push_outbox_max_bytes = 1048576\n"
            "}\n",
            "t.cnf", err, sizeof(err)) == 0,
        "%s", err);
    ck_assert_str_eq(cfg.push_targets,
                     "type=pyroscope url=http://h:4040 kinds=limit; "
                     "type=parca url=http://p:7070 basic_auth=u:pw");
    ck_assert_uint_eq(cfg.n_push, 2);
    ck_assert_uint_eq(cfg.n_services, 1);
    ck_assert_int_eq(cfg.users[cfg.n_users - 1].role, HA_ROLE_PROFILE);
    ck_assert_int_eq(cfg.push_outbox_max_bytes, 1048576);
    /* SAVE CONFIG TO FILE writes the text form, which reads back */
    ha_config_write(&cfg, "/tmp", NULL, &b);
    ha_config_init(&back);
    ck_assert_msg(ha_config_load_string(&back, text_of(&b), "saved.cnf", err,
                                        sizeof(err)) == 0,
                  "%s", err);
    ck_assert_str_eq(back.push_targets, cfg.push_targets);
    ck_assert_uint_eq(back.n_push, 2);
    ha_buf_free(&b);
    ha_config_free(&back);
    ha_config_free(&cfg);
}
END_TEST

static const struct {
    const char *text;
    const char *expect;
} bad_configs[] = {
    {"admin_variables = { push_targets = ( \"x\" ) }",
     "t.cnf:1: admin_variables.push_targets: element 1 must be a group"},
    {"admin_variables = { push_targets = ( { type = \"parca\"; url = "
     "\"http://a b\"; } ) }",
     "url holds a space"},
    {"admin_variables = { push_targets = ( { type = \"parca\"; port = 1; "
     "} ) }",
     "port must be a string"},
    {"admin_variables = { push_targets = ( { type = \"parca\"; } ) }",
     "admin_variables.push_targets: target 1: type and url are required"},
    {"admin_variables = { service_names = \"redis\" }",
     "admin_variables.service_names: item 1 is not program=service"},
    {"admin_variables = { admin_credentials = \"a:b\"; "
     "profile_credentials = \"a:c\" }",
     "user 'a' is defined twice"},
};

START_TEST(test_pushcfg_config_refused)
{
    struct ha_config cfg;
    char err[512];

    ha_config_init(&cfg);
    ck_assert_int_eq(ha_config_load_string(&cfg, bad_configs[_i].text,
                                           "t.cnf", err, sizeof(err)),
                     -1);
    ck_assert_msg(strstr(err, bad_configs[_i].expect) != NULL,
                  "case %d: '%s' lacks '%s'", _i, err,
                  bad_configs[_i].expect);
    ha_config_free(&cfg);
}
END_TEST

/* ------------------------------------------------------------------
 * Wire bodies
 * ------------------------------------------------------------------ */

/* RFC 4648 section 10. */
static const struct {
    const char *in, *out;
} b64[] = {
    {"", ""},         {"f", "Zg=="},        {"fo", "Zm8="},
    {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

START_TEST(test_pushwire_base64)
{
    struct ha_buf b = HA_BUF_INIT;

    ha_pushwire_base64(b64[_i].in, strlen(b64[_i].in), &b);
    ck_assert_str_eq(text_of(&b), b64[_i].out);
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_pushwire_pyroscope_url)
{
    struct ha_buf b = HA_BUF_INIT;
    const struct ha_pushwire_label l[] = {
        {"program", "redis-server"},
        {"reason", "usage 95% of {limit}, now"},
    };

    ha_pushwire_pyroscope_url("http://h:4040", "cache", l, 2, 100, 101, &b);
    /* name=cache{program=redis-server,reason=usage_95%_of__limit___now} */
    ck_assert_str_eq(text_of(&b),
                     "http://h:4040/ingest?name=cache%7Bprogram%3Dredis-"
                     "server%2Creason%3Dusage_95%25_of__limit___now%7D"
                     "&from=100&until=101&format=pprof&spyName=heapadmin");
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_pushwire_multipart)
{
    struct ha_buf b = HA_BUF_INIT;
    const char body[] = "\x1f\x8b pprof --heapadmin-x";
    char boundary[96];

    ha_pushwire_boundary(body, sizeof(body) - 1, 42, boundary,
                         sizeof(boundary));
    ck_assert_ptr_null(memmem(body, sizeof(body) - 1, boundary,
                              strlen(boundary)));
    ck_assert_int_le(strlen(boundary), 70);
    ha_pushwire_multipart("B", body, sizeof(body) - 1, &b);
    ck_assert_str_eq(text_of(&b),
                     "--B\r\nContent-Disposition: form-data; "
                     "name=\"profile\"; filename=\"profile.pprof\"\r\n"
                     "Content-Type: application/octet-stream\r\n\r\n"
                     "\x1f\x8b pprof --heapadmin-x\r\n--B--\r\n");
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_pushwire_boundary_grows)
{
    char boundary[96], body[200];

    /* a body holding the first boundary tried */
    ha_pushwire_boundary("", 0, 7, boundary, sizeof(boundary));
    snprintf(body, sizeof(body), "x%sy", boundary);
    ha_pushwire_boundary(body, strlen(body), 7, boundary, sizeof(boundary));
    ck_assert_ptr_null(strstr(body, boundary));
}
END_TEST

START_TEST(test_pushwire_parca_json)
{
    struct ha_buf b = HA_BUF_INIT;
    const struct ha_pushwire_label l[] = {
        {"__name__", "memory"},
        {"reason", "a \"quoted\"\nline"},
    };

    ha_pushwire_parca_json(l, 2, "foo", 3, &b);
    ck_assert_str_eq(text_of(&b),
                     "{\"series\":[{\"labels\":{\"labels\":[{\"name\":"
                     "\"__name__\",\"value\":\"memory\"},{\"name\":"
                     "\"reason\",\"value\":\"a \\\"quoted\\\"\\u000aline\"}"
                     "]},\"samples\":[{\"rawProfile\":\"Zm9v\"}]}],"
                     "\"normalized\":false}");
    ha_buf_free(&b);
}
END_TEST

START_TEST(test_pushwire_label_value)
{
    char out[8], six[7];

    ha_pushwire_label_value("a{b},c=d e", out, sizeof(out));
    ck_assert_str_eq(out, "a_b__c_");
    /* never cut inside a UTF-8 character: "abcde" then é (2 bytes) in
     * room for 6 */
    ha_pushwire_label_value("abcde\xc3\xa9z", six, sizeof(six));
    ck_assert_str_eq(six, "abcde");
    ha_pushwire_label_value("abcde\xc3\xa9z", out, sizeof(out));
    ck_assert_str_eq(out, "abcde\xc3\xa9");
}
END_TEST

/* ------------------------------------------------------------------
 * Labels, /sd, the gateway's agreement rule
 * ------------------------------------------------------------------ */

START_TEST(test_labels_note_build_id)
{
    uint8_t notes[64];
    ElfW(Nhdr) other = {4, 4, 1}, gnu = {4, 4, NT_GNU_BUILD_ID};
    char out[48];

    memset(notes, 0, sizeof(notes));
    /* an ABI tag note first, then the build-id */
    memcpy(notes, &other, sizeof(other));
    memcpy(notes + 12, "GNU", 4);
    memcpy(notes + 20, &gnu, sizeof(gnu));
    memcpy(notes + 32, "GNU", 4);
    memcpy(notes + 36, "\xde\xad\xbe\xef", 4);
    ck_assert_int_eq(ha_labels_note_build_id(notes, 40, out, sizeof(out)),
                     0);
    ck_assert_str_eq(out, "deadbeef");
    /* cut short: none, never a read past the end */
    ck_assert_int_eq(ha_labels_note_build_id(notes, 38, out, sizeof(out)),
                     -1);
}
END_TEST

START_TEST(test_sd_document)
{
    struct ha_buf b = HA_BUF_INIT;
    const struct ha_sd_process p[] = {
        {11, "redis-server", "cache", "redis"},
        {21, "nginx", "web", "www-data"},
        {22, "nginx", "web", "www-data"},
    };
    const char *t;

    ha_sd_document("h:6070", "node1", NULL, 0, &b);
    ck_assert_str_eq(text_of(&b),
                     "[{\"targets\":[\"h:6070\"],\"labels\":{"
                     "\"__meta_heapadmin_scope\":\"host\",\"host\":"
                     "\"node1\"}}]\n");
    ha_buf_free(&b);
    ha_buf_init(&b);
    ha_sd_document("h:6070", "node1", p, 3, &b);
    t = text_of(&b);
    /* one process of its program: no pid label, instance by service */
    ck_assert_ptr_nonnull(strstr(
        t, "{\"__metrics_path__\":\"/metrics\",\"__param_pid\":\"11\","
           "\"__meta_heapadmin_scope\":\"process\",\"__meta_heapadmin_pid\":"
           "\"11\",\"instance\":\"h:6070/cache\",\"service_name\":\"cache\","
           "\"program\":\"redis-server\",\"user\":\"redis\",\"host\":"
           "\"node1\"}"));
    /* two workers: the pid tells them apart */
    ck_assert_ptr_nonnull(strstr(t, "\"instance\":\"h:6070/web/22\""));
    ck_assert_ptr_nonnull(strstr(t, "\"host\":\"node1\",\"pid\":\"21\"}"));
    ha_buf_free(&b);
    ck_assert(ha_sd_host_ok("127.0.0.1:6070"));
    ck_assert(ha_sd_host_ok("[::1]:6070"));
    ck_assert(!ha_sd_host_ok("evil\",\"x"));
    ck_assert(!ha_sd_host_ok(""));
}
END_TEST

START_TEST(test_exposcan_agreement)
{
    const struct ha_exposcan_policy pol = {
        .rules = ha_families,
        .n_rules = ha_families_n,
        .reserved = "pid program user",
        .max_series = 100,
        .max_bytes = 1 << 20,
    };
    const char *extra[] = {"pid", "7", "program", "redis-server", NULL};
    const char *expect[] = {"program", "redis-server", "service_name",
                            "cache", NULL};
    const char text[] =
        "heapadmin_build_info{program=\"redis-server\",service_name="
        "\"cache\",build_id=\"ab\",version=\"1\"} 1\n";
    const char other[] =
        "heapadmin_build_info{program=\"nginx\",service_name="
        "\"web\",build_id=\"ab\",version=\"1\"} 1\n";
    struct ha_exposcan s;
    struct ha_expo e;
    struct ha_buf b = HA_BUF_INIT;
    const char *t;

    /* merged: an agreeing program is dropped, not renamed */
    ha_exposcan_init(&s, &pol);
    ck_assert_int_eq(ha_exposcan_add(&s, text, sizeof(text) - 1, extra,
                                     NULL),
                     0);
    ha_expo_init(&e, &b, HA_EXPO_PROMETHEUS);
    ha_exposcan_write(&s, &e);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    t = text_of(&b);
    ck_assert_msg(strstr(t, "heapadmin_build_info{pid=\"7\",program=\"redis-"
                            "server\",service_name=\"cache\",build_id="
                            "\"ab\",version=\"1\"} 1\n") != NULL,
                  "%s", t);
    ha_exposcan_free(&s);
    ha_buf_free(&b);
    /* one process's: program and service dropped when they agree,
     * renamed when not */
    ha_buf_init(&b);
    ha_exposcan_init(&s, &pol);
    ck_assert_int_eq(ha_exposcan_add_expect(&s, text, sizeof(text) - 1,
                                            NULL, expect, NULL),
                     0);
    ck_assert_int_eq(ha_exposcan_add_expect(&s, other, sizeof(other) - 1,
                                            NULL, expect, NULL),
                     0);
    ha_expo_init(&e, &b, HA_EXPO_PROMETHEUS);
    ha_exposcan_write(&s, &e);
    ck_assert_int_eq(ha_expo_finish(&e), 0);
    t = text_of(&b);
    ck_assert_msg(strstr(t, "heapadmin_build_info{build_id=\"ab\","
                            "version=\"1\"} 1\n") != NULL,
                  "%s", t);
    ck_assert_msg(strstr(t, "heapadmin_build_info{exported_program="
                            "\"nginx\",exported_service_name=\"web\","
                            "build_id=\"ab\",version=\"1\"} 1\n") != NULL,
                  "%s", t);
    ha_exposcan_free(&s);
    ha_buf_free(&b);
}
END_TEST

static Suite *
push_suite(void)
{
    Suite *s = suite_create("push");
    TCase *core = tcase_create("core");
    TCase *errors = tcase_create("errors");

    tcase_add_test(core, test_pushcfg_parse_targets);
    tcase_add_test(core, test_pushcfg_kinds);
    tcase_add_test(core, test_pushcfg_services);
    tcase_add_test(core, test_pushcfg_config_list_form);
    tcase_add_loop_test(core, test_pushwire_base64, 0,
                        (int)(sizeof(b64) / sizeof(b64[0])));
    tcase_add_test(core, test_pushwire_pyroscope_url);
    tcase_add_test(core, test_pushwire_multipart);
    tcase_add_test(core, test_pushwire_boundary_grows);
    tcase_add_test(core, test_pushwire_parca_json);
    tcase_add_test(core, test_pushwire_label_value);
    tcase_add_test(core, test_labels_note_build_id);
    tcase_add_test(core, test_sd_document);
    tcase_add_test(core, test_exposcan_agreement);
    tcase_add_loop_test(errors, test_pushcfg_parse_refused, 0,
                        (int)(sizeof(bad_targets) / sizeof(bad_targets[0])));
    tcase_add_test(errors, test_pushcfg_secrets_masked);
    tcase_add_loop_test(errors, test_pushcfg_config_refused, 0,
                        (int)(sizeof(bad_configs) / sizeof(bad_configs[0])));
    suite_add_tcase(s, core);
    suite_add_tcase(s, errors);
    return s;
}

HA_CHECK_MAIN(push_suite)
