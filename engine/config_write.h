/* SPDX-License-Identifier: MIT
 *
 * A configuration written back as a config file (SAVE CONFIG TO FILE):
 * the inverse of ha_config_load_string() for every key of the key table.
 */
#ifndef HA_CONFIG_WRITE_H
#define HA_CONFIG_WRITE_H

#include <stdbool.h>

#include "core/buf.h"
#include "engine/config.h"

/* Writes cfg as a config file ha_config_load_string() reads back to the
 * same settings (SAVE CONFIG TO FILE): every key of the key table with
 * its value, libconfig strings escaped, unset tri-states left out (they
 * keep jemalloc's own value), 64-bit values with libconfig's L. datadir
 * is written as abs_datadir when given. header is a comment put first
 * (NULL: none). Appends to out. */
void ha_config_write(const struct ha_config *cfg, const char *abs_datadir,
                     const char *header, struct ha_buf *out);

/* Appends key k's value in cfg to out as libconfig writes it (a quoted,
 * escaped string; an integer, with L when 64-bit; true/false) and
 * returns true; returns false, appending nothing, when k is unset in
 * cfg (a tri-state left to jemalloc, a string with no value): the
 * default then applies. */
bool ha_config_key_value(const struct ha_config *cfg,
                         const struct ha_config_key *k, struct ha_buf *out);

#endif /* HA_CONFIG_WRITE_H */
