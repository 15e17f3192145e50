/* SPDX-License-Identifier: MIT
 *
 * User names without the name service. glibc's getpwuid_r() goes through
 * NSS, whose module list is guarded by a process-private lock: a host
 * that forks while any thread is inside a lookup leaves that lock held
 * for ever in the child, and the child's next lookup (its agent's thread
 * listing the datadir, CI's lost fork child) waits for ever. heapadmin's
 * threads therefore never call NSS: a name is read from /etc/passwd
 * itself (open, read, close: no lock, no allocation), and a uid it does
 * not list (a directory service's user) is shown as its number.
 */
#ifndef HA_USERS_H
#define HA_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* The name of uid from /etc/passwd into out (len bytes). Returns 0, or
 * -1 when no line names it: out then holds the uid in decimal. */
int ha_users_name(uid_t uid, char *out, size_t len);

/* The same over any passwd-format text file (tests). */
int ha_users_name_in(const char *path, uid_t uid, char *out, size_t len);

/* Whether line (len bytes, no newline) is a passwd line for uid; its
 * name then goes into out (len bytes). Pure. */
bool ha_users_parse_line(const char *line, size_t n, uid_t uid, char *out,
                         size_t len);

#endif /* HA_USERS_H */
