/* SPDX-License-Identifier: MIT
 *
 * Finding jemalloc at run time. The library and the LD_PRELOAD agent must
 * not depend on libjemalloc: a dependency would load jemalloc into hosts
 * that do not use it as their allocator (it would then describe an empty
 * heap), and a host may carry its own, prefixed copy (je_mallctl).
 */
#include "heap/mallctl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/forkguard.h"
#include "core/util.h"

typedef int mallctl_fn(const char *, void *, size_t *, void *, size_t);
typedef int nametomib_fn(const char *, size_t *, size_t *);
typedef int bymib_fn(const size_t *, size_t, void *, size_t *, void *,
                     size_t);

/* The object file that defines the function at addr, or NULL. */
static const char *
object_of(void *addr, void **base)
{
    Dl_info info;

    int ok;

    if (addr == NULL)
        return NULL;
    ha_forkguard_enter(); /* the loader's lock (core/forkguard.h) */
    ok = dladdr(addr, &info);
    ha_forkguard_leave();
    if (ok == 0)
        return NULL;
    *base = info.dli_fbase;
    return info.dli_fname != NULL ? info.dli_fname : "";
}

int
ha_mallctl_resolve(struct ha_mallctl_ops *ops, char *err, size_t errlen)
{
    static const char *const prefixes[] = {"", "je_"};
    void *alloc_base = NULL, *ctl_base = NULL;
    const char *alloc_obj, *ctl_obj;
    char name[64];

    for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
        const char *p = prefixes[i];
        void *ctl, *tomib, *bymib, *alloc;

        snprintf(name, sizeof(name), "%smallctl", p);
        ha_forkguard_enter(); /* the loader's lock (core/forkguard.h) */
        ctl = dlsym(RTLD_DEFAULT, name);
        snprintf(name, sizeof(name), "%smallctlnametomib", p);
        tomib = ctl != NULL ? dlsym(RTLD_DEFAULT, name) : NULL;
        snprintf(name, sizeof(name), "%smallctlbymib", p);
        bymib = ctl != NULL ? dlsym(RTLD_DEFAULT, name) : NULL;
        /* The allocator actually in use is the first malloc in the global
         * scope; a prefixed jemalloc serves only je_malloc callers, whose
         * heap is the one its profiler sees. */
        snprintf(name, sizeof(name), "%smalloc", p);
        alloc = ctl != NULL ? dlsym(RTLD_DEFAULT, name) : NULL;
        ha_forkguard_leave();
        if (ctl == NULL)
            continue;
        alloc_obj = object_of(alloc, &alloc_base);
        ctl_obj = object_of(ctl, &ctl_base);
        if (alloc_obj == NULL || ctl_obj == NULL || alloc_base != ctl_base) {
            ha_err_set(err, errlen,
                       "jemalloc is loaded (%s) but malloc() comes from %s: "
                       "its profiler would see none of this process's "
                       "allocations; load jemalloc as the allocator "
                       "(link it, or list it in LD_PRELOAD)",
                       ctl_obj != NULL ? ctl_obj : "?",
                       alloc_obj != NULL ? alloc_obj : "?");
            return -1;
        }
        memset(ops, 0, sizeof(*ops));
        ops->mallctl = (mallctl_fn *)ctl;
        ops->nametomib = (nametomib_fn *)tomib;
        ops->bymib = (bymib_fn *)bymib;
        return 0;
    }
    ha_err_set(err, errlen,
               "malloc is not jemalloc's (no mallctl or je_mallctl in the "
               "process): memory statistics and heap profiling need "
               "jemalloc as the allocator");
    return -1;
}
