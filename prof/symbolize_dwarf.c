/* SPDX-License-Identifier: MIT
 *
 * Addresses of one file to names, files, lines and inline chains from its
 * DWARF (see symbolize_int.h): the addresses are grouped per compilation
 * unit and each unit's DIE tree is walked once, pruned by address ranges,
 * collecting every address's chain of subprogram and inlined-subroutine
 * DIEs; an ELF symbol that covers the address names it where DWARF does
 * not. Names are demangled and shortened as jeprof shows them.
 */
#include "prof/symbolize_int.h"

#include <dwarf.h>
#include <stdlib.h>
#include <string.h>

#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Names                                                              */
/* ------------------------------------------------------------------ */

/* jeprof's ShortFunctionName on a demangled C++ name, in place: argument
 * lists (with a trailing " const") and template arguments go, and so
 * does a leading return type. */
static void
short_name(char *s)
{
    bool changed = true;
    char *p, *q;

    while (changed) {
        changed = false;
        /* Innermost "(...)" first, like the regex /\([^()]*\)/. */
        for (p = s; *p; p++) {
            if (*p != '(')
                continue;
            for (q = p + 1; *q && *q != '(' && *q != ')'; q++)
                ;
            if (*q != ')')
                continue;
            q++;
            if (strncmp(q, " const", 6) == 0)
                q += 6;
            memmove(p, q, strlen(q) + 1);
            changed = true;
            break;
        }
    }
    changed = true;
    while (changed) {
        changed = false;
        for (p = s; *p; p++) {
            if (*p != '<')
                continue;
            for (q = p + 1; *q && *q != '<' && *q != '>'; q++)
                ;
            if (*q != '>')
                continue;
            memmove(p, q + 1, strlen(q + 1) + 1);
            changed = true;
            break;
        }
    }
    /* "int ns::f" -> "ns::f": drop up to the last blank before "x::". */
    for (p = s + strlen(s); p > s; p--) {
        if (p[-1] != ' ' && p[-1] != '\t')
            continue;
        for (q = p; *q == '_' || (*q >= '0' && *q <= '9') ||
                    ((*q | 0x20) >= 'a' && (*q | 0x20) <= 'z');
             q++)
            ;
        if (q > p && q[0] == ':' && q[1] == ':') {
            memmove(s, p, strlen(p) + 1);
            break;
        }
    }
}

uint32_t
ha_symbolize_intern_func(struct ha_symbolizer *s, struct ha_strtab *t,
                         const char *name)
{
    uint32_t off;

    if (name == NULL)
        return 0;
    if (name[0] == '_' && name[1] == 'Z' && s->demangle != NULL) {
        int status = -1;
        char *d = s->demangle(name, NULL, NULL, &status);

        if (d != NULL && status == 0) {
            short_name(d);
            off = ha_strtab_intern(t, d, strlen(d));
            free(d);
            return off;
        }
        free(d);
    }
    return ha_strtab_intern(t, name, strlen(name));
}

/* The name of a subprogram or inlined subroutine DIE, following
 * DW_AT_abstract_origin / DW_AT_specification. */
static const char *
die_name(Dwarf_Die *die)
{
    Dwarf_Attribute at;
    const char *n;

    if ((dwarf_attr_integrate(die, DW_AT_linkage_name, &at) != NULL ||
         dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at) != NULL) &&
        (n = dwarf_formstring(&at)) != NULL && n[0] == '_' && n[1] == 'Z')
        return n;
    if (dwarf_attr_integrate(die, DW_AT_name, &at) != NULL)
        return dwarf_formstring(&at);
    return NULL;
}

/* ------------------------------------------------------------------ */
/* DWARF: one walk per compilation unit                               */
/* ------------------------------------------------------------------ */

/* A subprogram or inlined-subroutine DIE holding some address of the
 * call, with what its frames need, worked out once per DIE rather than
 * once per address and frame: its name, and the position it was inlined
 * at (the caller's frame's file and line). */
struct dinfo {
    uint32_t func;      /* in f->memo.strs; 0: none */
    uint32_t call_file; /* DW_AT_call_file's name in f->memo.strs; 0: none */
    uint32_t call_line; /* DW_AT_call_line; 0: none */
};

/* Chains of DIEs, innermost first, as linked lists in one array. */
struct link {
    uint32_t die;  /* in struct resolve.dies */
    int32_t next;  /* -1: end */
};

/* A miss's address in its CU's DWARF space; a CU's misses are a run of
 * these sorted by address, searched by the walk. */
struct caddr {
    uint64_t addr;
    uint32_t miss;
};

/* One call's state: its CUs, the DIEs that hold its addresses and the
 * chains through them. */
struct resolve {
    struct ha_symbolizer *s;
    struct file *f;
    struct miss *m;
    Dwarf_Die *cus;
    size_t n_cus, cus_cap;
    struct dinfo *dies;
    size_t n_dies, dies_cap;
    struct link *links;
    size_t n_links, links_cap;
    bool oom;
};

struct walk {
    struct resolve *r;
    Dwarf_Die *cu;
    const struct caddr *a;  /* this CU's misses, sorted by addr */
    size_t n;
    bool cplusplus;  /* the CU is C++: types may hold code */
};

/* Grows *v (of *cap elements of size) to hold need; false on failure or
 * past INT32_MAX elements (links index themselves with int32_t). */
static bool
grow_array(void **v, size_t *cap, size_t need, size_t size)
{
    size_t ncap;
    void *nv;

    if (need <= *cap)
        return true;
    ncap = *cap ? *cap * 2 : 1024;
    while (ncap < need)
        ncap *= 2;
    if (ncap > INT32_MAX || (nv = realloc(*v, ncap * size)) == NULL)
        return false;
    *v = nv;
    *cap = ncap;
    return true;
}

/* File name of a DW_AT_call_file index in the CU, or NULL. */
static const char *
call_file(Dwarf_Die *cu, Dwarf_Die *inl, Dwarf_Word *line)
{
    Dwarf_Attribute at;
    Dwarf_Word idx;
    Dwarf_Files *files;
    size_t n;

    *line = 0;
    if (dwarf_attr(inl, DW_AT_call_line, &at) != NULL)
        dwarf_formudata(&at, line);
    if (dwarf_attr(inl, DW_AT_call_file, &at) == NULL ||
        dwarf_formudata(&at, &idx) != 0 ||
        dwarf_getsrcfiles(cu, &files, &n) != 0 || idx >= n)
        return NULL;
    return dwarf_filesrc(files, idx, NULL, NULL);
}

/* Adds die to the call's DIEs; its index, or UINT32_MAX (r->oom set). */
static uint32_t
add_die(struct walk *w, Dwarf_Die *die)
{
    struct resolve *r = w->r;
    struct ha_strtab *t = &r->f->memo.strs;
    Dwarf_Off off = dwarf_dieoffset(die);
    struct dinfo *d;
    const char *cf;
    Dwarf_Word cl;

    if (!grow_array((void **)&r->dies, &r->dies_cap, r->n_dies + 1,
                    sizeof(*r->dies))) {
        r->oom = true;
        return UINT32_MAX;
    }
    d = &r->dies[r->n_dies];
    /* A name takes three attribute lookups through abstract origins and
     * a demangling: once per DIE, and kept across calls. */
    if (!ha_idmap_get(&r->f->die_names, off, &d->func)) {
        d->func = ha_symbolize_intern_func(r->s, t, die_name(die));
        (void)ha_idmap_put(&r->f->die_names, off, d->func);
    }
    cf = call_file(w->cu, die, &cl);
    d->call_file = cf ? ha_strtab_intern(t, cf, strlen(cf)) : 0;
    d->call_line = (uint32_t)cl;
    if (d->func == UINT32_MAX || d->call_file == UINT32_MAX) {
        r->oom = true;
        return UINT32_MAX;
    }
    return (uint32_t)r->n_dies++;
}

static bool
push_link(struct resolve *r, struct miss *m, uint32_t die)
{
    if (m->head >= 0 && r->links[m->head].die == die)
        return true; /* same DIE, another of its ranges */
    if (m->depth >= MAX_INLINE)
        return true;
    if (!grow_array((void **)&r->links, &r->links_cap, r->n_links + 1,
                    sizeof(*r->links))) {
        r->oom = true;
        return false;
    }
    r->links[r->n_links].die = die;
    r->links[r->n_links].next = m->head;
    m->head = (int32_t)r->n_links++;
    m->depth++;
    return true;
}

/* Marks the misses inside die's ranges; returns how many. Subprograms and
 * inlined subroutines join their chains. */
static size_t
mark(struct walk *w, Dwarf_Die *die, bool frame)
{
    Dwarf_Addr base, lo, hi;
    ptrdiff_t off = 0;
    size_t hits = 0;
    uint32_t d = UINT32_MAX;

    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        size_t a = 0, b = w->n;

        if (hi <= lo)
            continue;
        while (a < b) { /* first miss with addr >= lo */
            size_t mid = a + (b - a) / 2;

            if (w->a[mid].addr < lo)
                a = mid + 1;
            else
                b = mid;
        }
        for (; a < w->n && w->a[a].addr < hi; a++) {
            hits++;
            if (!frame)
                continue;
            if (d == UINT32_MAX && (d = add_die(w, die)) == UINT32_MAX)
                return hits;
            if (!push_link(w->r, &w->r->m[w->a[a].miss], d))
                return hits;
        }
    }
    return hits;
}

static void
walk_die(struct walk *w, Dwarf_Die *parent, int depth)
{
    Dwarf_Die child;

    if (depth > MAX_DIE_DEPTH || w->r->oom ||
        dwarf_child(parent, &child) != 0)
        return;
    do {
        switch (dwarf_tag(&child)) {
        case DW_TAG_subprogram:
        case DW_TAG_inlined_subroutine:
            if (mark(w, &child, true) > 0)
                walk_die(w, &child, depth + 1);
            break;
        case DW_TAG_lexical_block:
        case DW_TAG_try_block:
        case DW_TAG_catch_block:
            if (mark(w, &child, false) > 0)
                walk_die(w, &child, depth + 1);
            break;
        case DW_TAG_namespace:
        case DW_TAG_module:
            walk_die(w, &child, depth + 1);
            break;
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
            /* Code inside a type only in C++ (and there compilers put
             * definitions outside the class); a C unit's structs hold
             * members, thousands per unit in libc: not walked. */
            if (w->cplusplus)
                walk_die(w, &child, depth + 1);
            break;
        default:
            break;
        }
    } while (!w->r->oom && dwarf_siblingof(&child, &child) == 0);
}

/* True unless the unit says it is C or another language whose types hold
 * no code (an unknown language is walked as C++ would be). */
static bool
is_cplusplus(Dwarf_Die *cu)
{
    switch (dwarf_srclang(cu)) {
    case DW_LANG_C:
    case DW_LANG_C89:
    case DW_LANG_C99:
    case DW_LANG_C11:
    case DW_LANG_Mips_Assembler:
        return false;
    default:
        return true;
    }
}

static int
cmp_caddr(const void *x, const void *y)
{
    const struct caddr *a = x, *b = y;

    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* m's chain, innermost first, as links (strings in f->memo.strs);
 * returns its depth. */
static size_t
chain_of(const struct resolve *r, const struct miss *m,
         struct ha_symindex_link *chain)
{
    size_t n = 0;

    for (int32_t k = m->head; k >= 0 && n < MAX_INLINE;
         k = r->links[k].next) {
        const struct dinfo *d = &r->dies[r->links[k].die];

        chain[n].func = d->func;
        chain[n].call_file = d->call_file;
        chain[n].call_line = d->call_line;
        n++;
    }
    return n;
}

/* Resolves one miss into f->memo by the rule an index also follows
 * (prof/symindex.h): its chain and line, else an ELF symbol that covers
 * the address, else no name is certain. -1 on allocation failure. */
static int
resolve_one(struct resolve *r, struct miss *m)
{
    struct ha_symbolizer *s = r->s;
    struct file *f = r->f;
    struct ha_syms_frame fr[MAX_INLINE];
    struct ha_symindex_link chain[MAX_INLINE];
    struct ha_strtab *t = &f->memo.strs;
    uint64_t addr = m->vaddr + f->bias;
    size_t n, depth = chain_of(r, m, chain);
    Dwfl_Line *ln = dwfl_module_getsrc(f->mod, addr);
    const char *src = NULL, *name;
    int lineno = 0;
    uint32_t srcoff = 0, line;
    uint64_t fsize = 0;

    if (ln != NULL)
        src = dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL);
    if (src != NULL &&
        (srcoff = ha_strtab_intern(t, src, strlen(src))) == UINT32_MAX)
        return -1;
    line = lineno > 0 ? (uint32_t)lineno : 0;
    n = ha_symindex_frames(chain, depth, srcoff, line, fr, MAX_INLINE);
    /* The ELF symbol that covers the address: the name when the chain
     * has none, and either way its size is the function's (wrapper
     * detection asks, prof/wrappers.h). */
    name = ha_symbolize_file_symbol(f, addr, &fsize);
    if (ha_symindex_wants_symbol(fr, n)) {
        uint32_t fn = ha_symbolize_intern_func(s, t, name);
        char unnamed[320];

        if (fn == UINT32_MAX)
            return -1;
        switch (ha_symindex_with_symbol(fr, &n, fn, srcoff, line)) {
        case HA_SYMINDEX_UNNAMED:
            return ha_syms_add_unnamed(&f->memo, m->vaddr, 0, 0, f->path,
                                       m->vaddr);
        case HA_SYMINDEX_OUTER_UNNAMED:
            /* Inlined code in a nameless function: the callees keep
             * their names, the function gets the address's. */
            ha_syms_unnamed_name(unnamed, sizeof(unnamed), f->path,
                                 m->vaddr);
            fr[n - 1].func = ha_strtab_intern(t, unnamed, strlen(unnamed));
            if (fr[n - 1].func == UINT32_MAX)
                return -1;
            break;
        case HA_SYMINDEX_NAMED:
            break;
        }
    }
    if (ha_syms_add(&f->memo, m->vaddr, 0, 0, fr, n) != 0)
        return -1;
    f->memo.addrs[f->memo.n_addrs - 1].fsize =
        fsize > UINT32_MAX ? UINT32_MAX : (uint32_t)fsize;
    return 0;
}

/* Each miss's CU: its index in r->cus (one entry per CU), its address in
 * the CU's DWARF space. */
static int
find_cus(struct resolve *r, size_t n)
{
    struct ha_idmap seen = {0};
    Dwarf_Off last_off = (Dwarf_Off)-1;
    uint32_t last = UINT32_MAX;
    int ret = -1;

    for (size_t i = 0; i < n; i++) {
        struct miss *m = &r->m[i];
        uint64_t addr = m->vaddr + r->f->bias;
        Dwarf_Addr cubias = 0;
        Dwarf_Die *cu = dwfl_module_addrdie(r->f->mod, addr, &cubias);
        Dwarf_Off off;
        uint32_t k;

        m->head = -1;
        m->depth = 0;
        m->cu = UINT32_MAX;
        m->cu_addr = addr;
        if (cu == NULL)
            continue;
        /* Neighbouring addresses are mostly in one CU. */
        off = dwarf_dieoffset(cu);
        if (off == last_off) {
            k = last;
        } else if (!ha_idmap_get(&seen, off, &k)) {
            if (!grow_array((void **)&r->cus, &r->cus_cap, r->n_cus + 1,
                            sizeof(*r->cus)) ||
                ha_idmap_put(&seen, off, (uint32_t)r->n_cus) != 0)
                goto done;
            r->cus[r->n_cus] = *cu;
            k = (uint32_t)r->n_cus++;
        }
        last_off = off;
        last = k;
        m->cu = k;
        m->cu_addr = addr - cubias;
    }
    ret = 0;
done:
    ha_idmap_free(&seen);
    return ret;
}

/* Finds every miss's chain: groups m[0 .. r->n) by CU and walks each
 * CU's DIE tree once. Returns 0, or -1 on allocation failure. */
static int
walk_all(struct resolve *r, size_t n)
{
    struct miss *m = r->m;
    struct caddr *a = NULL;
    uint32_t *first = NULL;
    int ret = -1;

    if (find_cus(r, n) != 0)
        goto done;
    /* The misses grouped by CU, in their order within each (a counting
     * sort): each CU's DIE tree is walked once, for all its addresses. */
    a = malloc((n ? n : 1) * sizeof(*a));
    first = calloc(r->n_cus + 1, sizeof(*first));
    if (a == NULL || first == NULL)
        goto done;
    for (size_t i = 0; i < n; i++)
        if (m[i].cu != UINT32_MAX)
            first[m[i].cu + 1]++;
    for (size_t k = 0; k < r->n_cus; k++)
        first[k + 1] += first[k];
    for (size_t i = 0; i < n; i++) {
        if (m[i].cu != UINT32_MAX) {
            struct caddr *c = &a[first[m[i].cu]++];

            c->addr = m[i].cu_addr;
            c->miss = (uint32_t)i;
        }
    }
    /* first[k] is now where CU k + 1 starts. */
    for (size_t k = 0, from = 0; k < r->n_cus; k++) {
        struct walk w = {r, &r->cus[k], a + from, first[k] - from, false};

        for (size_t i = 1; i < w.n; i++) {
            if (w.a[i - 1].addr >= w.a[i].addr) {
                qsort(a + from, w.n, sizeof(*a), cmp_caddr);
                break;
            }
        }
        w.cplusplus = is_cplusplus(w.cu);
        walk_die(&w, w.cu, 0);
        if (r->oom)
            goto done;
        from = first[k];
    }
    ret = 0;
done:
    free(a);
    free(first);
    return ret;
}

static void
resolve_free(struct resolve *r)
{
    free(r->cus);
    free(r->dies);
    free(r->links);
}

int
ha_symbolize_dwarf_resolve(struct ha_symbolizer *s, struct file *f,
                           struct miss *m, size_t n)
{
    struct resolve r = {.s = s, .f = f, .m = m};
    int ret = -1;

    if (walk_all(&r, n) != 0)
        goto done;
    /* In the misses' order: in address order, the memo needs no sort. */
    for (size_t i = 0; i < n; i++)
        if (resolve_one(&r, &m[i]) != 0)
            goto done;
    ha_syms_finish(&f->memo);
    s->st.misses += n;
    ret = 0;
done:
    resolve_free(&r);
    return ret;
}

int
ha_symbolize_dwarf_chains(struct ha_symbolizer *s, struct file *f,
                          struct miss *m, size_t n,
                          int (*each)(void *arg, size_t i,
                                      const struct ha_symindex_link *chain,
                                      size_t depth),
                          void *arg)
{
    struct resolve r = {.s = s, .f = f, .m = m};
    struct ha_symindex_link chain[MAX_INLINE];
    int ret = -1;

    if (walk_all(&r, n) != 0)
        goto done;
    for (size_t i = 0; i < n; i++)
        if (each(arg, i, chain, chain_of(&r, &m[i], chain)) != 0)
            goto done;
    ret = 0;
done:
    resolve_free(&r);
    return ret;
}
