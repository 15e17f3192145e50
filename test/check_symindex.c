/* SPDX-License-Identifier: MIT
 *
 * Unit tests for symbol indexes: the format (prof/symindex.c: round
 * trip, the naming rule, every flipped bit and every truncation refused,
 * forged files with a good CRC refused by their structure), the
 * directory (prof/symcache.c: made private, files of another user, of a
 * wide mode, links and directories refused, atomic writes, the bound
 * oldest first, build-ids from ELF headers), and the symbolizer with
 * them on this process's own libc: the same names with and without an
 * index at every 32nd byte of its code, and a damaged, truncated,
 * planted or out-of-date index refused (never a name from it) and
 * written again.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "check_main.h"

#include "core/buf.h"
#include "core/clock.h"
#include "core/util.h"
#include "prof/buildid.h"
#include "prof/maps.h"
#include "prof/symbolize.h"
#include "prof/symcache.h"
#include "prof/symindex.h"
#include "prof/syms.h"

/* ------------------------------------------------------------------
 * A small index made by hand
 * ------------------------------------------------------------------ */

#define BASE 0x401000u

/* "", then the strings at their offsets. */
static const char strs[] = "\0main\0inl_a\0inl_b\0a.c\0b.h\0sym_x\0"
                           "DWARF in the file\0/dbg/x.debug\0";
enum { S_MAIN = 1, S_INL_A = 6, S_INL_B = 12, S_AC = 18, S_BH = 22,
       S_SYM = 26, S_DETAIL = 32, S_DBG = 50 };

static const struct ha_symindex_seg segs[] = {{0x1000, 0x2000, BASE}};
static const struct ha_symindex_sym syms[] = {
    {BASE + 0x100, 0x10, S_SYM, 0},
};
/* main <- inl_a (at a.c:10) <- inl_b (at b.h:20) */
static const struct ha_symindex_node nodes[] = {
    {S_MAIN, 0, 0, HA_SYMINDEX_NONE},
    {S_INL_A, S_AC, 10, 0},
    {S_INL_B, S_BH, 20, 1},
    {0, 0, 0, HA_SYMINDEX_NONE},       /* a nameless function */
    {S_INL_A, S_AC, 30, 3},            /* ... with a named callee */
};
static const struct ha_symindex_span chains[] = {
    {0x00, 0}, {0x10, 2}, {0x20, 1}, {0x30, HA_SYMINDEX_NONE},
    {0x40, 4}, {0x50, 3}, {0x60, HA_SYMINDEX_NONE},
};
static const struct ha_symindex_line lines[] = {
    {0x00, S_AC, 5}, {0x10, S_BH, 7}, {0x28, 0, 0},
};

static void
parts_init(struct ha_symindex_parts *p)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->h.build_id, sizeof(p->h.build_id), "%s", "00ff11ee");
    p->h.flags = HA_SYMINDEX_F_NO_FINI;
    p->h.from = HA_SYMS_SRC_DWARF;
    p->h.detail = S_DETAIL;
    p->h.debug_path = S_DBG;
    p->h.debug.size = 1234;
    p->h.module.size = 99;
    p->h.module.mtime_s = 7;
    p->h.base = BASE;
    p->segs = segs;
    p->n_segs = HA_ARRAY_SIZE(segs);
    p->syms = syms;
    p->n_syms = HA_ARRAY_SIZE(syms);
    p->nodes = nodes;
    p->n_nodes = HA_ARRAY_SIZE(nodes);
    p->chains = chains;
    p->n_chains = HA_ARRAY_SIZE(chains);
    p->lines = lines;
    p->n_lines = HA_ARRAY_SIZE(lines);
    p->strs = strs;
    p->strs_len = sizeof(strs);
}

static void
encode(const struct ha_symindex_parts *p, struct ha_buf *out)
{
    ha_buf_init(out);
    ck_assert_int_eq(ha_symindex_encode(p, out), 0);
}

/* ix over the bytes of b, which must be fit; an 8-aligned copy is kept
 * in *keep (free it). */
static void
open_ok(struct ha_symindex *ix, const struct ha_buf *b, void **keep)
{
    char why[256] = "";

    *keep = malloc(b->len);
    memcpy(*keep, b->data, b->len);
    ck_assert_msg(ha_symindex_open(ix, *keep, b->len, why, sizeof(why)) == 0,
                  "refused: %s", why);
}

/* Whether len bytes at data are refused; why gets the reason. */
static bool
refused(const void *data, size_t len, char *why, size_t whylen)
{
    struct ha_symindex ix;
    void *copy = malloc(len ? len : 1);
    bool r;

    memcpy(copy, data, len);
    r = ha_symindex_open(&ix, copy, len, why, whylen) != 0;
    free(copy);
    return r;
}

/* The CRC of an index whose bytes were edited on purpose: a forged file
 * that passes the CRC, so its structure is what is judged. */
static void
recrc(uint8_t *data, size_t len)
{
    size_t at = offsetof(struct ha_symindex_header, crc);
    uint32_t zero = 0, crc;

    memcpy(data + at, &zero, sizeof(zero));
    crc = ha_symindex_crc32c(0, data, len);
    memcpy(data + at, &crc, sizeof(crc));
}

/* ------------------------------------------------------------------
 * The format
 * ------------------------------------------------------------------ */

/* Frames of vaddr as the symbolizer makes them from an index. */
static size_t
frames_at(const struct ha_symindex *ix, uint64_t va,
          struct ha_syms_frame *fr, enum ha_symindex_naming *naming)
{
    struct ha_symindex_link chain[HA_SYMINDEX_MAX_DEPTH];
    uint32_t file, line;
    size_t depth = ha_symindex_chain(ix, va, chain, HA_SYMINDEX_MAX_DEPTH,
                                     NULL);
    size_t n;

    ha_symindex_line(ix, va, &file, &line, NULL);
    n = ha_symindex_frames(chain, depth, file, line, fr,
                           HA_SYMINDEX_MAX_DEPTH);
    *naming = HA_SYMINDEX_NAMED;
    if (ha_symindex_wants_symbol(fr, n))
        *naming = ha_symindex_with_symbol(fr, &n,
                                          ha_symindex_symbol(ix, va, NULL),
                                          file, line);
    return n;
}

/* Table-driven: one address, the frames it must get. */
static const struct {
    uint64_t va;
    enum ha_symindex_naming naming;
    size_t n;
    uint32_t func[3], file[3], line[3];
} named[] = {
    /* main alone, at a.c:5 */
    {BASE + 0x04, HA_SYMINDEX_NAMED, 1, {S_MAIN}, {S_AC}, {5}},
    /* inl_b at b.h:7, inlined into inl_a at b.h:20, into main at a.c:10 */
    {BASE + 0x12, HA_SYMINDEX_NAMED, 3, {S_INL_B, S_INL_A, S_MAIN},
     {S_BH, S_BH, S_AC}, {7, 20, 10}},
    /* inl_a, no line past 0x28 */
    {BASE + 0x2a, HA_SYMINDEX_NAMED, 2, {S_INL_A, S_MAIN}, {0, S_AC},
     {0, 10}},
    /* no chain, no symbol */
    {BASE + 0x34, HA_SYMINDEX_UNNAMED, 0, {0}, {0}, {0}},
    /* a named callee in a nameless function, no symbol */
    {BASE + 0x44, HA_SYMINDEX_OUTER_UNNAMED, 2, {S_INL_A, 0}, {0, S_AC},
     {0, 30}},
    /* no chain, the symbol's name */
    {BASE + 0x10f, HA_SYMINDEX_NAMED, 1, {S_SYM}, {0}, {0}},
    /* past the symbol's size: nothing */
    {BASE + 0x110, HA_SYMINDEX_UNNAMED, 0, {0}, {0}, {0}},
    /* below the base */
    {BASE - 1, HA_SYMINDEX_UNNAMED, 0, {0}, {0}, {0}},
};

START_TEST(test_symindex_round_trip)
{
    struct ha_symindex_parts p;
    struct ha_symindex ix;
    struct ha_syms_frame fr[HA_SYMINDEX_MAX_DEPTH];
    enum ha_symindex_naming naming;
    struct ha_buf b;
    void *keep;
    uint64_t va;
    size_t i = (size_t)_i, n;

    parts_init(&p);
    encode(&p, &b);
    open_ok(&ix, &b, &keep);
    ck_assert_str_eq(ix.h->build_id, "00ff11ee");
    ck_assert_uint_eq(ix.h->flags, HA_SYMINDEX_F_NO_FINI);
    ck_assert_str_eq(ha_symindex_str(&ix, ix.h->detail), "DWARF in the file");
    ck_assert_str_eq(ha_symindex_str(&ix, ix.h->debug_path), "/dbg/x.debug");
    ck_assert_uint_eq(ix.h->debug.size, 1234);
    ck_assert_uint_eq(ix.h->module.mtime_s, 7);
    ck_assert(ha_symindex_vaddr(&ix, 0x1800, &va));
    ck_assert_uint_eq(va, BASE + 0x800);
    ck_assert(!ha_symindex_vaddr(&ix, 0x3000, &va));
    /* The symbol's size, which wrapper detection reads, with its name;
     * 0 past it. */
    ck_assert_uint_eq(ha_symindex_symbol(&ix, BASE + 0x10f, &va), S_SYM);
    ck_assert_uint_eq(va, 0x10);
    ck_assert_uint_eq(ha_symindex_symbol(&ix, BASE + 0x110, &va), 0);
    ck_assert_uint_eq(va, 0);

    n = frames_at(&ix, named[i].va, fr, &naming);
    ck_assert_msg(naming == named[i].naming && n == named[i].n,
                  "case %zu: naming %d n %zu, expected %d %zu", i, naming,
                  n, named[i].naming, named[i].n);
    for (size_t k = 0; k < n; k++)
        ck_assert_msg(fr[k].func == named[i].func[k] &&
                          fr[k].file == named[i].file[k] &&
                          fr[k].line == named[i].line[k],
                      "case %zu frame %zu: %u %u:%u, expected %u %u:%u", i,
                      k, fr[k].func, fr[k].file, fr[k].line,
                      named[i].func[k], named[i].file[k], named[i].line[k]);
    free(keep);
    ha_buf_free(&b);
}
END_TEST

/* A cursor never changes an answer: every address of a sweep, in order,
 * backwards and jumping, looked up with one and without. */
START_TEST(test_symindex_cursor)
{
    struct ha_symindex_parts p;
    struct ha_symindex ix;
    struct ha_symindex_cursor at = HA_SYMINDEX_CURSOR_INIT;
    struct ha_buf b;
    void *keep;
    uint64_t order[3 * 0x80];
    size_t n = 0;

    parts_init(&p);
    encode(&p, &b);
    open_ok(&ix, &b, &keep);
    for (uint64_t k = 0; k < 0x80; k++)
        order[n++] = BASE - 4 + k;
    for (uint64_t k = 0x80; k > 0; k--)
        order[n++] = BASE - 4 + k - 1;
    for (uint64_t k = 0; k < 0x80; k++)
        order[n++] = BASE - 4 + (k * 37) % 0x80;
    for (size_t i = 0; i < n; i++) {
        struct ha_symindex_link c1[8], c2[8];
        uint32_t f1, l1, f2, l2;
        size_t d1 = ha_symindex_chain(&ix, order[i], c1, 8, &at);
        size_t d2 = ha_symindex_chain(&ix, order[i], c2, 8, NULL);

        ha_symindex_line(&ix, order[i], &f1, &l1, &at);
        ha_symindex_line(&ix, order[i], &f2, &l2, NULL);
        ck_assert_msg(d1 == d2 && f1 == f2 && l1 == l2 &&
                          (d1 == 0 || c1[0].func == c2[0].func),
                      "0x%llx (lookup %zu) differs with a cursor",
                      (unsigned long long)order[i], i);
    }
    free(keep);
    ha_buf_free(&b);
}
END_TEST

/* A symbol holds [addr, addr + size): never the nearest one below, and
 * only the 16 below an address are looked at. */
START_TEST(test_symindex_cover)
{
    struct ha_symindex_sym s[24];
    size_t n = 0;

    s[n++] = (struct ha_symindex_sym){0x1000, 0x1000, 1, 0}; /* outer */
    for (int k = 0; k < 20; k++) /* tiny ones inside it */
        s[n++] = (struct ha_symindex_sym){0x1100 + 4 * (uint64_t)k, 2, 2, 0};
    s[n++] = (struct ha_symindex_sym){0x3000, 0x10, 3, 0};

    ck_assert_uint_eq(ha_symindex_cover(s, n, sizeof(*s), 0x1001), 0);
    ck_assert_uint_eq(ha_symindex_cover(s, n, sizeof(*s), 0x1104), 2);
    /* between two tiny ones, within 16 of the outer: the outer */
    ck_assert_uint_eq(ha_symindex_cover(s, n, sizeof(*s), 0x110a), 0);
    /* above all 20 tiny ones: more than 16 below, the outer not seen */
    ck_assert_uint_eq(ha_symindex_cover(s, n, sizeof(*s), 0x1800), SIZE_MAX);
    /* a gap, and past the end */
    ck_assert_uint_eq(ha_symindex_cover(s, n, sizeof(*s), 0x2500), SIZE_MAX);
    ck_assert_uint_eq(ha_symindex_cover(s, n, sizeof(*s), 0x3010), SIZE_MAX);
    ck_assert_uint_eq(ha_symindex_cover(s, n, sizeof(*s), 0x0fff), SIZE_MAX);
    ck_assert_uint_eq(ha_symindex_cover(s, 0, sizeof(*s), 0x1001), SIZE_MAX);
}
END_TEST

/* The CRC is CRC-32C (the iSCSI check value), with the CPU's instruction
 * or the table, in one piece or several, at every length and alignment. */
START_TEST(test_symindex_crc)
{
    uint8_t buf[300];

    ck_assert_uint_eq(ha_symindex_crc32c(0, "123456789", 9), 0xe3069283u);
    ck_assert_uint_eq(ha_symindex_crc32c_table(0, "123456789", 9),
                      0xe3069283u);
    ck_assert_uint_eq(ha_symindex_crc32c(ha_symindex_crc32c(0, "1234", 4),
                                         "56789", 5),
                      0xe3069283u);
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)(i * 37 + 11);
    for (size_t at = 0; at < 9; at++)
        for (size_t len = 0; at + len <= sizeof(buf); len += 7)
            ck_assert_uint_eq(ha_symindex_crc32c(0, buf + at, len),
                              ha_symindex_crc32c_table(0, buf + at, len));
}
END_TEST

/* ------------------------------------------------------------------
 * Damage
 * ------------------------------------------------------------------ */

/* Any one bit flipped anywhere is refused. */
START_TEST(test_symindex_every_bit)
{
    struct ha_symindex_parts p;
    struct ha_buf b;
    char why[256];

    parts_init(&p);
    encode(&p, &b);
    for (size_t at = 0; at < b.len; at++) {
        for (int bit = 0; bit < 8; bit++) {
            b.data[at] ^= (uint8_t)(1u << bit);
            ck_assert_msg(refused(b.data, b.len, why, sizeof(why)),
                          "byte %zu bit %d flipped: not refused", at, bit);
            b.data[at] ^= (uint8_t)(1u << bit);
        }
    }
    ck_assert(!refused(b.data, b.len, why, sizeof(why)));
    ha_buf_free(&b);
}
END_TEST

/* Every shorter length is refused, and so is a longer file. */
START_TEST(test_symindex_truncated)
{
    struct ha_symindex_parts p;
    struct ha_buf b;
    char why[256];

    parts_init(&p);
    encode(&p, &b);
    for (size_t len = 0; len < b.len; len++) {
        ck_assert_msg(refused(b.data, len, why, sizeof(why)),
                      "%zu of %zu bytes: not refused", len, b.len);
        ck_assert_msg(strstr(why, "truncated") != NULL, "%zu: %s", len, why);
    }
    ha_buf_append(&b, "\0\0\0\0\0\0\0\0", 8);
    ck_assert(refused(b.data, b.len, why, sizeof(why)));
    ck_assert_msg(strstr(why, "extended") != NULL, "%s", why);
    ha_buf_free(&b);
}
END_TEST

/* Forged files: a good CRC, a broken structure, each refused with its
 * reason. */
enum forge {
    F_MAGIC, F_ORDER, F_VERSION, F_BUILD_ID, F_FROM, F_SECT, F_STRS_NUL,
    F_DETAIL, F_PARENT, F_SPAN_NODE, F_SPAN_ORDER, F_LINE_ORDER, F_LINE_FILE,
    F_SYM_ORDER, F_SYM_SIZE, F_MAX
};

static const struct {
    enum forge what;
    const char *why;
} forged[] = {
    {F_MAGIC, "no magic"},
    {F_ORDER, "byte order"},
    {F_VERSION, "version 9"},
    {F_BUILD_ID, "not lower-case hex"},
    {F_FROM, "unknown source"},
    {F_SECT, "section lines out of bounds"},
    {F_STRS_NUL, "not NUL-bounded"},
    {F_DETAIL, "header string"},
    {F_PARENT, "chain node 1"},
    {F_SPAN_NODE, "chain span 1"},
    {F_SPAN_ORDER, "chain span 2"},
    {F_LINE_ORDER, "line 2"},
    {F_LINE_FILE, "line 0"},
    {F_SYM_ORDER, "symbol 1"},
    {F_SYM_SIZE, "symbol 0"},
};

START_TEST(test_symindex_forged)
{
    struct ha_symindex_parts p;
    struct ha_symindex_node bad_nodes[HA_ARRAY_SIZE(nodes)];
    struct ha_symindex_span bad_chains[HA_ARRAY_SIZE(chains)];
    struct ha_symindex_line bad_lines[HA_ARRAY_SIZE(lines)];
    struct ha_symindex_sym bad_syms[2] = {{BASE + 0x200, 4, S_SYM, 0},
                                          {BASE + 0x100, 4, S_SYM, 0}};
    struct ha_symindex_header *h;
    struct ha_buf b;
    char why[256] = "";
    size_t i = (size_t)_i;

    parts_init(&p);
    memcpy(bad_nodes, nodes, sizeof(nodes));
    memcpy(bad_chains, chains, sizeof(chains));
    memcpy(bad_lines, lines, sizeof(lines));
    switch (forged[i].what) {
    case F_PARENT:
        bad_nodes[1].parent = 2; /* its child: a loop */
        p.nodes = bad_nodes;
        break;
    case F_SPAN_NODE:
        bad_chains[1].node = HA_ARRAY_SIZE(nodes);
        p.chains = bad_chains;
        break;
    case F_SPAN_ORDER:
        bad_chains[2].start = bad_chains[1].start;
        p.chains = bad_chains;
        break;
    case F_LINE_ORDER:
        bad_lines[2].start = 1;
        p.lines = bad_lines;
        break;
    case F_LINE_FILE:
        bad_lines[0].file = sizeof(strs);
        p.lines = bad_lines;
        break;
    case F_SYM_ORDER:
        p.syms = bad_syms;
        p.n_syms = 2;
        break;
    case F_SYM_SIZE:
        bad_syms[1].size = 0;
        p.syms = &bad_syms[1];
        p.n_syms = 1;
        break;
    case F_DETAIL:
        p.h.detail = sizeof(strs) + 100;
        break;
    case F_STRS_NUL:
        p.strs_len = sizeof(strs) - 2; /* its last NULs left out */
        break;
    default:
        break;
    }
    encode(&p, &b);
    h = (struct ha_symindex_header *)(void *)b.data;
    switch (forged[i].what) {
    case F_MAGIC: h->magic[0] = 'X'; break;
    case F_ORDER: h->byte_order = 0x04030201u; break;
    case F_VERSION: h->version = 9; break;
    case F_BUILD_ID: h->build_id[2] = 'G'; break;
    case F_FROM: h->from = HA_SYMS_SRC_MAX; break;
    case F_SECT: h->sect[HA_SYMINDEX_LINES].n = 1u << 30; break;
    default: break;
    }
    recrc(b.data, b.len);
    ck_assert_msg(refused(b.data, b.len, why, sizeof(why)),
                  "forgery %zu not refused", i);
    ck_assert_msg(strstr(why, forged[i].why) != NULL,
                  "forgery %zu: \"%s\", expected \"%s\"", i, why,
                  forged[i].why);
    ha_buf_free(&b);
}
END_TEST

/* ------------------------------------------------------------------
 * The directory
 * ------------------------------------------------------------------ */

static char tmpdir[64];

static void
tmp_setup(void)
{
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_symindex.XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void
rm_rf(const char *path)
{
    char cmd[256];

    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
    ck_assert_int_eq(system(cmd), 0);
}

static void
tmp_teardown(void)
{
    rm_rf(tmpdir);
}

static void
put_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    ck_assert_int_eq(chmod(path, mode), 0);
}

START_TEST(test_symcache_dir)
{
    char dir[128], link[128], err[256] = "";
    struct stat st;
    int fd;

    snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
    fd = ha_symcache_dir_open(dir, err, sizeof(err));
    ck_assert_msg(fd >= 0, "%s", err);
    close(fd);
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    /* One of ours made wide is made private again. */
    ck_assert_int_eq(chmod(dir, 0755), 0);
    fd = ha_symcache_dir_open(dir, err, sizeof(err));
    ck_assert_int_ge(fd, 0);
    close(fd);
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_uint_eq(st.st_mode & 0777, 0700);
    /* A link is refused, whatever it points to. */
    snprintf(link, sizeof(link), "%s/link", tmpdir);
    ck_assert_int_eq(symlink(dir, link), 0);
    ck_assert_int_eq(ha_symcache_dir_open(link, err, sizeof(err)), -1);
    ck_assert_msg(strstr(err, "symbolic link") != NULL, "%s", err);
    /* Another user's is not used. */
    if (geteuid() == 0) {
        ck_assert_int_eq(chown(dir, 65534, 65534), 0);
        ck_assert_int_eq(ha_symcache_dir_open(dir, err, sizeof(err)), -1);
        ck_assert_msg(strstr(err, "belongs to uid 65534") != NULL, "%s",
                      err);
    }
}
END_TEST

START_TEST(test_symcache_files)
{
    char dir[128], path[256], why[256] = "", err[256] = "";
    struct ha_symcache_map m;
    struct dirent *de;
    struct stat st;
    DIR *d;
    int fd, n;

    snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
    fd = ha_symcache_dir_open(dir, err, sizeof(err));
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ha_symcache_map(fd, "none.m.idx", &m, why, sizeof(why)),
                     1);
    /* Written whole, private, nothing else left behind. */
    ck_assert_msg(ha_symcache_write(fd, "a.m.idx", "index a", 7, err,
                                    sizeof(err)) == 0,
                  "%s", err);
    ck_assert_int_eq(ha_symcache_map(fd, "a.m.idx", &m, why, sizeof(why)), 0);
    ck_assert_uint_eq(m.len, 7);
    ck_assert_int_eq(memcmp(m.data, "index a", 7), 0);
    ck_assert_uint_eq(m.st.st_mode & 0777, 0600);
    ha_symcache_unmap(&m);
    d = opendir(dir);
    n = 0;
    while ((de = readdir(d)) != NULL)
        n += de->d_name[0] != '.';
    closedir(d);
    ck_assert_int_eq(n, 1);
    d = opendir(dir);
    while ((de = readdir(d)) != NULL)
        ck_assert_msg(strncmp(de->d_name, ".tmp", 4) != 0, "%s left",
                      de->d_name);
    closedir(d);

    /* A wide mode, a link, a directory, an empty file: not read. */
    snprintf(path, sizeof(path), "%s/wide.m.idx", dir);
    put_file(path, "x", 0644);
    ck_assert_int_eq(ha_symcache_map(fd, "wide.m.idx", &m, why, sizeof(why)),
                     -1);
    ck_assert_msg(strstr(why, "mode 644") != NULL, "%s", why);
    snprintf(path, sizeof(path), "%s/link.m.idx", dir);
    ck_assert_int_eq(symlink("a.m.idx", path), 0);
    ck_assert_int_eq(ha_symcache_map(fd, "link.m.idx", &m, why, sizeof(why)),
                     -1);
    snprintf(path, sizeof(path), "%s/dir.m.idx", dir);
    ck_assert_int_eq(mkdir(path, 0700), 0);
    ck_assert_int_eq(ha_symcache_map(fd, "dir.m.idx", &m, why, sizeof(why)),
                     -1);
    snprintf(path, sizeof(path), "%s/empty.m.idx", dir);
    put_file(path, "", 0600);
    ck_assert_int_eq(
        ha_symcache_map(fd, "empty.m.idx", &m, why, sizeof(why)), -1);
    /* Planted by another user (root can make one): not read. */
    if (geteuid() == 0) {
        snprintf(path, sizeof(path), "%s/theirs.m.idx", dir);
        put_file(path, "x", 0600);
        ck_assert_int_eq(chown(path, 65534, 65534), 0);
        ck_assert_int_eq(
            ha_symcache_map(fd, "theirs.m.idx", &m, why, sizeof(why)), -1);
        ck_assert_msg(strstr(why, "owned by uid 65534") != NULL, "%s", why);
    }
    ck_assert_int_eq(stat(dir, &st), 0);
    close(fd);
}
END_TEST

/* The bound: oldest first, never the one kept; dead writers' temporary
 * files go. */
START_TEST(test_symcache_trim)
{
    char dir[128], path[256], err[256] = "", big[101];
    const char *names[] = {"old.m.idx", "mid.m.idx", "new.m.idx"};
    struct timespec ts[2];
    struct stat st;
    int fd;

    memset(big, 'x', 100);
    big[100] = '\0';
    snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
    fd = ha_symcache_dir_open(dir, err, sizeof(err));
    ck_assert_int_ge(fd, 0);
    for (int k = 0; k < 3; k++) {
        snprintf(path, sizeof(path), "%s/%s", dir, names[k]);
        put_file(path, big, 0600);
        ts[0].tv_sec = ts[1].tv_sec = 1000000 + k * 100;
        ts[0].tv_nsec = ts[1].tv_nsec = 0;
        ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
    }
    snprintf(path, sizeof(path), "%s/.tmp.1.0.dead.m.idx", dir);
    put_file(path, big, 0600);
    ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
    /* 300 bytes, 250 allowed, the oldest kept by name: the middle goes. */
    ck_assert_uint_eq(ha_symcache_trim(fd, 250, "old.m.idx"), 200);
    snprintf(path, sizeof(path), "%s/mid.m.idx", dir);
    ck_assert_int_eq(stat(path, &st), -1);
    snprintf(path, sizeof(path), "%s/.tmp.1.0.dead.m.idx", dir);
    ck_assert_int_eq(stat(path, &st), -1);
    ck_assert_uint_eq(ha_symcache_trim(fd, 100, NULL), 100);
    snprintf(path, sizeof(path), "%s/new.m.idx", dir);
    ck_assert_int_eq(stat(path, &st), 0);
    close(fd);
}
END_TEST

/* Build-ids from ELF headers equal libelf's; other files have none. */
START_TEST(test_symcache_build_id)
{
    char exe[4096], hex[HA_BUILDID_HEX_MAX], ref[HA_BUILDID_HEX_MAX];
    char path[256], err[256];
    struct stat st;
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

    ck_assert_int_gt(n, 0);
    exe[n] = '\0';
    ck_assert_int_eq(ha_symcache_build_id(exe, hex, &st), 0);
    ck_assert_int_eq(ha_buildid_from_file(exe, ref, err, sizeof(err)), 0);
    ck_assert_str_eq(hex, ref);
    snprintf(path, sizeof(path), "%s/not-elf", tmpdir);
    put_file(path, "\177ELF but not really an ELF file at all......", 0600);
    ck_assert_int_eq(ha_symcache_build_id(path, hex, &st), -1);
    ck_assert_int_eq(ha_symcache_build_id(tmpdir, hex, &st), -1);
}
END_TEST

/* ------------------------------------------------------------------
 * The symbolizer on this process's libc
 * ------------------------------------------------------------------ */

/* This process's mappings, and every 32nd byte of libc's code. */
struct target {
    char *maps_text;
    struct ha_maps maps;
    uint64_t *pcs;
    size_t n;
    char libc[512];
    char hex[HA_BUILDID_HEX_MAX];
};

static void
target_load(struct target *t)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[1024], err[256], *p;
    size_t len = 0, cap = 1 << 16;
    struct stat st;

    memset(t, 0, sizeof(*t));
    t->maps_text = malloc(cap);
    ck_assert_ptr_nonnull(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        unsigned long lo, hi;
        char perm[8];
        size_t k = strlen(line);

        if (len + k + 1 > cap)
            t->maps_text = realloc(t->maps_text, cap *= 2);
        memcpy(t->maps_text + len, line, k);
        len += k;
        if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perm) != 3 ||
            perm[2] != 'x' || (p = strstr(line, "/libc.so.6")) == NULL)
            continue;
        snprintf(t->libc, sizeof(t->libc), "%.*s",
                 (int)(strcspn(strchr(line, '/'), "\n")), strchr(line, '/'));
        for (unsigned long a = lo; a < hi; a += 32) {
            if (t->n % 65536 == 0)
                t->pcs = realloc(t->pcs, (t->n + 65536) * sizeof(*t->pcs));
            t->pcs[t->n++] = a;
        }
    }
    fclose(f);
    t->maps_text[len] = '\0';
    ck_assert_msg(t->n > 0, "no libc.so.6 mapped");
    ck_assert_int_eq(ha_maps_parse(t->maps_text, len, &t->maps, err,
                                   sizeof(err)),
                     0);
    ck_assert_int_eq(ha_symcache_build_id(t->libc, t->hex, &st), 0);
}

static void
target_free(struct target *t)
{
    ha_maps_free(&t->maps);
    free(t->maps_text);
    free(t->pcs);
}

/* Names t's addresses with a fresh symbolizer (index_dir NULL: none,
 * debug_root may be NULL); waits for its index builds. */
static void
name_all(const struct target *t, const char *index_dir,
         const char *debug_root, struct ha_syms *out,
         struct ha_symbolizer_stats *st)
{
    struct ha_symbolizer_limits lim;
    struct ha_symbolizer *s;
    char err[256];

    memset(&lim, 0, sizeof(lim));
    lim.index_dir = index_dir;
    lim.debug_root = debug_root;
    s = ha_symbolizer_new(&lim);
    ck_assert_ptr_nonnull(s);
    memset(out, 0, sizeof(*out));
    ck_assert_int_eq(ha_symbolizer_run(s, &t->maps, t->pcs, t->n, out, err,
                                       sizeof(err)),
                     0);
    ck_assert_int_eq(ha_symbolizer_index_wait(s, ha_clock_ns() +
                                                     (int64_t)60000000000),
                     0);
    ha_symbolizer_get_stats(s, st);
    ha_symbolizer_free(s);
}

/* Every address named alike: module, flags, every frame's function,
 * file and line, and its function's size (wrapper detection reads it,
 * prof/wrappers.h). */
static void
same_names(const struct ha_syms *a, const struct ha_syms *b)
{
    size_t sized = 0;

    ck_assert_uint_eq(a->n_addrs, b->n_addrs);
    for (size_t i = 0; i < a->n_addrs; i++) {
        const struct ha_syms_addr *x = &a->addrs[i], *y = &b->addrs[i];

        ck_assert_msg(x->pc == y->pc && x->n == y->n &&
                          x->flags == y->flags && x->fsize == y->fsize,
                      "0x%llx: %u frames flags %u fsize %u vs %u frames "
                      "flags %u fsize %u",
                      (unsigned long long)x->pc, x->n, x->flags, x->fsize,
                      y->n, y->flags, y->fsize);
        sized += x->fsize > 0;
        ck_assert_str_eq(ha_syms_str(a, x->module), ha_syms_str(b, y->module));
        for (uint32_t k = 0; k < x->n; k++) {
            const struct ha_syms_frame *p = &a->frames[x->first + k];
            const struct ha_syms_frame *q = &b->frames[y->first + k];

            ck_assert_msg(strcmp(ha_syms_str(a, p->func),
                                 ha_syms_str(b, q->func)) == 0 &&
                              strcmp(ha_syms_str(a, p->file),
                                     ha_syms_str(b, q->file)) == 0 &&
                              p->line == q->line,
                          "0x%llx frame %u: %s %s:%u vs %s %s:%u",
                          (unsigned long long)x->pc, k,
                          ha_syms_str(a, p->func), ha_syms_str(a, p->file),
                          p->line, ha_syms_str(b, q->func),
                          ha_syms_str(b, q->file), q->line);
        }
    }
    /* libc's exported functions have sizes at least (.dynsym): a
     * comparison of zeros would prove nothing. */
    ck_assert_msg(sized > 0, "none of %zu addresses with a size",
                  a->n_addrs);
}

static bool
libc_from_index(const struct ha_syms *s, const char *libc)
{
    for (size_t i = 0; i < s->n_modules; i++)
        if (strcmp(ha_syms_str(s, s->modules[i].path), libc) == 0)
            return s->modules[i].from_index;
    return false;
}

static void
index_path(const struct target *t, const char *dir, char *path, size_t len)
{
    char name[HA_SYMCACHE_NAME_MAX];

    /* Demangled when the process has libstdc++'s demangler, as the
     * symbolizer decides. */
    ha_symcache_name(name, sizeof(name), t->hex,
                     dlsym(RTLD_DEFAULT, "__cxa_demangle") != NULL);
    snprintf(path, len, "%s/%s", dir, name);
}

/* Without an index, with the one the first run wrote: the same names,
 * and the second never read libc's files. */
START_TEST(test_symindex_libc_same_names)
{
    struct target t;
    struct ha_syms ref, first, again;
    struct ha_symbolizer_stats st;
    char dir[128], path[512];
    struct stat sb;

    target_load(&t);
    snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
    name_all(&t, NULL, NULL, &ref, &st);
    name_all(&t, dir, NULL, &first, &st);
    ck_assert_uint_eq(st.index_modules, 0);
    ck_assert_uint_ge(st.index_written, 1);
    index_path(&t, dir, path, sizeof(path));
    ck_assert_msg(stat(path, &sb) == 0, "%s not written", path);
    ck_assert_uint_eq(sb.st_mode & 0777, 0600);
    name_all(&t, dir, NULL, &again, &st);
    ck_assert_uint_ge(st.index_modules, 1);
    ck_assert_uint_eq(st.index_refused, 0);
    ck_assert(libc_from_index(&again, t.libc));
    ck_assert(!libc_from_index(&first, t.libc));
    same_names(&ref, &first);
    same_names(&ref, &again);
    ha_syms_free(&ref);
    ha_syms_free(&first);
    ha_syms_free(&again);
    target_free(&t);
}
END_TEST

/* What is done to the index file between two symbolizers. */
enum harm { H_FLIP, H_TRUNCATE, H_PLANT, H_WIDE, H_DEBUG_ROOT, H_MAX };

START_TEST(test_symindex_libc_refused)
{
    struct target t;
    struct ha_syms ref, after, rebuilt;
    struct ha_symbolizer_stats st;
    char dir[128], path[512], root[128], cand[512], cmd[1100];
    const char *debug_root = NULL;
    enum harm harm = (enum harm)_i;
    struct stat sb;
    int fd;

    target_load(&t);
    snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
    index_path(&t, dir, path, sizeof(path));
    name_all(&t, NULL, NULL, &ref, &st);
    name_all(&t, dir, NULL, &after, &st);
    ha_syms_free(&after);
    ck_assert_int_eq(stat(path, &sb), 0);
    switch (harm) {
    case H_FLIP: /* one byte in the middle */
        fd = open(path, O_RDWR);
        ck_assert_int_eq(pwrite(fd, "\x5a", 1, sb.st_size / 2), 1);
        close(fd);
        break;
    case H_TRUNCATE:
        ck_assert_int_eq(truncate(path, sb.st_size - 1), 0);
        break;
    case H_PLANT: {
        /* A fit index of another build-id under libc's name: a file of
         * ours, whole, with a good CRC, naming other code. */
        struct ha_symindex_parts p;
        struct ha_buf b;
        char err[256];
        int dfd = open(dir, O_RDONLY | O_DIRECTORY);

        parts_init(&p);
        encode(&p, &b);
        ck_assert_int_eq(ha_symcache_write(dfd, strrchr(path, '/') + 1,
                                           b.data, b.len, err, sizeof(err)),
                         0);
        close(dfd);
        ha_buf_free(&b);
        break;
    }
    case H_WIDE:
        ck_assert_int_eq(chmod(path, 0644), 0);
        break;
    case H_DEBUG_ROOT:
        /* A debug file for libc's build-id appears under a root: the
         * index made without it is out of date (libdwfl would read it,
         * or reject it: either way the files decide, not the index). */
        snprintf(root, sizeof(root), "%s/root", tmpdir);
        snprintf(cand, sizeof(cand), "%s/.build-id/%.2s", root, t.hex);
        snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", cand);
        ck_assert_int_eq(system(cmd), 0);
        snprintf(cand + strlen(cand), sizeof(cand) - strlen(cand),
                 "/%s.debug", t.hex + 2);
        put_file(cand, "not the debug file", 0644);
        debug_root = root;
        ha_syms_free(&ref);
        name_all(&t, NULL, debug_root, &ref, &st);
        break;
    default:
        break;
    }
    name_all(&t, dir, debug_root, &after, &st);
    ck_assert_uint_ge(st.index_refused, 1);
    ck_assert(!libc_from_index(&after, t.libc));
    same_names(&ref, &after);
    /* Written again, and fit for use. */
    ck_assert_uint_ge(st.index_written, 1);
    name_all(&t, dir, debug_root, &rebuilt, &st);
    ck_assert_uint_eq(st.index_refused, 0);
    ck_assert(libc_from_index(&rebuilt, t.libc));
    same_names(&ref, &rebuilt);
    ck_assert_int_eq(stat(path, &sb), 0);
    ck_assert_uint_eq(sb.st_mode & 0777, 0600);
    if (harm == H_DEBUG_ROOT) {
        /* ... and without the root it is out of date again. */
        struct ha_syms plain;

        name_all(&t, dir, NULL, &plain, &st);
        ck_assert_uint_ge(st.index_refused, 1);
        ha_syms_free(&plain);
    }
    ha_syms_free(&ref);
    ha_syms_free(&after);
    ha_syms_free(&rebuilt);
    target_free(&t);
}
END_TEST

/* An index over the bound is not written; the names are the same. */
START_TEST(test_symindex_libc_bound)
{
    struct target t;
    struct ha_symbolizer_limits lim;
    struct ha_symbolizer_stats st;
    struct ha_symbolizer *s;
    struct ha_syms out = {0};
    char dir[128], path[512], err[256];
    struct stat sb;

    target_load(&t);
    snprintf(dir, sizeof(dir), "%s/cache", tmpdir);
    memset(&lim, 0, sizeof(lim));
    lim.index_dir = dir;
    lim.index_max_bytes = 4096;
    s = ha_symbolizer_new(&lim);
    ck_assert_int_eq(ha_symbolizer_run(s, &t.maps, t.pcs, t.n, &out, err,
                                       sizeof(err)),
                     0);
    ck_assert_int_eq(ha_symbolizer_index_wait(s, ha_clock_ns() +
                                                     (int64_t)60000000000),
                     0);
    ha_symbolizer_get_stats(s, &st);
    ck_assert_uint_ge(st.index_failed, 1);
    index_path(&t, dir, path, sizeof(path));
    ck_assert_int_eq(stat(path, &sb), -1);
    ha_symbolizer_free(s);
    ha_syms_free(&out);
    target_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ */

static Suite *
symindex_suite(void)
{
    Suite *s = suite_create("symindex");
    TCase *core = tcase_create("core");
    TCase *limits = tcase_create("limits");
    TCase *files = tcase_create("files");
    TCase *libc = tcase_create("libc");

    tcase_add_loop_test(core, test_symindex_round_trip, 0,
                        HA_ARRAY_SIZE(named));
    tcase_add_test(core, test_symindex_cover);
    tcase_add_test(core, test_symindex_cursor);
    tcase_add_test(core, test_symindex_crc);
    suite_add_tcase(s, core);

    tcase_add_test(limits, test_symindex_every_bit);
    tcase_add_test(limits, test_symindex_truncated);
    tcase_add_loop_test(limits, test_symindex_forged, 0,
                        HA_ARRAY_SIZE(forged));
    suite_add_tcase(s, limits);

    tcase_add_checked_fixture(files, tmp_setup, tmp_teardown);
    tcase_add_test(files, test_symcache_dir);
    tcase_add_test(files, test_symcache_files);
    tcase_add_test(files, test_symcache_trim);
    tcase_add_test(files, test_symcache_build_id);
    suite_add_tcase(s, files);

    tcase_add_checked_fixture(libc, tmp_setup, tmp_teardown);
    tcase_add_test(libc, test_symindex_libc_same_names);
    tcase_add_loop_test(libc, test_symindex_libc_refused, 0, H_MAX);
    tcase_add_test(libc, test_symindex_libc_bound);
    tcase_set_timeout(libc, 120);
    suite_add_tcase(s, libc);
    return s;
}

HA_CHECK_MAIN(symindex_suite)
