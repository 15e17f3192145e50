/* SPDX-License-Identifier: MIT
 *
 * The data directory: heap dumps, the TLS key material and the default
 * log file live there.
 */
#ifndef HA_DATADIR_H
#define HA_DATADIR_H

#include <stddef.h>

/* Creates datadir (and missing parents, mode 0750) and checks that files
 * can be created in it. Writes its absolute path to abs (abslen bytes).
 * Returns 0, or -1 with err naming the path and the reason. */
int ha_datadir_prepare(const char *datadir, char *abs, size_t abslen,
                       char *err, size_t errlen);

#endif /* HA_DATADIR_H */
