/* SPDX-License-Identifier: MIT
 *
 * An instance's log (log.c).
 */
#ifndef HA_API_LOG_H
#define HA_API_LOG_H

#include <stddef.h>

struct heapadmin;
struct heapadmin_options;

/* Sets h's log as o asks: the host's sink (o->log), none (o->no_log), or
 * the config's errorlog (relative to the datadir; heapadmind.log by
 * default) opened for appending; h->log_path names the latter in every
 * case. Returns 0, or -1 with why in err (the path too long, the file
 * not opened). */
int ha_api_log_open(struct heapadmin *h, const struct heapadmin_options *o,
                    char *err, size_t errlen);

#endif /* HA_API_LOG_H */
