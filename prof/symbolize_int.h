/* SPDX-License-Identifier: MIT
 *
 * The symbolizer's insides, shared by its files and private to them:
 * symbolizer.c (the object and a call), symbolize_file.c (a file opened
 * with libdwfl: segments, sections, build-id, debug file, ELF symbols),
 * symbolize_cache.c (the files kept across calls), symbolize_dwarf.c
 * (DWARF names and inline chains), symbolize_source.c (debuginfod,
 * and where each module's names come from), symbolize_index.c (names
 * read from a module's symbol index), symbolize_enum.c (an index made
 * from a module's files) and symbolize_build.c (indexes built and
 * written in the background). What callers use is symbolize.h.
 */
#ifndef HA_SYMBOLIZE_INT_H
#define HA_SYMBOLIZE_INT_H

#include <elfutils/libdw.h>
#include <limits.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "core/idmap.h"
#include "prof/debuginfod.h"
#include "prof/maps.h"
#include "prof/symbolize.h"
#include "prof/symcache.h"
#include "prof/symindex.h"
#include "prof/syms.h"

#define DEFAULT_MAX_FILES 32
#define DEFAULT_MAX_BYTES ((size_t)512 << 20)
#define MAX_DIE_DEPTH 256 /* nesting walked; deeper DIEs are ignored */
#define MAX_INLINE HA_SYMINDEX_MAX_DEPTH /* frames kept per address */

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

/* One opened file and what was resolved in it. Self-contained (its
 * libdwfl handle's callbacks and search path are its own), so it can be
 * handed to the index builder's thread once the symbolizer is done
 * with it. */
struct file {
    char *path;
    dev_t dev; /* identity on disk: a change reopens */
    ino_t ino;
    off_t size;
    struct timespec mtime;

    Dwfl_Callbacks cb;   /* dwfl's: it keeps a pointer to them */
    char *debuginfo_path; /* ... and to this (cb.debuginfo_path) */
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

    /* Its symbol index (prof/symindex.h), when a valid one was found:
     * every address is named from it, and no libdwfl handle is opened
     * (dwfl and mod stay NULL). */
    bool has_idx;
    struct ha_symcache_map idx_map;
    struct ha_symindex idx;
    bool idx_done;       /* an index was used, asked for, or is not to be
                            had: not asked for again */
    bool idx_give;       /* to be handed to the builder once the running
                            call is done with it */
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

    /* Symbol indexes (prof/symcache.h, symbolize_index.c) */
    char *debug_root;     /* the caller's root, kept for the builder */
    char *index_dir;      /* NULL: indexes are neither read nor written */
    bool index_dir_bad;   /* it could not be used (logged once) */
    struct ha_symbolize_builder *builder; /* NULL until a first build */
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

/* One module to index: its file, handed over by the symbolizer with
 * what an index of it must say of the files it came from, as they were
 * when it was named (symbolize_build.c queues them, symbolize_enum.c
 * makes one). */
struct ha_symbolize_req {
    struct file *f;      /* owned: its handle, segments, symbols */
    struct ha_symindex_header h; /* build_id, module, debug, fetched and
                                    flags as ha_symbolize_index_expect
                                    gave them */
    char debug_path[PATH_MAX]; /* h.debug's path; "": none */
    bool wants_dbgi;     /* no DWARF of its own nor under a debug root */
    struct ha_symbolize_req *next;
};

/* symbolize_file.c */

/* What opening and reading files needs of s: libdwfl's callbacks and
 * search path (debug_root, may be NULL, then /usr/lib/debug) and the
 * demangler, if the process has one. The symbolizer's, and the index
 * builder's own. Returns 0, or -1 on allocation failure. */
int ha_symbolize_file_setup(struct ha_symbolizer *s, const char *debug_root);

/* Frees what ha_symbolize_file_setup made. */
void ha_symbolize_file_teardown(struct ha_symbolizer *s);

/* The debug file of build-id hex under one of the debug roots (dirs,
 * colon-separated; only absolute ones count), or NULL. Only looked at,
 * not opened: libdwfl opens it (find_debuginfo). malloc'd. */
char *ha_symbolize_file_local_debug(const char *dirs, const char *hex);

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

/* f's function symbols (see above), sorted by libdwfl address, one per
 * address; *n of them. Valid while f is. */
const struct fsym *ha_symbolize_file_symbols(struct file *f, size_t *n);

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

/* The inline chains of m[0 .. n) (vaddr set), as the resolver finds
 * them: each(arg, i, chain, depth) for every miss in order, the chain
 * innermost first with strings in f->memo.strs. Returns 0, or -1 on
 * allocation failure or when each returns non-zero. */
int ha_symbolize_dwarf_chains(struct ha_symbolizer *s, struct file *f,
                              struct miss *m, size_t n,
                              int (*each)(void *arg, size_t i,
                                          const struct ha_symindex_link *chain,
                                          size_t depth),
                              void *arg);

/* Interns a function name into t: a C++ mangled name is demangled (if
 * the process has libstdc++'s __cxa_demangle) and shortened as jeprof
 * shows it. 0 for NULL, UINT32_MAX on allocation failure. */
uint32_t ha_symbolize_intern_func(struct ha_symbolizer *s,
                                  struct ha_strtab *t, const char *name);

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

/* symbolize_index.c */

/* Looks for a valid index of f (path and identity set, not opened) in
 * the index directory: checked whole (symindex.h), made for this very
 * file (build-id, size, mtime) and for the debug files this symbolizer
 * would read now (the first one under its debug roots, debuginfod's).
 * Returns 0 with f named from it (has_idx, build_id, segments' use,
 * from, detail, no_fini); -1 otherwise, with a log line when one was
 * there but not fit for use (f is then opened as before). */
int ha_symbolize_index_open(struct ha_symbolizer *s, struct file *f);

/* Names pcs[i] (its file offset foff, vaddr va) of f (has_idx) into out
 * under module mstr with flags, by the rule DWARF names it; strs maps
 * the index's strings to out's for this module, at carries the last
 * lookup's place to the next (symindex.h). Returns 0, or -1 on
 * allocation failure. */
int ha_symbolize_index_add(struct ha_symbolizer *s, struct file *f,
                           struct ha_syms *out, uint64_t pc, uint32_t mstr,
                           uint32_t flags, uint64_t va,
                           struct ha_idmap *strs,
                           struct ha_symindex_cursor *at);

/* The index directory, opened for one use (close it): no descriptor is
 * kept, so none is left in a host's fork children. -1 when there is none
 * or it cannot be used (logged once). */
int ha_symbolize_index_dir(struct ha_symbolizer *s);

/* Fills h's identity fields as an index of f must have them to be used
 * by s now: build-id, module, the first debug file under the debug
 * roots, debuginfod's file when from is debuginfod, flags. */
void ha_symbolize_index_expect(struct ha_symbolizer *s, const struct file *f,
                               enum ha_syms_source from,
                               const char *fetched,
                               struct ha_symindex_header *h,
                               char *debug_path, size_t debug_len);

/* symbolize_enum.c */

/* Encodes the index of every address r's file has into out (symindex.h),
 * with its own libdwfl handle, after checking the file on disk is still
 * the one it was opened as; bs (set up by ha_symbolize_file_setup) gives
 * the demangler. What was resolved in the file before is dropped. Stops
 * early when *stop turns true. Returns 0, or -1 with why set. */
int ha_symbolize_enum_index(struct ha_symbolizer *bs,
                            const struct ha_symbolize_req *r,
                            const _Atomic bool *stop, struct ha_buf *out,
                            char *why, size_t whylen);

/* symbolize_build.c */

/* Marks f for an index, f having just been named from DWARF or symbols
 * (classified): when it is worth one (a final answer, a build-id, an
 * index directory), f->idx_give is set, and f is handed to the builder
 * by ha_symbolize_build_handover. Sets f->idx_done but while a
 * debuginfod answer is pending (asked again when it comes). */
void ha_symbolize_build_mark(struct ha_symbolizer *s, struct file *f);

/* Hands every unpinned file marked idx_give to the builder's thread (at
 * low priority, after a quarter of a second without a request): it
 * leaves the cache, so its memory and its DWARF, already read, serve
 * the index once instead of being read twice. A later call on it names
 * it from the index, or reads it again if none was written yet. Never
 * waits. */
void ha_symbolize_build_handover(struct ha_symbolizer *s);

/* Asks the builder's thread to stop at its next check (between units,
 * every few thousand lines, before writing); queued builds are dropped. */
void ha_symbolize_build_stop(struct ha_symbolize_builder *b);

/* Lets go of the builder: its thread stops at its next check and frees
 * what it holds; never waits. */
void ha_symbolize_build_free(struct ha_symbolize_builder *b);

/* Indexes written, and builds given up (a changed file, a failed
 * write), so far. */
void ha_symbolize_build_counts(const struct ha_symbolize_builder *b,
                               uint64_t *written, uint64_t *failed);

/* Waits until no build is queued or running, or deadline_ns
 * (CLOCK_MONOTONIC). Returns 0 when idle, -1 at the deadline. */
int ha_symbolize_build_wait(struct ha_symbolize_builder *b,
                            int64_t deadline_ns);

#endif /* HA_SYMBOLIZE_INT_H */
