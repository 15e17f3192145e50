/* SPDX-License-Identifier: MIT
 *
 * The disk layer of SAVE ... TO DISK / LOAD ... FROM DISK: an SQLite file
 * in the datadir (heapadmin.db, as ProxySQL keeps proxysql.db) holding
 * ProxySQL's global_variables table (variable_name, variable_value).
 * Every save is one SQLite transaction in a rollback journal with
 * synchronous=FULL, so a crash or kill -9 mid-save leaves the previous
 * state whole. Sessions see the file read-only as the schema "disk".
 */
#ifndef HA_DISKSTORE_H
#define HA_DISKSTORE_H

#include <stddef.h>

#define HA_DISKSTORE_FILE "heapadmin.db"

/* "<datadir>/heapadmin.db" into out. Returns 0, or -1 when too long. */
int ha_diskstore_path(const char *datadir, char *out, size_t outlen);

/* A file that is not heapadmin's: global_variables is a view, a virtual
 * table, has a trigger, or other columns. Nothing in it is written. */
#define HA_DISKSTORE_FOREIGN (-2)

/* Creates the file (mode 0600) and its table when missing. Returns 0,
 * HA_DISKSTORE_FOREIGN (err says what is wrong and what is allowed; the
 * file is left as it was), or -1 with err naming the file and SQLite's
 * reason. Every operation below checks the same and fails alike. */
int ha_diskstore_init(const char *datadir, char *err, size_t errlen);

/* Replaces every saved row whose name starts with prefix ("jemalloc-")
 * by the n given ones, in one transaction. Returns 0, or -1 with err
 * (nothing changed on disk). */
int ha_diskstore_save(const char *datadir, const char *prefix,
                      const char *const *names, const char *const *values,
                      size_t n, char *err, size_t errlen);

/* Calls fn for each saved row whose name starts with prefix, in name
 * order; fn returning non-zero stops (and is returned). Returns 0, the
 * non-zero of fn, or -1 with err. A missing file has no rows. */
int ha_diskstore_load(const char *datadir, const char *prefix,
                      int (*fn)(void *arg, const char *name,
                                const char *value),
                      void *arg, char *err, size_t errlen);

/* Deletes the saved rows whose names start with prefix (--initial).
 * Returns 0, or -1 with err. */
int ha_diskstore_clear(const char *datadir, const char *prefix, char *err,
                       size_t errlen);

#endif /* HA_DISKSTORE_H */
