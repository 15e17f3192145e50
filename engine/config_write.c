/* SPDX-License-Identifier: MIT
 *
 * Writing a configuration back as a file (see config_write.h): the key
 * table of config_keys.c, walked in order, each set key as libconfig text.
 */
#include "engine/config_write.h"

#include <stddef.h>
#include <string.h>

#include "core/util.h"
#include "heap/jeconfig.h"

/* A libconfig string literal: '"' and '\\' escaped, control bytes as
 * \xNN (libconfig's escapes). */
static void
put_string(struct ha_buf *out, const char *v)
{
    ha_buf_append_u8(out, '"');
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p == '"' || *p == '\\')
            ha_buf_printf(out, "\\%c", *p);
        else if (*p < 0x20 || *p == 0x7f)
            ha_buf_printf(out, "\\x%02x", *p);
        else
            ha_buf_append_u8(out, *p);
    }
    ha_buf_append_u8(out, '"');
}

bool
ha_config_key_value(const struct ha_config *cfg,
                    const struct ha_config_key *k, struct ha_buf *out)
{
    const char *field = (const char *)cfg + k->offset;

    switch (k->type) {
    case HA_KEY_STRING: {
        const char *v = k->size > 0 ? field : *(char *const *)field;

        if (v == NULL)
            return false; /* unset: the default applies */
        put_string(out, v);
        return true;
    }
    case HA_KEY_INT: {
        int v = *(const int *)field;

        if (v == HA_UNSET && k->min > HA_UNSET)
            return false;
        if (k->offset == offsetof(struct ha_config,
                                  jemalloc.lg_prof_interval) &&
            v == HA_LG_INTERVAL_UNSET)
            return false;
        ha_buf_printf(out, "%d", v);
        return true;
    }
    case HA_KEY_INT64: {
        long long v = *(const long long *)field;

        if (v < k->min) /* unset (HA_DECAY_UNSET): the default applies */
            return false;
        ha_buf_printf(out, "%lldL", v);
        return true;
    }
    case HA_KEY_BOOL: {
        int v = *(const int *)field;

        if (v == HA_UNSET)
            return false;
        ha_buf_append_str(out, v ? "true" : "false");
        return true;
    }
    default:
        return false;
    }
}

static void
put_key(const struct ha_config *cfg, const struct ha_config_key *k,
        const char *abs_datadir, struct ha_buf *out)
{
    const char *indent = k->group != NULL ? "    " : "";
    struct ha_buf v = HA_BUF_INIT;

    if (k->group == NULL && strcmp(k->name, "datadir") == 0 &&
        abs_datadir != NULL) {
        ha_buf_printf(out, "%s%s = ", indent, k->name);
        put_string(out, abs_datadir);
        ha_buf_append_str(out, ";\n");
        return;
    }
    if (ha_config_key_value(cfg, k, &v)) {
        ha_buf_printf(out, "%s%s = ", indent, k->name);
        ha_buf_append(out, v.data, v.len);
        ha_buf_append_str(out, ";\n");
    }
    if (ha_buf_failed(&v))
        out->failed = true;
    ha_buf_free(&v);
}

void
ha_config_write(const struct ha_config *cfg, const char *abs_datadir,
                const char *header, struct ha_buf *out)
{
    size_t n_keys, n_groups;
    const struct ha_config_key *keys = ha_config_keys(&n_keys);
    const char *const *groups = ha_config_groups(&n_groups);

    if (header != NULL)
        ha_buf_printf(out, "%s\n", header);
    for (size_t i = 0; i < n_keys; i++)
        if (keys[i].group == NULL)
            put_key(cfg, &keys[i], abs_datadir, out);
    for (size_t g = 0; g < n_groups; g++) {
        ha_buf_printf(out, "\n%s =\n{\n", groups[g]);
        for (size_t i = 0; i < n_keys; i++)
            if (keys[i].group != NULL && strcmp(keys[i].group, groups[g]) == 0)
                put_key(cfg, &keys[i], abs_datadir, out);
        ha_buf_append_str(out, "};\n");
    }
}
