/* SPDX-License-Identifier: MIT
 *
 * Dump files in the datadir, kept whole and never overwritten.
 *
 * jemalloc creat()s a dump under its final name and writes it in place:
 * a kill -9 or a full disk mid-write leaves a truncated profile under a
 * valid name, and a restarted process with the same pid (pid 1 in every
 * container run) truncates the previous run's proxysql.1.0.m0.heap. So:
 *   - heapadmin's own dumps are written into a staging directory next to
 *     the dumps (<dir>/.heapadmin-staging, jemalloc's naming kept) and
 *     published with link(2), which never replaces a file;
 *   - jemalloc writes them into memory first (ha_dumpfiles_memory_prefix:
 *     it holds its locks while it writes), and they are copied to the
 *     staging directory with no lock held;
 *   - at start, staged leftovers of dead processes are removed, and an
 *     earlier run's files under this process's pid are moved to
 *     <dir>/earlier-runs/<stem>.<pid>.<UTC time of its newest file>/,
 *     before this run can write a single dump.
 */
#ifndef HA_DUMPFILES_H
#define HA_DUMPFILES_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#define HA_DUMPFILES_STAGING ".heapadmin-staging" /* under the dump dir */
#define HA_DUMPFILES_EARLIER "earlier-runs"       /* under the dump dir */

/* Who may read dumps and their sidecars (.buildid, .sym): mode 0600,
 * or 0640 owned by group gid when gid is not -1
 * (jemalloc_variables.dump_group). Process-wide, like jemalloc's dumps
 * themselves: set once at start. */
void ha_dumpfiles_set_perms(gid_t gid);

/* Applies that mode (and group) to path, a dump or sidecar just written.
 * Async-signal-safe and allocation-free: jemalloc's dump hook calls it,
 * under jemalloc's dump lock, for every dump it writes (interval,
 * high-water, final), which jemalloc itself creates 0644. Returns 0 or
 * an errno value. */
int ha_dumpfiles_perms(const char *path);

/* ha_dumpfiles_perms on the sidecar "<dump><suffix>" (".buildid"). */
int ha_dumpfiles_sidecar_perms(const char *dump, const char *suffix);

/* Writes text[0 .. len) as the new sidecar "<dump><suffix>" (never
 * through a symlink, never over a file that exists), with the dumps'
 * mode. Allocation-free. Returns 0 or an errno value. */
int ha_dumpfiles_write_sidecar(const char *dump, const char *suffix,
                               const char *text, size_t len);

/* This process's resident memory now (VmRSS: /proc/self/statm's
 * resident pages), or -1. Allocation-free. */
long long ha_dumpfiles_resident(void);

/* "<dump>.mem" for a dump jemalloc wrote on its own (interval,
 * high-water, final), from its dump hook: the resident memory now, the
 * trigger "jemalloc" (prof/dumpmem.h). Dumps in the staging directory
 * are heapadmin's own, which write a fuller one once published: skipped.
 * Allocation-free, async-signal-safe but for snprintf. */
void ha_dumpfiles_note_memory(const char *dump);

/* The directory of prefix ("<dir>/<stem>"; "." without a '/') into dir.
 * Returns 0, or ENAMETOOLONG. */
int ha_dumpfiles_dir(const char *prefix, char *dir, size_t dirlen);

/* The staging prefix for prefix ("<dir>/<stem>"): "<dir>/.heapadmin-
 * staging/<stem>" into out, the directory created (0700) when missing.
 * Returns 0, or an errno value: ENAMETOOLONG, ENOTDIR when the staging
 * name is taken by something other than a directory of this user's (a
 * symlink is never followed), or mkdir's. */
int ha_dumpfiles_staging_prefix(const char *prefix, char *out,
                                size_t outlen);

/* At a process's clean exit: removes the staging directory of dir (the
 * dump directory) when it is empty, so that none is left behind. A
 * process of the same directory that dumps at that instant makes it
 * again (ha_mallctl's dump retries once when it vanished). Returns 0
 * when none is left, or an errno value (ENOTEMPTY: another process's
 * dump is being written, or one was cut short; the next start cleans
 * that). */
int ha_dumpfiles_staging_release(const char *dir);

/* Where jemalloc writes heapadmin's own dumps first: a private
 * directory in memory ("/dev/shm/heapadmin.<pid>.<random>", tmpfs, made
 * by mkdtemp(3) on first use: 0700, a name nobody can take first, and
 * checked to be this user's, 0700 and no link at each use), so that
 * jemalloc, which holds its profiler's locks for as long as it writes,
 * never writes to a disk that may stall (a hung NFS mount, a dying disk:
 * every statistics read would wait behind it); the dump worker then
 * copies the file to the datadir with no lock held
 * (ha_dumpfiles_copy_in), and nothing of it stays in memory. A
 * "/dev/shm/heapadmin.<pid>" someone else made (the name used before)
 * is left alone and logged. The prefix "<memdir>/<stem>" for prefix
 * goes to out. Returns 0, or an errno value (no tmpfs there, mkdtemp
 * failed): the caller stages on disk instead. */
int ha_dumpfiles_memory_prefix(const char *prefix, char *out, size_t outlen);

/* Removes this process's memory directory if it is empty (a host's
 * tidy: another instance's dump may be in it). */
void ha_dumpfiles_memory_release(void);

/* An engine starts (hold) or stops (stop): when the last one of the
 * process stops, what its memory directory still holds (a dump cut
 * short) is removed with it, and logged. */
void ha_dumpfiles_memory_hold(void);
void ha_dumpfiles_memory_stop(void);

/* Copies mem, a dump written in memory, to the staging directory of
 * prefix ("<dir>/.heapadmin-staging/<its name>", never replacing a file,
 * synced), and removes mem. The staged path goes to out. Returns 0, or
 * an errno value (nothing left behind but on a disk that stopped
 * answering: the next start's housekeeping removes that). May block on
 * the disk: the dump worker's, never the loop's. */
int ha_dumpfiles_copy_in(const char *mem, const char *prefix, char *out,
                         size_t outlen);

/* Publishes the staged dump staged (a file in the staging directory) as
 * "<dir>/<its name>", never replacing a file: one already there (an
 * earlier run's, same pid) is first moved to earlier-runs. The final path
 * goes to out. Returns 0 (the staged name is gone), or an errno value
 * with the staged file left for the caller to remove. */
int ha_dumpfiles_publish(const char *staged, const char *dir, char *out,
                         size_t outlen);

/* Start-up housekeeping for prefix ("<dir>/<stem>") in process pid:
 * removes staged files of processes that no longer run (or of pid: an
 * earlier run's) and moves every "<stem>.<pid>.*" file in dir to
 * earlier-runs. Logs what it did. Returns the number of files moved, or
 * -1 when the directory cannot be read (logged). */
int ha_dumpfiles_start(const char *prefix, long pid);

/* Retention for prefix's dumps ("<dir>/<stem>.<pid>.<seq>.<kind>.heap",
 * any pid, with their "<dump>.*" sidecars): while more than max_count
 * dumps, or more than max_bytes in all, are in dir, the oldest (by mtime)
 * is removed, never the newest. 0 disables either limit. Out of
 * rotation (counted, never removed), for the 8 runs with the newest
 * dumps: each run's (pid's) dump of highest resident memory by its
 * <dump>.mem, whatever its kind, and the limit dumps of runs whose
 * process is gone. Logs each removal. Returns the number of dumps
 * removed, or -1 when dir cannot be read. */
int ha_dumpfiles_retain(const char *prefix, long long max_count,
                        long long max_bytes);

/* Removes jemalloc's own automatic dumps (interval "i" and high-water
 * "u" kinds) of process pid under prefix modified after since (epoch
 * seconds): dumps the free-space floor says to skip, which jemalloc
 * cannot be told not to write. Logs each. Returns how many. */
int ha_dumpfiles_drop_automatic(const char *prefix, long pid, time_t since);

/* Bytes an unprivileged process may still write in the directory of
 * prefix (statvfs f_bavail), or -1 with errno. */
long long ha_dumpfiles_free_bytes(const char *prefix);

#endif /* HA_DUMPFILES_H */
