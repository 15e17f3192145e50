/* SPDX-License-Identifier: MIT
 *
 * The daemon's own files in the datadir: the one rule for which names
 * there are heapadmin's, so that nothing a client names is written over
 * them (SAVE CONFIG TO FILE). Its own are:
 *   - the SQLite files heapadmin.db and heapadmin_stats.db, with their
 *     -wal, -shm and -journal;
 *   - the TLS certificate and key, the RSA key pair, their lock file,
 *     and the ssl_cert / ssl_key the config names;
 *   - dumps, lifetime logs and every side file heapadmin writes beside
 *     them (prof/dumpfile.h's rule: the one readers pass);
 *   - the log (errorlog, default heapadmind.log), the pid file;
 *   - the directories: staging, earlier-runs, runs;
 *   - the config file the daemon was started from (it may hold comments
 *     and @include lines that a written config would lose);
 *   - anything there that is not a regular file (an agent's socket, a
 *     user's directory, a link, a FIFO).
 */
#ifndef HA_ENGINE_OWNFILES_H
#define HA_ENGINE_OWNFILES_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/config.h"

/* What the rule lists, for messages. */
#define HA_OWNFILES_LIST                                                   \
    "heapadmin.db and heapadmin_stats.db (and their -wal, -shm, "         \
    "-journal), the TLS and RSA key files, dumps, lifetime logs and their " \
    "side files, the log, the pid file, the staging, earlier-runs and "    \
    "runs directories, and the config file heapadmind was started from"

/* Whether name, a plain file name (core/datadir.h) in datadir
 * (absolute), is one of the daemon's own files under cfg (NULL: the
 * defaults alone). When it is, what (whatlen bytes) says which ("the
 * TLS private key"). Stats the file when it exists (never following a
 * link). */
bool ha_ownfiles_is_own(const char *datadir, const struct ha_config *cfg,
                        const char *name, char *what, size_t whatlen);

#endif /* HA_ENGINE_OWNFILES_H */
