/* SPDX-License-Identifier: MIT
 *
 * The push outbox's files (see push.h for the outbox's layout): which
 * entries wait, the claims that queue each dump once per target, the
 * bound on its bytes, the scan of the dump directory for dumps to queue
 * and an entry stored. Push thread only; the loop decides (push.c), the
 * sending is push_send.c's.
 */
#include "engine/push_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/fdio.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/pushcfg.h"
#include "prof/dumpmem.h"
#include "prof/dumpname.h"

#define SETTLE_S                                                               \
    2 /* jemalloc writes its own dumps in place:                               \
         one younger than this may be partial */

/* ------------------------------------------------------------------
 * The outbox's files (push thread)
 * ------------------------------------------------------------------ */

static bool
pid_gone(long pid)
{
    return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* The outbox directory, made (0700) when missing; -1 when it is not a
 * directory of ours (a link is never followed). */
static int
outbox_ready(const struct push_conf *c)
{
    struct stat st;

    if (mkdir(c->outbox, 0700) != 0 && errno != EEXIST) {
        ha_log_warn("push: cannot make %s: %s", c->outbox, strerror(errno));
        return -1;
    }
    if (lstat(c->outbox, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid()) {
        ha_log_warn("push: %s is not a directory of this process's user; "
                    "nothing is queued",
                    c->outbox);
        return -1;
    }
    return 0;
}

static int
target_of(const struct push_conf *c, const char *file)
{
    for (size_t i = 0; i < c->n; i++)
        if (strncmp(file, c->targets[i].id, 9) == 0 && file[9] == '.')
            return (int)i;
    return -1;
}

/* "<target>.<name>.<pid>.push": name and pid into name (len) and *pid. */
static bool
parse_body_name(const char *file, char *name, size_t len, long *pid)
{
    size_t n = strlen(file);
    const char *dot;
    char *end;

    if (n < 16 || strcmp(file + n - 5, ".push") != 0 || file[0] != 't' ||
        file[9] != '.')
        return false;
    for (dot = file + n - 6; dot > file + 10 && *dot != '.'; dot--)
        ;
    if (*dot != '.')
        return false;
    *pid = strtol(dot + 1, &end, 10);
    if (end != file + n - 5 || *pid <= 0)
        return false;
    if ((size_t)(dot - (file + 10)) >= len)
        return false;
    memcpy(name, file + 10, (size_t)(dot - (file + 10)));
    name[dot - (file + 10)] = '\0';
    return true;
}

static int
cmp_body(const void *x, const void *y)
{
    const struct body *a = x, *b = y;

    if (a->mtime != b->mtime)
        return a->mtime < b->mtime ? -1 : 1;
    return strcmp(a->file, b->file);
}

/* Every entry still to send in the outbox, oldest first (*out malloc'd),
 * the entries of gone processes taken over first when adopt. */
size_t
ha_push_outbox_list(const struct push_conf *c, bool adopt, struct body **out)
{
    DIR *d = opendir(c->outbox);
    struct dirent *e;
    struct body *v = NULL;
    size_t n = 0, cap = 0;

    *out = NULL;
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char name[256], path[PATH_MAX + 300];
        struct stat st;
        long pid;

        if (!parse_body_name(e->d_name, name, sizeof(name), &pid))
            continue;
        snprintf(path, sizeof(path), "%s/%s", c->outbox, e->d_name);
        if (adopt && pid != c->pid && pid_gone(pid)) {
            char to[PATH_MAX + 300];

            /* One winner among the processes that start together. */
            snprintf(to, sizeof(to), "%s/%.9s.%s.%ld.push", c->outbox,
                     e->d_name, name, c->pid);
            if (rename(path, to) != 0)
                continue;
            ha_log_info("push: took over %s of process %ld, which is "
                        "gone",
                        name, pid);
            memcpy(path, to,
                   sizeof(to) < sizeof(path) ? sizeof(to) : sizeof(path));
            pid = c->pid;
        }
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            struct body *g;

            cap = cap ? cap * 2 : 32;
            if ((g = realloc(v, cap * sizeof(*v))) == NULL)
                break;
            v = g;
        }
        snprintf(v[n].file, sizeof(v[n].file), "%s", strrchr(path, '/') + 1);
        v[n].target = target_of(c, v[n].file);
        v[n].pid = pid;
        v[n].mtime = st.st_mtime;
        v[n].size = (long long)st.st_size;
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(v, n, sizeof(*v), cmp_body);
    *out = v;
    return n;
}

void
ha_push_outbox_count(const struct push_conf *c, struct tgt_out *out)
{
    struct body *v;
    size_t n = ha_push_outbox_list(c, false, &v);

    for (size_t i = 0; i < c->n; i++)
        out[i].queued = out[i].queued_bytes = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].target >= 0) {
            out[v[i].target].queued++;
            out[v[i].target].queued_bytes += v[i].size;
        }
    free(v);
}

/* Oldest first until the outbox holds at most max_bytes. */
static void
enforce_bound(const struct push_conf *c, struct tgt_out *out)
{
    struct body *v;
    size_t n = ha_push_outbox_list(c, false, &v);
    long long total = 0;

    for (size_t i = 0; i < n; i++)
        total += v[i].size;
    for (size_t i = 0; i < n && total > c->max_bytes; i++) {
        char path[PATH_MAX + 600];

        snprintf(path, sizeof(path), "%s/%s", c->outbox, v[i].file);
        if (unlink(path) != 0)
            continue;
        total -= v[i].size;
        if (v[i].target >= 0)
            out[v[i].target].dropped++;
        ha_log_warn("push: the outbox holds more than "
                    "push_outbox_max_bytes (%lld): dropped its oldest "
                    "entry, %s (%lld bytes), never sent",
                    c->max_bytes, v[i].file, v[i].size);
    }
    free(v);
}

/* The marker <target>.<name>.q, made only if absent: 1 made, 0 there
 * already, -1 error. */
static int
claim(const struct push_conf *c, size_t t, const char *name)
{
    char path[PATH_MAX + 300];
    int fd;

    snprintf(path, sizeof(path), "%s/%s.%s.q", c->outbox, c->targets[t].id,
             name);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return errno == EEXIST ? 0 : -1;
    close(fd);
    return 1;
}

static bool
claimed(const struct push_conf *c, size_t t, const char *name)
{
    char path[PATH_MAX + 300];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s.%s.q", c->outbox, c->targets[t].id,
             name);
    return lstat(path, &st) == 0;
}

/* When target t was first seen in this directory (its .since file,
 * made now when missing). */
static time_t
since_of(const struct push_conf *c, size_t t)
{
    char path[PATH_MAX + 64];
    struct stat st;
    int fd;

    snprintf(path, sizeof(path), "%s/%s.since", c->outbox, c->targets[t].id);
    if (lstat(path, &st) == 0)
        return st.st_mtime;
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0)
        close(fd);
    return time(NULL);
}

/* The .q markers of dumps no longer in the directory (retention took
 * them): nothing can queue them again. */
static void
forget_markers(const struct push_conf *c)
{
    DIR *d = opendir(c->outbox);
    struct dirent *e;

    if (d == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        char dump[PATH_MAX + 300], path[PATH_MAX + 300];
        struct stat st;

        if (n < 13 || strcmp(e->d_name + n - 2, ".q") != 0 ||
            target_of(c, e->d_name) < 0)
            continue;
        snprintf(dump, sizeof(dump), "%s/%.*s", c->dir, (int)(n - 12),
                 e->d_name + 10);
        if (lstat(dump, &st) == 0 || errno != ENOENT)
            continue;
        snprintf(path, sizeof(path), "%s/%s", c->outbox, e->d_name);
        (void)unlink(path);
    }
    closedir(d);
}

/* ------------------------------------------------------------------
 * Scan: dumps to queue (push thread)
 * ------------------------------------------------------------------ */

static void
read_mem(const struct push_conf *c, const char *dump, struct ha_dumpmem *m)
{
    char path[PATH_MAX + 300], buf[16384], err[128];
    ssize_t n;
    int fd;

    ha_dumpmem_init(m);
    snprintf(path, sizeof(path), "%s/%s%s", c->dir, dump, HA_DUMPMEM_SUFFIX);
    fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return;
    n = read(fd, buf, sizeof(buf));
    close(fd);
    if (n > 0)
        (void)ha_dumpmem_parse(buf, (size_t)n, m, err, sizeof(err));
}

void
ha_push_outbox_scan(struct pjob *j)
{
    const struct push_conf *c = j->conf;
    time_t since[HA_PUSH_TARGETS_MAX], now = time(NULL);
    size_t stem = strlen(c->stem), cap = 0;
    struct dirent *e;
    DIR *d;

    if (outbox_ready(c) != 0)
        return;
    for (size_t t = 0; t < c->n; t++)
        since[t] = since_of(c, t);
    if (j->adopt) {
        struct body *v;

        (void)ha_push_outbox_list(c, true, &v); /* take over the gone ones' */
        free(v);
        forget_markers(c);
    }
    if ((d = opendir(c->dir)) == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        struct ha_dump_name dn;
        struct ha_dumpmem m;
        struct item it;
        struct stat st;
        char path[PATH_MAX + 300];
        bool own;

        if (strncmp(e->d_name, c->stem, stem) != 0 || e->d_name[stem] != '.' ||
            strlen(e->d_name) >= sizeof(it.name) ||
            !ha_dumpname_parse(e->d_name, &dn) || dn.log)
            continue;
        /* The stem may itself hold dots: the name parses from the right,
         * and what is left of the pid must be the stem. */
        {
            char pid_part[32];

            snprintf(pid_part, sizeof(pid_part), ".%lld.", dn.pid);
            if (strncmp(e->d_name + stem, pid_part, strlen(pid_part)) != 0)
                continue;
        }
        own = dn.pid == c->pid;
        if (!own && !(j->adopt && pid_gone((long)dn.pid)))
            continue;
        snprintf(path, sizeof(path), "%s/%s", c->dir, e->d_name);
        if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        if (strcmp(dn.kind, "manual") != 0 && st.st_mtime > now - SETTLE_S)
            continue;
        read_mem(c, e->d_name, &m);
        memset(&it, 0, sizeof(it));
        it.kind = ha_pushcfg_kind_of(dn.kind, m.trigger);
        for (size_t t = 0; t < c->n; t++)
            if ((c->targets[t].kinds & it.kind) != 0 &&
                (own || st.st_mtime >= since[t]) && !claimed(c, t, e->d_name))
                it.targets |= 1u << t;
        if (it.targets == 0)
            continue;
        ha_strlcpy(it.name, e->d_name, sizeof(it.name));
        ha_strlcpy(it.reason, m.reason, sizeof(it.reason));
        it.taken_s =
            m.taken_ns > 0 ? m.taken_ns / 1000000000 : (int64_t)st.st_mtime;
        if (j->n_items == cap) {
            struct item *g;

            cap = cap ? cap * 2 : 8;
            if ((g = realloc(j->items, cap * sizeof(*g))) == NULL)
                break;
            j->items = g;
        }
        j->items[j->n_items++] = it;
    }
    closedir(d);
}

/* ------------------------------------------------------------------
 * Store: an entry queued (push thread)
 * ------------------------------------------------------------------ */

void
ha_push_outbox_store(struct pjob *j)
{
    const struct push_conf *c = j->conf;
    const struct ha_labels *l = &c->labels;
    const struct item *it = &j->item;
    struct ha_buf head = HA_BUF_INIT;

    if (outbox_ready(c) != 0)
        return;
    ha_buf_printf(&head,
                  "heapadmin-push 1\ndump %s\nkind %s\nreason %s\n"
                  "taken %" PRId64 "\nservice_name %s\nprogram %s\n"
                  "host %s\nbuild_id %s\nbytes %zu\n\n",
                  it->name, ha_pushcfg_kind_name(it->kind), it->reason,
                  it->taken_s, l->service_name, l->program, l->host,
                  l->build_id, j->body.len);
    if (ha_buf_failed(&head) || ha_buf_failed(&j->body))
        goto out;
    for (size_t t = 0; t < c->n; t++) {
        char tmp[PATH_MAX + 300], path[PATH_MAX + 300];
        int fd, rc;

        if ((it->targets & (1u << t)) == 0)
            continue;
        if (!it->live && (rc = claim(c, t, it->name)) != 1) {
            if (rc < 0)
                ha_log_warn("push: cannot queue %s for %s: %s", it->name,
                            c->targets[t].url, strerror(errno));
            continue;
        }
        snprintf(tmp, sizeof(tmp), "%s/.tmp.%s.%s.%ld", c->outbox,
                 c->targets[t].id, it->name, c->pid);
        snprintf(path, sizeof(path), "%s/%s.%s.%ld.push", c->outbox,
                 c->targets[t].id, it->name, c->pid);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                  0600);
        if (fd < 0 || ha_fdio_write_all(fd, head.data, head.len) != 0 ||
            ha_fdio_write_all(fd, j->body.data, j->body.len) != 0 ||
            close(fd) != 0 || rename(tmp, path) != 0) {
            int e = errno;

            if (fd >= 0)
                (void)unlink(tmp);
            ha_log_warn("push: cannot queue %s for %s: %s", it->name,
                        c->targets[t].url, strerror(e));
            continue;
        }
    }
    enforce_bound(c, j->out);
out:
    ha_buf_free(&head);
    ha_push_outbox_count(c, j->out);
}
