/* SPDX-License-Identifier: MIT
 *
 * What the files of dump files (dumpfiles.h) share: a prefix split and
 * directories of this user's (dumpfiles_paths.c), an earlier run's files
 * moved aside (dumpfiles_earlier.c), the in-memory directories and
 * their cleaning (dumpfiles_memory.c). Private to heap/dumpfiles_*.c.
 */
#ifndef HA_DUMPFILES_INT_H
#define HA_DUMPFILES_INT_H

#include <stddef.h>
#include <sys/types.h>

/* dumpfiles_paths.c */

/* Splits prefix into its directory (into dir) and its stem (*stem
 * points into prefix). Returns 0 or ENAMETOOLONG. */
int ha_dumpfiles_split_prefix(const char *prefix, char *dir, size_t dirlen,
                              const char **stem);

/* A directory of this user's at path (never a symlink), made with mode
 * when missing. Returns 0 or an errno value. */
int ha_dumpfiles_own_dir(const char *path, mode_t mode);

/* dumpfiles_earlier.c */

/* Moves the regular files of dir whose names start with head and whose
 * mtime is before not_after (seconds; 0: any) into a new directory
 * earlier-runs/<label>.<UTC time of the newest>/. Returns how many, or
 * -1 (logged). */
int ha_dumpfiles_move_aside(const char *dir, const char *head,
                            const char *label, double not_after);

/* dumpfiles_memory.c */

/* Removes the in-memory dump directories of processes that are gone and
 * this pid's own of an earlier run; this process's own is kept. */
void ha_dumpfiles_clean_memory(long pid);

#endif /* HA_DUMPFILES_INT_H */
