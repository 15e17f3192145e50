/* SPDX-License-Identifier: MIT
 *
 * The symbolizer's insides, shared by its files and private to them:
 * symbolizer.c (the object and a call), symbolize_file.c (a file opened
 * with libdwfl: segments, sections, build-id, debug file, ELF symbols),
 * symbolize_cache.c (the files kept across calls), symbolize_dwarf.c
 * (DWARF names and inline chains) and symbolize_source.c (debuginfod,
 * and where each module's names come from). What callers use is
 * symbolize.h.
 */
#ifndef HA_SYMBOLIZE_INT_H
#define HA_SYMBOLIZE_INT_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core/idmap.h"
#include "prof/debuginfod.h"
#include "prof/maps.h"
#include "prof/symbolize.h"
#include "prof/syms.h"

#define DEFAULT_MAX_FILES 32
#define DEFAULT_MAX_BYTES ((size_t)512 << 20)
#define MAX_DIE_DEPTH 256 /* nesting walked; deeper DIEs are ignored */
#define MAX_INLINE 64     /* frames kept per address */

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
    struct ha_idmap die_names; /* DIE offset -> its name in memo.strs:
                                  a function's many addresses share it */
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

/* An address being resolved: kept small, tens of thousands of them are
 * fresh pages of a cold run. */
struct miss {
    uint64_t vaddr;    /* ELF vaddr (memo key) */
    uint64_t cu_addr;  /* address in its CU's DWARF space */
    uint32_t cu;       /* its CU in the call's table; UINT32_MAX = none */
    int32_t head;      /* innermost frame DIE in the chains, -1 = none */
    uint32_t depth;    /* frames in its chain */
};

/* symbolize_file.c */

/* Sets libdwfl's callbacks for files reported by path, their debug info
 * found under the debug roots or at f->dbgi_path (find_debuginfo). */
void ha_symbolize_file_callbacks(Dwfl_Callbacks *cb);

/* Opens f->path with libdwfl. A file that cannot be opened is still
 * cached (dwfl NULL, open_err saying why) so it is not retried for every
 * address. */
void ha_symbolize_file_open(struct ha_symbolizer *s, struct file *f);

/* Opens f's file again in place (a debug file arrived since libdwfl
 * looked for one): what was resolved goes, the struct stays, so every
 * pointer to it stays good. */
void ha_symbolize_file_reopen(struct ha_symbolizer *s, struct file *f);

void ha_symbolize_file_free(struct file *f);

/* The bytes f is accounted for against the cache's limit. */
size_t ha_symbolize_file_bytes(const struct file *f);

/* File offset to ELF vaddr through the PT_LOAD that holds it. */
bool ha_symbolize_file_vaddr(const struct file *f, uint64_t off,
                             uint64_t *vaddr);

/* The symbol whose [value, value + size) holds addr (libdwfl address),
 * or NULL: never the nearest one below it, which in a stripped object
 * is some exported function that has nothing to do with the address
 * (jeprof's misnaming of static functions). Nested and overlapping symbols
 * are rare: only the 16 symbols below addr are looked at. *size (may
 * be NULL) gets the symbol's size in bytes, 0 when none covers addr. */
const char *ha_symbolize_file_symbol(struct file *f, uint64_t addr,
                                     uint64_t *size);

/* symbolize_cache.c */

/* Drops least recently used files until the cache is within its limits,
 * never keep nor a pinned one; updates s->st.files and bytes. */
void ha_symbolize_cache_evict(struct ha_symbolizer *s,
                              const struct file *keep);

/* The cached file for path, reopened if it changed on disk. NULL only on
 * allocation failure. */
struct file *ha_symbolize_cache_get(struct ha_symbolizer *s,
                                    const char *path);

/* symbolize_dwarf.c */

/* Resolves m[0 .. n) (vaddr set, not yet in f->memo) and adds them to
 * f->memo in the order of m (in vaddr order, the memo then needs no
 * sort). Returns 0, or -1 on allocation failure. */
int ha_symbolize_dwarf_resolve(struct ha_symbolizer *s, struct file *f,
                               struct miss *m, size_t n);

/* symbolize_source.c */

/* Asks debuginfod for every file of this call that wants it, waits for
 * the answers at most the configured time in all, and gives each file
 * what came: a debug file (reopening a file whose debug info libdwfl
 * already looked for), or the reason there is none. files[k] may be
 * replaced. Returns the number of answers still pending, or -1 on
 * allocation failure. */
int ha_symbolize_source_debuginfod(struct ha_symbolizer *s,
                                   struct file **files, size_t n);

/* Works out where f's names come from, for heap_modules: DWARF (its own,
 * a local debug file's, debuginfod's), else a .symtab, else .dynsym. */
void ha_symbolize_source_classify(struct ha_symbolizer *s, struct file *f);

#endif /* HA_SYMBOLIZE_INT_H */
