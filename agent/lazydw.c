/* SPDX-License-Identifier: MIT
 *
 * elfutils (libdw, libelf) for the agent, loaded when it first reads an
 * ELF file (symbolizing a profile, a dump's build-ids), not when the
 * host starts. Linked in, libdw and its libelf, libz, liblzma and libbz2
 * were loaded and relocated in every host the agent is preloaded into,
 * about 0.4 MB of its resident set that most hosts never use: an idle
 * agent never symbolizes.
 *
 * Each elfutils call prof/ makes has a definition here under the same
 * name, with elfutils' own prototype (the headers are included, so the
 * compiler checks each one): the first call of any of them loads
 * libdw.so.1 with dlopen and looks all of them up; every call then goes
 * through the pointer it found. prof/ is unchanged and so is
 * libheapadmin, which links elfutils as before. A call prof/ adds without
 * a definition here fails the agent's link (-Wl,--no-undefined), never a
 * host: add it to FNS below.
 *
 * A guest's rules: RTLD_LOCAL, so nothing the library defines becomes
 * visible to the host or replaces one of its symbols (and the
 * definitions here are local to the agent: agent/agent.map); the
 * handle is never closed (libdw keeps state in its libraries for the
 * process's life); and dlopen takes the loader's locks, so the loading is
 * a fork-guard section (core/forkguard.h): a host's fork waits for it,
 * and a load waits for a fork being made. When the library cannot be
 * loaded every call fails as elfutils reports a failure (NULL, -1,
 * EV_NONE), and dwfl_errmsg says why.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>
#include <libelf.h>

#include "core/forkguard.h"

#define LIBDW_SONAME "libdw.so.1"

/* X(return type, name, parameters, arguments, value on failure) for the
 * calls returning a value; V(name, parameters, arguments) for void ones. */
#define FNS(X, V)                                                          \
    X(Dwfl *, dwfl_begin, (const Dwfl_Callbacks *cb), (cb), NULL)          \
    V(dwfl_end, (Dwfl *d), (d))                                            \
    X(const char *, dwfl_errmsg, (int e), (e), load_err)                   \
    V(dwfl_report_begin, (Dwfl *d), (d))                                   \
    X(int, dwfl_report_end,                                                \
      (Dwfl *d,                                                            \
       int (*removed)(Dwfl_Module *, void *, const char *, Dwarf_Addr,     \
                      void *),                                             \
       void *arg),                                                         \
      (d, removed, arg), -1)                                               \
    X(Dwfl_Module *, dwfl_report_offline,                                  \
      (Dwfl *d, const char *name, const char *file, int fd),               \
      (d, name, file, fd), NULL)                                           \
    X(int, dwfl_standard_find_debuginfo,                                   \
      (Dwfl_Module *m, void **u, const char *n, Dwarf_Addr a,              \
       const char *f, const char *dl, GElf_Word crc, char **p),            \
      (m, u, n, a, f, dl, crc, p), -1)                                     \
    X(int, dwfl_build_id_find_debuginfo,                                   \
      (Dwfl_Module *m, void **u, const char *n, Dwarf_Addr a,              \
       const char *f, const char *dl, GElf_Word crc, char **p),            \
      (m, u, n, a, f, dl, crc, p), -1)                                     \
    X(int, dwfl_offline_section_address,                                   \
      (Dwfl_Module *m, void **u, const char *n, Dwarf_Addr a,              \
       const char *sn, GElf_Word si, const GElf_Shdr *sh, Dwarf_Addr *ad), \
      (m, u, n, a, sn, si, sh, ad), -1)                                    \
    X(const char *, dwfl_module_info,                                      \
      (Dwfl_Module *m, void ***u, Dwarf_Addr *s, Dwarf_Addr *e,            \
       Dwarf_Addr *db, Dwarf_Addr *sb, const char **mf, const char **df),  \
      (m, u, s, e, db, sb, mf, df), NULL)                                  \
    X(int, dwfl_module_getsymtab, (Dwfl_Module *m), (m), -1)               \
    X(const char *, dwfl_module_getsym_info,                               \
      (Dwfl_Module *m, int i, GElf_Sym *s, GElf_Addr *a, GElf_Word *sh,    \
       Elf **e, Dwarf_Addr *b),                                            \
      (m, i, s, a, sh, e, b), NULL)                                        \
    X(const char *, dwfl_module_addrinfo,                                  \
      (Dwfl_Module *m, GElf_Addr a, GElf_Off *o, GElf_Sym *s,              \
       GElf_Word *sh, Elf **e, Dwarf_Addr *b),                             \
      (m, a, o, s, sh, e, b), NULL)                                        \
    X(Dwfl_Line *, dwfl_module_getsrc, (Dwfl_Module *m, Dwarf_Addr a),     \
      (m, a), NULL)                                                        \
    X(Elf *, dwfl_module_getelf, (Dwfl_Module *m, GElf_Addr *b), (m, b),   \
      NULL)                                                                \
    X(Dwarf *, dwfl_module_getdwarf, (Dwfl_Module *m, Dwarf_Addr *b),      \
      (m, b), NULL)                                                        \
    X(int, dwfl_module_build_id,                                           \
      (Dwfl_Module *m, const unsigned char **bits, GElf_Addr *va),         \
      (m, bits, va), -1)                                                   \
    X(Dwarf_Die *, dwfl_module_addrdie,                                    \
      (Dwfl_Module *m, Dwarf_Addr a, Dwarf_Addr *b), (m, a, b), NULL)      \
    X(Dwarf_Die *, dwfl_module_nextcu,                                     \
      (Dwfl_Module *m, Dwarf_Die *l, Dwarf_Addr *b), (m, l, b), NULL)      \
    X(const char *, dwfl_lineinfo,                                         \
      (Dwfl_Line *l, Dwarf_Addr *a, int *ln, int *col, Dwarf_Word *mt,     \
       Dwarf_Word *len),                                                   \
      (l, a, ln, col, mt, len), NULL)                                      \
    X(ssize_t, dwelf_elf_gnu_build_id, (Elf *e, const void **id), (e, id), \
      -1)                                                                  \
    X(Dwarf_Off, dwarf_dieoffset, (Dwarf_Die *d), (d), (Dwarf_Off)-1)      \
    X(Dwarf_Attribute *, dwarf_attr,                                       \
      (Dwarf_Die *d, unsigned int n, Dwarf_Attribute *r), (d, n, r), NULL) \
    X(Dwarf_Attribute *, dwarf_attr_integrate,                             \
      (Dwarf_Die *d, unsigned int n, Dwarf_Attribute *r), (d, n, r), NULL) \
    X(int, dwarf_formudata, (Dwarf_Attribute *a, Dwarf_Word *v), (a, v),   \
      -1)                                                                  \
    X(const char *, dwarf_formstring, (Dwarf_Attribute *a), (a), NULL)     \
    X(int, dwarf_tag, (Dwarf_Die *d), (d), -1)                             \
    X(int, dwarf_srclang, (Dwarf_Die *d), (d), -1)                         \
    X(int, dwarf_child, (Dwarf_Die *d, Dwarf_Die *r), (d, r), -1)          \
    X(int, dwarf_siblingof, (Dwarf_Die *d, Dwarf_Die *r), (d, r), -1)      \
    X(ptrdiff_t, dwarf_ranges,                                             \
      (Dwarf_Die *d, ptrdiff_t o, Dwarf_Addr *b, Dwarf_Addr *s,            \
       Dwarf_Addr *e),                                                     \
      (d, o, b, s, e), -1)                                                 \
    X(int, dwarf_getsrcfiles, (Dwarf_Die *d, Dwarf_Files **f, size_t *n),  \
      (d, f, n), -1)                                                       \
    X(int, dwarf_getsrclines, (Dwarf_Die *d, Dwarf_Lines **l, size_t *n),  \
      (d, l, n), -1)                                                       \
    X(Dwarf_Line *, dwarf_onesrcline, (Dwarf_Lines *l, size_t i), (l, i),  \
      NULL)                                                                \
    X(int, dwarf_lineaddr, (Dwarf_Line *l, Dwarf_Addr *a), (l, a), -1)     \
    X(int, dwarf_getaranges, (Dwarf *d, Dwarf_Aranges **a, size_t *n),     \
      (d, a, n), -1)                                                       \
    X(Dwarf_Arange *, dwarf_onearange, (Dwarf_Aranges *a, size_t i),       \
      (a, i), NULL)                                                        \
    X(int, dwarf_getarangeinfo,                                            \
      (Dwarf_Arange *a, Dwarf_Addr *ad, Dwarf_Word *l, Dwarf_Off *o),      \
      (a, ad, l, o), -1)                                                   \
    X(const char *, dwarf_filesrc,                                         \
      (Dwarf_Files *f, size_t i, Dwarf_Word *mt, Dwarf_Word *len),         \
      (f, i, mt, len), NULL)                                               \
    X(unsigned int, elf_version, (unsigned int v), (v), EV_NONE)           \
    X(Elf *, elf_begin, (int fd, Elf_Cmd cmd, Elf *ref), (fd, cmd, ref),   \
      NULL)                                                                \
    X(int, elf_end, (Elf *e), (e), 0)                                      \
    X(Elf_Kind, elf_kind, (Elf *e), (e), ELF_K_NONE)                       \
    X(Elf_Scn *, elf_nextscn, (Elf *e, Elf_Scn *s), (e, s), NULL)          \
    X(Elf_Data *, elf_getdata, (Elf_Scn *s, Elf_Data *d), (s, d), NULL)    \
    X(char *, elf_strptr, (Elf *e, size_t i, size_t o), (e, i, o), NULL)   \
    X(int, elf_getshdrstrndx, (Elf *e, size_t *n), (e, n), -1)             \
    X(int, elf_getphdrnum, (Elf *e, size_t *n), (e, n), -1)                \
    X(GElf_Shdr *, gelf_getshdr, (Elf_Scn *s, GElf_Shdr *d), (s, d), NULL) \
    X(GElf_Phdr *, gelf_getphdr, (Elf *e, int i, GElf_Phdr *d), (e, i, d), \
      NULL)                                                                \
    X(GElf_Sym *, gelf_getsym, (Elf_Data *d, int i, GElf_Sym *s),          \
      (d, i, s), NULL)

/* The pointers, found once. */
#define PTR_X(ret, name, params, args, fail) ret(*name) params;
#define PTR_V(name, params, args) void(*name) params;
static struct {
    FNS(PTR_X, PTR_V)
} fn;

/* 1 loaded, -1 cannot be (load_err says why), 0 not tried yet. */
static _Atomic int state;
static pthread_mutex_t load_mu = PTHREAD_MUTEX_INITIALIZER;
static char load_err[320];

#define FIND_X(ret, name, params, args, fail)                              \
    if ((*(void **)&fn.name = dlsym(h, #name)) == NULL)                    \
        missing = #name;
#define FIND_V(name, params, args) FIND_X(void, name, params, args, 0)

/* Loads the library and finds every call: 1, or -1 with load_err set.
 * Inside a fork-guard section (dlopen, dlsym: the loader's locks). */
static int
load(void)
{
    const char *missing = NULL;
    void *h = dlopen(LIBDW_SONAME, RTLD_NOW | RTLD_LOCAL);

    if (h == NULL) {
        const char *why = dlerror();

        snprintf(load_err, sizeof(load_err),
                 "%s cannot be loaded (Debian package libdw1): %s",
                 LIBDW_SONAME, why != NULL ? why : "unknown error");
        return -1;
    }
    /* dlsym on the handle searches libdw and what it needs (libelf). */
    FNS(FIND_X, FIND_V)
    if (missing != NULL) {
        snprintf(load_err, sizeof(load_err),
                 "%s (with its libelf) lacks %s: elfutils 0.188 or newer "
                 "is needed",
                 LIBDW_SONAME, missing);
        memset(&fn, 0, sizeof(fn));
        return -1;
    }
    return 1;
}

/* Whether the calls may be made, loading them at the first call. */
static int
ready(void)
{
    int s = atomic_load_explicit(&state, memory_order_acquire);

    if (s != 0)
        return s > 0;
    ha_forkguard_enter();
    pthread_mutex_lock(&load_mu);
    if (atomic_load_explicit(&state, memory_order_relaxed) == 0)
        atomic_store_explicit(&state, load(), memory_order_release);
    pthread_mutex_unlock(&load_mu);
    ha_forkguard_leave();
    return atomic_load_explicit(&state, memory_order_acquire) > 0;
}

#define DEF_X(ret, name, params, args, fail)                               \
    ret name params                                                        \
    {                                                                      \
        if (!ready())                                                      \
            return fail;                                                   \
        return fn.name args;                                               \
    }
#define DEF_V(name, params, args)                                          \
    void name params                                                       \
    {                                                                      \
        if (ready())                                                       \
            fn.name args;                                                  \
    }
FNS(DEF_X, DEF_V)
