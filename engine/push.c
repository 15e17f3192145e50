/* SPDX-License-Identifier: MIT
 *
 * Dumps pushed to Pyroscope and Parca (see push.h).
 */
#include "engine/push.h"

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

#include <event2/event.h>

#include "core/clock.h"
#include "core/fdio.h"
#include "core/log.h"
#include "core/util.h"
#include "core/worker.h"
#include "engine/pushhttp.h"
#include "prof/dumpmem.h"
#include "prof/dumpname.h"
#include "prof/pushwire.h"

#define OUTBOX "push-outbox"
#define START_DELAY_S 2       /* the first look at the outbox */
#define SETTLE_S 2            /* jemalloc writes its own dumps in place:
                                 one younger than this may be partial */
#define ENTRY_HEADER_MAX 4096 /* an outbox entry's header */
#define ENTRY_MAX ((size_t)1 << 30)

/* What the push thread reads: set on the loop before the thread starts,
 * never changed after. */
struct push_conf {
    char dir[PATH_MAX];        /* the dump directory */
    char outbox[PATH_MAX];     /* <dir>/push-outbox */
    char stem[256];            /* the dump prefix's file name stem */
    long pid;
    struct ha_push_target targets[HA_PUSH_TARGETS_MAX];
    size_t n;
    long long max_bytes;
    int timeout_s;
    struct ha_labels labels;
};

/* A profile to queue: a dump, or the live profile. */
struct item {
    char name[256];            /* the dump's file name; live-<pid>-<ms> */
    bool live;
    unsigned kind;             /* one HA_PUSH_KIND_* bit */
    unsigned targets;          /* bit i: targets[i] takes it */
    char reason[256];
    int64_t taken_s;
};

/* One target's side of a job's result. */
struct tgt_out {
    long long queued, queued_bytes;
    long long sent, sent_bytes, failed, dropped;
    bool attempted, ok, failed_now;
    char err[256];
};

enum job_kind { JOB_SCAN, JOB_STORE, JOB_DELIVER };

struct pjob {
    struct ha_job job;         /* first: the worker's */
    struct ha_push *p;
    const struct push_conf *conf;
    enum job_kind kind;
    bool adopt;                /* scan: gone processes' too */
    struct item *items;        /* scan: found */
    size_t n_items;
    struct item item;          /* store: what, for whom */
    struct ha_buf body;        /* store: the profile */
    unsigned due;              /* deliver: targets to try */
    struct tgt_out out[HA_PUSH_TARGETS_MAX];
};

/* A target's state on the loop. */
struct tgt {
    struct ha_push_row row;
    int backoff_s;             /* the wait after the last failure; 0 */
    int64_t next_ms;           /* ha_clock_ms() of the next attempt */
};

struct ha_push {
    struct event_base *base;
    const struct ha_config *cfg;
    struct ha_heap *heap;
    const struct ha_task_env *tasks;
    struct push_conf *conf;
    struct ha_worker *worker;
    struct tgt t[HA_PUSH_TARGETS_MAX];
    ha_push_encode_fn encode;
    void *encode_arg;

    struct item *queue;        /* to encode, oldest first */
    size_t n_queue, cap_queue;
    char (*known)[256];        /* names seen (queued, stored, failed) */
    size_t n_known, cap_known;
    struct ha_task task;       /* the encoding */
    bool encoding;

    bool scanning, scan_again, adopted;
    bool delivering, deliver_again;
    unsigned wants;            /* every target's kinds */
    struct event *start_ev, *retry_ev, *live_ev;
};

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

struct body {
    char file[512];
    int target;
    long pid;
    time_t mtime;
    long long size;
};

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
static size_t
list_bodies(const struct push_conf *c, bool adopt, struct body **out)
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
            memcpy(path, to, sizeof(to) < sizeof(path) ? sizeof(to)
                                                       : sizeof(path));
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
        snprintf(v[n].file, sizeof(v[n].file), "%s",
                 strrchr(path, '/') + 1);
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

static void
count_queued(const struct push_conf *c, struct tgt_out *out)
{
    struct body *v;
    size_t n = list_bodies(c, false, &v);

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
    size_t n = list_bodies(c, false, &v);
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
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
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
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
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

static void
scan_run(struct pjob *j)
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

        (void)list_bodies(c, true, &v); /* take over the gone ones' */
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

        if (strncmp(e->d_name, c->stem, stem) != 0 ||
            e->d_name[stem] != '.' || strlen(e->d_name) >= sizeof(it.name) ||
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
                (own || st.st_mtime >= since[t]) &&
                !claimed(c, t, e->d_name))
                it.targets |= 1u << t;
        if (it.targets == 0)
            continue;
        ha_strlcpy(it.name, e->d_name, sizeof(it.name));
        ha_strlcpy(it.reason, m.reason, sizeof(it.reason));
        it.taken_s = m.taken_ns > 0 ? m.taken_ns / 1000000000
                                    : (int64_t)st.st_mtime;
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

static void
store_run(struct pjob *j)
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
        if (fd < 0 ||
            ha_fdio_write_all(fd, head.data, head.len) != 0 ||
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
    count_queued(c, j->out);
}

/* ------------------------------------------------------------------
 * Deliver (push thread)
 * ------------------------------------------------------------------ */

struct entry {
    char dump[256], kind[32], reason[256], service[64], program[64],
        host[65], build_id[48];
    int64_t taken;
    const uint8_t *body;
    size_t len;
};

/* Parses an entry file's header; e->body points into buf. */
static int
parse_entry(const uint8_t *buf, size_t n, struct entry *e)
{
    const char *p = (const char *)buf, *end = p + (n < ENTRY_HEADER_MAX
                                                       ? n
                                                       : ENTRY_HEADER_MAX);
    size_t bytes = 0;
    bool first = true;

    memset(e, 0, sizeof(*e));
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        const char *sp;
        size_t k, v;
        char *field = NULL;
        size_t size = 0;

        if (eol == NULL)
            return -1;
        if (eol == p) {
            p++;
            break;
        }
        if (first) {
            if ((size_t)(eol - p) != 16 || memcmp(p, "heapadmin-push 1", 16))
                return -1;
            first = false;
            p = eol + 1;
            continue;
        }
        sp = memchr(p, ' ', (size_t)(eol - p));
        k = sp != NULL ? (size_t)(sp - p) : (size_t)(eol - p);
        v = sp != NULL ? (size_t)(eol - sp - 1) : 0;
#define F(name, dst)                                                       \
    if (k == strlen(name) && memcmp(p, name, k) == 0) {                    \
        field = dst;                                                       \
        size = sizeof(dst);                                                \
    }
        F("dump", e->dump)
        F("kind", e->kind)
        F("reason", e->reason)
        F("service_name", e->service)
        F("program", e->program)
        F("host", e->host)
        F("build_id", e->build_id)
#undef F
        if (field != NULL) {
            if (v >= size)
                v = size - 1;
            memcpy(field, sp + 1, v);
            field[v] = '\0';
        } else if (k == 5 && memcmp(p, "taken", 5) == 0 && sp != NULL) {
            e->taken = strtoll(sp + 1, NULL, 10);
        } else if (k == 5 && memcmp(p, "bytes", 5) == 0 && sp != NULL) {
            bytes = (size_t)strtoull(sp + 1, NULL, 10);
        }
        p = eol + 1;
    }
    if (first || e->dump[0] == '\0' ||
        bytes != n - (size_t)(p - (const char *)buf))
        return -1;
    e->body = (const uint8_t *)p;
    e->len = bytes;
    return 0;
}

static int
read_file(const char *path, struct ha_buf *out)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (size_t)st.st_size > ENTRY_MAX) {
        close(fd);
        return -1;
    }
    for (;;) {
        uint8_t chunk[65536];

        n = read(fd, chunk, sizeof(chunk));
        if (n <= 0)
            break;
        ha_buf_append(out, chunk, (size_t)n);
    }
    close(fd);
    return n < 0 || ha_buf_failed(out) ? -1 : 0;
}

/* One entry to target t. Returns 0 sent, 1 refused for good, -1 to be
 * tried again (res says why). */
static int
send_entry(const struct push_conf *c, size_t t, const struct entry *e,
           struct ha_pushhttp_res *res)
{
    const struct ha_push_target *pt = &c->targets[t];
    struct ha_pushwire_label labels[8];
    struct ha_buf url = HA_BUF_INIT, body = HA_BUF_INIT, auth = HA_BUF_INIT;
    char ctype[160], boundary[96], tenant[200], key[300], authz[2200];
    const char *headers[6];
    size_t n = 0, h = 0;
    int rc;

    if (pt->type == HA_PUSH_PARCA)
        labels[n++] = (struct ha_pushwire_label){"__name__", "memory"};
    if (pt->type == HA_PUSH_PARCA)
        labels[n++] = (struct ha_pushwire_label){"service_name", e->service};
    labels[n++] = (struct ha_pushwire_label){"program", e->program};
    labels[n++] = (struct ha_pushwire_label){"host", e->host};
    if (e->build_id[0] != '\0')
        labels[n++] = (struct ha_pushwire_label){"build_id", e->build_id};
    labels[n++] = (struct ha_pushwire_label){"kind", e->kind};
    if (e->reason[0] != '\0')
        labels[n++] = (struct ha_pushwire_label){"reason", e->reason};
    if (pt->type == HA_PUSH_PYROSCOPE) {
        ha_pushwire_pyroscope_url(pt->url, e->service, labels, n, e->taken,
                                  e->taken + 1, &url);
        ha_pushwire_boundary(e->body, e->len,
                             (uint64_t)ha_clock_ns() ^ (uint64_t)c->pid,
                             boundary, sizeof(boundary));
        ha_pushwire_multipart(boundary, e->body, e->len, &body);
        snprintf(ctype, sizeof(ctype),
                 "Content-Type: multipart/form-data; boundary=%s", boundary);
    } else {
        ha_buf_printf(&url, "%s/profiles/writeraw", pt->url);
        ha_pushwire_parca_json(labels, n, e->body, e->len, &body);
        ha_strlcpy(ctype, "Content-Type: application/json", sizeof(ctype));
    }
    headers[h++] = ctype;
    snprintf(key, sizeof(key), "Idempotency-Key: %s", e->dump);
    headers[h++] = key;
    if (pt->tenant[0] != '\0') {
        snprintf(tenant, sizeof(tenant), "X-Scope-OrgID: %s", pt->tenant);
        headers[h++] = tenant;
    }
    if (pt->basic_auth[0] != '\0') {
        ha_pushwire_base64(pt->basic_auth, strlen(pt->basic_auth), &auth);
        ha_buf_append_u8(&auth, 0);
        snprintf(authz, sizeof(authz), "Authorization: Basic %s",
                 ha_buf_failed(&auth) ? "" : (const char *)auth.data);
        headers[h++] = authz;
    } else if (pt->bearer_token[0] != '\0') {
        snprintf(authz, sizeof(authz), "Authorization: Bearer %s",
                 pt->bearer_token);
        headers[h++] = authz;
    }
    headers[h] = NULL;
    ha_buf_append_u8(&url, 0);
    if (ha_buf_failed(&url) || ha_buf_failed(&body)) {
        memset(res, 0, sizeof(*res));
        ha_strlcpy(res->err, "out of memory", sizeof(res->err));
        rc = -1;
    } else {
        struct ha_pushhttp_req req = {
            .url = (const char *)url.data,
            .headers = headers,
            .body = body.data,
            .len = body.len,
            .timeout_s = c->timeout_s,
        };

        rc = ha_pushhttp_post(&req, res);
        if (rc != 0 && !ha_pushhttp_retryable(res->status))
            rc = 1;
    }
    memset(authz, 0, sizeof(authz));
    ha_buf_free(&auth);
    ha_buf_free(&url);
    ha_buf_free(&body);
    return rc;
}

static void
deliver_run(struct pjob *j)
{
    const struct push_conf *c = j->conf;
    struct body *v;
    size_t n = list_bodies(c, false, &v);
    bool stop[HA_PUSH_TARGETS_MAX] = {false};

    for (size_t i = 0; i < n; i++) {
        int t = v[i].target;
        struct ha_buf buf = HA_BUF_INIT;
        struct ha_pushhttp_res res;
        struct entry e;
        char path[PATH_MAX + 600];
        int rc;

        if (t < 0 || stop[t] || (j->due & (1u << t)) == 0 ||
            v[i].pid != c->pid)
            continue;
        snprintf(path, sizeof(path), "%s/%s", c->outbox, v[i].file);
        if (read_file(path, &buf) != 0 ||
            parse_entry(buf.data, buf.len, &e) != 0) {
            ha_log_warn("push: %s is not an outbox entry heapadmin can "
                        "read; removed",
                        v[i].file);
            (void)unlink(path);
            ha_buf_free(&buf);
            continue;
        }
        j->out[t].attempted = true;
        rc = send_entry(c, (size_t)t, &e, &res);
        if (rc == 0) {
            (void)unlink(path);
            j->out[t].ok = true;
            j->out[t].sent++;
            j->out[t].sent_bytes += (long long)e.len;
        } else if (rc > 0) {
            (void)unlink(path);
            j->out[t].failed++;
            j->out[t].dropped++;
            ha_strlcpy(j->out[t].err, res.err, sizeof(j->out[t].err));
            ha_log_warn("push: %s refused %s for good (%s); removed from "
                        "the outbox",
                        c->targets[t].url, e.dump, res.err);
        } else {
            j->out[t].failed++;
            j->out[t].failed_now = true;
            ha_strlcpy(j->out[t].err, res.err, sizeof(j->out[t].err));
            stop[t] = true;
        }
        ha_buf_free(&buf);
    }
    free(v);
    count_queued(c, j->out);
}

static void
job_run(void *arg)
{
    struct pjob *j = arg;

    switch (j->kind) {
    case JOB_SCAN:
        scan_run(j);
        break;
    case JOB_STORE:
        store_run(j);
        break;
    case JOB_DELIVER:
        deliver_run(j);
        break;
    }
}

/* ------------------------------------------------------------------
 * The loop's side
 * ------------------------------------------------------------------ */

static void job_done(void *arg);
static void deliver(struct ha_push *p);

static struct pjob *
job_new(struct ha_push *p, enum job_kind kind)
{
    struct pjob *j = calloc(1, sizeof(*j));

    if (j == NULL) {
        ha_log_warn("push: out of memory");
        return NULL;
    }
    j->p = p;
    j->conf = p->conf;
    j->kind = kind;
    j->job.run = job_run;
    j->job.done = job_done;
    j->job.arg = j;
    j->job.what = kind == JOB_DELIVER ? "pushing profiles"
                  : kind == JOB_STORE ? "queueing a profile to push"
                                      : "looking for dumps to push";
    ha_buf_init(&j->body);
    return j;
}

static bool
job_submit(struct ha_push *p, struct pjob *j)
{
    char err[256];

    if (ha_worker_submit(p->worker, &j->job, err, sizeof(err)) != 0) {
        ha_log_warn("push: %s", err);
        ha_buf_free(&j->body);
        free(j);
        return false;
    }
    return true;
}

static bool
known(const struct ha_push *p, const char *name)
{
    for (size_t i = 0; i < p->n_known; i++)
        if (strcmp(p->known[i], name) == 0)
            return true;
    return false;
}

static void
remember(struct ha_push *p, const char *name)
{
    if (p->n_known == p->cap_known) {
        size_t cap = p->cap_known ? p->cap_known * 2 : 32;
        char(*g)[256] = realloc(p->known, cap * sizeof(*g));

        if (g == NULL)
            return;
        p->known = g;
        p->cap_known = cap;
    }
    ha_strlcpy(p->known[p->n_known++], name, sizeof(p->known[0]));
}

static void
enqueue(struct ha_push *p, const struct item *it)
{
    if (p->n_queue == p->cap_queue) {
        size_t cap = p->cap_queue ? p->cap_queue * 2 : 8;
        struct item *g = realloc(p->queue, cap * sizeof(*g));

        if (g == NULL)
            return;
        p->queue = g;
        p->cap_queue = cap;
    }
    p->queue[p->n_queue++] = *it;
}

/* The encoding: each queued profile made on the engine's worker while
 * this task waits, then handed to the push thread. */
static void
encode_body(void *arg)
{
    struct ha_push *p = arg;

    while (p->n_queue > 0 &&
           ha_task_stopped(ha_task_current()) == HA_TASK_GO) {
        struct item it = p->queue[0];
        struct pjob *j;
        char err[1024];
        int rc;

        memmove(p->queue, p->queue + 1, --p->n_queue * sizeof(*p->queue));
        if ((j = job_new(p, JOB_STORE)) == NULL)
            continue;
        j->item = it;
        rc = p->encode(p->encode_arg, it.live ? NULL : it.name, &j->body,
                       err, sizeof(err));
        if (rc != 0) {
            if (rc != HA_HEAP_STOPPED && rc != HA_HEAP_BUSY)
                ha_log_warn("push: %s not queued: %s", it.name, err);
            ha_buf_free(&j->body);
            free(j);
            continue;
        }
        (void)job_submit(p, j);
    }
}

static void
encode_finished(void *arg)
{
    struct ha_push *p = arg;

    p->encoding = false;
    /* More may have come while the last one was made. */
    if (p->n_queue > 0 && p->tasks != NULL) {
        p->encoding = true;
        if (ha_task_run(&p->task, encode_body, encode_finished, p) == 0)
            encode_finished(p);
    }
}

static void
encode_start(struct ha_push *p)
{
    if (p->encoding || p->n_queue == 0)
        return;
    p->encoding = true;
    if (ha_task_run(&p->task, encode_body, encode_finished, p) == 0)
        encode_finished(p);
}

static void
scan(struct ha_push *p, bool adopt)
{
    struct pjob *j;

    if (p->scanning) {
        p->scan_again = true;
        return;
    }
    if ((j = job_new(p, JOB_SCAN)) == NULL)
        return;
    j->adopt = adopt;
    p->scanning = job_submit(p, j);
}

void
ha_push_poke(void *arg)
{
    struct ha_push *p = arg;

    /* The start's look (gone processes' dumps and entries) comes first;
     * until then a poke waits for it. */
    if (p != NULL && p->adopted)
        scan(p, false);
}

static void
arm_retry(struct ha_push *p)
{
    int64_t now = ha_clock_ms(), soonest = 0;

    for (size_t i = 0; i < p->conf->n; i++) {
        const struct tgt *t = &p->t[i];

        if (t->row.queued > 0 && t->next_ms > 0 &&
            (soonest == 0 || t->next_ms < soonest))
            soonest = t->next_ms;
    }
    if (soonest > 0 && p->retry_ev != NULL) {
        int64_t ms = soonest > now ? soonest - now : 0;
        struct timeval tv = {(time_t)(ms / 1000),
                             (suseconds_t)(ms % 1000) * 1000};

        (void)event_add(p->retry_ev, &tv);
    }
}

static void
deliver(struct ha_push *p)
{
    int64_t now = ha_clock_ms();
    unsigned due = 0;
    struct pjob *j;

    if (p->delivering) {
        p->deliver_again = true;
        return;
    }
    for (size_t i = 0; i < p->conf->n; i++)
        if (p->t[i].next_ms <= now)
            due |= 1u << i;
    if (due == 0) {
        arm_retry(p);
        return;
    }
    if ((j = job_new(p, JOB_DELIVER)) == NULL)
        return;
    j->due = due;
    p->delivering = job_submit(p, j);
}

static void
took(struct ha_push *p, const struct pjob *j)
{
    time_t now = time(NULL);

    for (size_t i = 0; i < p->conf->n; i++) {
        const struct tgt_out *o = &j->out[i];
        struct tgt *t = &p->t[i];

        t->row.queued = o->queued;
        t->row.queued_bytes = o->queued_bytes;
        t->row.sent += o->sent;
        t->row.sent_bytes += o->sent_bytes;
        t->row.failed += o->failed;
        t->row.dropped += o->dropped;
        if (o->attempted)
            t->row.last_attempt = now;
        if (o->ok) {
            t->row.last_sent = now;
            if (!o->failed_now && t->backoff_s > 0)
                ha_log_info("push: %s takes profiles again",
                            p->conf->targets[i].url);
        }
        if (o->err[0] != '\0')
            ha_strlcpy(t->row.last_error, o->err,
                       sizeof(t->row.last_error));
        if (o->failed_now) {
            if (t->backoff_s == 0)
                ha_log_warn("push: %s: %s; %lld profile%s wait in the "
                            "outbox, tried again within %d s",
                            p->conf->targets[i].url, o->err, o->queued,
                            o->queued == 1 ? "" : "s",
                            p->cfg->push_retry_max_s);
            t->backoff_s = t->backoff_s == 0 ? 1 : t->backoff_s * 2;
            if (t->backoff_s > p->cfg->push_retry_max_s)
                t->backoff_s = p->cfg->push_retry_max_s;
            t->next_ms = ha_clock_ms() + (int64_t)t->backoff_s * 1000;
            t->row.next_attempt = (long long)now + t->backoff_s;
        } else if (o->attempted) {
            t->backoff_s = 0;
            t->next_ms = 0;
            t->row.next_attempt = 0;
        }
    }
}

static void
job_done(void *arg)
{
    struct pjob *j = arg;
    struct ha_push *p = j->p;

    if (!j->job.ran) {
        free(j->items);
        ha_buf_free(&j->body);
        free(j);
        return;
    }
    switch (j->kind) {
    case JOB_SCAN:
        p->scanning = false;
        for (size_t i = 0; i < j->n_items; i++)
            if (!known(p, j->items[i].name)) {
                remember(p, j->items[i].name);
                enqueue(p, &j->items[i]);
            }
        if (j->adopt) {
            p->adopted = true;
            deliver(p);  /* what gone processes left */
        }
        encode_start(p);
        if (p->scan_again) {
            p->scan_again = false;
            scan(p, false);
        }
        break;
    case JOB_STORE:
        took(p, j);
        deliver(p);
        break;
    case JOB_DELIVER:
        p->delivering = false;
        took(p, j);
        if (p->deliver_again) {
            p->deliver_again = false;
            deliver(p);
        } else {
            arm_retry(p);
        }
        break;
    }
    free(j->items);
    ha_buf_free(&j->body);
    free(j);
}

static void
start_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    scan(arg, true);
}

static void
retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    deliver(arg);
}

static void
live_cb(evutil_socket_t fd, short what, void *arg)
{
    struct ha_push *p = arg;
    struct item it;
    struct timespec ts;

    (void)fd;
    (void)what;
    clock_gettime(CLOCK_REALTIME, &ts);
    memset(&it, 0, sizeof(it));
    it.live = true;
    it.kind = HA_PUSH_KIND_LIVE;
    it.taken_s = ts.tv_sec;
    snprintf(it.name, sizeof(it.name), "live-%ld-%lld", p->conf->pid,
             (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
    for (size_t t = 0; t < p->conf->n; t++)
        if (p->conf->targets[t].kinds & HA_PUSH_KIND_LIVE)
            it.targets |= 1u << t;
    /* One at a time: a live profile still waiting is not doubled. */
    for (size_t i = 0; i < p->n_queue; i++)
        if (p->queue[i].live)
            return;
    enqueue(p, &it);
    encode_start(p);
}

struct ha_push *
ha_push_new(struct event_base *base, const struct ha_config *cfg,
            struct ha_heap *heap, const struct ha_labels *labels,
            const struct ha_task_env *tasks, ha_push_encode_fn encode,
            void *encode_arg, void (*thread_init)(void *), void *init_arg)
{
    struct ha_push *p;
    const char *stem;
    char err[256];
    size_t n = cfg->n_push < HA_PUSH_TARGETS_MAX ? cfg->n_push
                                                 : HA_PUSH_TARGETS_MAX;

    if (n == 0 || heap->datadir == NULL)
        return NULL;
    if ((p = calloc(1, sizeof(*p))) == NULL ||
        (p->conf = calloc(1, sizeof(*p->conf))) == NULL) {
        free(p);
        ha_log_warn("push: out of memory; nothing will be pushed");
        return NULL;
    }
    p->base = base;
    p->cfg = cfg;
    p->heap = heap;
    p->tasks = tasks;
    p->encode = encode;
    p->encode_arg = encode_arg;
    ha_strlcpy(p->conf->dir, heap->datadir, sizeof(p->conf->dir));
    snprintf(p->conf->outbox, sizeof(p->conf->outbox), "%s/" OUTBOX,
             heap->datadir);
    stem = heap->je != NULL && heap->je->dump_prefix[0] != '\0'
               ? heap->je->dump_prefix
               : HA_DEFAULT_DUMP_PREFIX;
    ha_strlcpy(p->conf->stem, stem, sizeof(p->conf->stem));
    p->conf->pid = (long)getpid();
    memcpy(p->conf->targets, cfg->push, n * sizeof(*cfg->push));
    p->conf->n = n;
    p->conf->max_bytes = cfg->push_outbox_max_bytes;
    p->conf->timeout_s = cfg->push_timeout_s;
    p->conf->labels = *labels;
    for (size_t i = 0; i < n; i++) {
        struct ha_push_row *r = &p->t[i].row;
        size_t used = 0;

        ha_strlcpy(r->target, cfg->push[i].id, sizeof(r->target));
        ha_strlcpy(r->type, ha_pushcfg_type_name(cfg->push[i].type),
                   sizeof(r->type));
        ha_strlcpy(r->url, cfg->push[i].url, sizeof(r->url));
        for (unsigned b = 0; b < 8; b++)
            if (cfg->push[i].kinds & (1u << b))
                used += (size_t)snprintf(
                    r->kinds + used, used < sizeof(r->kinds)
                                         ? sizeof(r->kinds) - used
                                         : 0,
                    "%s%s", used ? "," : "", ha_pushcfg_kind_name(1u << b));
        p->wants |= cfg->push[i].kinds;
    }
    p->worker = ha_worker_new(base, thread_init, init_arg, err, sizeof(err));
    if (p->worker == NULL) {
        ha_log_warn("push: %s; nothing will be pushed", err);
        free(p->conf);
        free(p);
        return NULL;
    }
    ha_worker_set_name(p->worker, "heapadmin-push");
    ha_task_init(&p->task, tasks);
    p->start_ev = event_new(base, -1, 0, start_cb, p);
    p->retry_ev = event_new(base, -1, 0, retry_cb, p);
    if (p->start_ev != NULL) {
        struct timeval tv = {START_DELAY_S, 0};

        (void)event_add(p->start_ev, &tv);
    }
    if (cfg->push_live_interval_s > 0 && (p->wants & HA_PUSH_KIND_LIVE)) {
        struct timeval tv = {cfg->push_live_interval_s, 0};

        p->live_ev = event_new(base, -1, EV_PERSIST, live_cb, p);
        if (p->live_ev != NULL)
            (void)event_add(p->live_ev, &tv);
    }
    heap->published = ha_push_poke;
    heap->published_arg = p;
    ha_log_info("push: %zu target%s, outbox %s (at most %lld bytes)", n,
                n == 1 ? "" : "s", p->conf->outbox,
                cfg->push_outbox_max_bytes);
    return p;
}

void
ha_push_free(struct ha_push *p, int64_t deadline_ns)
{
    if (p == NULL)
        return;
    p->heap->published = NULL;
    if (p->encoding)
        ha_task_abort(&p->task);
    ha_task_release(&p->task);
    if (p->start_ev != NULL)
        event_free(p->start_ev);
    if (p->retry_ev != NULL)
        event_free(p->retry_ev);
    if (p->live_ev != NULL)
        event_free(p->live_ev);
    if (ha_worker_free_by(p->worker, deadline_ns) != 0) {
        /* A push that does not end: its thread keeps p->conf and its
         * job; both are left to it. */
        ha_log_warn("push: a push was still being sent at the stop; "
                    "left to end on its own");
        free(p->queue);
        free(p->known);
        return;
    }
    free(p->queue);
    free(p->known);
    free(p->conf);
    free(p);
}

void
ha_push_abandon(struct ha_push *p)
{
    if (p == NULL)
        return;
    ha_worker_abandon(p->worker);
}

size_t
ha_push_rows(const struct ha_push *p, struct ha_push_row *rows, size_t max)
{
    size_t n = 0;

    for (size_t i = 0; p != NULL && i < p->conf->n && n < max; i++)
        rows[n++] = p->t[i].row;
    return n;
}
