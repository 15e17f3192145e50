/* SPDX-License-Identifier: MIT
 *
 * A module's symbol index made from its files (see symbolize_int.h,
 * prof/symindex.h): the file the symbolizer named, handed over with the
 * libdwfl handle it read it with, checked to be still the file on disk,
 * then every address it has named.
 *
 * "Every address" without naming each one: an address's inline chain
 * changes only where a DIE's range, a compilation unit's range or an
 * arange starts or ends, and its file:line only at a line-table row or
 * a compilation unit's bound. Those bounds are collected and one
 * address per piece between them named with the resolver's own walk
 * (ha_symbolize_dwarf_chains) and dwfl_module_getsrc, so the index gives
 * every address what the DWARF path would; ELF symbols are kept as the
 * resolver sorts them. More bounds than needed only cost bytes.
 */
#include "prof/symbolize_int.h"

#include <dwarf.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"

#define CHUNK ((size_t)1 << 18) /* addresses per chain walk */

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
collect_bounds(const _Atomic bool *stop, struct file *f, Dwarf *dw,
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

        if (atomic_load(stop))
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
    const _Atomic bool *stop;
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

        if (atomic_load(bd->stop))
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

        if ((i & 4095) == 0 && atomic_load(bd->stop))
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
    if (collect_bounds(bd->stop, bd->f, dw, dwbias, &cb, &lb) != 0) {
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

int
ha_symbolize_enum_index(struct ha_symbolizer *bs,
                        const struct ha_symbolize_req *r,
                        const _Atomic bool *stop, struct ha_buf *out,
                        char *why, size_t whylen)
{
    struct build bd = {.stop = stop, .f = r->f};
    struct ha_symindex_parts p;
    struct file *f = r->f;
    const char *fetched = f->from == HA_SYMS_SRC_DEBUGINFOD ? f->dbgi_path
                                                            : NULL;
    struct stat st;
    int ret = -1;

    memset(&p, 0, sizeof(p));
    bd.nodes.v.size = sizeof(struct ha_symindex_node);
    bd.spans.size = sizeof(struct ha_symindex_span);
    bd.lines.size = sizeof(struct ha_symindex_line);
    bd.syms.size = sizeof(struct ha_symindex_sym);
    /* Its handle reads the file lazily: it must still be the one it was
     * opened as (a replaced file makes no index; the next read makes
     * one of the new). */
    if (f->mod == NULL || stat(f->path, &st) != 0 || st.st_dev != f->dev ||
        st.st_ino != f->ino || st.st_size != f->size ||
        st.st_mtim.tv_sec != f->mtime.tv_sec ||
        st.st_mtim.tv_nsec != f->mtime.tv_nsec) {
        ha_err_set(why, whylen, "the file changed since it was named");
        goto done;
    }
    /* The strings of the index are those of a fresh memo: what the
     * symbolizer resolved in it is not needed any more. */
    ha_syms_free(&f->memo);
    ha_idmap_free(&f->die_names);
    if (build_dwarf(&bd, bs, why, whylen) != 0)
        goto done;
    if (build_syms(&bd, bs) != 0 || bd.nodes.v.oom || bd.spans.oom ||
        bd.lines.oom) {
        ha_err_set(why, whylen, "out of memory");
        goto done;
    }
    p.h = r->h;
    p.h.flags = (r->h.flags & (HA_SYMINDEX_F_DEMANGLED |
                               HA_SYMINDEX_F_DEBUGINFOD)) |
                (f->no_fini ? HA_SYMINDEX_F_NO_FINI : 0) |
                (r->wants_dbgi ? HA_SYMINDEX_F_WANTS_DEBUGINFOD : 0);
    p.h.from = f->from;
    p.h.base = bd.base;
    p.h.detail = ha_strtab_intern(&f->memo.strs, f->detail,
                                  strlen(f->detail));
    p.h.debug_path = ha_strtab_intern(&f->memo.strs, r->debug_path,
                                      strlen(r->debug_path));
    p.h.fetched_path = fetched != NULL
                           ? ha_strtab_intern(&f->memo.strs, fetched,
                                              strlen(fetched))
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
