/* SPDX-License-Identifier: MIT
 *
 * bench/heapgen: writes a large, realistic jemalloc heap_v2 dump for
 * bench/heap-profile: tens of thousands of distinct stacks whose frames
 * are real code addresses of this process (libc's text, which has DWARF
 * with inline info when libc6-dbg is installed, and this program), with
 * jemalloc's own frames and malloc on top as a real dump has them, and
 * MAPPED_LIBRARIES copied from /proc/self/maps: jeprof and prof/ can
 * both symbolize it with this binary as the program. Not part of make
 * check.
 *
 * usage: heapgen OUT [STACKS [ADDRESSES [SEED]]]   (65536 40000 1)
 *
 * Frame choice is skewed (a few hot callers, a long tail), so a top-20 is
 * meaningful; counts are sampled-looking (objs 1..64, sizes 16 B..1 MiB)
 * under heap_v2/524288, jemalloc's default lg_prof_sample of 19.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

struct range {
    uint64_t lo, hi;
};

static uint64_t rng_state;

static uint64_t
rnd(void)
{
    /* splitmix64: reproducible for a seed */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Skewed index in [0, n): the square of a uniform draw favours low ones. */
static size_t
skewed(size_t n)
{
    double u = (double)(rnd() >> 11) / 9007199254740992.0;

    return (size_t)(u * u * u * (double)n) % n;
}

/* The executable text of the first object whose name contains `name`
 * ("" = the main program), from its program headers. */
struct find {
    const char *name;
    struct range r;
};

static int
find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct find *f = arg;
    const char *n = info->dlpi_name != NULL ? info->dlpi_name : "";

    (void)size;
    if (f->r.hi != 0)
        return 0;
    if (f->name[0] == '\0' ? n[0] != '\0' : strstr(n, f->name) == NULL)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            f->r.lo = info->dlpi_addr + ph->p_vaddr;
            f->r.hi = f->r.lo + ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

static struct range
text_of(const char *name)
{
    struct find f = {name, {0, 0}};

    dl_iterate_phdr(find_text, &f);
    if (f.r.hi == 0) {
        fprintf(stderr, "heapgen: no text for '%s'\n", name);
        exit(1);
    }
    return f.r;
}

static uint64_t
in(struct range r)
{
    return r.lo + 16 + rnd() % (r.hi - r.lo - 32);
}

int
main(int argc, char **argv)
{
    size_t n_stacks = argc > 2 ? strtoul(argv[2], NULL, 0) : 65536;
    size_t n_addrs = argc > 3 ? strtoul(argv[3], NULL, 0) : 40000;
    struct range libc, jem, self;
    uint64_t *pool, jpool[24], malloc_pc, main_pc, tot_objs = 0;
    uint64_t tot_bytes = 0;
    FILE *out, *maps;
    char buf[65536];
    size_t n;
    struct stack {
        uint64_t objs, bytes;
    } *st;
    size_t *depth;

    if (argc < 2) {
        fprintf(stderr, "usage: heapgen OUT [STACKS [ADDRESSES [SEED]]]\n");
        return 2;
    }
    rng_state = argc > 4 ? strtoull(argv[4], NULL, 0) : 1;
    libc = text_of("libc.so");
    jem = text_of("libjemalloc");
    self = text_of("");
    malloc_pc = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "malloc") + 20;
    main_pc = (uint64_t)(uintptr_t)&main + 9;

    /* The application's call sites: mostly libc, some in this program. */
    pool = malloc(n_addrs * sizeof(*pool));
    st = malloc(n_stacks * sizeof(*st));
    depth = malloc(n_stacks * sizeof(*depth));
    if (pool == NULL || st == NULL || depth == NULL)
        return 1;
    /* This program's call sites lie inside its functions (a random text
     * address may fall in padding, which tools name differently). */
    {
        const uint64_t fns[] = {(uint64_t)(uintptr_t)&main,
                                (uint64_t)(uintptr_t)&skewed,
                                (uint64_t)(uintptr_t)&text_of,
                                (uint64_t)(uintptr_t)&find_text};

        for (size_t i = 0; i < n_addrs; i++)
            pool[i] = i % 8 == 7 ? fns[rnd() % 4] + 4 + rnd() % 24
                                 : in(libc);
    }
    (void)self;
    /* jemalloc's own frames: a real dump has only a few distinct ones. */
    for (size_t i = 0; i < 24; i++)
        jpool[i] = in(jem);
    for (size_t i = 0; i < n_stacks; i++) {
        uint64_t objs = 1 + rnd() % 64, size = 16ull << (rnd() % 17);

        st[i].objs = objs;
        st[i].bytes = objs * size;
        depth[i] = 4 + rnd() % 11;
        tot_objs += objs;
        tot_bytes += st[i].bytes;
    }

    out = fopen(argv[1], "w");
    if (out == NULL) {
        perror(argv[1]);
        return 1;
    }
    fprintf(out, "heap_v2/524288\n  t*: %" PRIu64 ": %" PRIu64
                 " [0: 0]\n  t0: %" PRIu64 ": %" PRIu64 " [0: 0]\n",
            tot_objs, tot_bytes, tot_objs, tot_bytes);
    for (size_t i = 0; i < n_stacks; i++) {
        /* jemalloc's frames (prof_backtrace and its callers), malloc,
         * the application, main. Each stack distinct by construction:
         * its first application frame walks the pool. */
        fprintf(out, "@ 0x%" PRIx64 " 0x%" PRIx64 " 0x%" PRIx64,
                jpool[i % 8], jpool[8 + i % 16], malloc_pc);
        fprintf(out, " 0x%" PRIx64, pool[i % n_addrs]);
        for (size_t d = 1; d < depth[i]; d++)
            fprintf(out, " 0x%" PRIx64, pool[skewed(n_addrs)]);
        fprintf(out, " 0x%" PRIx64 "\n", main_pc);
        fprintf(out, "  t*: %" PRIu64 ": %" PRIu64 " [0: 0]\n", st[i].objs,
                st[i].bytes);
        fprintf(out, "  t0: %" PRIu64 ": %" PRIu64 " [0: 0]\n", st[i].objs,
                st[i].bytes);
    }
    fputs("\nMAPPED_LIBRARIES:\n", out);
    maps = fopen("/proc/self/maps", "r");
    if (maps == NULL) {
        perror("/proc/self/maps");
        return 1;
    }
    while ((n = fread(buf, 1, sizeof(buf), maps)) > 0)
        fwrite(buf, 1, n, out);
    fclose(maps);
    if (fclose(out) != 0) {
        perror(argv[1]);
        return 1;
    }
    free(pool);
    free(st);
    free(depth);
    return 0;
}
