/* SPDX-License-Identifier: MIT
 *
 * The only code that reaches jemalloc's mallctl(). Everything else goes
 * through struct ha_mallctl_ops, so unit tests can pass a fake backend
 * while the daemon passes ha_mallctl_jemalloc.
 *
 * Errno values follow jemalloc 5.3 src/ctl.c (see
 * ../shared/reference/jemalloc-profilers.md section 1.3).
 */
#ifndef HA_MALLCTL_H
#define HA_MALLCTL_H

#include <stddef.h>

struct ha_mallctl_ops {
    /* Same contract as jemalloc's mallctl(3): 0 or an errno value. */
    int (*mallctl)(const char *name, void *oldp, size_t *oldlenp,
                   void *newp, size_t newlen);
    int (*nametomib)(const char *name, size_t *mibp, size_t *miblenp);
    int (*bymib)(const size_t *mib, size_t miblen, void *oldp,
                 size_t *oldlenp, void *newp, size_t newlen);
};

/* The real jemalloc the process is linked with. */
extern const struct ha_mallctl_ops ha_mallctl_jemalloc;

#endif /* HA_MALLCTL_H */
