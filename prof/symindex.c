/* SPDX-License-Identifier: MIT
 *
 * A module's symbol index: the naming rule, encoding, checking and
 * lookups (see symindex.h). Pure: no file is opened here.
 */
#include "prof/symindex.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "core/util.h"

#define MAGIC "HASYMIDX"
#define BYTE_ORDER_MARK 0x01020304u
#define SYM_TRIES 16 /* symbols looked at below an address */

_Static_assert(sizeof(struct ha_symindex_header) == 368,
               "the header's size is part of the format (symindex.h)");
_Static_assert(sizeof(((struct ha_symindex_header *)0)->build_id) >=
                   HA_BUILDID_HEX_MAX,
               "a header holds every build-id maps.h keeps");

/* ------------------------------------------------------------------ */
/* The naming rule                                                    */
/* ------------------------------------------------------------------ */

size_t
ha_symindex_frames(const struct ha_symindex_link *chain, size_t depth,
                   uint32_t file, uint32_t line, struct ha_syms_frame *fr,
                   size_t max)
{
    size_t n = 0;

    for (size_t k = 0; k < depth && n < max; k++) {
        fr[n].func = chain[k].func;
        if (n == 0) {
            fr[0].file = file;
            fr[0].line = line;
        }
        /* Frame n + 1 sits where frame n was inlined. */
        if (n + 1 < max) {
            fr[n + 1].file = chain[k].call_file;
            fr[n + 1].line = chain[k].call_line;
        }
        n++;
    }
    return n;
}

enum ha_symindex_naming
ha_symindex_with_symbol(struct ha_syms_frame *fr, size_t *n, uint32_t sym,
                        uint32_t file, uint32_t line)
{
    if (*n == 0 && sym == 0)
        return HA_SYMINDEX_UNNAMED;
    if (*n == 0) {
        fr[0].func = sym;
        fr[0].file = file;
        fr[0].line = line;
        *n = 1;
        return HA_SYMINDEX_NAMED;
    }
    if (sym != 0) {
        fr[*n - 1].func = sym;
        return HA_SYMINDEX_NAMED;
    }
    return HA_SYMINDEX_OUTER_UNNAMED;
}

size_t
ha_symindex_cover(const void *syms, size_t n, size_t stride, uint64_t addr)
{
    const unsigned char *p = syms;
    size_t a = 0, b = n;

    while (a < b) { /* first symbol above addr */
        size_t mid = a + (b - a) / 2;
        uint64_t at;

        memcpy(&at, p + mid * stride, sizeof(at));
        if (at <= addr)
            a = mid + 1;
        else
            b = mid;
    }
    for (size_t k = a, tries = 0; k > 0 && tries < SYM_TRIES; k--, tries++) {
        uint64_t at, size;

        memcpy(&at, p + (k - 1) * stride, sizeof(at));
        memcpy(&size, p + (k - 1) * stride + 8, sizeof(size));
        if (addr - at < size)
            return k - 1;
    }
    return SIZE_MAX;
}

/* ------------------------------------------------------------------ */
/* CRC-32C                                                            */
/* ------------------------------------------------------------------ */

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;

        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t
crc_soft(uint32_t c, const unsigned char *p, size_t len)
{
    pthread_once(&crc_once, crc_init);
    while (len-- > 0)
        c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
    return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/* SSE4.2's crc32 instruction computes the same polynomial, 8 bytes a
 * cycle or so: checking a libc index of a few MB then costs well under a
 * millisecond. */
__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t c, const unsigned char *p, size_t len)
{
    uint64_t c64 = c;

    while (len >= 8) {
        uint64_t v;

        memcpy(&v, p, 8);
        c64 = __builtin_ia32_crc32di(c64, v);
        p += 8;
        len -= 8;
    }
    c = (uint32_t)c64;
    while (len-- > 0)
        c = __builtin_ia32_crc32qi(c, *p++);
    return c;
}
#endif

uint32_t
ha_symindex_crc32c_table(uint32_t crc, const void *buf, size_t len)
{
    return ~crc_soft(~crc, buf, len);
}

uint32_t
ha_symindex_crc32c(uint32_t crc, const void *buf, size_t len)
{
    uint32_t c = ~crc;

#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("sse4.2"))
        return ~crc_hw(c, buf, len);
#endif
    return ~crc_soft(c, buf, len);
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

static void
append_sect(struct ha_buf *out, struct ha_symindex_header *h,
            enum ha_symindex_sect k, const void *data, size_t n, size_t size)
{
    static const uint8_t zero[8];

    if (out->len % 8 != 0)
        ha_buf_append(out, zero, 8 - out->len % 8);
    h->sect[k].off = out->len;
    h->sect[k].n = n;
    if (n > 0)
        ha_buf_append(out, data, n * size);
}

int
ha_symindex_encode(const struct ha_symindex_parts *p, struct ha_buf *out)
{
    struct ha_symindex_header h = p->h;
    uint32_t crc;

    memcpy(h.magic, MAGIC, sizeof(h.magic));
    h.version = HA_SYMINDEX_VERSION;
    h.byte_order = BYTE_ORDER_MARK;
    h.crc = 0;
    memset(h.reserved, 0, sizeof(h.reserved));
    ha_buf_append(out, &h, sizeof(h));
    append_sect(out, &h, HA_SYMINDEX_SEGS, p->segs, p->n_segs,
                sizeof(*p->segs));
    append_sect(out, &h, HA_SYMINDEX_SYMS, p->syms, p->n_syms,
                sizeof(*p->syms));
    append_sect(out, &h, HA_SYMINDEX_NODES, p->nodes, p->n_nodes,
                sizeof(*p->nodes));
    append_sect(out, &h, HA_SYMINDEX_CHAINS, p->chains, p->n_chains,
                sizeof(*p->chains));
    append_sect(out, &h, HA_SYMINDEX_LINES, p->lines, p->n_lines,
                sizeof(*p->lines));
    append_sect(out, &h, HA_SYMINDEX_STRS, p->strs, p->strs_len, 1);
    if (ha_buf_failed(out))
        return -1;
    h.file_bytes = out->len;
    memcpy(out->data, &h, sizeof(h));
    crc = ha_symindex_crc32c(0, out->data, out->len);
    memcpy(out->data + offsetof(struct ha_symindex_header, crc), &crc,
           sizeof(crc));
    return 0;
}

/* ------------------------------------------------------------------ */
/* Checking what is read back                                         */
/* ------------------------------------------------------------------ */

static const char *const sect_names[HA_SYMINDEX_SECT_MAX] = {
    "segs", "syms", "nodes", "chains", "lines", "strs",
};

static const size_t sect_sizes[HA_SYMINDEX_SECT_MAX] = {
    sizeof(struct ha_symindex_seg),  sizeof(struct ha_symindex_sym),
    sizeof(struct ha_symindex_node), sizeof(struct ha_symindex_span),
    sizeof(struct ha_symindex_line), 1,
};

static bool
str_ok(const struct ha_symindex *ix, uint32_t off)
{
    return off < ix->strs_len;
}

/* The header's own fields. */
static int
check_header(const struct ha_symindex_header *h, size_t len, char *why,
             size_t whylen)
{
    const void *nul;

    if (memcmp(h->magic, MAGIC, sizeof(h->magic)) != 0) {
        ha_err_set(why, whylen, "not a symbol index (no magic)");
        return -1;
    }
    if (h->byte_order != BYTE_ORDER_MARK) {
        ha_err_set(why, whylen, "written in another byte order");
        return -1;
    }
    if (h->version != HA_SYMINDEX_VERSION) {
        ha_err_set(why, whylen, "version %u, this build reads %u",
                   h->version, HA_SYMINDEX_VERSION);
        return -1;
    }
    if (h->file_bytes != len) {
        ha_err_set(why, whylen, "%s: %zu bytes, its header says %llu",
                   len < h->file_bytes ? "truncated" : "extended", len,
                   (unsigned long long)h->file_bytes);
        return -1;
    }
    nul = memchr(h->build_id, '\0', sizeof(h->build_id));
    if (nul == NULL || h->build_id[0] == '\0' ||
        strspn(h->build_id, "0123456789abcdef") != strlen(h->build_id)) {
        ha_err_set(why, whylen, "its build-id is not lower-case hex");
        return -1;
    }
    if (h->from >= HA_SYMS_SRC_MAX) {
        ha_err_set(why, whylen, "unknown source of names %u", h->from);
        return -1;
    }
    return 0;
}

/* Sections inside the file, aligned, and the views onto them. */
static int
check_sections(struct ha_symindex *ix, const unsigned char *base, size_t len,
               char *why, size_t whylen)
{
    const struct ha_symindex_header *h = ix->h;
    const void *at[HA_SYMINDEX_SECT_MAX];

    for (int k = 0; k < HA_SYMINDEX_SECT_MAX; k++) {
        uint64_t off = h->sect[k].off, n = h->sect[k].n;

        if (off % 8 != 0 || off < sizeof(*h) || off > len ||
            n > (len - off) / sect_sizes[k]) {
            ha_err_set(why, whylen, "section %s out of bounds",
                       sect_names[k]);
            return -1;
        }
        at[k] = base + off;
    }
    ix->segs = at[HA_SYMINDEX_SEGS];
    ix->n_segs = h->sect[HA_SYMINDEX_SEGS].n;
    ix->syms = at[HA_SYMINDEX_SYMS];
    ix->n_syms = h->sect[HA_SYMINDEX_SYMS].n;
    ix->nodes = at[HA_SYMINDEX_NODES];
    ix->n_nodes = h->sect[HA_SYMINDEX_NODES].n;
    ix->chains = at[HA_SYMINDEX_CHAINS];
    ix->n_chains = h->sect[HA_SYMINDEX_CHAINS].n;
    ix->lines = at[HA_SYMINDEX_LINES];
    ix->n_lines = h->sect[HA_SYMINDEX_LINES].n;
    ix->strs = at[HA_SYMINDEX_STRS];
    ix->strs_len = h->sect[HA_SYMINDEX_STRS].n;
    if (ix->strs_len == 0 || ix->strs[0] != '\0' ||
        ix->strs[ix->strs_len - 1] != '\0' || ix->strs_len > UINT32_MAX) {
        ha_err_set(why, whylen, "its string table is not NUL-bounded");
        return -1;
    }
    return 0;
}

/* Every record: ids in range, tables in order, parents before children
 * (so a chain cannot loop). */
static int
check_records(const struct ha_symindex *ix, char *why, size_t whylen)
{
    const struct ha_symindex_header *h = ix->h;

    if (!str_ok(ix, h->detail) || !str_ok(ix, h->debug_path) ||
        !str_ok(ix, h->fetched_path))
        goto bad_str;
    for (size_t i = 0; i < ix->n_syms; i++) {
        if (!str_ok(ix, ix->syms[i].name) || ix->syms[i].size == 0 ||
            (i > 0 && ix->syms[i - 1].addr >= ix->syms[i].addr)) {
            ha_err_set(why, whylen, "symbol %zu out of order or range", i);
            return -1;
        }
    }
    for (size_t i = 0; i < ix->n_nodes; i++) {
        const struct ha_symindex_node *d = &ix->nodes[i];

        if (!str_ok(ix, d->func) || !str_ok(ix, d->call_file) ||
            (d->parent != HA_SYMINDEX_NONE && d->parent >= i)) {
            ha_err_set(why, whylen, "chain node %zu out of range", i);
            return -1;
        }
    }
    for (size_t i = 0; i < ix->n_chains; i++) {
        const struct ha_symindex_span *c = &ix->chains[i];

        if ((c->node != HA_SYMINDEX_NONE && c->node >= ix->n_nodes) ||
            (i > 0 && ix->chains[i - 1].start >= c->start)) {
            ha_err_set(why, whylen, "chain span %zu out of order or range",
                       i);
            return -1;
        }
    }
    for (size_t i = 0; i < ix->n_lines; i++) {
        if (!str_ok(ix, ix->lines[i].file) ||
            (i > 0 && ix->lines[i - 1].start >= ix->lines[i].start)) {
            ha_err_set(why, whylen, "line %zu out of order or range", i);
            return -1;
        }
    }
    return 0;
bad_str:
    ha_err_set(why, whylen, "a header string is out of range");
    return -1;
}

int
ha_symindex_open(struct ha_symindex *ix, const void *buf, size_t len,
                 char *why, size_t whylen)
{
    const unsigned char *base = buf;
    size_t at = offsetof(struct ha_symindex_header, crc);
    uint32_t crc, stored, zero = 0;

    memset(ix, 0, sizeof(*ix));
    if (len < sizeof(struct ha_symindex_header)) {
        ha_err_set(why, whylen, "truncated: %zu bytes, shorter than its "
                   "header", len);
        return -1;
    }
    ix->h = buf;
    if (check_header(ix->h, len, why, whylen) != 0)
        return -1;
    /* Before any offset is believed: a damaged file is a refusal. */
    memcpy(&stored, base + at, sizeof(stored));
    crc = ha_symindex_crc32c(0, base, at);
    crc = ha_symindex_crc32c(crc, &zero, sizeof(zero));
    crc = ha_symindex_crc32c(crc, base + at + 4, len - at - 4);
    if (crc != stored) {
        ha_err_set(why, whylen, "CRC mismatch (0x%08x, its header says "
                   "0x%08x): the file is damaged", crc, stored);
        return -1;
    }
    if (check_sections(ix, base, len, why, whylen) != 0 ||
        check_records(ix, why, whylen) != 0)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Lookups                                                            */
/* ------------------------------------------------------------------ */

bool
ha_symindex_vaddr(const struct ha_symindex *ix, uint64_t off, uint64_t *vaddr)
{
    for (size_t i = 0; i < ix->n_segs; i++) {
        const struct ha_symindex_seg *g = &ix->segs[i];

        if (off >= g->off && off - g->off < g->filesz) {
            *vaddr = off - g->off + g->vaddr;
            return true;
        }
    }
    return false;
}

static uint32_t
start_at(const unsigned char *p, size_t stride, size_t k)
{
    uint32_t start;

    memcpy(&start, p + k * stride, sizeof(start));
    return start;
}

/* The last element of a table sorted by a uint32_t start at offset 0
 * whose start is at most rel, or SIZE_MAX. *hint is the answer of the
 * previous lookup (SIZE_MAX: none) and gets this one's: callers look
 * addresses up in order, so the answer is mostly a few elements on, and
 * a gallop from there touches a cache line or two where a search from
 * the middle touches twenty. */
static size_t
last_at_or_below(const void *table, size_t n, size_t stride, uint32_t rel,
                 size_t *hint)
{
    const unsigned char *p = table;
    size_t a = 0, b = n, k = hint != NULL ? *hint : SIZE_MAX;

    if (k < n && start_at(p, stride, k) <= rel) {
        size_t step = 1;

        while (k + step < n && start_at(p, stride, k + step) <= rel) {
            k += step;
            step *= 2;
        }
        a = k + 1;
        b = k + step < n ? k + step : n;
    }
    while (a < b) {
        size_t mid = a + (b - a) / 2;
        uint32_t start;

        memcpy(&start, p + mid * stride, sizeof(start));
        if (start <= rel)
            a = mid + 1;
        else
            b = mid;
    }
    if (hint != NULL)
        *hint = a > 0 ? a - 1 : SIZE_MAX;
    return a > 0 ? a - 1 : SIZE_MAX;
}

/* vaddr as an offset from base; false when outside [base, base + 4 GiB). */
static bool
rel_of(const struct ha_symindex *ix, uint64_t vaddr, uint32_t *rel)
{
    if (vaddr < ix->h->base || vaddr - ix->h->base > UINT32_MAX)
        return false;
    *rel = (uint32_t)(vaddr - ix->h->base);
    return true;
}

size_t
ha_symindex_chain(const struct ha_symindex *ix, uint64_t vaddr,
                  struct ha_symindex_link *links, size_t max,
                  struct ha_symindex_cursor *at)
{
    uint32_t rel, node;
    size_t k, n = 0;

    if (!rel_of(ix, vaddr, &rel) ||
        (k = last_at_or_below(ix->chains, ix->n_chains, sizeof(*ix->chains),
                              rel, at != NULL ? &at->chain : NULL)) ==
            SIZE_MAX)
        return 0;
    /* Parents come before their children (checked): this ends. */
    for (node = ix->chains[k].node; node != HA_SYMINDEX_NONE && n < max;
         node = ix->nodes[node].parent) {
        links[n].func = ix->nodes[node].func;
        links[n].call_file = ix->nodes[node].call_file;
        links[n].call_line = ix->nodes[node].call_line;
        n++;
    }
    return n;
}

void
ha_symindex_line(const struct ha_symindex *ix, uint64_t vaddr,
                 uint32_t *file, uint32_t *line,
                 struct ha_symindex_cursor *at)
{
    uint32_t rel;
    size_t k;

    *file = 0;
    *line = 0;
    if (!rel_of(ix, vaddr, &rel) ||
        (k = last_at_or_below(ix->lines, ix->n_lines, sizeof(*ix->lines),
                              rel, at != NULL ? &at->line : NULL)) ==
            SIZE_MAX)
        return;
    *file = ix->lines[k].file;
    *line = ix->lines[k].line;
}

uint32_t
ha_symindex_symbol(const struct ha_symindex *ix, uint64_t vaddr,
                   uint64_t *size)
{
    size_t k = ha_symindex_cover(ix->syms, ix->n_syms, sizeof(*ix->syms),
                                 vaddr);

    if (size != NULL)
        *size = k != SIZE_MAX ? ix->syms[k].size : 0;
    return k != SIZE_MAX ? ix->syms[k].name : 0;
}
