/* SPDX-License-Identifier: MIT
 *
 * One mapped file as the symbolizer reads it (see symbolize_int.h):
 * opened once with libdwfl, its PT_LOAD segments (file offsets to ELF
 * addresses), what its sections hold (.symtab, _fini, DWARF), its GNU
 * build-id and its debug file under a debug root; and its function
 * symbols (.symtab, else .dynsym), the names given where DWARF has none.
 */
#include "prof/symbolize_int.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/forkguard.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* libdwfl callbacks                                                  */
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

void
ha_symbolize_file_callbacks(Dwfl_Callbacks *cb)
{
    cb->find_elf = find_elf_none;
    cb->find_debuginfo = find_debuginfo;
    cb->section_address = dwfl_offline_section_address;
}

int
ha_symbolize_file_setup(struct ha_symbolizer *s, const char *debug_root)
{
    const char *root = debug_root != NULL ? debug_root : "";
    size_t len = strlen(root) + sizeof(":" HA_SYMBOLIZE_DEBUG_DIR);

    /* libdwfl's search path: only absolute directories are used for
     * build-id lookups; the caller's root first. */
    if ((s->debuginfo_path = malloc(len)) == NULL)
        return -1;
    snprintf(s->debuginfo_path, len, "%s%s" HA_SYMBOLIZE_DEBUG_DIR, root,
             *root ? ":" : "");
    ha_symbolize_file_callbacks(&s->cb);
    s->cb.debuginfo_path = &s->debuginfo_path;
    /* C++ names: demangled only if libstdc++ is already in the process
     * (the admin server itself is C); otherwise they stay mangled. */
    ha_forkguard_enter(); /* the loader's lock (core/forkguard.h) */
    *(void **)&s->demangle = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    ha_forkguard_leave();
    return 0;
}

void
ha_symbolize_file_teardown(struct ha_symbolizer *s)
{
    free(s->debuginfo_path);
    s->debuginfo_path = NULL;
}

/* ------------------------------------------------------------------ */
/* Opening, reopening, freeing                                        */
/* ------------------------------------------------------------------ */

bool
ha_symbolize_is_allocator_path(const char *path)
{
    const char *base = strrchr(path, '/');

    base = base != NULL ? base + 1 : path;
    return strncmp(base, "libjemalloc", 11) == 0;
}

void
ha_symbolize_file_free(struct file *f)
{
    if (f == NULL)
        return;
    if (f->dwfl != NULL)
        dwfl_end(f->dwfl);
    free(f->debuginfo_path);
    ha_syms_free(&f->memo);
    ha_idmap_free(&f->die_names);
    ha_symcache_unmap(&f->idx_map);
    free(f->fsyms);
    free(f->segs);
    free(f->local_debug);
    free(f->dbgi_path);
    free(f->path);
    free(f);
}

size_t
ha_symbolize_file_bytes(const struct file *f)
{
    /* An index is mapped, not read: its pages are the page cache's. */
    if (f->has_idx)
        return f->idx_map.len;
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

char *
ha_symbolize_file_local_debug(const char *dirs, const char *hex)
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

void
ha_symbolize_file_open(struct ha_symbolizer *s, struct file *f)
{
    GElf_Addr bias = 0;
    const unsigned char *id;
    GElf_Addr id_vaddr;
    size_t n_ph = 0;
    void **ud;
    Elf *elf;
    int n;

    /* Copies of the symbolizer's: libdwfl keeps pointers to both, and f
     * may outlive the symbolizer on the index builder's thread. */
    free(f->debuginfo_path);
    if ((f->debuginfo_path = strdup(s->debuginfo_path)) == NULL) {
        ha_err_set(f->open_err, sizeof(f->open_err), "out of memory");
        return;
    }
    f->cb = s->cb;
    f->cb.debuginfo_path = &f->debuginfo_path;
    f->dwfl = dwfl_begin(&f->cb);
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
        f->local_debug =
            ha_symbolize_file_local_debug(s->debuginfo_path, f->build_id);
    s->st.opened++;
    return;

broken:
    if (f->dwfl != NULL)
        dwfl_end(f->dwfl);
    f->dwfl = NULL;
    f->mod = NULL;
}

void
ha_symbolize_file_reopen(struct ha_symbolizer *s, struct file *f)
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
    f->idx_done = false; /* better names: an index of them is wanted */
    s->st.evicted++;
    ha_symbolize_file_open(s, f);
    f->bytes = ha_symbolize_file_bytes(f);
}

bool
ha_symbolize_file_vaddr(const struct file *f, uint64_t off, uint64_t *vaddr)
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
/* Function symbols                                                   */
/* ------------------------------------------------------------------ */

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

const char *
ha_symbolize_file_symbol(struct file *f, uint64_t addr, uint64_t *size)
{
    size_t k;

    if (size != NULL)
        *size = 0;
    if (!f->fsyms_built)
        fsyms_build(f);
    k = ha_symindex_cover(f->fsyms, f->n_fsyms, sizeof(*f->fsyms), addr);
    if (k == SIZE_MAX)
        return NULL;
    if (size != NULL)
        *size = f->fsyms[k].size;
    return f->fsyms[k].name;
}

const struct fsym *
ha_symbolize_file_symbols(struct file *f, size_t *n)
{
    if (!f->fsyms_built)
        fsyms_build(f);
    *n = f->n_fsyms;
    return f->fsyms;
}
