/* SPDX-License-Identifier: MIT
 *
 * jemalloc's dump file names (prof_dump_filename in jemalloc 5.3):
 * <prefix>.<pid>.<seq>.{m,i,u}<n>.heap or <prefix>.<pid>.<seq>.f.heap;
 * and its prof_log files (prof_get_default_filename):
 * <prefix>.<pid>.<seq>.json, with a sequence of their own.
 * Pure; read by the dump tables and by dump housekeeping.
 */
#ifndef HA_DUMPNAME_H
#define HA_DUMPNAME_H

#include <stdbool.h>

struct ha_dump_name {
    const char *kind;   /* "manual", "interval", "high-water", "final",
                           "log" */
    long long pid;
    long long seq;
    long long kind_seq; /* -1 for final and log */
    bool log;           /* a prof_log file, not a heap dump */
};

/* Parses a dump's file name (from the right: the prefix may hold dots).
 * Returns false for any other name. */
bool ha_dumpname_parse(const char *name, struct ha_dump_name *d);

#endif /* HA_DUMPNAME_H */
