/* SPDX-License-Identifier: MIT
 *
 * The host of the name tests (test/integration/names.sh): allocates
 * through static functions of its own and through nameslib.c's stripped
 * allocation sites, keeps every block, then dumps its heap profile to
 * argv[1] with prof.dump. Run under MALLOC_CONF=prof:true,
 * lg_prof_sample:0 so every allocation is sampled and the figures are
 * the sizes below.
 *
 * Each site holds a different number of bytes, so the rows of heap_top
 * tell them apart:
 *   host_small   100 x 4 KiB      host_large    50 x 8 KiB
 *   hidden_grow   30 x 16 KiB     hidden_fill   20 x 32 KiB
 *   names_label_alloc 10 x 64 KiB
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

void *names_lib_alloc(size_t n, int how);
void *names_label_alloc(size_t n);

/* Read back at the end: the compiler may not drop the allocations. */
static void *volatile keep[256];
static size_t n_keep;

__attribute__((noinline)) static void *
host_small(void)
{
    char *p = malloc(4096);

    if (p != NULL)
        memset(p, 2, 4096);
    return p;
}

__attribute__((noinline)) static void *
host_large(void)
{
    return calloc(1, 8192);
}

static void
hold(void *p)
{
    if (n_keep < sizeof(keep) / sizeof(keep[0]))
        keep[n_keep++] = p;
}

int
main(int argc, char **argv)
{
    const char *path;
    size_t held = 0;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: nameshost DUMP\n");
        return 2;
    }
    for (int i = 0; i < 100; i++)
        hold(host_small());
    for (int i = 0; i < 50; i++)
        hold(host_large());
    for (int i = 0; i < 30; i++)
        hold(names_lib_alloc(16384, 0));
    for (int i = 0; i < 20; i++)
        hold(names_lib_alloc(32768, 1));
    for (int i = 0; i < 10; i++)
        hold(names_label_alloc(65536));
    path = argv[1];
    rc = mallctl("prof.dump", NULL, NULL, &path, sizeof(path));
    if (rc != 0) {
        fprintf(stderr, "nameshost: prof.dump: error %d (run with "
                        "MALLOC_CONF=prof:true)\n",
                rc);
        return 1;
    }
    for (size_t i = 0; i < n_keep; i++)
        held += keep[i] != NULL;
    return held == n_keep ? 0 : 1;
}
