/* SPDX-License-Identifier: MIT
 *
 * The target looked at from the outside (see target.h). Its objects are
 * found in the order the loader searches them: its link map (r_debug,
 * through the executable's DT_DEBUG, read with process_vm_readv), so
 * "the first malloc" is the one the process calls, as dlsym(RTLD_DEFAULT)
 * in the agent would see it. Each object's file is read as the target
 * mapped it (/proc/<pid>/map_files/, or its path under /proc/<pid>/root/
 * when map_files is closed to us): a library upgraded on disk since the
 * process started is still read as the one it runs.
 */
#include "attach/target.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "attach/elfsym.h"
#include "core/smallfile.h"
#include "core/util.h"

#define LINK_MAP_MAX 4096   /* objects walked at most */
#define DYN_MAX 512         /* dynamic entries read at most */
#define FILE_MAX (1ull << 32) /* objects mapped to be read, at most */
#define AGENT_THREAD "heapadmin"

/* A file mapped whole to be read. */
struct mapped {
    const uint8_t *buf;
    size_t len;
};

static int
map_file(const char *path, struct mapped *m)
{
    struct stat st;
    void *p;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    m->buf = NULL;
    m->len = 0;
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 ||
        (unsigned long long)st.st_size > FILE_MAX) {
        close(fd);
        errno = EINVAL;
        return -1;
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return -1;
    m->buf = p;
    m->len = (size_t)st.st_size;
    return 0;
}

static void
unmap_file(struct mapped *m)
{
    if (m->buf != NULL)
        munmap((void *)m->buf, m->len);
    m->buf = NULL;
}

static int
mem_read(pid_t pid, uint64_t addr, void *buf, size_t n)
{
    struct iovec local = {buf, n}, remote = {(void *)(uintptr_t)addr, n};

    return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)n
               ? 0
               : -1;
}

/* A NUL-terminated string at addr, read a page at most at a time (it may
 * end just before an unmapped page). */
static int
mem_string(pid_t pid, uint64_t addr, char *out, size_t len)
{
    size_t got = 0;

    while (got + 1 < len) {
        size_t page_left = 4096 - ((addr + got) & 4095), n = len - 1 - got;

        if (n > page_left)
            n = page_left;
        if (mem_read(pid, addr + got, out + got, n) != 0)
            return -1;
        if (memchr(out + got, '\0', n) != NULL)
            return 0;
        got += n;
    }
    out[len - 1] = '\0';
    return 0;
}

/* /proc/<pid>/maps, whole, malloc'd (NULL on failure). */
static char *
read_maps(pid_t pid)
{
    char path[64];
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    int fd;

    snprintf(path, sizeof(path), "/proc/%ld/maps", (long)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (buf == NULL || fd < 0) {
        free(buf);
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    for (;;) {
        ssize_t n;

        if (len + 1 >= cap) {
            char *bigger = realloc(buf, cap * 2);

            if (bigger == NULL) {
                free(buf);
                close(fd);
                return NULL;
            }
            buf = bigger;
            cap *= 2;
        }
        n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return buf;
}

/* Calls fn for each line of maps; stops when it returns true. */
static bool
each_map(const char *maps, bool (*fn)(const struct ha_procmap *m, void *arg),
         void *arg)
{
    for (const char *p = maps; *p != '\0';) {
        const char *eol = strchr(p, '\n');
        size_t n = eol != NULL ? (size_t)(eol - p) : strlen(p);
        struct ha_procmap m;

        if (ha_procparse_map(p, n, &m) == 0 && fn(&m, arg))
            return true;
        p += n;
        if (*p == '\n')
            p++;
    }
    return false;
}

struct find_file {
    const char *name;    /* the path maps shows, or NULL */
    uint64_t at;         /* ... or where its first page is mapped */
    uint64_t start, end;
};

static bool
is_file(const struct ha_procmap *m, void *arg)
{
    struct find_file *f = arg;

    if (m->offset != 0 || m->inode == 0)
        return false;
    if (f->name != NULL && (m->path_len != strlen(f->name) ||
                            memcmp(m->path, f->name, m->path_len) != 0))
        return false;
    if (f->name == NULL && m->start != f->at)
        return false;
    f->start = m->start;
    f->end = m->end;
    return true;
}

/* The file of the object the link map names name, loaded at bias, as
 * mapped (its first page is at bias in all but prelinked objects): its
 * map_files entry, else its path under the process's root (the link
 * map's name is the loader's, /lib/... where maps says /usr/lib/...). */
static bool
object_file(pid_t pid, const char *maps, const char *name, uint64_t bias,
            char *out, size_t len)
{
    struct find_file f = {NULL, bias, 0, 0};

    if (name[0] != '/')
        return false;
    if (each_map(maps, is_file, &f)) {
        snprintf(out, len, "/proc/%ld/map_files/%llx-%llx", (long)pid,
                 (unsigned long long)f.start, (unsigned long long)f.end);
        if (access(out, R_OK) == 0)
            return true;
    }
    return (size_t)snprintf(out, len, "/proc/%ld/root%s", (long)pid, name) <
           len;
}

/* ------------------------------------------------------------------
 * Who may attach
 * ------------------------------------------------------------------ */

static bool
is_ancestor(pid_t me, pid_t pid)
{
    for (int depth = 0; pid > 1 && depth < 256; depth++) {
        char path[64], buf[512], *p;
        long ppid;

        snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
        if (ha_smallfile_read(path, buf, sizeof(buf)) <= 0)
            return false;
        p = strrchr(buf, ')');
        if (p == NULL || sscanf(p + 1, " %*c %ld", &ppid) != 1)
            return false;
        if (ppid == me)
            return true;
        pid = (pid_t)ppid;
    }
    return false;
}

static int
check_permission(struct ha_attach_target *t, char *err, size_t errlen)
{
    struct ha_procstatus me;
    char text[4096];
    int scope = -1;

    if (ha_smallfile_read("/proc/self/status", text, sizeof(text)) <= 0 ||
        ha_procparse_status(text, &me) != 0) {
        ha_err_set(err, errlen, "cannot read /proc/self/status");
        return -1;
    }
    if (ha_smallfile_read("/proc/sys/kernel/yama/ptrace_scope", text,
                          sizeof(text)) > 0)
        scope = ha_procparse_scope(text);
    if (scope == 3) {
        ha_err_set(err, errlen, "kernel.yama.ptrace_scope is 3: this "
                                "kernel lets no process attach to another "
                                "until it reboots");
        return -1;
    }
    if (me.cap_sys_ptrace)
        return 0;
    if (scope == 2) {
        ha_err_set(err, errlen, "kernel.yama.ptrace_scope is 2: only a "
                                "process with CAP_SYS_PTRACE may attach; "
                                "run heapadmin-attach as root");
        return -1;
    }
    if (scope == 1 && !is_ancestor(getpid(), t->pid)) {
        ha_err_set(err, errlen, "kernel.yama.ptrace_scope is 1: only a "
                                "process's ancestors, or a process with "
                                "CAP_SYS_PTRACE, may attach to it; run "
                                "heapadmin-attach as root");
        return -1;
    }
    for (int i = 0; i < 3; i++)
        if (t->status.uid[i] != me.uid[0] || t->status.gid[i] != me.gid[0]) {
            ha_err_set(err, errlen, "process %ld runs as another user "
                                    "(uids %ld %ld %ld, gids %ld %ld %ld): "
                                    "run heapadmin-attach as root",
                       (long)t->pid, t->status.uid[0], t->status.uid[1],
                       t->status.uid[2], t->status.gid[0], t->status.gid[1],
                       t->status.gid[2]);
            return -1;
        }
    return 0;
}

/* ------------------------------------------------------------------
 * Its files and its link map
 * ------------------------------------------------------------------ */

/* First definers, in search order. */
struct found {
    uint64_t addr;
    char object[PATH_MAX];
};

enum {
    SYM_MALLOC,
    SYM_MALLCTL,
    SYM_JE_MALLOC,
    SYM_JE_MALLCTL,
    SYM_DLOPEN,
    SYM_DLERROR,
    SYM_ERRNO,
    SYM_MAX
};

static const char *const sym_names[SYM_MAX] = {
    "malloc", "mallctl", "je_malloc", "je_mallctl",
    "dlopen", "dlerror", "__errno_location",
};

/* Looks every symbol still missing up in the object name (its file at
 * path), loaded at bias. */
static void
scan_object(const char *path, const char *name, uint64_t bias,
            struct found *f)
{
    struct mapped m;

    if (map_file(path, &m) != 0)
        return;
    for (int i = 0; i < SYM_MAX; i++) {
        uint64_t v;

        if (f[i].object[0] != '\0')
            continue;
        if (ha_elfsym_lookup(m.buf, m.len, HA_ELFSYM_DYNSYM, sym_names[i],
                             &v, NULL, 0) == 1) {
            f[i].addr = bias + v;
            snprintf(f[i].object, sizeof(f[i].object), "%s", name);
        }
    }
    unmap_file(&m);
}

/* Where the executable's r_debug is (its DT_DEBUG, which the loader
 * fills), or 0. */
static uint64_t
r_debug_of(struct ha_attach_target *t, const char *maps)
{
    char path[64];
    struct mapped m;
    struct ha_elfsym_info info;
    struct find_file f = {t->exe, 0, 0, 0};
    uint64_t bias, addr = 0;

    snprintf(path, sizeof(path), "/proc/%ld/exe", (long)t->pid);
    if (!each_map(maps, is_file, &f) || map_file(path, &m) != 0)
        return 0;
    if (ha_elfsym_info(m.buf, m.len, &info, NULL, 0) != 0 ||
        info.dynamic == 0) {
        unmap_file(&m);
        return 0;
    }
    unmap_file(&m);
    bias = f.start - info.min_vaddr;
    for (int i = 0; i < DYN_MAX; i++) {
        Elf64_Dyn d;

        if (mem_read(t->pid, bias + info.dynamic + (uint64_t)i * sizeof(d),
                     &d, sizeof(d)) != 0 ||
            d.d_tag == DT_NULL)
            break;
        if (d.d_tag == DT_DEBUG) {
            addr = d.d_un.d_ptr;
            break;
        }
    }
    return addr;
}

static bool
is_heapadmin(const char *name)
{
    const char *base = strrchr(name, '/');

    base = base != NULL ? base + 1 : name;
    return strcmp(base, "heapadmin-agent.so") == 0 ||
           strncmp(base, "libheapadmin.so", 15) == 0;
}

/* Walks the link map: every object's symbols, in order. Returns 0, or
 * -1 with err (heapadmin is already there, or no link map). */
static int
walk_objects(struct ha_attach_target *t, const char *maps, struct found *f,
             char *err, size_t errlen)
{
    uint64_t r_debug = r_debug_of(t, maps), lm;
    unsigned n = 0;

    if (r_debug == 0 || mem_read(t->pid, r_debug + 8, &lm, 8) != 0) {
        ha_err_set(err, errlen, "process %ld has no dynamic loader's link "
                                "map (a static executable): there is no "
                                "dlopen() to load the agent with",
                   (long)t->pid);
        return -1;
    }
    while (lm != 0 && n < LINK_MAP_MAX) {
        uint64_t l[5]; /* l_addr, l_name, l_ld, l_next, l_prev */
        char name[PATH_MAX], path[PATH_MAX + 64];

        if (mem_read(t->pid, lm, l, sizeof(l)) != 0)
            break;
        if (l[1] == 0 || mem_string(t->pid, l[1], name, sizeof(name)) != 0)
            name[0] = '\0';
        if (n == 0 && name[0] == '\0') {
            snprintf(path, sizeof(path), "/proc/%ld/exe", (long)t->pid);
            scan_object(path, t->exe, l[0], f);
        } else if (is_heapadmin(name)) {
            ha_err_set(err, errlen, "process %ld already has heapadmin "
                                    "loaded (%s) but not serving (started "
                                    "with HEAPADMIN_DISABLE, or an earlier "
                                    "attach the agent refused: see its "
                                    "log); it is never unloaded, so only a "
                                    "restart serves this process",
                       (long)t->pid, name);
            return -1;
        } else if (object_file(t->pid, maps, name, l[0], path,
                               sizeof(path))) {
            scan_object(path, name, l[0], f);
        }
        n++;
        lm = l[3];
    }
    t->n_objects = n;
    return 0;
}

/* Why a process without a jemalloc in its dynamic symbols has none we
 * can use: a static one not exported, or none at all. */
static void
no_jemalloc(struct ha_attach_target *t, char *err, size_t errlen)
{
    char path[64];
    struct mapped m;
    uint64_t v;
    bool statically = false;

    snprintf(path, sizeof(path), "/proc/%ld/exe", (long)t->pid);
    if (map_file(path, &m) == 0) {
        statically =
            ha_elfsym_lookup(m.buf, m.len, HA_ELFSYM_SYMTAB, "mallctl", &v,
                             NULL, 0) == 1 ||
            ha_elfsym_lookup(m.buf, m.len, HA_ELFSYM_SYMTAB, "je_mallctl",
                             &v, NULL, 0) == 1 ||
            ha_elfsym_contains(m.buf, m.len, "<jemalloc>: ", 12);
        unmap_file(&m);
    }
    if (statically)
        ha_err_set(err, errlen,
                   "%s has jemalloc linked in statically but does not "
                   "export it (no mallctl in its .dynsym), so nothing "
                   "outside it can reach jemalloc: relink it with "
                   "-rdynamic, or -Wl,--export-dynamic-symbol=mallctl",
                   t->exe);
    else
        ha_err_set(err, errlen,
                   "process %ld (%s) does not use jemalloc (no mallctl in "
                   "its dynamic symbols nor its executable's .dynsym): "
                   "heapadmin reads jemalloc's statistics and profiler",
                   (long)t->pid, t->program);
}

/* ------------------------------------------------------------------
 * The checks, in order
 * ------------------------------------------------------------------ */

static bool
has_agent_thread(pid_t pid)
{
    char path[96], comm[32];
    struct dirent *d;
    bool found = false;
    DIR *dir;

    snprintf(path, sizeof(path), "/proc/%ld/task", (long)pid);
    dir = opendir(path);
    if (dir == NULL)
        return false;
    while (!found && (d = readdir(dir)) != NULL) {
        if (d->d_name[0] < '0' || d->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/task/%.20s/comm", (long)pid,
                 d->d_name);
        if (ha_smallfile_read(path, comm, sizeof(comm)) > 0) {
            comm[strcspn(comm, "\n")] = '\0';
            found = strcmp(comm, AGENT_THREAD) == 0;
        }
    }
    closedir(dir);
    return found;
}

/* The process's state and architecture. */
static int
check_process(struct ha_attach_target *t, char *err, size_t errlen)
{
    char path[64], text[4096], why[128];
    struct ha_elfsym_info info;
    struct mapped m;
    ssize_t n;

    if (t->pid == getpid()) {
        ha_err_set(err, errlen, "that is heapadmin-attach itself");
        return -1;
    }
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)t->pid);
    if (ha_smallfile_read(path, text, sizeof(text)) <= 0) {
        ha_err_set(err, errlen, "no process %ld (%s)", (long)t->pid,
                   strerror(errno));
        return -1;
    }
    if (ha_procparse_status(text, &t->status) != 0) {
        ha_err_set(err, errlen, "%s cannot be parsed", path);
        return -1;
    }
    if (t->status.state == 'Z' || t->status.state == 'X') {
        ha_err_set(err, errlen, "process %ld has exited (a zombie)",
                   (long)t->pid);
        return -1;
    }
    if (t->status.state == 'T' || t->status.state == 't') {
        ha_err_set(err, errlen, "process %ld is stopped (state %c): "
                                "continue it first (kill -CONT)",
                   (long)t->pid, t->status.state);
        return -1;
    }
    snprintf(path, sizeof(path), "/proc/%ld/exe", (long)t->pid);
    n = readlink(path, t->exe, sizeof(t->exe) - 1);
    if (n <= 0) {
        ha_err_set(err, errlen, "cannot read %s (%s): a kernel thread, or "
                                "a process this user may not inspect",
                   path, strerror(errno));
        return -1;
    }
    t->exe[n] = '\0';
    {
        const char *base = strrchr(t->exe, '/');

        (void)ha_strlcpy(t->program, base != NULL ? base + 1 : t->exe,
                         sizeof(t->program));
    }
    if (map_file(path, &m) != 0) {
        ha_err_set(err, errlen, "cannot read %s: %s", t->exe,
                   strerror(errno));
        return -1;
    }
    n = ha_elfsym_info(m.buf, m.len, &info, why, sizeof(why));
    unmap_file(&m);
    if (n != 0) {
        ha_err_set(err, errlen, "%s: %s", t->exe, why);
        return -1;
    }
    if (info.elf_class != ELFCLASS64 || info.machine != EM_X86_64) {
        ha_err_set(err, errlen, "%s is a %s process: heapadmin-attach "
                                "loads the agent into 64-bit x86_64 "
                                "processes only",
                   t->exe, info.elf_class == ELFCLASS32
                               ? "32-bit"
                               : "foreign-architecture");
        return -1;
    }
    return 0;
}

/* What the process asked for itself: secure execution, not dumpable,
 * another tracer. */
static int
check_wishes(struct ha_attach_target *t, char *err, size_t errlen)
{
    char path[64];
    uint8_t auxv[1024];
    uint64_t secure = 0;
    struct stat st;
    int fd;
    ssize_t n;

    if (t->status.tracer > 0) {
        char comm[64] = "";

        snprintf(path, sizeof(path), "/proc/%ld/comm", t->status.tracer);
        if (ha_smallfile_read(path, comm, sizeof(comm)) > 0)
            comm[strcspn(comm, "\n")] = '\0';
        ha_err_set(err, errlen, "process %ld is traced by process %ld "
                                "(%s): a process has one tracer at a time; "
                                "detach it first",
                   (long)t->pid, t->status.tracer, comm);
        return -1;
    }
    snprintf(path, sizeof(path), "/proc/%ld/auxv", (long)t->pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    n = fd >= 0 ? read(fd, auxv, sizeof(auxv)) : -1;
    if (fd >= 0)
        close(fd);
    if (n > 0 && ha_procparse_auxv(auxv, (size_t)n, AT_SECURE, &secure) &&
        secure != 0) {
        ha_err_set(err, errlen, "process %ld (%s) runs in secure-execution "
                                "mode (AT_SECURE: started setuid, setgid or "
                                "with file capabilities): its loader "
                                "refuses LD_PRELOAD and heapadmin does not "
                                "load code into it either",
                   (long)t->pid, t->program);
        return -1;
    }
    /* The kernel makes the files in /proc/<pid> root's while the
     * process is not dumpable (proc(5)): told apart only for a process
     * that is not root itself. */
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)t->pid);
    if (stat(path, &st) == 0 &&
        ((st.st_uid == 0 && t->status.uid[1] != 0) ||
         (st.st_gid == 0 && t->status.gid[1] != 0))) {
        ha_err_set(err, errlen, "process %ld (%s) is not dumpable "
                                "(prctl(PR_SET_DUMPABLE, 0), or it changed "
                                "its user since it started): it asked not "
                                "to be inspected, and heapadmin does not "
                                "load code into it",
                   (long)t->pid, t->program);
        return -1;
    }
    return 0;
}

/* The agent as the process would open it. */
static int
check_files(struct ha_attach_target *t, const char *agent_path,
            char *err, size_t errlen)
{
    char ns_self[64] = "", ns_pid[64] = "", path[64];
    struct mapped m;
    struct ha_elfsym_info info;
    ssize_t n;

    n = readlink("/proc/self/ns/mnt", ns_self, sizeof(ns_self) - 1);
    if (n > 0)
        ns_self[n] = '\0';
    snprintf(path, sizeof(path), "/proc/%ld/ns/mnt", (long)t->pid);
    n = readlink(path, ns_pid, sizeof(ns_pid) - 1);
    if (n > 0)
        ns_pid[n] = '\0';
    t->other_mntns = strcmp(ns_self, ns_pid) != 0;
    if (agent_path[0] != '/') {
        ha_err_set(err, errlen, "the agent's path must be absolute: %s",
                   agent_path);
        return -1;
    }
    snprintf(t->agent_seen, sizeof(t->agent_seen), "/proc/%ld/root%s",
             (long)t->pid, agent_path);
    if (map_file(t->agent_seen, &m) != 0) {
        if (t->other_mntns)
            ha_err_set(err, errlen, "process %ld is in another mount "
                                    "namespace (a container) whose root "
                                    "has no %s (%s): put the agent there "
                                    "at that path (a bind mount, or a "
                                    "copy)",
                       (long)t->pid, agent_path, strerror(errno));
        else
            ha_err_set(err, errlen, "cannot read the agent %s as process "
                                    "%ld sees it: %s",
                       agent_path, (long)t->pid, strerror(errno));
        return -1;
    }
    if (ha_elfsym_info(m.buf, m.len, &info, NULL, 0) != 0 ||
        info.elf_class != ELFCLASS64 || info.machine != EM_X86_64 ||
        ha_elfsym_lookup(m.buf, m.len, HA_ELFSYM_DYNSYM,
                         "heapadmin_agent_attach", &t->attach_value, NULL,
                         0) != 1) {
        unmap_file(&m);
        ha_err_set(err, errlen, "%s is not a heapadmin agent that can be "
                                "attached (no heapadmin_agent_attach in "
                                "its dynamic symbols: an older agent?)",
                   agent_path);
        return -1;
    }
    unmap_file(&m);
    return 0;
}

int
ha_target_inspect(pid_t pid, const char *agent_path,
                  struct ha_attach_target *t, char *err, size_t errlen)
{
    struct found f[SYM_MAX];
    char *maps = NULL;
    int jm, ja;

    memset(t, 0, sizeof(*t));
    memset(f, 0, sizeof(f));
    t->pid = pid;
#if !defined(__x86_64__)
    ha_err_set(err, errlen, "heapadmin-attach loads the agent on x86_64 "
                            "only");
    return -1;
#endif
    if (check_process(t, err, errlen) != 0 ||
        check_permission(t, err, errlen) != 0 ||
        check_wishes(t, err, errlen) != 0 ||
        check_files(t, agent_path, err, errlen) != 0)
        return -1;
    if (has_agent_thread(pid)) {
        ha_err_set(err, errlen, "process %ld (%s) already has heapadmin's "
                                "thread: it is served already",
                   (long)pid, t->program);
        return -1;
    }
    maps = read_maps(pid);
    if (maps == NULL) {
        ha_err_set(err, errlen, "cannot read /proc/%ld/maps: %s", (long)pid,
                   strerror(errno));
        return -1;
    }
    if (walk_objects(t, maps, f, err, errlen) != 0)
        goto fail;
    /* The allocator in use is the first malloc; its profiler is the
     * jemalloc that defines it (heap/mallctl_resolve.c's rule). */
    jm = f[SYM_MALLCTL].object[0] != '\0' ? SYM_MALLCTL : SYM_JE_MALLCTL;
    ja = jm == SYM_MALLCTL ? SYM_MALLOC : SYM_JE_MALLOC;
    if (f[jm].object[0] == '\0') {
        no_jemalloc(t, err, errlen);
        goto fail;
    }
    if (strcmp(f[jm].object, f[ja].object) != 0) {
        ha_err_set(err, errlen, "jemalloc is loaded in process %ld (%s) but "
                                "malloc() comes from %s: its profiler would "
                                "see none of the process's allocations",
                   (long)pid, f[jm].object,
                   f[ja].object[0] != '\0' ? f[ja].object : "nowhere");
        goto fail;
    }
    snprintf(t->jemalloc, sizeof(t->jemalloc), "%s", f[jm].object);
    t->prefixed = jm == SYM_JE_MALLCTL;
    if (f[SYM_DLOPEN].object[0] == '\0' || f[SYM_DLERROR].object[0] == '\0' ||
        f[SYM_ERRNO].object[0] == '\0') {
        ha_err_set(err, errlen, "process %ld has no dlopen() to load the "
                                "agent with (not glibc, or glibc before "
                                "2.34 without libdl loaded)",
                   (long)pid);
        goto fail;
    }
    t->dlopen_fn = f[SYM_DLOPEN].addr;
    t->dlerror_fn = f[SYM_DLERROR].addr;
    t->errno_fn = f[SYM_ERRNO].addr;
    free(maps);
    return 0;
fail:
    free(maps);
    return -1;
}
