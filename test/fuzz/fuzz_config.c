/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: ha_config_load_string(), i.e. libconfig's
 * config_read_string() followed by heapadmin's validation of every
 * section and key (credentials, mysql_ifaces, jemalloc_variables).
 * Seeds: corpus/config/, the shipped heapadmin.cnf and proxysql.cnf-style
 * files.
 *
 * "@include" is defused first: it makes libconfig open files named by the
 * input (/dev/stdin would hang the fuzzer), which is the file loader's
 * business, not the parser's.
 *
 * Invariants: 0 or -1; on -1 err is set and cfg holds just the defaults;
 * on 0 every list and message is present; ha_config_free() releases it
 * all (LeakSanitizer checks after each input).
 */
#include "fuzz.h"

#include "engine/config.h"

static void
defuse_include(char *text)
{
    char *p = text;

    while ((p = strstr(p, "@include")) != NULL) {
        p[1] = 'I';
        p += 8;
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ha_config cfg, defaults;
    char *text, err[512];
    int rc;

    text = fuzz_strndup(data, size);
    defuse_include(text);

    ha_config_init(&defaults);
    ha_config_init(&cfg);
    err[0] = '\0';
    rc = ha_config_load_string(&cfg, text, "fuzz.cnf", err, sizeof(err));
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(cfg.n_users == 0 || cfg.users != NULL, "users");
        FUZZ_CHECK(cfg.n_ifaces == 0 || cfg.ifaces != NULL, "ifaces");
        for (size_t i = 0; i < cfg.n_users; i++)
            FUZZ_CHECK(fuzz_has_nul(cfg.users[i].name,
                                    sizeof(cfg.users[i].name)),
                       "user %zu", i);
        for (size_t i = 0; i < cfg.n_ifaces; i++) {
            FUZZ_CHECK(fuzz_has_nul(cfg.ifaces[i].host,
                                    sizeof(cfg.ifaces[i].host)) &&
                           fuzz_has_nul(cfg.ifaces[i].path,
                                        sizeof(cfg.ifaces[i].path)),
                       "iface %zu", i);
        }
        for (size_t i = 0; i < cfg.n_messages; i++)
            FUZZ_CHECK(cfg.messages[i].text != NULL &&
                           cfg.messages[i].severity < HA_CONFIG_SEVERITY_MAX,
                       "message %zu", i);
    } else {
        FUZZ_CHECK(err[0] != '\0', "error without text");
        /* "Fully freed-and-reset to defaults": the built-in users and
         * listener, nothing from the text. */
        FUZZ_CHECK(cfg.n_users == defaults.n_users &&
                       cfg.n_ifaces == defaults.n_ifaces &&
                       cfg.n_messages == 0,
                   "half-configured after an error: %zu users, %zu ifaces, "
                   "%zu messages",
                   cfg.n_users, cfg.n_ifaces, cfg.n_messages);
    }
    ha_config_free(&cfg);
    ha_config_free(&defaults);
    free(text);
    return 0;
}
