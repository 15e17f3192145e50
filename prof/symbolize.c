/* SPDX-License-Identifier: MIT
 *
 * In-process symbolization with elfutils' libdwfl, batched per file and
 * per compilation unit, with a bounded per-file cache (see symbolize.h).
 */
#include "prof/symbolize.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Types                                                               */
/* ------------------------------------------------------------------ */

/* A PT_LOAD segment: turns a file offset into the ELF address space. */
struct seg {
    uint64_t off;
    uint64_t filesz;
    uint64_t vaddr;
};

/* A function symbol in libdwfl's address space. */
struct fsym {
    uint64_t addr;
    uint64_t size;   /* 0: unknown, good up to the next symbol */
    const char *name;
    int rank;        /* GLOBAL 0, WEAK 1, LOCAL 2: the name preferred */
};

/* One opened file and what was resolved in it. */
struct file {
    char *path;
    dev_t dev; /* identity on disk: a change reopens */
    ino_t ino;
    off_t size;
    struct timespec mtime;

    Dwfl *dwfl;          /* NULL when it could not be opened */
    Dwfl_Module *mod;
    GElf_Addr bias;      /* libdwfl address = ELF vaddr + bias */
    struct seg *segs;
    size_t n_segs;
    char build_id[HA_BUILDID_HEX_MAX]; /* "" when none */
    bool allocator;
    bool no_fini;        /* no _fini in the file's own .symtab */

    struct fsym *fsyms;  /* function symbols by address, built on first
                            need (NULL: not yet); names point into libelf */
    size_t n_fsyms;
    bool fsyms_built;

    struct ha_syms memo; /* resolved addresses, pc = ELF vaddr */
    size_t bytes;        /* accounted for the limit */
    uint64_t last_use;
    struct file *next;
};

struct ha_symbolizer {
    struct ha_symbolizer_limits lim;
    char *debuginfo_path; /* owned copy; libdwfl wants char ** */
    Dwfl_Callbacks cb;
    struct file *files;   /* most recently used first */
    uint64_t clock;
    struct ha_symbolizer_stats st;
    char *(*demangle)(const char *, char *, size_t *, int *);
};

#define DEFAULT_MAX_FILES 32
#define DEFAULT_MAX_BYTES ((size_t)512 << 20)
#define MAX_DIE_DEPTH 256 /* nesting walked; deeper DIEs are ignored */
#define MAX_INLINE 64     /* frames kept per address */

/* ------------------------------------------------------------------ */
/* libdwfl callbacks                                                   */
/* ------------------------------------------------------------------ */

/* Separate debug info by build-id only (under debuginfo_path's
 * .build-id/ directories): dwfl_standard_find_debuginfo would fall back
 * to debuginfod, which must stay opt-in. */
static int
find_debuginfo_local(Dwfl_Module *mod, void **userdata, const char *modname,
                     GElf_Addr base, const char *file_name,
                     const char *debuglink_file, GElf_Word debuglink_crc,
                     char **debuginfo_file_name)
{
    return dwfl_build_id_find_debuginfo(mod, userdata, modname, base,
                                        file_name, debuglink_file,
                                        debuglink_crc, debuginfo_file_name);
}

/* Files are reported by path; libdwfl never has to find one. */
static int
find_elf_none(Dwfl_Module *mod, void **userdata, const char *modname,
              Dwarf_Addr base, char **file_name, Elf **elfp)
{
    (void)mod;
    (void)userdata;
    (void)modname;
    (void)base;
    (void)file_name;
    (void)elfp;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Names                                                               */
/* ------------------------------------------------------------------ */

bool
ha_symbolize_is_allocator_path(const char *path)
{
    const char *base = strrchr(path, '/');

    base = base != NULL ? base + 1 : path;
    return strncmp(base, "libjemalloc", 11) == 0;
}

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
/* Files                                                               */
/* ------------------------------------------------------------------ */

static void
file_free(struct file *f)
{
    if (f == NULL)
        return;
    if (f->dwfl != NULL)
        dwfl_end(f->dwfl);
    ha_syms_free(&f->memo);
    free(f->fsyms);
    free(f->segs);
    free(f->path);
    free(f);
}

static size_t
file_bytes(const struct file *f)
{
    return (size_t)(f->size > 0 ? f->size : 0) +
           f->memo.addrs_cap * sizeof(*f->memo.addrs) +
           f->memo.frames_cap * sizeof(*f->memo.frames) +
           f->memo.strs.buf.cap + f->memo.strs.n_slots * 4 +
           f->n_fsyms * sizeof(*f->fsyms);
}

/* True when the file's own .symtab (not its separate debug file's) has
 * _fini: what jeprof's nm sees, and its condition for addr2line -i. */
static bool
has_fini(Elf *elf)
{
    Elf_Scn *scn = NULL;

    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        Elf_Data *d;

        if (gelf_getshdr(scn, &sh) == NULL || sh.sh_type != SHT_SYMTAB ||
            sh.sh_entsize == 0 || (d = elf_getdata(scn, NULL)) == NULL)
            continue;
        for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *name;

            if (gelf_getsym(d, (int)i, &sym) == NULL)
                break;
            name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name != NULL && strcmp(name, "_fini") == 0)
                return true;
        }
    }
    return false;
}

/* Opens path with libdwfl. A file that cannot be opened is still cached
 * (dwfl NULL) so it is not retried for every address. */
static void
file_open(struct ha_symbolizer *s, struct file *f)
{
    GElf_Addr bias = 0;
    const unsigned char *id;
    GElf_Addr id_vaddr;
    size_t n_ph = 0;
    Elf *elf;
    int n;

    f->dwfl = dwfl_begin(&s->cb);
    if (f->dwfl == NULL)
        return;
    dwfl_report_begin(f->dwfl);
    f->mod = dwfl_report_offline(f->dwfl, f->path, f->path, -1);
    dwfl_report_end(f->dwfl, NULL, NULL);
    if (f->mod == NULL || (elf = dwfl_module_getelf(f->mod, &bias)) == NULL ||
        elf_getphdrnum(elf, &n_ph) != 0)
        goto broken;
    f->bias = bias;
    f->segs = calloc(n_ph ? n_ph : 1, sizeof(*f->segs));
    if (f->segs == NULL)
        goto broken;
    for (size_t i = 0; i < n_ph; i++) {
        GElf_Phdr ph;

        if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD)
            continue;
        f->segs[f->n_segs].off = ph.p_offset;
        f->segs[f->n_segs].filesz = ph.p_filesz;
        f->segs[f->n_segs].vaddr = ph.p_vaddr;
        f->n_segs++;
    }
    f->no_fini = !has_fini(elf);
    n = dwfl_module_build_id(f->mod, &id, &id_vaddr);
    if (n > 0 && ha_buildid_to_hex(id, (size_t)n, f->build_id) != 0)
        f->build_id[0] = '\0';
    s->st.opened++;
    return;

broken:
    if (f->dwfl != NULL)
        dwfl_end(f->dwfl);
    f->dwfl = NULL;
    f->mod = NULL;
}

static void
evict_over_limits(struct ha_symbolizer *s, const struct file *keep)
{
    for (;;) {
        size_t n = 0, bytes = 0;
        struct file **pp, **lru = NULL;

        for (pp = &s->files; *pp != NULL; pp = &(*pp)->next) {
            n++;
            bytes += (*pp)->bytes;
            if (*pp != keep &&
                (lru == NULL || (*pp)->last_use < (*lru)->last_use))
                lru = pp;
        }
        s->st.files = n;
        s->st.bytes = bytes;
        if ((n <= s->lim.max_files && bytes <= s->lim.max_bytes) ||
            lru == NULL)
            return;
        {
            struct file *f = *lru;

            *lru = f->next;
            file_free(f);
            s->st.evicted++;
        }
    }
}

/* The cached file for path, reopened if it changed on disk. NULL only on
 * allocation failure. */
static struct file *
file_get(struct ha_symbolizer *s, const char *path)
{
    struct stat sb;
    struct file **pp, *f;
    bool have = stat(path, &sb) == 0;

    for (pp = &s->files; (f = *pp) != NULL; pp = &f->next) {
        if (strcmp(f->path, path) != 0)
            continue;
        if (!have || f->dev != sb.st_dev || f->ino != sb.st_ino ||
            f->size != sb.st_size ||
            f->mtime.tv_sec != sb.st_mtim.tv_sec ||
            f->mtime.tv_nsec != sb.st_mtim.tv_nsec) {
            *pp = f->next;
            file_free(f);
            s->st.evicted++;
            break;
        }
        f->last_use = ++s->clock;
        return f;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return NULL;
    }
    if (have) {
        f->dev = sb.st_dev;
        f->ino = sb.st_ino;
        f->size = sb.st_size;
        f->mtime = sb.st_mtim;
        file_open(s, f);
    }
    f->allocator = ha_symbolize_is_allocator_path(path);
    f->last_use = ++s->clock;
    f->bytes = file_bytes(f);
    f->next = s->files;
    s->files = f;
    evict_over_limits(s, f);
    return f;
}

/* File offset to ELF vaddr through the PT_LOAD that holds it. */
static bool
file_vaddr(const struct file *f, uint64_t off, uint64_t *vaddr)
{
    for (size_t i = 0; i < f->n_segs; i++) {
        const struct seg *g = &f->segs[i];

        if (off >= g->off && off - g->off < g->filesz) {
            *vaddr = off - g->off + g->vaddr;
            return true;
        }
    }
    return false;
}

/* ------------------------------------------------------------------ */
/* DWARF: one walk per compilation unit                                */
/* ------------------------------------------------------------------ */

/* An address being resolved. */
struct miss {
    uint64_t vaddr;    /* ELF vaddr (memo key) */
    uint64_t addr;     /* libdwfl address */
    uint64_t cu_addr;  /* address in the CU's DWARF space */
    Dwarf_Off cu_off;  /* CU DIE offset; (Dwarf_Off)-1 = none */
    Dwarf_Die cu;
    int head;          /* innermost DIE in links, -1 = none */
    int depth;
};

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
        case DW_TAG_class_type:
        case DW_TAG_structure_type:
        case DW_TAG_union_type:
        case DW_TAG_module:
            walk_die(w, &child, depth + 1);
            break;
        default:
            break;
        }
    } while (!w->oom && dwarf_siblingof(&child, &child) == 0);
}

static int
cmp_miss(const void *x, const void *y)
{
    const struct miss *a = x, *b = y;

    if (a->cu_off != b->cu_off)
        return a->cu_off < b->cu_off ? -1 : 1;
    return a->cu_addr < b->cu_addr ? -1 : a->cu_addr > b->cu_addr;
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

static int
cmp_fsym(const void *x, const void *y)
{
    const struct fsym *a = x, *b = y;

    if (a->addr != b->addr)
        return a->addr < b->addr ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank - b->rank;
    return (a->size < b->size) - (a->size > b->size); /* larger first */
}

/* Collects the file's function symbols once, sorted, one per address.
 * dwfl_module_addrinfo() scans the whole symbol table for every address
 * (elfutils 0.188, __libdwfl_addrsym): with tens of thousands of
 * addresses in one library that scan was a fifth of a cold query. */
static void
fsyms_build(struct file *f)
{
    int n = dwfl_module_getsymtab(f->mod);
    size_t out = 0;

    f->fsyms_built = true;
    if (n <= 0 || (f->fsyms = malloc((size_t)n * sizeof(*f->fsyms))) == NULL)
        return;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(f->mod, i, &sym, &addr,
                                                   &shndx, NULL, NULL);
        int type = GELF_ST_TYPE(sym.st_info);
        int bind = GELF_ST_BIND(sym.st_info);

        /* What libdwfl's addrsym considers: not section, file or TLS
         * symbols, nor undefined ones. Assembly labels (NOTYPE, often
         * sizeless, like ld.so's _dl_start_user) count. */
        if (name == NULL || name[0] == '\0' || shndx == SHN_UNDEF ||
            type == STT_SECTION || type == STT_FILE || type == STT_TLS)
            continue;
        f->fsyms[out].addr = addr;
        f->fsyms[out].size = sym.st_size;
        f->fsyms[out].name = name;
        f->fsyms[out].rank = (type == STT_FUNC || type == STT_GNU_IFUNC ? 0
                                                                       : 3) +
                             (bind == STB_GLOBAL ? 0
                              : bind == STB_WEAK ? 1
                                                 : 2);
        out++;
    }
    qsort(f->fsyms, out, sizeof(*f->fsyms), cmp_fsym);
    /* One per address: the first after sorting is the preferred name. */
    f->n_fsyms = 0;
    for (size_t i = 0; i < out; i++)
        if (f->n_fsyms == 0 ||
            f->fsyms[f->n_fsyms - 1].addr != f->fsyms[i].addr)
            f->fsyms[f->n_fsyms++] = f->fsyms[i];
}

/* The symbol naming addr (libdwfl address) as dwfl_module_addrinfo()
 * would: the nearest sized symbol that holds it, else the nearest
 * sizeless one (an assembly label) below it unless a sized symbol ends
 * between the two; NULL when none does. Nested and overlapping symbols
 * are rare: only the 16 symbols below addr are looked at. */
static const char *
fsym_lookup(struct file *f, uint64_t addr)
{
    const struct fsym *label = NULL;
    uint64_t sized_end = 0; /* highest end of sized symbols passed */
    size_t a = 0, b;

    if (!f->fsyms_built)
        fsyms_build(f);
    b = f->n_fsyms;
    while (a < b) { /* first symbol above addr */
        size_t mid = a + (b - a) / 2;

        if (f->fsyms[mid].addr <= addr)
            a = mid + 1;
        else
            b = mid;
    }
    for (size_t k = a, tries = 0; k > 0 && tries < 16; k--, tries++) {
        const struct fsym *y = &f->fsyms[k - 1];

        if (y->size == 0) {
            if (label == NULL)
                label = y;
            continue;
        }
        if (addr - y->addr < y->size)
            return y->name;
        if (y->addr + y->size > sized_end)
            sized_end = y->addr + y->size;
    }
    return label != NULL && label->addr >= sized_end ? label->name : NULL;
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
        const char *name = die_name(&lk->die);

        fr[n].func = intern_func(s, t, name);
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

    /* No DWARF function (or it has no name): the ELF symbol. */
    if (n == 0 || fr[n - 1].func == 0) {
        const char *name = fsym_lookup(f, m->addr);
        uint32_t fn = intern_func(s, t, name);

        if (fn == UINT32_MAX)
            return -1;
        if (n == 0 && fn != 0) {
            fr[0].func = fn;
            fr[0].file = src ? ha_strtab_intern(t, src, strlen(src)) : 0;
            fr[0].line = lineno > 0 ? (uint32_t)lineno : 0;
            if (fr[0].file == UINT32_MAX)
                return -1;
            n = 1;
        } else if (n > 0) {
            fr[n - 1].func = fn;
        }
    }
    return ha_syms_add(&f->memo, m->vaddr, 0, 0, fr, n);
}

/* Resolves vaddrs (not yet in f->memo) and adds them to it. */
static int
resolve_misses(struct ha_symbolizer *s, struct file *f, struct miss *m,
               size_t n)
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
    qsort(m, n, sizeof(*m), cmp_miss);
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

/* ------------------------------------------------------------------ */
/* Public                                                              */
/* ------------------------------------------------------------------ */

struct ha_symbolizer *
ha_symbolizer_new(const struct ha_symbolizer_limits *limits)
{
    struct ha_symbolizer *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    if (limits != NULL)
        s->lim = *limits;
    if (s->lim.max_files == 0)
        s->lim.max_files = DEFAULT_MAX_FILES;
    if (s->lim.max_bytes == 0)
        s->lim.max_bytes = DEFAULT_MAX_BYTES;
    s->debuginfo_path = strdup(s->lim.debuginfo_path != NULL
                                   ? s->lim.debuginfo_path
                                   : ":.debug:/usr/lib/debug");
    if (s->debuginfo_path == NULL) {
        free(s);
        return NULL;
    }
    s->lim.debuginfo_path = NULL; /* not kept: the caller's string */
    s->cb.find_elf = find_elf_none;
    s->cb.find_debuginfo = s->lim.debuginfod ? dwfl_standard_find_debuginfo
                                             : find_debuginfo_local;
    s->cb.section_address = dwfl_offline_section_address;
    s->cb.debuginfo_path = &s->debuginfo_path;
    /* C++ names: demangled only if libstdc++ is already in the process
     * (the admin server itself is C); otherwise they stay mangled. */
    *(void **)&s->demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    return s;
}

void
ha_symbolizer_free(struct ha_symbolizer *s)
{
    if (s == NULL)
        return;
    while (s->files != NULL) {
        struct file *f = s->files;

        s->files = f->next;
        file_free(f);
    }
    free(s->debuginfo_path);
    free(s);
}

static int
ops_symbolize(void *ctx, const struct ha_maps *maps, const uint64_t *pcs,
              size_t n, struct ha_syms *out, char *err, size_t errlen)
{
    return ha_symbolizer_run(ctx, maps, pcs, n, out, err, errlen);
}

struct ha_symbolize_ops
ha_symbolizer_ops(struct ha_symbolizer *s)
{
    struct ha_symbolize_ops ops = {ops_symbolize, s};

    return ops;
}

/* Copies a memo entry into out, re-interning its strings. */
static int
copy_entry(struct ha_syms *out, uint64_t pc, uint32_t module, uint32_t flags,
           const struct ha_syms *memo, const struct ha_syms_addr *ma)
{
    struct ha_syms_frame fr[MAX_INLINE];
    size_t n = ma != NULL ? ma->n : 0;

    if (n > MAX_INLINE)
        n = MAX_INLINE;
    for (size_t i = 0; i < n; i++) {
        const struct ha_syms_frame *src = &memo->frames[ma->first + i];
        const char *fn = ha_syms_str(memo, src->func);
        const char *file = ha_syms_str(memo, src->file);

        fr[i].func = ha_strtab_intern(&out->strs, fn, strlen(fn));
        fr[i].file = ha_strtab_intern(&out->strs, file, strlen(file));
        fr[i].line = src->line;
        if (fr[i].func == UINT32_MAX || fr[i].file == UINT32_MAX)
            return -1;
    }
    return ha_syms_add(out, pc, module, flags, fr, n);
}

int
ha_symbolizer_run(struct ha_symbolizer *s, const struct ha_maps *maps,
                  const uint64_t *pcs, size_t n, struct ha_syms *out,
                  char *err, size_t errlen)
{
    long *ent = NULL;
    uint64_t *foff = NULL;
    struct miss *m = NULL;
    int ret = -1;

    if (n > 0) {
        ent = malloc(n * sizeof(*ent));
        foff = malloc(n * sizeof(*foff));
        m = malloc(n * sizeof(*m));
        if (ent == NULL || foff == NULL || m == NULL)
            goto oom;
    }
    for (size_t i = 0; i < n; i++) {
        ent[i] = ha_maps_lookup(maps, pcs[i], &foff[i]);
        if (ent[i] < 0 &&
            ha_syms_add(out, pcs[i], 0, HA_SYMS_NO_MODULE, NULL, 0) != 0)
            goto oom;
    }

    /* One module at a time: open (or find) its file, resolve what the
     * cache does not have in one batch, then copy everything out. */
    for (size_t mod = 0; mod < maps->n_modules; mod++) {
        const char *path = ha_maps_module_path(maps, mod);
        uint32_t mstr = UINT32_MAX, flags;
        size_t n_miss = 0, first = SIZE_MAX;
        struct file *f;

        for (size_t i = 0; i < n; i++)
            if (ent[i] >= 0 && maps->entries[ent[i]].module == mod) {
                first = i;
                break;
            }
        if (first == SIZE_MAX)
            continue;
        if ((f = file_get(s, path)) == NULL)
            goto oom;
        mstr = ha_strtab_intern(&out->strs, path, strlen(path));
        if (mstr == UINT32_MAX)
            goto oom;
        flags = (f->allocator ? HA_SYMS_ALLOCATOR : 0) |
                (f->no_fini ? HA_SYMS_NO_FINI : 0);

        for (size_t i = first; i < n; i++) {
            uint64_t va;

            if (ent[i] < 0 || maps->entries[ent[i]].module != mod)
                continue;
            if (f->mod == NULL || !file_vaddr(f, foff[i], &va))
                continue;
            if (ha_syms_find(&f->memo, va) != NULL) {
                s->st.hits++;
                continue;
            }
            /* Duplicates (two pcs, one vaddr) cannot happen: pcs are
             * unique and a mapping is one-to-one. */
            m[n_miss++].vaddr = va;
        }
        if (n_miss > 0 && resolve_misses(s, f, m, n_miss) != 0)
            goto oom;
        for (size_t i = first; i < n; i++) {
            uint64_t va;
            const struct ha_syms_addr *ma = NULL;

            if (ent[i] < 0 || maps->entries[ent[i]].module != mod)
                continue;
            if (f->mod != NULL && file_vaddr(f, foff[i], &va))
                ma = ha_syms_find(&f->memo, va);
            if (copy_entry(out, pcs[i], mstr, flags, &f->memo, ma) != 0)
                goto oom;
        }
        f->bytes = file_bytes(f);
        evict_over_limits(s, f);
    }
    ha_syms_finish(out);
    ret = 0;
    goto done;

oom:
    ha_err_set(err, errlen, "out of memory symbolizing %zu addresses", n);
done:
    free(ent);
    free(foff);
    free(m);
    return ret;
}

const char *
ha_symbolizer_build_id(struct ha_symbolizer *s, const char *path)
{
    struct file *f = file_get(s, path);

    return f != NULL && f->build_id[0] != '\0' ? f->build_id : NULL;
}

void
ha_symbolizer_get_stats(const struct ha_symbolizer *s,
                        struct ha_symbolizer_stats *st)
{
    *st = s->st;
}
