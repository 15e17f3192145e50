/* SPDX-License-Identifier: MIT
 *
 * Makes small, real jemalloc heap_v2 dumps for test/check_prof.c: a few
 * distinct call paths (one through an always-inlined function, one
 * through calloc, one through realloc, one recursive) with known sizes,
 * then prof.dump into <dir>/gen.1.heap; then frees some, allocates more
 * and dumps <dir>/gen.2.heap, so the pair also serves as a --base diff.
 *
 * Run with MALLOC_CONF=prof:true,lg_prof_sample:10 (check_prof does). Built
 * -O0 -g with frame pointers so the stacks jemalloc records are the ones
 * written here; the committed dumps and expected jeprof output under
 * test/data/heap/ came from this program.
 *
 * With a second argument "final" it closes stderr first, so the
 * prof_final dump taken at exit (MALLOC_CONF=...,prof_final:true,
 * prof_leak:true,prof_prefix:DIR/genf) is opened as fd 2 and jemalloc's
 * "<jemalloc>: Leak ..." lines are written into it: the .f.heap quirk.
 *
 * usage: prof_gen DIR [final]
 */
/* The stacks must be the ones written here whatever CFLAGS say: no
 * tail calls, no dead-store elimination of the kept blocks. */
#pragma GCC optimize("O0")

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jemalloc/jemalloc.h>

#define N_SMALL 4000
#define N_BIG 64

/* Not static, so the compiler cannot prove them unread. */
extern void *keep_small[], *keep_big[], *keep_calloc[], *keep_realloc[],
    *keep_rec[], *keep_phase2[];

void *keep_small[N_SMALL];
void *keep_big[N_BIG];
void *keep_calloc[512];
void *keep_realloc[256];
void *keep_rec[64];
void *keep_phase2[1024];

/* Not a real function in the output: inlined into alloc_via_inline. */
static inline __attribute__((always_inline)) void *
inlined_leaf(size_t n)
{
    return malloc(n);
}

__attribute__((noinline)) static void
alloc_via_inline(void)
{
    for (int i = 0; i < N_SMALL; i++)
        keep_small[i] = inlined_leaf(48 + (size_t)(i % 4) * 16);
}

__attribute__((noinline)) static void
alloc_big(void)
{
    for (int i = 0; i < N_BIG; i++)
        keep_big[i] = malloc(64 * 1024);
}

__attribute__((noinline)) static void
alloc_calloc(void)
{
    for (int i = 0; i < 512; i++)
        keep_calloc[i] = calloc(1, 1000);
}

__attribute__((noinline)) static void
alloc_realloc(void)
{
    for (int i = 0; i < 256; i++) {
        void *p = malloc(100);
        keep_realloc[i] = realloc(p, 5000);
    }
}

__attribute__((noinline)) static void
alloc_rec(int depth, int i)
{
    if (depth > 0) {
        alloc_rec(depth - 1, i);
        return;
    }
    keep_rec[i] = malloc(20000);
}

__attribute__((noinline)) static void
alloc_phase2(void)
{
    for (int i = 0; i < 1024; i++)
        keep_phase2[i] = malloc(3000);
}

static int
dump(const char *dir, int n)
{
    char path[4096];
    const char *p = path;

    snprintf(path, sizeof(path), "%s/gen.%d.heap", dir, n);
    if (mallctl("prof.dump", NULL, NULL, &p, sizeof(p)) != 0) {
        fprintf(stderr, "prof_gen: prof.dump %s failed (is "
                        "MALLOC_CONF=prof:true set?)\n", path);
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc != 2 && !(argc == 3 && strcmp(argv[2], "final") == 0)) {
        fprintf(stderr, "usage: prof_gen DIR [final]\n");
        return 2;
    }
    if (argc == 3)
        close(2);
    alloc_via_inline();
    alloc_big();
    alloc_calloc();
    alloc_realloc();
    for (int i = 0; i < 64; i++)
        alloc_rec(3, i);
    if (dump(argv[1], 1) != 0)
        return 1;

    for (int i = 0; i < N_BIG; i += 2) {
        free(keep_big[i]);
        keep_big[i] = NULL;
    }
    for (int i = 0; i < 512; i++) {
        free(keep_calloc[i]);
        keep_calloc[i] = NULL;
    }
    alloc_phase2();
    if (dump(argv[1], 2) != 0)
        return 1;
    return 0;
}
