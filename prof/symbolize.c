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
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/idmap.h"
#include "core/radix.h"
#include "core/util.h"
#include "prof/debuginfod.h"

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
    bool own_symtab;     /* the file has a .symtab of its own */
    bool own_dwarf;      /* ... and DWARF (.debug_info) */
    char *local_debug;   /* its debug file under a debug root, or NULL */
    char open_err[192];  /* why it could not be opened, or "" */

    /* debuginfod (debuginfod.h), asked when it has no DWARF anywhere */
    char *dbgi_path;     /* the fetched debug file, given to libdwfl */
    char dbgi_why[320];  /* why there is none: failed, still pending */
    bool dbgi_pending;   /* the answer was pending when last used */
    bool touched;        /* libdwfl looked for its debug info: a debug
                            file that arrives later needs a reopen */
    bool pinned;         /* in use by the running call: not evicted */

    enum ha_syms_source from; /* where its names come from */
    char detail[512];    /* said in heap_modules */

    struct fsym *fsyms;  /* function symbols by address, built on first
                            need (NULL: not yet); names point into libelf */
    size_t n_fsyms;
    bool fsyms_built;

    struct ha_syms memo; /* resolved addresses, pc = ELF vaddr */
    struct ha_idmap die_names; /* DIE offset -> its name in memo.strs: a
                               function's many addresses share it */
    size_t bytes;        /* accounted for the limit */
    uint64_t last_use;
    struct file *next;
};

struct ha_symbolizer {
    struct ha_symbolizer_limits lim;
    char *debuginfo_path; /* "<debug_root>:/usr/lib/debug"; libdwfl wants
                             char ** */
    struct ha_debuginfod *dbgi; /* NULL unless lim.debuginfod */
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

/* Separate debug info by build-id under the debug roots
 * (debuginfo_path), then the file debuginfod gave, if any. Never
 * dwfl_standard_find_debuginfo: it would ask debuginfod on its own, on
 * DEBUGINFOD_URLS alone, with no bound on the wait. */
static int
find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
               GElf_Addr base, const char *file_name,
               const char *debuglink_file, GElf_Word debuglink_crc,
               char **debuginfo_file_name)
{
    struct file *f = *userdata;
    int fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base,
                                          file_name, debuglink_file,
                                          debuglink_crc, debuginfo_file_name);

    if (f != NULL)
        f->touched = true;
    if (fd >= 0 || f == NULL || f->dbgi_path == NULL)
        return fd;
    fd = open(f->dbgi_path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        free(*debuginfo_file_name);
        *debuginfo_file_name = strdup(f->dbgi_path);
        if (*debuginfo_file_name == NULL) {
            close(fd);
            fd = -1;
        }
    }
    return fd;
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
    ha_idmap_free(&f->die_names);
    free(f->fsyms);
    free(f->segs);
    free(f->local_debug);
    free(f->dbgi_path);
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
           f->n_fsyms * sizeof(*f->fsyms) + f->die_names.cap * 12;
}

/* What the file itself holds: a .symtab (and whether it has _fini: what
 * jeprof's nm sees, its condition for addr2line -i), DWARF. Its
 * separate debug file's are not looked at here. */
static void
scan_sections(Elf *elf, struct file *f)
{
    Elf_Scn *scn = NULL;
    size_t shstrndx;
    bool fini = false;

    if (elf_getshdrstrndx(elf, &shstrndx) != 0)
        shstrndx = SHN_UNDEF;
    while ((scn = elf_nextscn(elf, scn)) != NULL) {
        GElf_Shdr sh;
        Elf_Data *d;
        const char *sname;

        if (gelf_getshdr(scn, &sh) == NULL)
            continue;
        sname = shstrndx != SHN_UNDEF ? elf_strptr(elf, shstrndx, sh.sh_name)
                                      : NULL;
        if (sname != NULL && sh.sh_type == SHT_PROGBITS &&
            (strcmp(sname, ".debug_info") == 0 ||
             strcmp(sname, ".zdebug_info") == 0))
            f->own_dwarf = true;
        if (sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0)
            continue;
        f->own_symtab = true;
        if (fini || (d = elf_getdata(scn, NULL)) == NULL)
            continue;
        for (size_t i = 0; i < d->d_size / sh.sh_entsize; i++) {
            GElf_Sym sym;
            const char *name;

            if (gelf_getsym(d, (int)i, &sym) == NULL)
                break;
            name = elf_strptr(elf, sh.sh_link, sym.st_name);
            if (name != NULL && strcmp(name, "_fini") == 0) {
                fini = true;
                break;
            }
        }
    }
    f->no_fini = !fini;
}

/* The debug file of build-id hex under one of the debug roots (the
 * colon-separated dirs), or NULL. Only looked at, not opened: libdwfl
 * opens it (find_debuginfo). */
static char *
local_debug_file(const char *dirs, const char *hex)
{
    const char *p = dirs;

    if (strlen(hex) < 4)
        return NULL;
    while (*p != '\0') {
        const char *e = strchr(p, ':');
        size_t n = e != NULL ? (size_t)(e - p) : strlen(p);
        char path[4096];

        if (n > 0 && p[0] == '/' &&
            (size_t)snprintf(path, sizeof(path), "%.*s/.build-id/%.2s/%s.debug",
                             (int)n, p, hex, hex + 2) < sizeof(path) &&
            access(path, R_OK) == 0)
            return strdup(path);
        p += n;
        if (*p == ':')
            p++;
    }
    return NULL;
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
    void **ud;
    Elf *elf;
    int n;

    f->dwfl = dwfl_begin(&s->cb);
    if (f->dwfl == NULL) {
        ha_err_set(f->open_err, sizeof(f->open_err), "libdwfl: %s",
                   dwfl_errmsg(-1));
        return;
    }
    dwfl_report_begin(f->dwfl);
    f->mod = dwfl_report_offline(f->dwfl, f->path, f->path, -1);
    dwfl_report_end(f->dwfl, NULL, NULL);
    if (f->mod == NULL || (elf = dwfl_module_getelf(f->mod, &bias)) == NULL ||
        elf_getphdrnum(elf, &n_ph) != 0) {
        ha_err_set(f->open_err, sizeof(f->open_err),
                   "not an ELF file libdwfl can read: %s", dwfl_errmsg(-1));
        goto broken;
    }
    /* The debug-info callback finds its file through the module. */
    dwfl_module_info(f->mod, &ud, NULL, NULL, NULL, NULL, NULL, NULL);
    *ud = f;
    f->bias = bias;
    f->segs = calloc(n_ph ? n_ph : 1, sizeof(*f->segs));
    if (f->segs == NULL) {
        ha_err_set(f->open_err, sizeof(f->open_err), "out of memory");
        goto broken;
    }
    for (size_t i = 0; i < n_ph; i++) {
        GElf_Phdr ph;

        if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_LOAD)
            continue;
        f->segs[f->n_segs].off = ph.p_offset;
        f->segs[f->n_segs].filesz = ph.p_filesz;
        f->segs[f->n_segs].vaddr = ph.p_vaddr;
        f->n_segs++;
    }
    scan_sections(elf, f);
    n = dwfl_module_build_id(f->mod, &id, &id_vaddr);
    if (n > 0 && ha_buildid_to_hex(id, (size_t)n, f->build_id) != 0)
        f->build_id[0] = '\0';
    if (!f->own_dwarf && f->build_id[0] != '\0')
        f->local_debug = local_debug_file(s->debuginfo_path, f->build_id);
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
            if (*pp != keep && !(*pp)->pinned &&
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
    int stat_errno = errno;

    for (pp = &s->files; (f = *pp) != NULL; pp = &f->next) {
        if (strcmp(f->path, path) != 0)
            continue;
        /* The running call holds it (a path mapped twice): keep it. */
        if (!f->pinned &&
            (!have || f->dev != sb.st_dev || f->ino != sb.st_ino ||
             f->size != sb.st_size || f->mtime.tv_sec != sb.st_mtim.tv_sec ||
             f->mtime.tv_nsec != sb.st_mtim.tv_nsec)) {
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
    } else {
        ha_err_set(f->open_err, sizeof(f->open_err), "cannot read it: %s",
                   strerror(stat_errno));
    }
    f->allocator = ha_symbolize_is_allocator_path(path);
    f->last_use = ++s->clock;
    f->bytes = file_bytes(f);
    f->next = s->files;
    s->files = f;
    evict_over_limits(s, f);
    return f;
}

/* Opens f's file again in place (a debug file arrived since libdwfl
 * looked for one): what was resolved goes, the struct stays, so every
 * pointer to it stays good. */
static void
file_reopen(struct ha_symbolizer *s, struct file *f)
{
    if (f->dwfl != NULL)
        dwfl_end(f->dwfl);
    f->dwfl = NULL;
    f->mod = NULL;
    ha_syms_free(&f->memo);
    ha_idmap_free(&f->die_names);
    free(f->fsyms);
    f->fsyms = NULL;
    f->n_fsyms = 0;
    f->fsyms_built = false;
    free(f->segs);
    f->segs = NULL;
    f->n_segs = 0;
    free(f->local_debug);
    f->local_debug = NULL;
    free(f->dbgi_path);
    f->dbgi_path = NULL;
    f->build_id[0] = '\0';
    f->own_symtab = f->own_dwarf = false;
    f->open_err[0] = '\0';
    f->touched = false;
    s->st.evicted++;
    file_open(s, f);
    f->bytes = file_bytes(f);
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

        /* Only what can be certain: a defined symbol with a size (not a
         * section, file or TLS symbol). A sizeless one (an assembly label
         * such as ld.so's _dl_start_user) says nothing about where its
         * code ends, so it names nothing. */
        if (name == NULL || name[0] == '\0' || shndx == SHN_UNDEF ||
            sym.st_size == 0 || type == STT_SECTION || type == STT_FILE ||
            type == STT_TLS)
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

/* The symbol whose [value, value + size) holds addr (libdwfl address),
 * or NULL: never the nearest one below it, which in a stripped object
 * is some exported function that has nothing to do with the address
 * (jeprof's misnaming of static functions). Nested and overlapping symbols
 * are rare: only the 16 symbols below addr are looked at. */
static const char *
fsym_lookup(struct file *f, uint64_t addr)
{
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

        if (addr - y->addr < y->size)
            return y->name;
    }
    return NULL;
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
        const char *name = fsym_lookup(f, m->addr);
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

/* ------------------------------------------------------------------ */
/* Public                                                              */
/* ------------------------------------------------------------------ */

struct ha_symbolizer *
ha_symbolizer_new(const struct ha_symbolizer_limits *limits)
{
    struct ha_symbolizer *s = calloc(1, sizeof(*s));
    const char *root;
    size_t len;

    if (s == NULL)
        return NULL;
    if (limits != NULL)
        s->lim = *limits;
    if (s->lim.max_files == 0)
        s->lim.max_files = DEFAULT_MAX_FILES;
    if (s->lim.max_bytes == 0)
        s->lim.max_bytes = DEFAULT_MAX_BYTES;
    if (s->lim.debuginfod_timeout_ms == 0)
        s->lim.debuginfod_timeout_ms = HA_SYMBOLIZE_DEBUGINFOD_TIMEOUT_MS;
    /* libdwfl's search path: only absolute directories are used for
     * build-id lookups; the caller's root first. */
    root = s->lim.debug_root != NULL ? s->lim.debug_root : "";
    len = strlen(root) + sizeof(":" HA_SYMBOLIZE_DEBUG_DIR);
    s->debuginfo_path = malloc(len);
    if (s->debuginfo_path == NULL) {
        free(s);
        return NULL;
    }
    snprintf(s->debuginfo_path, len, "%s%s" HA_SYMBOLIZE_DEBUG_DIR, root,
             *root ? ":" : "");
    s->lim.debug_root = NULL; /* not kept: the caller's string */
    if (s->lim.debuginfod) {
        struct ha_debuginfod_opts o = {s->lim.thread_init,
                                       s->lim.thread_init_arg};

        if ((s->dbgi = ha_debuginfod_new(&o)) == NULL) {
            free(s->debuginfo_path);
            free(s);
            return NULL;
        }
    }
    s->cb.find_elf = find_elf_none;
    s->cb.find_debuginfo = find_debuginfo;
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
    /* First: fetch threads must be gone before anything they wait on. */
    ha_debuginfod_free(s->dbgi);
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

/* The string at memo offset off, interned in out; strs maps memo offsets
 * to out's for the module being copied, so each string is hashed once.
 * UINT32_MAX on allocation failure. */
static uint32_t
copy_str(struct ha_syms *out, const struct ha_syms *memo, uint32_t off,
         struct ha_idmap *strs)
{
    uint32_t o;
    const char *str;

    if (off == 0)
        return 0;
    if (ha_idmap_get(strs, off, &o))
        return o;
    str = ha_syms_str(memo, off);
    o = ha_strtab_intern(&out->strs, str, strlen(str));
    if (o != UINT32_MAX)
        (void)ha_idmap_put(strs, off, o);
    return o;
}

/* Copies a memo entry into out, its strings interned there. */
static int
copy_entry(struct ha_syms *out, uint64_t pc, uint32_t module, uint32_t flags,
           const struct ha_syms *memo, const struct ha_syms_addr *ma,
           struct ha_idmap *strs)
{
    struct ha_syms_frame fr[MAX_INLINE];
    size_t n = ma != NULL ? ma->n : 0;

    if (n > MAX_INLINE)
        n = MAX_INLINE;
    for (size_t i = 0; i < n; i++) {
        const struct ha_syms_frame *src = &memo->frames[ma->first + i];

        fr[i].func = copy_str(out, memo, src->func, strs);
        fr[i].file = copy_str(out, memo, src->file, strs);
        fr[i].line = src->line;
        if (fr[i].func == UINT32_MAX || fr[i].file == UINT32_MAX)
            return -1;
    }
    return ha_syms_add(out, pc, module, flags | ma->flags, fr, n);
}

/* ------------------------------------------------------------------ */
/* Where names come from                                               */
/* ------------------------------------------------------------------ */

/* True when f has no DWARF of its own nor under a debug root, and
 * debuginfod may help: it has a build-id, and no answer is in yet. */
static bool
wants_debuginfod(const struct ha_symbolizer *s, const struct file *f)
{
    return s->dbgi != NULL && f->mod != NULL && f->build_id[0] != '\0' &&
           !f->own_dwarf && f->local_debug == NULL && f->dbgi_path == NULL;
}

/* Asks debuginfod for every file of this call that wants it, waits for
 * the answers at most the configured time in all, and gives each file
 * what came: a debug file (reopening a file whose debug info libdwfl
 * already looked for), or the reason there is none. files[k] may be
 * replaced. Returns the number of answers still pending, or -1 on
 * allocation failure. */
static int
ask_debuginfod(struct ha_symbolizer *s, struct file **files, size_t n)
{
    const char **ids = NULL;
    size_t n_ids = 0;
    int pending = 0;

    if (s->dbgi == NULL)
        return 0;
    if ((ids = calloc(n ? n : 1, sizeof(*ids))) == NULL)
        return -1;
    for (size_t k = 0; k < n; k++)
        if (files[k] != NULL && wants_debuginfod(s, files[k]) &&
            ha_debuginfod_request(s->dbgi, files[k]->build_id) ==
                HA_DEBUGINFOD_PENDING)
            ids[n_ids++] = files[k]->build_id;
    if (n_ids > 0)
        ha_debuginfod_wait(s->dbgi, ids, n_ids,
                           ha_clock_ns() +
                               (int64_t)s->lim.debuginfod_timeout_ms *
                                   1000000);
    free(ids);
    for (size_t k = 0; k < n; k++) {
        struct file *f = files[k];
        char what[PATH_MAX + 64];

        if (f == NULL || !wants_debuginfod(s, f))
            continue;
        switch (ha_debuginfod_lookup(s->dbgi, f->build_id, what,
                                     sizeof(what))) {
        case HA_DEBUGINFOD_FOUND:
            if (f->touched) {
                char id[HA_BUILDID_HEX_MAX];

                memcpy(id, f->build_id, sizeof(id));
                file_reopen(s, f);
                /* The build-id is read again: the answer is for it
                 * unless the file was replaced meanwhile. */
                if (strcmp(id, f->build_id) != 0)
                    break;
            }
            if ((f->dbgi_path = strdup(what)) == NULL)
                return -1;
            f->dbgi_pending = false;
            f->dbgi_why[0] = '\0';
            break;
        case HA_DEBUGINFOD_PENDING:
            f->dbgi_pending = true;
            ha_err_set(f->dbgi_why, sizeof(f->dbgi_why),
                       "no answer within %u ms; still fetching (a later "
                       "query uses it)",
                       s->lim.debuginfod_timeout_ms);
            pending++;
            break;
        case HA_DEBUGINFOD_FAILED:
            f->dbgi_pending = false;
            ha_strlcpy(f->dbgi_why, what, sizeof(f->dbgi_why));
            break;
        default:
            f->dbgi_pending = false;
            ha_strlcpy(f->dbgi_why, "not asked", sizeof(f->dbgi_why));
            break;
        }
    }
    return pending;
}

/* Works out where f's names come from, for heap_modules: DWARF (its own,
 * a local debug file's, debuginfod's), else a .symtab, else .dynsym. */
static void
classify(struct ha_symbolizer *s, struct file *f)
{
    const char *debugfile = NULL;
    Dwarf_Addr dwbias;
    Dwarf *dw;
    int n_syms;
    char hint[PATH_MAX + 256] = "";

    if (f->mod == NULL) {
        f->from = HA_SYMS_SRC_NONE;
        ha_strlcpy(f->detail, f->open_err[0] ? f->open_err : "not read",
                   sizeof(f->detail));
        return;
    }
    dw = dwfl_module_getdwarf(f->mod, &dwbias);
    f->touched = true;
    dwfl_module_info(f->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
    if (dw != NULL) {
        if (f->dbgi_path != NULL && debugfile != NULL &&
            strcmp(debugfile, f->dbgi_path) == 0) {
            f->from = HA_SYMS_SRC_DEBUGINFOD;
            snprintf(f->detail, sizeof(f->detail), "DWARF from debuginfod, "
                                                   "cached as %s",
                     debugfile);
        } else if (debugfile != NULL && strcmp(debugfile, f->path) != 0) {
            f->from = HA_SYMS_SRC_DWARF;
            snprintf(f->detail, sizeof(f->detail), "DWARF in %s", debugfile);
        } else {
            f->from = HA_SYMS_SRC_DWARF;
            ha_strlcpy(f->detail, "DWARF in the file", sizeof(f->detail));
        }
        return;
    }
    /* What would name it: a -dbgsym package, or debuginfod. */
    if (f->build_id[0] != '\0')
        snprintf(hint, sizeof(hint), "; its debug file would be %s/.build-id/"
                                     "%.2s/%s.debug (the -dbgsym package)",
                 HA_SYMBOLIZE_DEBUG_DIR, f->build_id, f->build_id + 2);
    else
        ha_strlcpy(hint, "; it has no build-id to find debug info by",
                   sizeof(hint));
    if (s->dbgi == NULL)
        ha_strlcpy(hint + strlen(hint), " or debuginfod (off)",
                   sizeof(hint) - strlen(hint));
    else if (f->dbgi_why[0] != '\0')
        snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint),
                 "; debuginfod: %s", f->dbgi_why);
    n_syms = dwfl_module_getsymtab(f->mod);
    if (f->own_symtab) {
        f->from = HA_SYMS_SRC_SYMTAB;
        snprintf(f->detail, sizeof(f->detail), "no DWARF; the file's "
                                               ".symtab%s",
                 hint);
    } else if (debugfile != NULL && n_syms > 0) {
        f->from = HA_SYMS_SRC_SYMTAB;
        snprintf(f->detail, sizeof(f->detail), "no DWARF; .symtab of %s",
                 debugfile);
    } else if (n_syms > 0) {
        f->from = HA_SYMS_SRC_DYNSYM;
        snprintf(f->detail, sizeof(f->detail), "stripped: only exported "
                                               "functions are named%s",
                 hint);
    } else {
        f->from = HA_SYMS_SRC_NONE;
        snprintf(f->detail, sizeof(f->detail), "no symbols%s", hint);
    }
}

/* ------------------------------------------------------------------ */
/* A call                                                              */
/* ------------------------------------------------------------------ */

int
ha_symbolizer_run(struct ha_symbolizer *s, const struct ha_maps *maps,
                  const uint64_t *pcs, size_t n, struct ha_syms *out,
                  char *err, size_t errlen)
{
    long *ent = NULL;
    uint64_t *foff = NULL;
    struct miss *m = NULL;
    struct file **files = NULL;
    size_t *first = NULL;
    struct ha_idmap strs = {0};
    int pending, ret = -1;

    if (n > 0) {
        ent = malloc(n * sizeof(*ent));
        foff = malloc(n * sizeof(*foff));
        m = malloc(n * sizeof(*m));
        if (ent == NULL || foff == NULL || m == NULL)
            goto oom;
    }
    files = calloc(maps->n_modules ? maps->n_modules : 1, sizeof(*files));
    first = malloc((maps->n_modules ? maps->n_modules : 1) * sizeof(*first));
    if (files == NULL || first == NULL)
        goto oom;
    for (size_t mod = 0; mod < maps->n_modules; mod++)
        first[mod] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        ent[i] = ha_maps_lookup(maps, pcs[i], &foff[i]);
        if (ent[i] < 0) {
            if (ha_syms_add_unnamed(out, pcs[i], 0, HA_SYMS_NO_MODULE, NULL,
                                    0) != 0)
                goto oom;
        } else if (first[maps->entries[ent[i]].module] == SIZE_MAX) {
            first[maps->entries[ent[i]].module] = i;
        }
    }

    /* Every module's file first, held for the whole call, so that all
     * debuginfod questions go out at once and share one wait. */
    for (size_t mod = 0; mod < maps->n_modules; mod++) {
        if (first[mod] == SIZE_MAX)
            continue;
        if ((files[mod] = file_get(s, ha_maps_module_path(maps, mod))) ==
            NULL)
            goto oom;
        files[mod]->pinned = true;
    }
    if ((pending = ask_debuginfod(s, files, maps->n_modules)) < 0)
        goto oom;
    out->pending += (unsigned)pending;

    /* One module at a time: resolve what the cache does not have in one
     * batch, then copy everything out. */
    for (size_t mod = 0; mod < maps->n_modules; mod++) {
        const char *path = ha_maps_module_path(maps, mod);
        uint32_t mstr = UINT32_MAX, flags;
        size_t n_miss = 0;
        struct file *f = files[mod];

        if (f == NULL)
            continue;
        mstr = ha_strtab_intern(&out->strs, path, strlen(path));
        if (mstr == UINT32_MAX)
            goto oom;
        flags = (f->allocator ? HA_SYMS_ALLOCATOR : 0) |
                (f->no_fini ? HA_SYMS_NO_FINI : 0);
        ha_idmap_clear(&strs); /* offsets of another file's memo */

        for (size_t i = first[mod]; i < n; i++) {
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
        if (n_miss > 0) {
            f->touched = true;
            if (resolve_misses(s, f, m, n_miss) != 0)
                goto oom;
        }
        for (size_t i = first[mod]; i < n; i++) {
            uint64_t va;
            const struct ha_syms_addr *ma = NULL;
            int rc;

            if (ent[i] < 0 || maps->entries[ent[i]].module != mod)
                continue;
            if (f->mod != NULL && file_vaddr(f, foff[i], &va))
                ma = ha_syms_find(&f->memo, va);
            /* An unreadable file, or an offset outside its segments:
             * the offset in the file is all there is to give. */
            rc = ma != NULL ? copy_entry(out, pcs[i], mstr, flags, &f->memo,
                                         ma, &strs)
                            : ha_syms_add_unnamed(out, pcs[i], mstr, flags,
                                                  path, foff[i]);
            if (rc != 0)
                goto oom;
        }
        classify(s, f);
        if (ha_syms_set_module(out, path,
                               f->build_id[0] ? f->build_id : NULL, f->from,
                               f->detail) != 0)
            goto oom;
        f->bytes = file_bytes(f);
    }
    ha_syms_finish(out);
    ret = 0;
    goto done;

oom:
    ha_err_set(err, errlen, "out of memory symbolizing %zu addresses", n);
done:
    for (size_t mod = 0; files != NULL && mod < maps->n_modules; mod++)
        if (files[mod] != NULL)
            files[mod]->pinned = false;
    if (files != NULL)
        evict_over_limits(s, NULL);
    ha_idmap_free(&strs);
    free(files);
    free(first);
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

uint64_t
ha_symbolizer_generation(const struct ha_symbolizer *s)
{
    return s->dbgi != NULL ? ha_debuginfod_answers(s->dbgi) : 0;
}
