/* SPDX-License-Identifier: MIT
 *
 * bench/heaptop: reads a heap_v2 dump with prof/ (parse, scale,
 * symbolize with libdwfl, aggregate) and prints the top functions as
 * `jeprof --text --show_bytes` does, plus the time of each stage on
 * stderr. With -r N it repeats N times on one symbolizer: run 1 is cold,
 * later runs are warm (symbol cache kept). Each run's stages are timed
 * twice on stderr: wall seconds, then the process's CPU seconds (which a
 * loaded machine stretches less). bench/heap-profile compares it with
 * jeprof.
 *
 * usage: heaptop [-n ROWS] [-r RUNS] [-c] [-b BASE] [-i DIR [-w]] DUMP
 *   -c       collapsed stacks instead of the table
 *   -i DIR   symbol indexes (prof/symindex.h) are read from and written
 *            into DIR, as heapadmind's datadir/cache
 *   -w       at the end, wait for the indexes being written
 *   -j       jeprof's inline quirk (struct ha_agg.jeprof_inline)
 *   -b BASE  diff: DUMP minus BASE (jeprof --base)
 *   -s       print the symbol table instead (test/data/heap/<dump>.syms:
 *            pc, flags (with "/<bytes>" when the function's symbol size
 *            is known), then func, file, line per frame, tab-separated,
 *            innermost first): the fake symbolizer check_prof reads
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/log.h"
#include "prof/aggregate.h"
#include "prof/heapv2.h"
#include "prof/maps.h"
#include "prof/symbolize.h"

/* Log lines (the symbol indexes') to stderr. */
static void
log_line(int level, const char *line, void *arg)
{
    (void)level;
    (void)arg;
    ha_log_write_fd(2, line);
}

static const struct ha_log_sink sink = {log_line, NULL, HA_LOG_INFO};

/* The index builder's thread logs there too. */
static void
bind_log(void *arg)
{
    (void)arg;
    ha_log_bind(&sink);
}

static double
now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CPU seconds of the process so far (user + system, all threads). */
static double
cpu_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __attribute__((unused)) char *
slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0 || (buf = malloc((size_t)n + 1)) == NULL ||
        fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(1);
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

struct loaded {
    struct ha_heapv2 prof;
    struct ha_maps maps;
    struct ha_syms syms;
};

/* Stage times of a run: [0] wall, [1] CPU seconds. */
struct times {
    double parse[2], sym[2], agg[2], total[2];
};

static void
load(struct ha_symbolizer *s, const char *path, struct loaded *l,
     struct times *t)
{
    char err[256];
    size_t n_pcs;
    uint64_t *pcs;
    uint32_t *index;
    double t0 = now(), c0 = cpu_now();
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    /* As heapadmin reads a dump: parsed as it is read, in chunks
     * (ha_heapv2_parse_fd), so reading and parsing are one stage. */
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        exit(1);
    }
    if (ha_heapv2_parse_fd(fd, (uint64_t)st.st_size, &l->prof, err,
                           sizeof(err)) != 0 ||
        ha_maps_parse(l->prof.maps, l->prof.maps_len, &l->maps, err,
                      sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        exit(1);
    }
    close(fd);
    t->parse[0] += now() - t0;
    t->parse[1] += cpu_now() - c0;
    t0 = now();
    c0 = cpu_now();
    memset(&l->syms, 0, sizeof(l->syms));
    if (ha_agg_lookup_index(&l->prof, &pcs, &n_pcs, &index) != 0 ||
        ha_symbolizer_run(s, &l->maps, pcs, n_pcs, &l->syms, err,
                          sizeof(err)) != 0) {
        fprintf(stderr, "%s: %s\n", path, err);
        exit(1);
    }
    ha_syms_set_frame_index(&l->syms, pcs, n_pcs, index, l->prof.n_frames);
    t->sym[0] += now() - t0;
    t->sym[1] += cpu_now() - c0;
    free(pcs);
}

static void
unload(struct loaded *l)
{
    ha_heapv2_free(&l->prof);
    ha_maps_free(&l->maps);
    ha_syms_free(&l->syms);
}

int
main(int argc, char **argv)
{
    const char *base = NULL;
    size_t rows = 20;
    int runs = 1, opt;
    bool collapsed = false, symtab = false, jq = false, wait_index = false;
    struct ha_symbolizer_limits lim;
    struct ha_symbolizer_stats st;
    struct ha_symbolizer *s;

    memset(&lim, 0, sizeof(lim));
    ha_log_bind(&sink);
    lim.thread_init = bind_log;
    while ((opt = getopt(argc, argv, "n:r:cb:sji:w")) != -1) {
        switch (opt) {
        case 'n': rows = (size_t)atol(optarg); break;
        case 'r': runs = atoi(optarg); break;
        case 'c': collapsed = true; break;
        case 'b': base = optarg; break;
        case 's': symtab = true; break;
        case 'j': jq = true; break;
        case 'i': lim.index_dir = optarg; break;
        case 'w': wait_index = true; break;
        default:
            fprintf(stderr, "usage: heaptop [-n ROWS] [-r RUNS] [-c] "
                            "[-b BASE] DUMP\n");
            return 2;
        }
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "usage: heaptop [-n ROWS] [-r RUNS] [-c] [-b BASE] "
                        "DUMP\n");
        return 2;
    }
    s = ha_symbolizer_new(&lim);
    for (int r = 0; r < runs; r++) {
        struct loaded cur, old;
        struct ha_agg agg = {0};
        struct ha_buf out = HA_BUF_INIT;
        struct times t = {0};
        double t0 = now(), c0 = cpu_now(), t_agg, c_agg;
        char err[256];

        load(s, argv[optind], &cur, &t);
        if (base != NULL)
            load(s, base, &old, &t);
        t_agg = now();
        c_agg = cpu_now();
        agg.jeprof_inline = jq;
        if (symtab) {
            for (size_t i = 0; i < cur.syms.n_addrs; i++) {
                const struct ha_syms_addr *a = &cur.syms.addrs[i];

                ha_buf_printf(&out, "%" PRIx64 "\t%u", a->pc, a->flags);
                if (a->fsize > 0)
                    ha_buf_printf(&out, "/%u", a->fsize);
                for (uint32_t k = 0; k < a->n; k++) {
                    const struct ha_syms_frame *f =
                        &cur.syms.frames[a->first + k];

                    ha_buf_printf(&out, "\t%s\t%s\t%u",
                                  ha_syms_str(&cur.syms, f->func),
                                  ha_syms_str(&cur.syms, f->file), f->line);
                }
                ha_buf_append_u8(&out, '\n');
            }
        } else if (collapsed) {
            ha_agg_collapsed(&cur.prof, &cur.syms, false, &out);
        } else {
            if (ha_agg_add(&agg, &cur.prof, &cur.syms, 1, false, err,
                           sizeof(err)) != 0 ||
                (base != NULL &&
                 ha_agg_add(&agg, &old.prof, &old.syms, -1, false, err,
                            sizeof(err)) != 0)) {
                fprintf(stderr, "%s\n", err);
                return 1;
            }
            ha_agg_format_text(&agg, false, rows, &out);
        }
        t.agg[0] = now() - t_agg;
        t.agg[1] = cpu_now() - c_agg;
        if (r == runs - 1)
            fwrite(out.data, 1, out.len, stdout);
        t.total[0] = now() - t0;
        t.total[1] = cpu_now() - c0;
        fprintf(stderr, "run %d (%s): read and parse %.3f s, symbolize "
                "%.3f s, aggregate %.3f s, total %.3f s; %zu stacks, %zu "
                "addresses\n",
                r + 1, r == 0 ? "cold" : "warm", t.parse[0], t.sym[0],
                t.agg[0], t.total[0], cur.prof.n_stacks, cur.syms.n_addrs);
        fprintf(stderr, "run %d (%s) cpu: read and parse %.3f s, symbolize "
                "%.3f s, aggregate %.3f s, total %.3f s\n",
                r + 1, r == 0 ? "cold" : "warm", t.parse[1], t.sym[1],
                t.agg[1], t.total[1]);
        ha_buf_free(&out);
        ha_agg_free(&agg);
        unload(&cur);
        if (base != NULL)
            unload(&old);
    }
    if (wait_index &&
        ha_symbolizer_index_wait(s, (int64_t)(now() + 120) * 1000000000) != 0)
        fprintf(stderr, "indexes not written within 120 s\n");
    ha_symbolizer_get_stats(s, &st);
    fprintf(stderr, "symbol indexes: %llu modules named from one (%llu "
            "addresses), %llu refused, %llu written, %llu not written\n",
            (unsigned long long)st.index_modules,
            (unsigned long long)st.index_addrs,
            (unsigned long long)st.index_refused,
            (unsigned long long)st.index_written,
            (unsigned long long)st.index_failed);
    ha_symbolizer_free(s);
    return 0;
}
