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

#include "core/radix.h"
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

/* Interns a function name into out: a C++ mangled name is demangled (if
 * the process has libstdc++'s __cxa_demangle) and shortened as jeprof
 * shows it. */
static uint32_t
intern_func(struct ha_symbolizer *s, struct ha_strtab *t, const char *name)
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

/* Chains of DIEs, innermost first, as linked lists in one array. */
struct links {
    struct link {
        Dwarf_Die die;
        int next;
    } *v;
    size_t n, cap;
};

struct walk {
    struct miss *m;  /* this CU's misses, sorted by cu_addr */
    size_t n;
    struct links *links;
    bool cplusplus;  /* the CU is C++: types may hold code */
    bool oom;
};

static bool
push_link(struct walk *w, struct miss *m, Dwarf_Die *die)
{
    struct links *l = w->links;

    if (m->head >= 0 &&
        dwarf_dieoffset(&l->v[m->head].die) == dwarf_dieoffset(die))
        return true; /* same DIE, another of its ranges */
    if (m->depth >= MAX_INLINE)
        return true;
    if (l->n == l->cap) {
        size_t ncap = l->cap ? l->cap * 2 : 1024;
        struct link *v;

        if (ncap > INT32_MAX || (v = realloc(l->v, ncap * sizeof(*v))) ==
                                    NULL) {
            w->oom = true;
            return false;
        }
        l->v = v;
        l->cap = ncap;
    }
    l->v[l->n].die = *die;
    l->v[l->n].next = m->head;
    m->head = (int)l->n++;
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

    while ((off = dwarf_ranges(die, off, &base, &lo, &hi)) > 0) {
        size_t a = 0, b = w->n;

        if (hi <= lo)
            continue;
        while (a < b) { /* first miss with cu_addr >= lo */
            size_t mid = a + (b - a) / 2;

            if (w->m[mid].cu_addr < lo)
                a = mid + 1;
            else
                b = mid;
        }
        for (; a < w->n && w->m[a].cu_addr < hi; a++) {
            hits++;
            if (frame && !push_link(w, &w->m[a], die))
                return hits;
        }
    }
    return hits;
}

static void
walk_die(struct walk *w, Dwarf_Die *parent, int depth)
{
    Dwarf_Die child;

    if (depth > MAX_DIE_DEPTH || w->oom || dwarf_child(parent, &child) != 0)
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
    } while (!w->oom && dwarf_siblingof(&child, &child) == 0);
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
cmp_miss(const void *x, const void *y)
{
    const struct miss *a = x, *b = y;

    if (a->cu_off != b->cu_off)
        return a->cu_off < b->cu_off ? -1 : 1;
    return a->cu_addr < b->cu_addr ? -1 : a->cu_addr > b->cu_addr;
}

/* Groups misses by CU, each group by address (cmp_miss order). They come
 * in address order, so a stable radix sort by CU keeps each group
 * sorted; qsort when that does not hold or scratch is short. */
static void
sort_misses(struct miss *m, size_t n)
{
    struct ha_radix_item *it = malloc(n * sizeof(*it));
    struct miss *out = malloc(n * sizeof(*out));
    bool ok = it != NULL && out != NULL;

    for (size_t i = 0; ok && i < n; i++) {
        it[i].key = m[i].cu_off;
        it[i].val = i;
    }
    if (ok && ha_radix_sort(it, n) == 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = m[it[i].val];
        for (size_t i = 1; i < n && ok; i++)
            ok = cmp_miss(&out[i - 1], &out[i]) <= 0;
        if (ok)
            memcpy(m, out, n * sizeof(*m));
    } else {
        ok = false;
    }
    free(it);
    free(out);
    if (!ok)
        qsort(m, n, sizeof(*m), cmp_miss);
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

/* Resolves one miss into f->memo. -1 on allocation failure. */
static int
resolve_one(struct ha_symbolizer *s, struct file *f, struct miss *m,
            struct links *l)
{
    struct ha_syms_frame fr[MAX_INLINE];
    struct ha_strtab *t = &f->memo.strs;
    size_t n = 0;
    Dwfl_Line *ln = dwfl_module_getsrc(f->mod, m->addr);
    const char *src = NULL;
    int lineno = 0;

    if (ln != NULL)
        src = dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL);

    for (int k = m->head; k >= 0 && n < MAX_INLINE; k = l->v[k].next) {
        struct link *lk = &l->v[k];
        Dwarf_Off off = dwarf_dieoffset(&lk->die);

        /* A name takes three attribute lookups through abstract origins
         * and a demangling: once per DIE, not once per address. */
        if (!ha_idmap_get(&f->die_names, off, &fr[n].func)) {
            fr[n].func = intern_func(s, t, die_name(&lk->die));
            (void)ha_idmap_put(&f->die_names, off, fr[n].func);
        }
        if (n == 0) {
            fr[n].file = src ? ha_strtab_intern(t, src, strlen(src)) : 0;
            fr[n].line = lineno > 0 ? (uint32_t)lineno : 0;
        } else {
            /* Set below from the callee's DW_AT_call_file/line. */
            fr[n].file = 0;
            fr[n].line = 0;
        }
        if (fr[n].func == UINT32_MAX || fr[n].file == UINT32_MAX)
            return -1;
        n++;
    }
    /* Fix up callers' lines: frame i+1's position is frame i's call site
     * (chain order is innermost first). */
    {
        int k = m->head;

        for (size_t i = 0; i + 1 < n && k >= 0; i++, k = l->v[k].next) {
            Dwarf_Word cl;
            const char *cf = call_file(&m->cu, &l->v[k].die, &cl);

            fr[i + 1].file = cf ? ha_strtab_intern(t, cf, strlen(cf)) : 0;
            fr[i + 1].line = (uint32_t)cl;
            if (fr[i + 1].file == UINT32_MAX)
                return -1;
        }
    }

    /* No DWARF function (or it has no name): an ELF symbol that covers
     * the address; else no name is certain. */
    if (n == 0 || fr[n - 1].func == 0) {
        const char *name = ha_symbolize_file_symbol(f, m->addr);
        uint32_t fn = intern_func(s, t, name);

        if (fn == UINT32_MAX)
            return -1;
        if (n == 0 && fn == 0)
            return ha_syms_add_unnamed(&f->memo, m->vaddr, 0, 0, f->path,
                                       m->vaddr);
        if (n == 0) {
            fr[0].func = fn;
            fr[0].file = src ? ha_strtab_intern(t, src, strlen(src)) : 0;
            fr[0].line = lineno > 0 ? (uint32_t)lineno : 0;
            if (fr[0].file == UINT32_MAX)
                return -1;
            n = 1;
        } else if (fn != 0) {
            fr[n - 1].func = fn;
        } else {
            /* Inlined code in a nameless function: the callees keep
             * their names, the function gets the address's. */
            char unnamed[320];

            ha_syms_unnamed_name(unnamed, sizeof(unnamed), f->path,
                                 m->vaddr);
            fr[n - 1].func = ha_strtab_intern(t, unnamed, strlen(unnamed));
            if (fr[n - 1].func == UINT32_MAX)
                return -1;
        }
    }
    return ha_syms_add(&f->memo, m->vaddr, 0, 0, fr, n);
}

int
ha_symbolize_dwarf_resolve(struct ha_symbolizer *s, struct file *f,
                           struct miss *m, size_t n)
{
    struct links links = {0};
    int ret = -1;

    for (size_t i = 0; i < n; i++) {
        Dwarf_Addr cubias = 0;
        Dwarf_Die *cu;

        m[i].addr = m[i].vaddr + f->bias;
        m[i].head = -1;
        m[i].depth = 0;
        cu = dwfl_module_addrdie(f->mod, m[i].addr, &cubias);
        if (cu != NULL) {
            m[i].cu = *cu;
            m[i].cu_off = dwarf_dieoffset(cu);
            m[i].cu_addr = m[i].addr - cubias;
        } else {
            m[i].cu_off = (Dwarf_Off)-1;
            m[i].cu_addr = m[i].addr;
        }
    }
    sort_misses(m, n);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        struct walk w;

        while (j < n && m[j].cu_off == m[i].cu_off)
            j++;
        if (m[i].cu_off != (Dwarf_Off)-1) {
            w.m = m + i;
            w.n = j - i;
            w.links = &links;
            w.oom = false;
            w.cplusplus = is_cplusplus(&m[i].cu);
            walk_die(&w, &m[i].cu, 0);
            if (w.oom)
                goto done;
        }
        for (size_t k = i; k < j; k++)
            if (resolve_one(s, f, &m[k], &links) != 0)
                goto done;
        i = j;
    }
    ha_syms_finish(&f->memo);
    s->st.misses += n;
    ret = 0;
done:
    free(links.v);
    return ret;
}
