/* SPDX-License-Identifier: MIT
 *
 * Symbol indexes built and written in the background (see
 * symbolize_int.h, prof/symindex.h): once a module has been named from
 * its files, a thread of the symbolizer's own opens it again with a
 * libdwfl handle of its own and names every address the module has,
 * then writes the index.
 *
 * "Every address" without naming each one: an address's inline chain
 * changes only where a DIE's range, a compilation unit's range or an
 * arange starts or ends, and its file:line only at a line-table row or
 * a compilation unit's bound. The builder collects those bounds and
 * names one address per piece between them with the resolver's own
 * walk (ha_symbolize_dwarf_chains) and dwfl_module_getsrc, so the index
 * gives every address what the DWARF path would; ELF symbols are kept
 * as the resolver sorts them. More bounds than needed only cost bytes.
 *
 * The thread runs at low priority (nice + 10), one build at a time,
 * once no request has come for a quarter of a second (the query that
 * asked is answered first, its aggregation not competed with), with
 * every signal blocked, and ends when its queue is empty. The
 * symbolizer never waits for it: freeing the symbolizer only asks it to
 * stop, and the thread frees what it holds when it ends.
 */
#include "prof/symbolize_int.h"

#include <dwarf.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/util.h"

#define NICE_STEP 10
#define QUIET_NS ((int64_t)250 * 1000000) /* no request for this long
                                            before a build starts */
#define CHUNK ((size_t)1 << 18) /* addresses per chain walk */

/* One module to index: what the symbolizer knew of it. */
struct req {
    char *path;
    dev_t dev;           /* the file as it was named */
    ino_t ino;
    off_t size;
    struct timespec mtime;
    char build_id[HA_BUILDID_HEX_MAX];
    char *fetched;       /* debuginfod's file, when the names came from it */
    enum ha_syms_source from;
    char detail[512];    /* heap_modules' detail, as the symbolizer said */
    bool dbgi_on;        /* the symbolizer asks debuginfod */
    bool wants_dbgi;     /* no DWARF of its own nor under a debug root */
    struct req *next;
};

struct ha_symbolize_builder {
    pthread_mutex_t lock;       /* everything below but the atomics */
    pthread_cond_t idle;        /* broadcast when the queue runs dry */
    pthread_cond_t wake;        /* broadcast when it is asked to stop */
    int64_t last_request_ns;    /* ha_clock_ns() of the last request */
    struct req *queue, *tail;
    bool running;               /* a thread serves the queue */
    bool busy;                  /* ... and is building one */
    bool orphan;                /* its symbolizer let go: the thread
                                   frees it */
    _Atomic bool stopping;

    char *debug_root;           /* the symbolizer's, for its own handle */
    char *dir;                  /* for log lines */
    uint64_t max_bytes;
    void (*thread_init)(void *arg);
    void *thread_init_arg;
    _Atomic uint64_t written;
    _Atomic uint64_t failed;
};

static void
req_free(struct req *r)
{
    if (r == NULL)
        return;
    free(r->path);
    free(r->fetched);
    free(r);
}

static void
builder_destroy(struct ha_symbolize_builder *b)
{
    while (b->queue != NULL) {
        struct req *r = b->queue;

        b->queue = r->next;
        req_free(r);
    }
    free(b->debug_root);
    free(b->dir);
    pthread_cond_destroy(&b->idle);
    pthread_cond_destroy(&b->wake);
    pthread_mutex_destroy(&b->lock);
    free(b);
}

/* ------------------------------------------------------------------ */
/* Growing arrays                                                     */
/* ------------------------------------------------------------------ */

struct vec {
    void *v;
    size_t n, cap, size;
    bool oom;
};

static void *
vec_push(struct vec *v)
{
    if (v->oom)
        return NULL;
    if (v->n == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 1024;
        void *nv = realloc(v->v, ncap * v->size);

        if (nv == NULL) {
            v->oom = true;
            return NULL;
        }
        v->v = nv;
        v->cap = ncap;
    }
    return (char *)v->v + v->n++ * v->size;
}

static void
vec_add64(struct vec *v, uint64_t x)
{
    uint64_t *p = vec_push(v);

    if (p != NULL)
        *p = x;
}

static int
cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

    return a < b ? -1 : a > b;
}

/* Sorts v's uint64_t and drops duplicates. */
static void
vec_sort_unique(struct vec *v)
{
    uint64_t *a = v->v;
    size_t out = 0;

    qsort(a, v->n, sizeof(*a), cmp_u64);
    for (size_t i = 0; i < v->n; i++)
        if (out == 0 || a[out - 1] != a[i])
            a[out++] = a[i];
    v->n = out;
}

/* ------------------------------------------------------------------ */
/* Where chains and lines change                                      */
/* ------------------------------------------------------------------ */

/* The ranges of die, in libdwfl addresses. */
static void
add_ranges(struct vec *v, Dwarf_Die *die, Dwarf_Addr bias)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;

    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        if (hi <= lo)
            continue;
        vec_add64(v, lo + bias);
        vec_add64(v, hi + bias);
    }
}

/* Every range the resolver's walk could test below parent (more: any
 * language's types are entered). */
static void
die_bounds(struct vec *v, Dwarf_Die *parent, Dwarf_Addr bias, int depth)
{
    Dwarf_Die child;

    if (depth > MAX_DIE_DEPTH || v->oom || dwarf_child(parent, &child) != 0)
        return;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            add_ranges(v, &child, bias);
            die_bounds(v, &child, bias, depth + 1);
            break;
        case DW_TAG_namespace:
        case DW_TAG_module:
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            die_bounds(v, &child, bias, depth + 1);
            break;
        default:
            break;
        }
    } while (!v->oom && dwarf_siblingof(&child, &child) == 0);
}

/* The bounds of chains (DIE, unit and arange ranges) into chains, of
 * lines (rows, unit and arange ranges) into lines, as libdwfl
 * addresses. Returns 0, or -1 when stopped or out of memory. */
static int
collect_bounds(struct ha_symbolize_builder *b, struct file *f, Dwarf *dw,
               Dwarf_Addr dwbias, struct vec *chains, struct vec *lines)
{
    Dwarf_Die *cu = NULL;
    Dwarf_Addr cubias;
    Dwarf_Aranges *ar;
    size_t n_ar = 0;

    /* Which unit an address is in: what libdwfl's lookup goes by. */
    if (dwarf_getaranges(dw, &ar, &n_ar) == 0) {
        for (size_t i = 0; i < n_ar; i++) {
            Dwarf_Addr start;
            Dwarf_Word len;

            if (dwarf_getarangeinfo(dwarf_onearange(ar, i), &start, &len,
                                    NULL) != 0)
                continue;
            vec_add64(chains, start + dwbias);
            vec_add64(chains, start + len + dwbias);
            vec_add64(lines, start + dwbias);
            vec_add64(lines, start + len + dwbias);
        }
    }
    while ((cu = dwfl_module_nextcu(f->mod, cu, &cubias)) != NULL) {
        Dwarf_Lines *rows;
        size_t n_rows;
        size_t from = chains->n;

        if (atomic_load(&b->stopping))
            return -1;
        add_ranges(chains, cu, cubias);
        for (size_t i = from; i < chains->n; i++)
            vec_add64(lines, ((uint64_t *)chains->v)[i]);
        die_bounds(chains, cu, cubias, 0);
        if (dwarf_getsrclines(cu, &rows, &n_rows) != 0)
            continue;
        for (size_t i = 0; i < n_rows; i++) {
            Dwarf_Addr a;

            if (dwarf_lineaddr(dwarf_onesrcline(rows, i), &a) == 0)
                vec_add64(lines, a + cubias);
        }
    }
    if (chains->oom || lines->oom)
        return -1;
    vec_sort_unique(chains);
    vec_sort_unique(lines);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Chains as nodes                                                    */
/* ------------------------------------------------------------------ */

/* Nodes, each interned once: equal frames with equal callers share. */
struct nodes {
    struct vec v;         /* struct ha_symindex_node */
    uint32_t *slots;      /* node index + 1; 0: empty */
    size_t n_slots;       /* power of two */
};

static uint64_t
node_hash(const struct ha_symindex_node *d)
{
    uint64_t h = 1469598103934665603ull;
    const uint32_t w[4] = {d->func, d->call_file, d->call_line, d->parent};

    for (int i = 0; i < 4; i++) {
        h ^= w[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static bool
node_eq(const struct ha_symindex_node *a, const struct ha_symindex_node *b)
{
    return a->func == b->func && a->call_file == b->call_file &&
           a->call_line == b->call_line && a->parent == b->parent;
}

static int
nodes_rehash(struct nodes *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof(*slots));
    const struct ha_symindex_node *v = t->v.v;

    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < t->v.n; i++) {
        size_t j = node_hash(&v[i]) & (n_slots - 1);

        while (slots[j] != 0)
            j = (j + 1) & (n_slots - 1);
        slots[j] = (uint32_t)i + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* The index of node d, added if new; HA_SYMINDEX_NONE on failure. */
static uint32_t
nodes_intern(struct nodes *t, const struct ha_symindex_node *d)
{
    struct ha_symindex_node *v, *p;
    size_t j;

    if ((t->v.n + 1) * 2 > t->n_slots &&
        nodes_rehash(t, t->n_slots ? t->n_slots * 2 : 4096) != 0)
        return HA_SYMINDEX_NONE;
    v = t->v.v;
    j = node_hash(d) & (t->n_slots - 1);
    while (t->slots[j] != 0) {
        if (node_eq(&v[t->slots[j] - 1], d))
            return t->slots[j] - 1;
        j = (j + 1) & (t->n_slots - 1);
    }
    if (t->v.n >= HA_SYMINDEX_NONE - 1 || (p = vec_push(&t->v)) == NULL)
        return HA_SYMINDEX_NONE;
    *p = *d;
    t->slots[j] = (uint32_t)t->v.n;
    return (uint32_t)t->v.n - 1;
}

/* ------------------------------------------------------------------ */
/* One build                                                          */
/* ------------------------------------------------------------------ */

struct build {
    struct ha_symbolize_builder *b;
    struct file *f;
    struct nodes nodes;
    struct vec spans;     /* struct ha_symindex_span, by vaddr */
    struct vec lines;     /* struct ha_symindex_line */
    struct vec syms;      /* struct ha_symindex_sym */
    uint64_t *span_va;    /* the chunk's vaddrs, for the callback */
    uint64_t base;
    bool failed;
};

/* A chunk's chain callback: the miss's innermost node, a new span when
 * it differs from the last. */
static int
on_chain(void *arg, size_t i, const struct ha_symindex_link *chain,
         size_t depth)
{
    struct build *bd = arg;
    uint32_t parent = HA_SYMINDEX_NONE;
    struct ha_symindex_span *sp;
    const struct ha_symindex_span *last;

    for (size_t k = depth; k > 0; k--) {
        struct ha_symindex_node d = {chain[k - 1].func, chain[k - 1].call_file,
                                     chain[k - 1].call_line, parent};

        if ((parent = nodes_intern(&bd->nodes, &d)) == HA_SYMINDEX_NONE)
            return -1;
    }
    last = bd->spans.n > 0
               ? &((const struct ha_symindex_span *)bd->spans.v)[bd->spans.n -
                                                                  1]
               : NULL;
    if (last != NULL && last->node == parent)
        return 0;
    if ((sp = vec_push(&bd->spans)) == NULL)
        return -1;
    sp->start = (uint32_t)(bd->span_va[i] - bd->base);
    sp->node = parent;
    return 0;
}

/* Chains at every chain bound (libdwfl addresses, sorted). */
static int
build_chains(struct build *bd, struct ha_symbolizer *bs, const uint64_t *at,
             size_t n)
{
    struct miss *m = malloc((n < CHUNK ? (n ? n : 1) : CHUNK) * sizeof(*m));
    int ret = -1;

    bd->span_va = malloc((n < CHUNK ? (n ? n : 1) : CHUNK) *
                         sizeof(*bd->span_va));
    if (m == NULL || bd->span_va == NULL)
        goto done;
    for (size_t from = 0; from < n; from += CHUNK) {
        size_t k = n - from < CHUNK ? n - from : CHUNK;

        if (atomic_load(&bd->b->stopping))
            goto done;
        for (size_t i = 0; i < k; i++) {
            bd->span_va[i] = at[from + i] - bd->f->bias;
            m[i].vaddr = bd->span_va[i];
        }
        if (ha_symbolize_dwarf_chains(bs, bd->f, m, k, on_chain, bd) != 0)
            goto done;
    }
    ret = 0;
done:
    free(m);
    free(bd->span_va);
    bd->span_va = NULL;
    return ret;
}

/* Lines at every line bound, as dwfl_module_getsrc gives them. */
static int
build_lines(struct build *bd, const uint64_t *at, size_t n)
{
    struct ha_strtab *t = &bd->f->memo.strs;

    for (size_t i = 0; i < n; i++) {
        Dwfl_Line *ln = dwfl_module_getsrc(bd->f->mod, at[i]);
        const char *src = NULL;
        int lineno = 0;
        uint32_t file = 0, line;
        struct ha_symindex_line *l;
        const struct ha_symindex_line *last;

        if ((i & 4095) == 0 && atomic_load(&bd->b->stopping))
            return -1;
        if (ln != NULL)
            src = dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL);
        if (src != NULL &&
            (file = ha_strtab_intern(t, src, strlen(src))) == UINT32_MAX)
            return -1;
        line = lineno > 0 ? (uint32_t)lineno : 0;
        last = bd->lines.n > 0 ? &((const struct ha_symindex_line *)
                                       bd->lines.v)[bd->lines.n - 1]
                               : NULL;
        if (last != NULL && last->file == file && last->line == line)
            continue;
        if ((l = vec_push(&bd->lines)) == NULL)
            return -1;
        l->start = (uint32_t)(at[i] - bd->f->bias - bd->base);
        l->file = file;
        l->line = line;
    }
    return 0;
}

/* The ELF symbols as the resolver sorted them, names as it interns
 * them. */
static int
build_syms(struct build *bd, struct ha_symbolizer *bs)
{
    size_t n;
    const struct fsym *fs = ha_symbolize_file_symbols(bd->f, &n);

    for (size_t i = 0; i < n; i++) {
        struct ha_symindex_sym *y;

        /* Below where libdwfl put the file (absolute symbols): no
         * address looked up, all at or above it, is inside one. */
        if (fs[i].addr < bd->f->bias) {
            if (fs[i].addr + fs[i].size <= bd->f->bias)
                continue;
            return -1;
        }
        if ((y = vec_push(&bd->syms)) == NULL)
            return -1;
        y->addr = fs[i].addr - bd->f->bias;
        y->size = fs[i].size;
        y->name = ha_symbolize_intern_func(bs, &bd->f->memo.strs,
                                           fs[i].name);
        y->pad = 0;
        if (y->name == UINT32_MAX)
            return -1;
    }
    return 0;
}

/* The DWARF part: chains and lines. 0 also when there is no DWARF. */
static int
build_dwarf(struct build *bd, struct ha_symbolizer *bs, char *why,
            size_t whylen)
{
    struct vec cb = {.size = sizeof(uint64_t)}, lb = {.size = sizeof(uint64_t)};
    Dwarf_Addr dwbias;
    Dwarf *dw = dwfl_module_getdwarf(bd->f->mod, &dwbias);
    uint64_t lo, hi;
    int ret = -1;

    if (dw == NULL)
        return 0;
    if (collect_bounds(bd->b, bd->f, dw, dwbias, &cb, &lb) != 0) {
        ha_err_set(why, whylen, "stopped, or out of memory");
        goto done;
    }
    if (cb.n == 0 && lb.n == 0) {
        ret = 0;
        goto done;
    }
    /* Spans are kept as offsets from the lowest bound. */
    lo = UINT64_MAX;
    hi = 0;
    if (cb.n > 0) {
        lo = ((uint64_t *)cb.v)[0];
        hi = ((uint64_t *)cb.v)[cb.n - 1];
    }
    if (lb.n > 0) {
        lo = ((uint64_t *)lb.v)[0] < lo ? ((uint64_t *)lb.v)[0] : lo;
        hi = ((uint64_t *)lb.v)[lb.n - 1] > hi ? ((uint64_t *)lb.v)[lb.n - 1]
                                               : hi;
    }
    if (lo < bd->f->bias || hi - lo > UINT32_MAX) {
        ha_err_set(why, whylen, "its DWARF spans more than 4 GiB");
        goto done;
    }
    bd->base = lo - bd->f->bias;
    if (build_chains(bd, bs, cb.v, cb.n) != 0 ||
        build_lines(bd, lb.v, lb.n) != 0) {
        ha_err_set(why, whylen, "stopped, or out of memory");
        goto done;
    }
    ret = 0;
done:
    free(cb.v);
    free(lb.v);
    return ret;
}

/* Opens r's file with bs as the symbolizer did, checks it is the same
 * file with the same source of names, and builds its index into out.
 * Returns 0, or -1 with why set. */
static int
build_one(struct ha_symbolize_builder *b, struct ha_symbolizer *bs,
          const struct req *r, struct ha_buf *out, char *why, size_t whylen)
{
    struct build bd = {.b = b};
    struct ha_symindex_parts p;
    char dpath[PATH_MAX];
    struct stat st;
    struct file *f = calloc(1, sizeof(*f));
    int ret = -1;

    memset(&p, 0, sizeof(p));
    bd.nodes.v.size = sizeof(struct ha_symindex_node);
    bd.spans.size = sizeof(struct ha_symindex_span);
    bd.lines.size = sizeof(struct ha_symindex_line);
    bd.syms.size = sizeof(struct ha_symindex_sym);
    if (f == NULL || (f->path = strdup(r->path)) == NULL ||
        (r->fetched != NULL && (f->dbgi_path = strdup(r->fetched)) == NULL)) {
        ha_err_set(why, whylen, "out of memory");
        goto done;
    }
    bd.f = f;
    if (stat(r->path, &st) != 0 || st.st_dev != r->dev ||
        st.st_ino != r->ino || st.st_size != r->size ||
        st.st_mtim.tv_sec != r->mtime.tv_sec ||
        st.st_mtim.tv_nsec != r->mtime.tv_nsec) {
        ha_err_set(why, whylen, "the file changed since it was named");
        goto done;
    }
    f->dev = st.st_dev;
    f->ino = st.st_ino;
    f->size = st.st_size;
    f->mtime = st.st_mtim;
    memcpy(f->build_id, r->build_id, sizeof(f->build_id));
    /* What the files are before they are read: one replaced meanwhile
     * makes the index out of date, never wrong. */
    ha_symbolize_index_expect(bs, f, r->from, r->fetched, &p.h, dpath,
                              sizeof(dpath));
    f->build_id[0] = '\0';
    ha_symbolize_file_open(bs, f);
    if (f->mod == NULL || strcmp(f->build_id, r->build_id) != 0) {
        ha_err_set(why, whylen, "it cannot be read again as it was (%s)",
                   f->open_err[0] ? f->open_err : "another build-id");
        goto done;
    }
    ha_symbolize_source_classify(bs, f);
    if (f->from != r->from) {
        ha_err_set(why, whylen, "its names would now come from %s, not %s",
                   ha_syms_source_name(f->from),
                   ha_syms_source_name(r->from));
        goto done;
    }
    if (build_dwarf(&bd, bs, why, whylen) != 0)
        goto done;
    if (build_syms(&bd, bs) != 0 || bd.nodes.v.oom || bd.spans.oom ||
        bd.lines.oom) {
        ha_err_set(why, whylen, "out of memory");
        goto done;
    }
    p.h.flags = (bs->demangle != NULL ? HA_SYMINDEX_F_DEMANGLED : 0) |
                (f->no_fini ? HA_SYMINDEX_F_NO_FINI : 0) |
                (r->dbgi_on ? HA_SYMINDEX_F_DEBUGINFOD : 0) |
                (r->wants_dbgi ? HA_SYMINDEX_F_WANTS_DEBUGINFOD : 0);
    p.h.from = r->from;
    p.h.base = bd.base;
    p.h.detail = ha_strtab_intern(&f->memo.strs, r->detail,
                                  strlen(r->detail));
    p.h.debug_path = ha_strtab_intern(&f->memo.strs, dpath, strlen(dpath));
    p.h.fetched_path = r->fetched != NULL
                           ? ha_strtab_intern(&f->memo.strs, r->fetched,
                                              strlen(r->fetched))
                           : 0;
    if (p.h.detail == UINT32_MAX || p.h.debug_path == UINT32_MAX ||
        p.h.fetched_path == UINT32_MAX) {
        ha_err_set(why, whylen, "out of memory");
        goto done;
    }
    /* The string table's offset 0 is "" once anything is in it. */
    if (f->memo.strs.buf.len == 0)
        ha_buf_append_u8(&f->memo.strs.buf, 0);
    p.segs = (const struct ha_symindex_seg *)f->segs;
    p.n_segs = f->n_segs;
    p.syms = bd.syms.v;
    p.n_syms = bd.syms.n;
    p.nodes = bd.nodes.v.v;
    p.n_nodes = bd.nodes.v.n;
    p.chains = bd.spans.v;
    p.n_chains = bd.spans.n;
    p.lines = bd.lines.v;
    p.n_lines = bd.lines.n;
    p.strs = (const char *)f->memo.strs.buf.data;
    p.strs_len = f->memo.strs.buf.len;
    if (ha_buf_failed(&f->memo.strs.buf) || ha_symindex_encode(&p, out) != 0) {
        ha_err_set(why, whylen, "out of memory");
        goto done;
    }
    ret = 0;
done:
    free(bd.nodes.v.v);
    free(bd.nodes.slots);
    free(bd.spans.v);
    free(bd.lines.v);
    free(bd.syms.v);
    ha_symbolize_file_free(f);
    return ret;
}

_Static_assert(sizeof(struct seg) == sizeof(struct ha_symindex_seg) &&
                   offsetof(struct seg, off) ==
                       offsetof(struct ha_symindex_seg, off) &&
                   offsetof(struct seg, filesz) ==
                       offsetof(struct ha_symindex_seg, filesz) &&
                   offsetof(struct seg, vaddr) ==
                       offsetof(struct ha_symindex_seg, vaddr),
               "a file's segments are written as they are");

/* Builds r's index and writes it; logs what came of it. */
static void
build_and_write(struct ha_symbolize_builder *b, struct ha_symbolizer *bs,
                const struct req *r)
{
    struct ha_buf out = HA_BUF_INIT;
    char name[HA_SYMCACHE_NAME_MAX], why[PATH_MAX + 128];
    int64_t t0 = ha_clock_ns();
    struct timespec cpu0, cpu1;
    int dirfd;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);

    ha_symcache_name(name, sizeof(name), r->build_id, bs->demangle != NULL);
    /* Opened for this write only: no descriptor outlives it. */
    if ((dirfd = ha_symcache_dir_open(b->dir, why, sizeof(why))) < 0 ||
        build_one(b, bs, r, &out, why, sizeof(why)) != 0 ||
        atomic_load(&b->stopping) ||
        (out.len > b->max_bytes &&
         (ha_err_set(why, sizeof(why), "%zu bytes, more than the bound of "
                     "%llu", out.len, (unsigned long long)b->max_bytes),
          true)) ||
        ha_symcache_write(dirfd, name, out.data, out.len, why,
                          sizeof(why)) != 0) {
        if (!atomic_load(&b->stopping)) {
            atomic_fetch_add(&b->failed, 1);
            ha_log_info("symbol index of %s not written: %s", r->path, why);
        }
        ha_buf_free(&out);
        if (dirfd >= 0)
            close(dirfd);
        return;
    }
    atomic_fetch_add(&b->written, 1);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
    ha_log_info("symbol index %s/%s written for %s: %zu bytes, made in "
                "%.3f s (%.3f s of CPU at low priority)", b->dir, name,
                r->path, out.len, (double)(ha_clock_ns() - t0) / 1e9,
                (double)(cpu1.tv_sec - cpu0.tv_sec) +
                    (double)(cpu1.tv_nsec - cpu0.tv_nsec) / 1e9);
    ha_buf_free(&out);
    ha_symcache_trim(dirfd, b->max_bytes, name);
    close(dirfd);
}

/* ------------------------------------------------------------------ */
/* The thread                                                         */
/* ------------------------------------------------------------------ */

static void *
build_thread(void *arg)
{
    struct ha_symbolize_builder *b = arg;
    struct ha_symbolizer_limits lim;
    struct ha_symbolizer *bs = NULL;
    bool orphan;
    int nice;

    if (b->thread_init != NULL)
        b->thread_init(b->thread_init_arg);
    (void)pthread_setname_np(pthread_self(), "heapadmin-index");
    /* Linux takes a thread id here: only this thread yields. */
    errno = 0;
    nice = getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
    if (errno == 0)
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid),
                          nice + NICE_STEP > 19 ? 19 : nice + NICE_STEP);
    memset(&lim, 0, sizeof(lim));
    lim.debug_root = b->debug_root;
    pthread_mutex_lock(&b->lock);
    for (;;) {
        struct req *r;

        while (!atomic_load(&b->stopping) &&
               ha_clock_ns() < b->last_request_ns + QUIET_NS) {
            int64_t until = b->last_request_ns + QUIET_NS;
            struct timespec ts = {(time_t)(until / 1000000000),
                                  (long)(until % 1000000000)};

            pthread_cond_timedwait(&b->wake, &b->lock, &ts);
        }
        if ((r = atomic_load(&b->stopping) ? NULL : b->queue) == NULL)
            break;
        b->queue = r->next;
        if (b->queue == NULL)
            b->tail = NULL;
        b->busy = true;
        pthread_mutex_unlock(&b->lock);
        if (bs == NULL)
            bs = ha_symbolizer_new(&lim);
        if (bs != NULL)
            build_and_write(b, bs, r);
        else
            atomic_fetch_add(&b->failed, 1);
        req_free(r);
        pthread_mutex_lock(&b->lock);
        b->busy = false;
    }
    b->running = false;
    pthread_cond_broadcast(&b->idle);
    orphan = b->orphan;
    pthread_mutex_unlock(&b->lock);
    ha_symbolizer_free(bs);
    if (orphan)
        builder_destroy(b);
    return NULL;
}

static struct ha_symbolize_builder *
builder_new(struct ha_symbolizer *s)
{
    struct ha_symbolize_builder *b = calloc(1, sizeof(*b));
    pthread_condattr_t ca;

    if (b == NULL)
        return NULL;
    b->dir = strdup(s->index_dir);
    b->debug_root = s->debug_root != NULL ? strdup(s->debug_root) : NULL;
    if (b->dir == NULL ||
        (s->debug_root != NULL && b->debug_root == NULL) ||
        pthread_mutex_init(&b->lock, NULL) != 0)
        goto fail;
    if (pthread_condattr_init(&ca) != 0 ||
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) != 0 ||
        pthread_cond_init(&b->idle, &ca) != 0) {
        pthread_mutex_destroy(&b->lock);
        goto fail;
    }
    if (pthread_cond_init(&b->wake, &ca) != 0) {
        pthread_cond_destroy(&b->idle);
        pthread_mutex_destroy(&b->lock);
        goto fail;
    }
    pthread_condattr_destroy(&ca);
    b->max_bytes = s->lim.index_max_bytes;
    b->thread_init = s->lim.thread_init;
    b->thread_init_arg = s->lim.thread_init_arg;
    return b;
fail:
    free(b->dir);
    free(b->debug_root);
    free(b);
    return NULL;
}

/* Starts the thread if none serves the queue. Lock held. */
static void
spawn(struct ha_symbolize_builder *b)
{
    pthread_attr_t at;
    pthread_t tid;
    sigset_t all, old;

    if (b->running || pthread_attr_init(&at) != 0)
        return;
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    /* The thread inherits the mask: a host's signals never land on it. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    if (pthread_create(&tid, &at, build_thread, b) == 0)
        b->running = true;
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&at);
}

/* ------------------------------------------------------------------ */
/* What the symbolizer calls                                          */
/* ------------------------------------------------------------------ */

void
ha_symbolize_build_request(struct ha_symbolizer *s, struct file *f)
{
    bool wants = !f->own_dwarf && f->local_debug == NULL;
    struct req *r;

    /* Only a final answer is worth keeping: a file read whole, with a
     * build-id to find it by, no debuginfod answer pending (the file is
     * reopened when it comes, and asked for then), and not one
     * debuginfod may still improve on. */
    if (f->dbgi_pending)
        return;
    f->idx_done = true;
    if (f->mod == NULL || f->build_id[0] == '\0' ||
        (s->dbgi != NULL && wants && f->from < HA_SYMS_SRC_DWARF) ||
        s->index_dir == NULL || s->index_dir_bad)
        return;
    if (s->builder == NULL && (s->builder = builder_new(s)) == NULL)
        return;
    r = calloc(1, sizeof(*r));
    if (r == NULL || (r->path = strdup(f->path)) == NULL ||
        (f->from == HA_SYMS_SRC_DEBUGINFOD && f->dbgi_path != NULL &&
         (r->fetched = strdup(f->dbgi_path)) == NULL)) {
        req_free(r);
        return;
    }
    r->dev = f->dev;
    r->ino = f->ino;
    r->size = f->size;
    r->mtime = f->mtime;
    memcpy(r->build_id, f->build_id, sizeof(r->build_id));
    r->from = f->from;
    memcpy(r->detail, f->detail, sizeof(r->detail));
    r->dbgi_on = s->dbgi != NULL;
    r->wants_dbgi = wants;
    pthread_mutex_lock(&s->builder->lock);
    if (s->builder->tail != NULL)
        s->builder->tail->next = r;
    else
        s->builder->queue = r;
    s->builder->tail = r;
    s->builder->last_request_ns = ha_clock_ns();
    spawn(s->builder);
    pthread_mutex_unlock(&s->builder->lock);
}

void
ha_symbolize_build_stop(struct ha_symbolize_builder *b)
{
    atomic_store(&b->stopping, true);
    pthread_mutex_lock(&b->lock);
    pthread_cond_broadcast(&b->wake);
    pthread_mutex_unlock(&b->lock);
}

void
ha_symbolize_build_free(struct ha_symbolize_builder *b)
{
    bool running;

    if (b == NULL)
        return;
    atomic_store(&b->stopping, true);
    pthread_mutex_lock(&b->lock);
    pthread_cond_broadcast(&b->wake);
    b->orphan = true;
    running = b->running;
    pthread_mutex_unlock(&b->lock);
    if (!running)
        builder_destroy(b);
}

void
ha_symbolize_build_counts(const struct ha_symbolize_builder *b,
                          uint64_t *written, uint64_t *failed)
{
    *written = atomic_load(&b->written);
    *failed = atomic_load(&b->failed);
}

int
ha_symbolize_build_wait(struct ha_symbolize_builder *b, int64_t deadline_ns)
{
    struct timespec ts = {(time_t)(deadline_ns / 1000000000),
                          (long)(deadline_ns % 1000000000)};
    int ret = 0;

    pthread_mutex_lock(&b->lock);
    while (b->running && ret == 0)
        if (pthread_cond_timedwait(&b->idle, &b->lock, &ts) == ETIMEDOUT)
            ret = b->running ? -1 : 0;
    pthread_mutex_unlock(&b->lock);
    return ret;
}
