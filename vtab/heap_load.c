/* SPDX-License-Identifier: MIT
 *
 * Loading heap profiles for the heap tables, with a bounded cache and
 * the live profile (see heap_load.h).
 */
#include "vtab/heap_load.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/util.h"
#include "prof/buildid.h"
#include "prof/symbolize.h"
#include "vtab/mallctl.h"

struct ha_heap_cache {
    struct ha_heap_profile *list; /* most recently used first */
    uint64_t clock;
    unsigned live_seq;            /* private live-dump directories */
};

/* ------------------------------------------------------------------
 * Names and files
 * ------------------------------------------------------------------ */

bool
ha_heap_plain_name(const char *name, char *why, size_t whylen)
{
    if (name == NULL || name[0] == '\0') {
        ha_err_set(why, whylen, "no dump named: give a file name from "
                                "stats_heap_dumps.file_name, or '"
                                HA_HEAP_LIVE "'");
        return false;
    }
    if (strchr(name, '/') != NULL || strcmp(name, "..") == 0 ||
        strcmp(name, ".") == 0) {
        ha_err_set(why, whylen,
                   "'%s' is refused: only the name of a file in the "
                   "datadir is allowed (no '/', no '..'), as "
                   "stats_heap_dumps.file_name lists them",
                   name);
        return false;
    }
    return true;
}

/* Reads the open fd whole into *buf. Returns 0 or -1 with err set. */
static int
read_fd(int fd, const char *name, const struct stat *st, char **buf,
        size_t *len, char *err, size_t errlen)
{
    size_t got = 0;

    *buf = NULL;
    if (!S_ISREG(st->st_mode) || (uint64_t)st->st_size > HA_HEAPV2_MAX_LEN) {
        ha_err_set(err, errlen, "%s: not a regular file of at most %u "
                                "bytes", name, HA_HEAPV2_MAX_LEN);
        return -1;
    }
    *buf = malloc((size_t)st->st_size + 1);
    if (*buf == NULL) {
        ha_err_set(err, errlen, "%s: out of memory reading %lld bytes",
                   name, (long long)st->st_size);
        return -1;
    }
    while (got < (size_t)st->st_size) {
        ssize_t n = read(fd, *buf + got, (size_t)st->st_size - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    (*buf)[got] = '\0';
    *len = got;
    return 0;
}

/* Opens datadir/name for reading without following a symlink; *st gets
 * its stat. Returns the fd, or -1 with err naming the file and why. */
static int
open_file(const char *datadir, const char *name, struct stat *st, char *err,
          size_t errlen)
{
    char path[PATH_MAX];
    int fd;

    if (datadir == NULL) {
        ha_err_set(err, errlen, "%s: no datadir is configured", name);
        return -1;
    }
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", datadir, name) >=
        sizeof(path)) {
        ha_err_set(err, errlen, "%s: path too long", name);
        return -1;
    }
    /* O_NOFOLLOW: a symlink planted in the datadir leads nowhere. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0 || fstat(fd, st) != 0) {
        ha_err_set(err, errlen, "%s: cannot read it: %s%s", name,
                   strerror(errno),
                   errno == ENOENT ? " (SELECT file_name FROM "
                                     "stats_heap_dumps lists the dumps)"
                                   : "");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

int
ha_heap_read_file(const char *datadir, const char *name, char **buf,
                  size_t *len, struct stat *st, char *err, size_t errlen)
{
    int fd, ret;

    *buf = NULL;
    if ((fd = open_file(datadir, name, st, err, errlen)) < 0)
        return -1;
    ret = read_fd(fd, name, st, buf, len, err, errlen);
    close(fd);
    return ret;
}

/* ------------------------------------------------------------------
 * Profiles
 * ------------------------------------------------------------------ */

static void
profile_free(struct ha_heap_profile *pr)
{
    if (pr == NULL)
        return;
    if (pr->top != NULL) {
        ha_agg_free(pr->top);
        free(pr->top);
    }
    ha_buf_free(&pr->encoded);
    free(pr->modules);
    ha_syms_free(&pr->syms);
    ha_maps_free(&pr->maps);
    ha_heapv2_free(&pr->p);
    free(pr->stale);
    free(pr->name);
    free(pr);
}

void
ha_heap_profile_put(struct ha_heap_profile *pr)
{
    if (pr != NULL && --pr->refs == 0)
        profile_free(pr);
}

/* Memory a profile holds, roughly (its arrays and strings). */
static size_t
profile_bytes(const struct ha_heap_profile *pr)
{
    size_t b = sizeof(*pr) + pr->p.n_stacks * sizeof(*pr->p.stacks) +
               pr->p.n_frames * sizeof(*pr->p.frames) + pr->p.maps_len +
               pr->maps.n_entries * sizeof(*pr->maps.entries) +
               pr->syms.addrs_cap * sizeof(*pr->syms.addrs) +
               pr->syms.frames_cap * sizeof(*pr->syms.frames) +
               pr->syms.strs.buf.cap + pr->syms.strs.n_slots * 4 +
               pr->syms.modules_cap * sizeof(*pr->syms.modules);

    if (pr->top != NULL)
        b += pr->top->rows_cap * sizeof(*pr->top->rows) +
             pr->top->index_cap * 4 + pr->top->names.buf.cap +
             pr->top->names.n_slots * 4;
    if (pr->modules != NULL)
        b += pr->syms.n_modules * sizeof(*pr->modules);
    return b + pr->encoded.cap;
}

void
ha_heap_profile_account(struct ha_heap_profile *pr)
{
    pr->bytes = profile_bytes(pr);
}

static struct ha_heap_cache *
cache_of(struct ha_vtab_ctx *ctx)
{
    if (ctx->heap_cache == NULL)
        ctx->heap_cache = calloc(1, sizeof(*ctx->heap_cache));
    return ctx->heap_cache;
}

/* Drops least recently used profiles until the cache is within bounds;
 * keep stays. */
static void
cache_trim(struct ha_heap_cache *c, const struct ha_heap_profile *keep)
{
    for (;;) {
        struct ha_heap_profile **pp, **lru = NULL, *victim;
        size_t n = 0, bytes = 0;

        for (pp = &c->list; *pp != NULL; pp = &(*pp)->next) {
            n++;
            bytes += (*pp)->bytes;
            if (*pp != keep &&
                (lru == NULL || (*pp)->last_use < (*lru)->last_use))
                lru = pp;
        }
        if ((n <= HA_HEAP_CACHE_MAX && bytes <= HA_HEAP_CACHE_BYTES) ||
            lru == NULL)
            return;
        victim = *lru;
        *lru = victim->next;
        victim->next = NULL;
        ha_heap_profile_put(victim);
    }
}

/* Modules of pr whose recorded build-id differs from the file on disk:
 * their addresses lose their names (HA_SYMS_STALE) and pr->stale lists
 * them. side is the dump's .buildid text (may be NULL). */
static int
mark_stale(struct ha_symbolizer *s, struct ha_heap_profile *pr,
           const char *side, size_t side_len)
{
    struct ha_buildids ids = {0};
    struct ha_buf report = HA_BUF_INIT;
    char why[384];
    uint32_t *stale_mods = NULL;
    size_t n_stale = 0;
    int ret = -1;

    if (side == NULL)
        return 0;
    if (ha_buildids_parse(side, side_len, &ids, why, sizeof(why)) != 0)
        return 0; /* an unreadable side file is as good as none */
    pr->has_buildids = true;
    stale_mods = calloc(pr->maps.n_modules ? pr->maps.n_modules : 1,
                        sizeof(*stale_mods));
    if (stale_mods == NULL)
        goto out;
    for (size_t m = 0; m < pr->maps.n_modules; m++) {
        const char *path = ha_maps_module_path(&pr->maps, m);
        const char *rec = ha_buildids_find(&ids, path);
        const char *disk;
        uint32_t off;

        if (rec == NULL || !pr->maps.modules[m].exec)
            continue;
        disk = ha_symbolizer_build_id(s, path);
        if (disk != NULL && strcmp(disk, rec) == 0)
            continue;
        snprintf(why, sizeof(why), "dump build-id %s, on disk %s",
                 rec, disk != NULL ? disk : "none or unreadable");
        ha_buf_printf(&report, "%s%s (%s)", report.len ? "; " : "", path,
                      why);
        off = ha_strtab_intern(&pr->syms.strs, path, strlen(path));
        if (off == UINT32_MAX)
            goto out;
        stale_mods[n_stale++] = off;
        {
            char detail[sizeof(why) + 96];

            snprintf(detail, sizeof(detail), "replaced on disk since the "
                                             "dump (%s): left unnamed",
                     why);
            if (ha_syms_set_module(&pr->syms, path, rec, HA_SYMS_SRC_NONE,
                                   detail) != 0)
                goto out;
        }
    }
    /* The symbolizer named them from the file on disk: forget it. The
     * offset comes from the mapping alone (the file that was mapped is
     * gone): its file offset, which is its ELF address in GNU ld's
     * shared objects and PIEs. */
    for (size_t i = 0; i < pr->syms.n_addrs && n_stale > 0; i++) {
        struct ha_syms_addr *a = &pr->syms.addrs[i];

        for (size_t k = 0; k < n_stale; k++)
            if (a->module == stale_mods[k]) {
                uint64_t foff = 0;

                ha_maps_lookup(&pr->maps, a->pc, &foff);
                if (ha_syms_rename_unnamed(&pr->syms, i, HA_SYMS_STALE,
                                           ha_syms_str(&pr->syms,
                                                       a->module),
                                           foff) != 0)
                    goto out;
                break;
            }
    }
    if (report.len > 0) {
        if (ha_buf_failed(&report) ||
            (pr->stale = strndup((const char *)report.data, report.len)) ==
                NULL)
            goto out;
    }
    ret = 0;
out:
    free(stale_mods);
    ha_buf_free(&report);
    ha_buildids_free(&ids);
    return ret;
}

struct ha_symbolizer *
ha_heap_symbolizer(struct ha_vtab_ctx *ctx)
{
    struct ha_symbolizer_limits lim;

    if (ctx->symbolizer != NULL)
        return ctx->symbolizer;
    memset(&lim, 0, sizeof(lim));
    if (ctx->je != NULL) {
        lim.debug_root = ctx->je->debug_root;
        lim.debuginfod = ctx->je->debuginfod != 0;
        lim.debuginfod_timeout_ms = (unsigned)ctx->je->debuginfod_timeout_ms;
    }
    lim.thread_init = ctx->thread_init;
    lim.thread_init_arg = ctx->thread_init_arg;
    ctx->symbolizer = ha_symbolizer_new(&lim);
    return ctx->symbolizer;
}

/* True when pr was symbolized while debuginfod answers were pending and
 * some answer has come since. */
static bool
has_news(const struct ha_vtab_ctx *ctx, const struct ha_heap_profile *pr)
{
    return pr->syms.pending > 0 && ctx->symbolizer != NULL &&
           ha_symbolizer_generation(ctx->symbolizer) != pr->generation;
}

/* Parses and symbolizes buf into pr (name and identity already set).
 * side: the .buildid text or NULL. Returns 0 or -1 with err set. */
static int
profile_load(struct ha_vtab_ctx *ctx, struct ha_heap_profile *pr,
             const char *buf, size_t len, const char *side, size_t side_len,
             char *err, size_t errlen)
{
    struct ha_symbolize_ops ops;
    uint64_t *pcs = NULL;
    uint32_t *index = NULL;
    size_t n_pcs = 0;
    char why[512];
    int ret = -1;

    if (ha_heapv2_parse(buf, len, &pr->p, why, sizeof(why)) != 0 ||
        ha_maps_parse(pr->p.maps, pr->p.maps_len, &pr->maps, why,
                      sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", pr->name, why);
        return -1;
    }
    if (ha_heap_symbolizer(ctx) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    ops = ha_symbolizer_ops(ctx->symbolizer);
    /* Before: an answer that lands while this runs makes a difference. */
    pr->generation = ha_symbolizer_generation(ctx->symbolizer);
    if (ha_agg_lookup_index(&pr->p, &pcs, &n_pcs, &index) != 0) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        goto out;
    }
    if (ops.symbolize(ops.ctx, &pr->maps, pcs, n_pcs, &pr->syms, why,
                      sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: %s", pr->name, why);
        goto out;
    }
    /* Every later pass over the stacks finds frames by index. */
    ha_syms_set_frame_index(&pr->syms, pcs, n_pcs, index, pr->p.n_frames);
    index = NULL;
    if (mark_stale(ctx->symbolizer, pr, side, side_len) != 0) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        goto out;
    }
    ret = 0;
out:
    free(pcs);
    free(index);
    return ret;
}

/* Reads <name>.buildid beside a dump, if there is one. */
static char *
read_side(const char *datadir, const char *name, size_t *len)
{
    char side[NAME_MAX + 16], *buf, err[64];
    struct stat st;

    if ((size_t)snprintf(side, sizeof(side), "%s.buildid", name) >=
            sizeof(side) ||
        ha_heap_read_file(datadir, side, &buf, len, &st, err, sizeof(err)) !=
            0)
        return NULL;
    return buf;
}

int
ha_heap_live_text(struct ha_vtab_ctx *ctx, char **buf, size_t *len,
                  char *err, size_t errlen)
{
    struct ha_heap_cache *c = cache_of(ctx);
    char dir[PATH_MAX], file[PATH_MAX + 16];
    struct stat st;
    int rc, fd, ret = -1;

    *buf = NULL;
    *len = 0;
    if (c == NULL || ctx->datadir == NULL || ctx->ops == NULL) {
        ha_err_set(err, errlen, "a live profile needs a datadir and "
                                "jemalloc");
        return -1;
    }
    if ((size_t)snprintf(dir, sizeof(dir), "%s/.live.%ld.%u.XXXXXX",
                         ctx->datadir, (long)getpid(), c->live_seq++) >=
            sizeof(dir) ||
        mkdtemp(dir) == NULL) {
        ha_err_set(err, errlen, "live profile: cannot make a private "
                                "directory in the datadir %s: %s",
                   ctx->datadir, strerror(errno));
        return -1;
    }
    snprintf(file, sizeof(file), "%s/live.heap", dir);
    rc = ha_mallctl_dump_to(ctx->ops, file);
    if (rc != 0) {
        struct ha_mallctl_failure f = {
            .errnum = rc,
            .mallctl = "prof.dump",
            .variable = NULL,
            .value = file,
            .prof_built = ha_mallctl_prof_built(ctx->ops),
        };
        char why[512];

        ha_mallctl_errmsg(&f, why, sizeof(why));
        ha_err_set(err, errlen, "live profile: %s", why);
        goto out;
    }
    fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0) {
        ha_err_set(err, errlen, "live profile: %s: %s", file,
                   strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    ret = read_fd(fd, HA_HEAP_LIVE, &st, buf, len, err, errlen);
    close(fd);
out:
    unlink(file);
    rmdir(dir);
    return ret;
}

/* A fresh profile of this process, loaded. */
static int
load_live(struct ha_vtab_ctx *ctx, struct ha_heap_profile *pr, char *err,
          size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    int ret = -1;

    if (ha_heap_live_text(ctx, &buf, &len, err, errlen) == 0 &&
        profile_load(ctx, pr, buf, len, NULL, 0, err, errlen) == 0)
        ret = 0;
    free(buf);
    return ret;
}

int
ha_heap_profile_get(struct ha_vtab_ctx *ctx, const char *name, bool admin,
                    struct ha_heap_profile **out, char *err, size_t errlen)
{
    struct ha_heap_cache *c = cache_of(ctx);
    struct ha_heap_profile *pr;
    struct stat st;
    char *buf = NULL, *side = NULL;
    size_t len = 0, side_len = 0;
    bool live = name != NULL && strcmp(name, HA_HEAP_LIVE) == 0;
    int fd = -1;

    *out = NULL;
    if (c == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    if (live && !admin) {
        ha_err_set(err, errlen, "a live profile ('" HA_HEAP_LIVE "') "
                                "needs an admin user; stats users may "
                                "read the dumps in stats_heap_dumps");
        return -1;
    }
    if (!live && (!ha_heap_plain_name(name, err, errlen) ||
                  (fd = open_file(ctx->datadir, name, &st, err, errlen)) <
                      0))
        return -1;
    if (!live) {
        /* The file's identity is enough to know the cache has it: a
         * repeated query reads nothing (15 MB for a big dump). */
        for (pr = c->list; pr != NULL; pr = pr->next)
            if (strcmp(pr->name, name) == 0 && pr->dev == st.st_dev &&
                pr->ino == st.st_ino && pr->size == st.st_size &&
                pr->mtime.tv_sec == st.st_mtim.tv_sec &&
                pr->mtime.tv_nsec == st.st_mtim.tv_nsec && !has_news(ctx, pr))
                break;
        if (pr != NULL) {
            close(fd);
            pr->last_use = ++c->clock;
            pr->refs++;
            *out = pr;
            return 0;
        }
        if (read_fd(fd, name, &st, &buf, &len, err, errlen) != 0) {
            close(fd);
            return -1;
        }
        close(fd);
    }
    pr = calloc(1, sizeof(*pr));
    if (pr == NULL || (pr->name = strdup(name)) == NULL) {
        free(pr);
        free(buf);
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    pr->refs = 1;
    pr->live = live;
    if (live) {
        if (load_live(ctx, pr, err, errlen) != 0) {
            profile_free(pr);
            return -1;
        }
        *out = pr;
        return 0;
    }
    pr->dev = st.st_dev;
    pr->ino = st.st_ino;
    pr->size = st.st_size;
    pr->mtime = st.st_mtim;
    side = read_side(ctx->datadir, name, &side_len);
    if (profile_load(ctx, pr, buf, len, side, side_len, err, errlen) != 0) {
        free(side);
        free(buf);
        profile_free(pr);
        return -1;
    }
    free(side);
    free(buf);
    pr->bytes = profile_bytes(pr);
    pr->last_use = ++c->clock;
    /* Another profile of this name is an older file: replace it. */
    for (struct ha_heap_profile **pp = &c->list; *pp != NULL;
         pp = &(*pp)->next)
        if (strcmp((*pp)->name, name) == 0) {
            struct ha_heap_profile *old = *pp;

            *pp = old->next;
            old->next = NULL;
            ha_heap_profile_put(old);
            break;
        }
    pr->next = c->list;
    c->list = pr;
    pr->refs++; /* the cache's */
    cache_trim(c, pr);
    *out = pr;
    return 0;
}

const struct ha_agg *
ha_heap_profile_top(struct ha_heap_profile *pr, char *err, size_t errlen)
{
    struct ha_agg *a;
    char why[256];

    if (pr->top != NULL)
        return pr->top;
    a = calloc(1, sizeof(*a));
    if (a == NULL ||
        ha_agg_add(a, &pr->p, &pr->syms, 1, false, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        if (a != NULL) {
            ha_agg_free(a);
            free(a);
        }
        return NULL;
    }
    ha_agg_sort(a, HA_AGG_BY_FLAT_BYTES);
    pr->top = a;
    pr->bytes = profile_bytes(pr);
    return a;
}

const struct ha_agg_module *
ha_heap_profile_modules(struct ha_heap_profile *pr, char *err,
                        size_t errlen)
{
    struct ha_agg_module *m;

    if (pr->modules != NULL)
        return pr->modules;
    m = calloc(pr->syms.n_modules ? pr->syms.n_modules : 1, sizeof(*m));
    if (m == NULL || ha_agg_modules(&pr->p, &pr->syms, m) != 0) {
        free(m);
        ha_err_set(err, errlen, "%s: out of memory", pr->name);
        return NULL;
    }
    pr->modules = m;
    pr->bytes = profile_bytes(pr);
    return m;
}

char *
ha_heap_buildid_report(struct ha_vtab_ctx *ctx, const char *name)
{
    struct ha_buildids ids = {0};
    struct ha_buf report = HA_BUF_INIT;
    size_t len;
    char *side = read_side(ctx->datadir, name, &len), why[128], *ret = NULL;

    if (side == NULL)
        return NULL;
    if (ha_buildids_parse(side, len, &ids, why, sizeof(why)) != 0) {
        free(side);
        return NULL;
    }
    for (size_t i = 0; i < ids.n_ids; i++) {
        const char *path = ids.paths + ids.ids[i].path_off;
        char disk[HA_BUILDID_HEX_MAX];

        if (ha_buildid_check(&ids, path, disk) != HA_BUILDID_MISMATCH)
            continue;
        ha_buf_printf(&report, "%s%s (dump build-id %s, on disk %s)",
                      report.len ? "; " : "", path, ids.ids[i].hex, disk);
    }
    if (!ha_buf_failed(&report))
        ret = strndup(report.len ? (const char *)report.data : "",
                      report.len);
    ha_buf_free(&report);
    ha_buildids_free(&ids);
    free(side);
    return ret;
}

void
ha_heap_cache_free(struct ha_vtab_ctx *ctx)
{
    struct ha_heap_cache *c = ctx->heap_cache;

    if (c == NULL)
        return;
    while (c->list != NULL) {
        struct ha_heap_profile *pr = c->list;

        c->list = pr->next;
        pr->next = NULL;
        ha_heap_profile_put(pr);
    }
    free(c);
    ctx->heap_cache = NULL;
}
