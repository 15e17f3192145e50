/* SPDX-License-Identifier: MIT
 *
 * jemalloc 5.3 heap_v2 dump parser: the text prof.dump writes ("HEAP
 * PROFILE FORMAT" in jemalloc(3); writer prof_dump_header/prof_dump_gctx
 * in src/prof_data.c, maps in src/prof_sys.c) read into flat arrays: one
 * record per backtrace with its `t*:` counters, all frame addresses in
 * one uint64_t array, and the MAPPED_LIBRARIES text. Pure: no I/O, no
 * SQLite, no libevent.
 *
 *   heap_v2/<period>                      period = 2^lg_prof_sample
 *     t*: <objs>: <bytes> [<objs>: <bytes>]   process total, then one
 *     t<uid>: ... [thread name]               line per thread
 *   @ 0x<pc> 0x<pc> ...                   one backtrace, frame 0 first
 *     t*: <objs>: <bytes> [<aobjs>: <abytes>]  the backtrace's total,
 *     t<uid>: ...                             then per-thread lines
 *   (blank line)
 *   MAPPED_LIBRARIES:
 *   <copy of /proc/<pid>/maps>
 *
 * Trust: safe on hostile input. Every number is range-checked, nothing is
 * read past len, nothing asserts, and memory is O(len) (arrays grow only
 * as records are read). An error sets err to "line N: expected ..., got
 * '<text>'" with N counted in the file as given (leak lines included).
 *
 * jemalloc's leak report (`<jemalloc>: Leak approximation summary ...`)
 * goes to fd 2; when the process had closed stderr the dump itself got fd
 * 2 and those lines land inside the file, before `heap_v2/` in small
 * dumps or spliced into the middle of a line in large ones (the buffered
 * writer flushes at arbitrary offsets). The parser removes every
 * `<jemalloc>: ` run through its newline before reading, so the spliced
 * line is rejoined; n_leak_lines counts what was removed.
 *
 * Scaling: the counters are samples. Each backtrace's t* line is scaled
 * exactly as jeprof's AdjustSamples does for heap_v2 (see
 * ha_heapv2_scale()); the doubles are stored next to the raw counters.
 *
 * Threads: the header's `t<uid>:` lines are kept (one per thread
 * jemalloc tracks: prof_tdata_dump_iter, which writes the thread's name
 * after its counts when it has one: thread.prof.name, or the kernel's
 * name of the thread at its last sample with opt.prof_sys_thread_name),
 * and so are each backtrace's (prof_tctx_dump_iter: the uid and its
 * counts, no name). uid is jemalloc's own thread number (thr_uid, from
 * 0 in creation order), not the kernel's tid. A name holds the bytes
 * jemalloc accepts (isgraph or isblank, prof_thread_name_set_impl); any
 * other byte reads as '?', and a name is cut at HA_HEAPV2_NAME_MAX.
 * jemalloc unbiases each line on its own (prof_do_unbias, nonlinear),
 * so a backtrace's thread lines need not add up to its t* line: a
 * thread's share of a backtrace is its part of the thread lines' sum
 * (ha_heapv2_thread_share), applied to the scaled figures, so shares
 * add up to the backtrace's figures.
 */
#ifndef HA_HEAPV2_H
#define HA_HEAPV2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* Largest dump accepted: offsets and line numbers are 32-bit. */
#define HA_HEAPV2_MAX_LEN (1024u * 1024u * 1024u)

/* The four counters of a `t*:` or `t<uid>:` line. */
struct ha_heapv2_counts {
    uint64_t objs;       /* sampled objects in use */
    uint64_t bytes;      /* sampled bytes in use */
    uint64_t accum_objs; /* cumulative (opt.prof_accum), else 0 */
    uint64_t accum_bytes;
};

/* The longest thread name kept (jemalloc's own from the kernel are at
 * most 15 bytes; thread.prof.name has no limit). */
#define HA_HEAPV2_NAME_MAX 255

/* No name (ha_heapv2_thread.name_off). */
#define HA_HEAPV2_NO_NAME UINT32_MAX

/* A thread of the header: its summed counts and its name. */
struct ha_heapv2_thread {
    uint64_t uid;                /* jemalloc's thr_uid (UINT64_MAX: one
                                    written past 2^64) */
    struct ha_heapv2_counts raw; /* the line's counts as written */
    uint32_t name_off;           /* in ha_heapv2.names, NUL-terminated;
                                    HA_HEAPV2_NO_NAME: none written */
};

/* One backtrace's line for one thread. */
struct ha_heapv2_tline {
    uint64_t uid;                /* as ha_heapv2_thread.uid */
    struct ha_heapv2_counts raw;
};

/* One backtrace context. */
struct ha_heapv2_stack {
    uint32_t frame_off; /* first frame in ha_heapv2.frames */
    uint32_t n_frames;  /* frames, allocation site (frame 0) first */
    uint32_t line;      /* line of the '@' in the file, for messages */
    uint32_t n_threads; /* per-thread lines that followed t*: its lines
                           are tlines[tline_off .. + n_threads) */
    uint32_t tline_off;

    struct ha_heapv2_counts raw; /* the t* line as written */
    double objs;                 /* raw.objs/bytes scaled (jeprof) */
    double bytes;
    double accum_objs; /* raw.accum_* scaled the same way */
    double accum_bytes;
};

/* A parsed dump. Owns every array; free with ha_heapv2_free(). */
struct ha_heapv2 {
    uint64_t period;               /* heap_v2/<period> */
    struct ha_heapv2_counts total; /* header t* line (raw) */
    uint32_t n_threads;            /* header per-thread lines: threads[] */
    struct ha_heapv2_thread *threads; /* by uid (jemalloc's order; a
                                         text in another is sorted) */
    char *names;                   /* the threads' names, each
                                      NUL-terminated */
    size_t names_len;
    struct ha_heapv2_tline *tlines; /* every backtrace's thread lines */
    size_t n_tlines;

    struct ha_heapv2_stack *stacks; /* in file order */
    size_t n_stacks;
    uint64_t *frames; /* all backtraces' addresses, concatenated */
    size_t n_frames;

    double scaled_objs;  /* sum of stacks[].objs: jeprof's total */
    double scaled_bytes; /* sum of stacks[].bytes */
    double scaled_accum_objs;
    double scaled_accum_bytes;

    bool has_maps;    /* MAPPED_LIBRARIES: was present */
    char *maps;       /* its text (NUL-terminated; "" when absent) */
    size_t maps_len;  /* bytes in maps, excluding the NUL */
    size_t n_leak_lines; /* `<jemalloc>: ` lines removed */
};

/* Parses buf[0..len) (no NUL needed) into *out, which is zeroed first.
 * Returns 0, or -1 with the line and expectation in err and *out empty.
 * Memory: about 8 bytes per frame, 64 per backtrace, plus the maps text. */
int ha_heapv2_parse(const char *buf, size_t len, struct ha_heapv2 *out,
                    char *err, size_t errlen);

/* The same from a regular file's descriptor, read in chunks from offset
 * 0 (or where it is) into a window that is refilled as lines are taken:
 * no copy of the whole file is made (for a dump of tens of megabytes,
 * the copy and its fresh pages cost as much as the parse). size_hint is
 * its size (fstat), to size the arrays once. A dump holding jemalloc's
 * leak-report runs is read again whole and parsed as ha_heapv2_parse()
 * does. Returns as ha_heapv2_parse(); a read error is named in err. */
int ha_heapv2_parse_fd(int fd, uint64_t size_hint, struct ha_heapv2 *out,
                       char *err, size_t errlen);

/* The bytes ha_heapv2_parse_fd() reads at a time (default 1 MiB; 0
 * restores it): tests make it tiny so that every line crosses a refill.
 * Process-wide; not for use while a parse runs. */
void ha_heapv2_set_stream_chunk(size_t n);

/* Appends buf[0..len) to out with every `<jemalloc>: ` leak-report run
 * removed, as the parser sees it: the text jeprof can read. Returns 0 or
 * -1 on allocation failure. */
int ha_heapv2_clean(const char *buf, size_t len, struct ha_buf *out);

/* Frees what ha_heapv2_parse() allocated; *p is zeroed. NULL-tolerant. */
void ha_heapv2_free(struct ha_heapv2 *p);

/* Whether p carries cumulative counters: written by a process started
 * with opt.prof_accum, where every allocation sampled since profiling
 * began is counted, freed or not (jeprof --alloc_space). Without it
 * jemalloc writes "[0: 0]", so a total of zero cumulative objects means
 * there are none (with prof_accum the total is at least the in-use
 * count). */
static inline bool
ha_heapv2_has_accum(const struct ha_heapv2 *p)
{
    return p->total.accum_objs != 0;
}

/* A scaled figure as jeprof prints it (`--text --show_bytes`: Perl's %d
 * of a double, truncated toward zero), so a total or a row is jeprof's to
 * the byte; rounding put 8252123.76 one byte above jeprof's 8252123. */
static inline long long
ha_heapv2_jeprof_int(double v)
{
    return (long long)v;
}

/* The frames of stack i (n = stacks[i].n_frames). */
static inline const uint64_t *
ha_heapv2_stack_frames(const struct ha_heapv2 *p, size_t i)
{
    return p->frames + p->stacks[i].frame_off;
}

/* The name of thread t of p, or NULL when it has none. */
static inline const char *
ha_heapv2_thread_name(const struct ha_heapv2 *p,
                      const struct ha_heapv2_thread *t)
{
    return t->name_off == HA_HEAPV2_NO_NAME ? NULL : p->names + t->name_off;
}

/* Whether any thread of p has a name (prof_sys_thread_name, or
 * thread.prof.name set). */
bool ha_heapv2_has_names(const struct ha_heapv2 *p);

/* The header's thread of uid, or NULL (a backtrace's line for a thread
 * the header does not list: jemalloc never writes one). O(log n). */
const struct ha_heapv2_thread *ha_heapv2_thread_of(const struct ha_heapv2 *p,
                                                   uint64_t uid);

/* The sums of stack s's thread lines, per counter (objs, bytes,
 * accum_objs, accum_bytes into sum[0..3]), in doubles (hostile counts
 * near 2^64 do not wrap). A thread line's share of the stack's scaled
 * figure is its raw counter over the sum; a sum of 0 with a non-zero t*
 * counter (hostile input: jemalloc writes none) shares that figure with
 * no thread. */
void ha_heapv2_stack_thread_sums(const struct ha_heapv2 *p, size_t s,
                                 double sum[4]);

/* jeprof's heap_v2 scaling (AdjustSamples, sampling algorithm 2): with
 * sampling as a Poisson process of rate 1/period, an object of size s is
 * sampled with probability 1 - exp(-s/period), so a context with `objs`
 * samples of average size avg = bytes/objs stands for 1/(1-exp(-avg/period))
 * as many. Both counters are multiplied by that factor, in doubles.
 *
 * Like jeprof: objs == 0 leaves both as they are, and period 0 means no
 * scaling. Unlike jeprof, which dies dividing by zero, objs > 0 with
 * bytes == 0 (factor infinite; jemalloc never writes it) is also left
 * unscaled. */
void ha_heapv2_scale(uint64_t period, uint64_t objs, uint64_t bytes,
                     double *sobjs, double *sbytes);

#endif /* HA_HEAPV2_H */
