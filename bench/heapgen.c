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
 * usage: heapgen OUT [STACKS [ADDRESSES [SEED [SHAPE]]]]
 *        (65536 40000 1 libc)
 *
 * SHAPE says where the application frames are and how deep stacks go:
 *   libc     7 in 8 call sites in libc, the rest in this program; 4..14
 *            application frames (the default)
 *   self     every call site in this program's own functions (256 of
 *            them, full symbols): few distinct addresses
 *   deep     as libc, 30..60 application frames
 *   shallow  as libc, 1..3 application frames
 *   few      a dump like a small multi-threaded program's: 5-deep call
 *            chains through 16 of this program's functions, 46 distinct
 *            addresses, three threads' lines per stack (STACKS and
 *            ADDRESSES are ignored but for STACKS)
 *   random   drawn from SEED, not chosen by us: stacks 4 Ki..64 Ki,
 *            application frames from 1..40 to that plus 1..30, distinct
 *            addresses 16..50000, the share of call sites in this
 *            program 0, 1/8, 1/2 or all (then in 16..256 of its
 *            functions), 1..4 threads' lines per stack (STACKS and
 *            ADDRESSES are the draw's); its parameters are printed
 *
 * Frame choice is skewed (a few hot callers, a long tail), so a top-20 is
 * meaningful; counts are sampled-looking (objs 1..64, sizes 16 B..1 MiB)
 * under heap_v2/524288, jemalloc's default lg_prof_sample of 19.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <link.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

struct range {
    uint64_t lo, hi;
};

/* The "self" shape's call sites: 256 small functions of this program. */
#define GEN_FN(n)                                                         \
    __attribute__((noinline, used)) static uint64_t gen_fn_##n(uint64_t x) \
    {                                                                     \
        x ^= x >> 7;                                                      \
        x *= 0x9E3779B97F4A7C15ull + (n);                                 \
        x ^= x >> 13;                                                     \
        return x * (2 * (n) + 1);                                         \
    }
#define GEN_FN16(h)                                                       \
    GEN_FN(h##0) GEN_FN(h##1) GEN_FN(h##2) GEN_FN(h##3) GEN_FN(h##4)      \
    GEN_FN(h##5) GEN_FN(h##6) GEN_FN(h##7) GEN_FN(h##8) GEN_FN(h##9)      \
    GEN_FN(h##a) GEN_FN(h##b) GEN_FN(h##c) GEN_FN(h##d) GEN_FN(h##e)      \
    GEN_FN(h##f)
#define GEN_REF(n) &gen_fn_##n,
#define GEN_REF16(h)                                                      \
    GEN_REF(h##0) GEN_REF(h##1) GEN_REF(h##2) GEN_REF(h##3)               \
    GEN_REF(h##4) GEN_REF(h##5) GEN_REF(h##6) GEN_REF(h##7)               \
    GEN_REF(h##8) GEN_REF(h##9) GEN_REF(h##a) GEN_REF(h##b)               \
    GEN_REF(h##c) GEN_REF(h##d) GEN_REF(h##e) GEN_REF(h##f)
GEN_FN16(0x0) GEN_FN16(0x1) GEN_FN16(0x2) GEN_FN16(0x3)
GEN_FN16(0x4) GEN_FN16(0x5) GEN_FN16(0x6) GEN_FN16(0x7)
GEN_FN16(0x8) GEN_FN16(0x9) GEN_FN16(0xa) GEN_FN16(0xb)
GEN_FN16(0xc) GEN_FN16(0xd) GEN_FN16(0xe) GEN_FN16(0xf)
static uint64_t (*const gen_fns[256])(uint64_t) = {
    GEN_REF16(0x0) GEN_REF16(0x1) GEN_REF16(0x2) GEN_REF16(0x3)
    GEN_REF16(0x4) GEN_REF16(0x5) GEN_REF16(0x6) GEN_REF16(0x7)
    GEN_REF16(0x8) GEN_REF16(0x9) GEN_REF16(0xa) GEN_REF16(0xb)
    GEN_REF16(0xc) GEN_REF16(0xd) GEN_REF16(0xe) GEN_REF16(0xf)
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
    const char *shape = argc > 5 ? argv[5] : "libc";
    size_t dmin = 4, dspan = 11; /* application frames: dmin + [0, dspan) */
    bool self_only = false;
    size_t n_fns = 256;      /* this program's functions used */
    unsigned self_share = 8; /* 1 in self_share call sites are ours
                                (libc shapes); 0: none */
    unsigned n_threads = 1;  /* t<N> lines per stack */
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
    if (strcmp(shape, "self") == 0) {
        self_only = true;
    } else if (strcmp(shape, "few") == 0) {
        self_only = true;
        n_fns = 16;
        n_addrs = 46;
        dmin = 5;
        dspan = 1;
        n_threads = 3;
    } else if (strcmp(shape, "random") == 0) {
        static const unsigned shares[] = {0, 8, 2, 1};
        unsigned share = shares[rnd() % 4];

        n_stacks = 4096 + rnd() % (65536 - 4096 + 1);
        dmin = 1 + rnd() % 40;
        dspan = 1 + rnd() % 30;
        n_addrs = 16 + rnd() % (50000 - 16 + 1);
        self_only = share == 1;
        self_share = share;
        n_fns = 16 + rnd() % (256 - 16 + 1);
        n_threads = 1 + rnd() % 4;
        fprintf(stderr, "heapgen: random seed %s: %zu stacks, %zu..%zu "
                        "application frames, %zu addresses, %s, %zu "
                        "functions of ours, %u threads\n",
                argc > 4 ? argv[4] : "1", n_stacks, dmin, dmin + dspan - 1,
                n_addrs,
                share == 0   ? "all in libc"
                : share == 1 ? "all in this program"
                : share == 2 ? "half in this program"
                             : "1 in 8 in this program",
                n_fns, n_threads);
    } else if (strcmp(shape, "deep") == 0) {
        dmin = 30;
        dspan = 31;
    } else if (strcmp(shape, "shallow") == 0) {
        dmin = 1;
        dspan = 3;
    } else if (strcmp(shape, "libc") != 0) {
        fprintf(stderr, "heapgen: shape '%s' is none of libc, self, deep, "
                        "shallow, few, random\n",
                shape);
        return 2;
    }
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
            pool[i] = self_only ? (uint64_t)(uintptr_t)gen_fns[rnd() % n_fns] +
                                      4 + rnd() % 12
                      : self_share != 0 && i % self_share == self_share - 1
                          ? (self_share == 8
                                 ? fns[rnd() % 4] + 4 + rnd() % 24
                                 : (uint64_t)(uintptr_t)gen_fns[rnd() % n_fns] +
                                       4 + rnd() % 12)
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
        depth[i] = dmin + rnd() % dspan;
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
        /* The threads' shares: the first takes what the others leave. */
        for (unsigned t = n_threads; t-- > 0;) {
            uint64_t o = t == 0 ? st[i].objs : st[i].objs / (n_threads + 1);
            uint64_t b = t == 0 ? st[i].bytes : st[i].bytes / (n_threads + 1);

            if (t == 0)
                for (unsigned k = 1; k < n_threads; k++) {
                    o -= st[i].objs / (n_threads + 1);
                    b -= st[i].bytes / (n_threads + 1);
                }
            fprintf(out, "  t%u: %" PRIu64 ": %" PRIu64 " [0: 0]\n", t, o, b);
        }
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
