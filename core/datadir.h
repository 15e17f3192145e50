/* SPDX-License-Identifier: MIT
 *
 * The data directory: heap dumps, the TLS key material and the default
 * log file live there.
 */
#ifndef HA_DATADIR_H
#define HA_DATADIR_H

#include <stdbool.h>
#include <stddef.h>

/* Creates datadir (and missing parents, mode 0750), refuses one others
 * can write to (ha_datadir_check_owner) and checks that files can be
 * created in it. Writes its absolute path to abs (abslen bytes).
 * Returns 0, or -1 with err naming the path and the reason. */
int ha_datadir_prepare(const char *datadir, char *abs, size_t abslen,
                       char *err, size_t errlen);

/* Refuses a datadir (absolute path) that others could write to: group-
 * or world-writable, or owned by neither this process's user nor root
 * (as sshd's StrictModes). Returns 0, or -1 with err naming the path,
 * the mode or owner, and the fix. ha_datadir_prepare() calls it. */
int ha_datadir_check_owner(const char *abs, char *err, size_t errlen);

/* True when name is a plain file name (no '/', not "." or "..", not
 * empty, no control character), the only kind of name SQL or HTTP may
 * give for a file of the datadir; otherwise false with the reason in
 * why. Pure. */
bool ha_datadir_plain_name(const char *name, char *why, size_t whylen);

#endif /* HA_DATADIR_H */
