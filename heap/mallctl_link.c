/* SPDX-License-Identifier: MIT
 *
 * The jemalloc this executable is linked with, bound at link time. Only
 * the tests use it; it lives apart from mallctl.c so that the library
 * objects reference no jemalloc symbol (see ha_mallctl_resolve()).
 */
#include "heap/mallctl.h"

#include <jemalloc/jemalloc.h>

_Static_assert(HA_MALLCTL_ARENAS_ALL == MALLCTL_ARENAS_ALL,
               "HA_MALLCTL_ARENAS_ALL must match jemalloc.h");

const struct ha_mallctl_ops ha_mallctl_jemalloc = {
    .mallctl = mallctl,
    .nametomib = mallctlnametomib,
    .bymib = mallctlbymib,
};
