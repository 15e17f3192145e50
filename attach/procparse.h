/* SPDX-License-Identifier: MIT
 *
 * What heapadmin-attach reads in /proc about another process, parsed.
 * Pure: each function takes the text (or bytes) a caller read and
 * trusts nothing in it (a process names its own threads and files;
 * every number is range-checked, every field may be absent). Formats:
 * proc(5) of Linux 6.1 (status, maps, auxv, task/<tid>/syscall) and
 * the kernel's Documentation/admin-guide/LSM/Yama.rst (ptrace_scope).
 */
#ifndef HA_ATTACH_PROCPARSE_H
#define HA_ATTACH_PROCPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The fields of /proc/<pid>/status the refusals need. */
struct ha_procstatus {
    char state;          /* 'R', 'S', 'D', 'T', 't', 'Z', ...; 0: absent */
    long tracer;         /* TracerPid; -1: absent */
    long uid[4];         /* real, effective, saved, file system; -1 */
    long gid[4];         /* the same for groups */
    int seccomp;         /* 0 none, 1 strict, 2 filter; -1: absent */
    bool cap_sys_ptrace; /* CapEff holds CAP_SYS_PTRACE (bit 19) */
};

/* Parses status text (NUL-terminated). Returns 0, or -1 when it has no
 * State, TracerPid or Uid line (not a status file). */
int ha_procparse_status(const char *text, struct ha_procstatus *out);

/* One line of /proc/<pid>/maps. */
struct ha_procmap {
    uint64_t start, end;   /* [start, end) */
    char perms[5];         /* "r-xp" */
    uint64_t offset;       /* file offset of start */
    uint64_t inode;        /* 0: anonymous */
    const char *path;      /* into the line: "" when anonymous, else
                              the name as the kernel prints it (may end
                              in " (deleted)"); runs to the line's end */
    size_t path_len;
};

/* Parses the line [line, line + len) (no newline). Returns 0, or -1
 * when it is not a maps line. */
int ha_procparse_map(const char *line, size_t len, struct ha_procmap *out);

/* The value of auxiliary-vector entry type in buf (len bytes of
 * /proc/<pid>/auxv of a 64-bit process: pairs of 64-bit words up to
 * AT_NULL). Returns true with *value when present. */
bool ha_procparse_auxv(const uint8_t *buf, size_t len, uint64_t type,
                       uint64_t *value);

/* The first field of /proc/<pid>/task/<tid>/syscall: the system call
 * the thread is blocked in (>= 0), -1 when it is in user space
 * (blocked in none), -2 when "running" or unreadable. */
long ha_procparse_syscall(const char *text);

/* /proc/sys/kernel/yama/ptrace_scope's value: 0-3, or -1 when absent
 * or not a number (no Yama: the classic rules). */
int ha_procparse_scope(const char *text);

#endif /* HA_ATTACH_PROCPARSE_H */
