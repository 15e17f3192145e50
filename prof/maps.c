/* SPDX-License-Identifier: MIT
 *
 * /proc/<pid>/maps text and build-id side files (see maps.h). Paths are
 * copied into one NUL-separated buffer; mappings and modules refer to it
 * by offset.
 */
#include "prof/maps.h"

#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Line helpers                                                        */
/* ------------------------------------------------------------------ */

static const char *
skip_ws(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* Reads 1..16 hex digits. Returns 0 or -1. */
static int
read_hex(const char **pp, const char *e, uint64_t *v)
{
    const char *p = *pp;
    uint64_t x = 0;
    int n = 0, d;

    while (p < e && (d = ha_hex_digit(*p)) >= 0) {
        if (++n > 16)
            return -1;
        x = (x << 4) | (uint64_t)d;
        p++;
    }
    if (n == 0)
        return -1;
    *pp = p;
    *v = x;
    return 0;
}

/* Skips one non-blank token; returns -1 if there is none. */
static int
skip_token(const char **pp, const char *e)
{
    const char *p = *pp;

    if (p >= e || *p == ' ' || *p == '\t')
        return -1;
    while (p < e && *p != ' ' && *p != '\t')
        p++;
    *pp = p;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Maps                                                                */
/* ------------------------------------------------------------------ */

#define MAPS_SHAPE "'<start>-<end> <perms> <offset> <dev> <inode> [path]'"

static int
cmp_entry(const void *a, const void *b)
{
    const struct ha_maps_entry *x = a, *y = b;

    return x->start < y->start ? -1 : x->start > y->start;
}

/* Index of the module named p[0..n), adding it if new; -1 on OOM. Only
 * the last module is compared: the kernel lists a file's mappings next to
 * each other, and a hostile file that scatters them gets duplicate
 * modules (harmless) instead of quadratic time. */
static long
module_for(struct ha_maps *m, size_t *cap, struct ha_buf *paths,
           const char *p, size_t n)
{
    if (m->n_modules > 0) {
        const char *q = (const char *)paths->data +
                        m->modules[m->n_modules - 1].path_off;

        if (strlen(q) == n && memcmp(q, p, n) == 0)
            return (long)m->n_modules - 1;
    }
    if (m->n_modules == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        struct ha_maps_module *a = realloc(m->modules, ncap * sizeof(*a));

        if (a == NULL)
            return -1;
        m->modules = a;
        *cap = ncap;
    }
    if (paths->len > UINT32_MAX)
        return -1;
    memset(&m->modules[m->n_modules], 0, sizeof(m->modules[0]));
    m->modules[m->n_modules].path_off = (uint32_t)paths->len;
    m->modules[m->n_modules].lo = UINT64_MAX;
    ha_buf_append(paths, p, n);
    ha_buf_append_u8(paths, 0);
    if (ha_buf_failed(paths))
        return -1;
    return (long)m->n_modules++;
}

int
ha_maps_parse(const char *buf, size_t len, struct ha_maps *out, char *err,
              size_t errlen)
{
    struct ha_buf paths = HA_BUF_INIT;
    size_t pos = 0, line_no = 0, ecap = 0, mcap = 0;
    const char *what = NULL;

    memset(out, 0, sizeof(*out));
    if (buf == NULL)
        len = 0;
    while (pos < len) {
        const char *s = buf + pos, *e, *p, *nl;
        uint64_t start, end, offset;
        uint32_t flags = 0;
        struct ha_maps_entry *ent;
        long mod;
        bool deleted = false;

        nl = memchr(s, '\n', len - pos);
        e = nl != NULL ? nl : buf + len;
        pos = nl != NULL ? (size_t)(nl - buf) + 1 : len;
        line_no++;
        if (e > s && e[-1] == '\r')
            e--;
        p = skip_ws(s, e);
        if (p == e)
            continue;

        what = "'<start>-<end>' in hex at the start of " MAPS_SHAPE;
        if (read_hex(&p, e, &start) != 0 || p >= e || *p != '-')
            goto bad;
        p++;
        if (read_hex(&p, e, &end) != 0 || end < start)
            goto bad;
        what = "four permission characters (e.g. r-xp) in " MAPS_SHAPE;
        p = skip_ws(p, e);
        if (e - p < 4 || (p + 4 < e && p[4] != ' ' && p[4] != '\t'))
            goto bad;
        if (p[0] == 'r')
            flags |= HA_MAPS_R;
        if (p[1] == 'w')
            flags |= HA_MAPS_W;
        if (p[2] == 'x')
            flags |= HA_MAPS_X;
        p += 4;
        what = "a hex file offset in " MAPS_SHAPE;
        p = skip_ws(p, e);
        if (read_hex(&p, e, &offset) != 0)
            goto bad;
        what = "a device (major:minor) in " MAPS_SHAPE;
        p = skip_ws(p, e);
        if (skip_token(&p, e) != 0)
            goto bad;
        what = "a decimal inode in " MAPS_SHAPE;
        p = skip_ws(p, e);
        if (p >= e || *p < '0' || *p > '9')
            goto bad;
        while (p < e && *p >= '0' && *p <= '9')
            p++;
        if (p < e && *p != ' ' && *p != '\t')
            goto bad;
        p = skip_ws(p, e);
        if (p == e || *p != '/')
            continue; /* anonymous, [heap], [stack], [vdso]... */
        if (e - p >= 10 && memcmp(e - 10, " (deleted)", 10) == 0) {
            e -= 10;
            deleted = true;
        }

        mod = module_for(out, &mcap, &paths, p, (size_t)(e - p));
        if (mod < 0)
            goto oom;
        if (out->n_entries == ecap) {
            size_t ncap = ecap ? ecap * 2 : 32;
            struct ha_maps_entry *a = realloc(out->entries,
                                              ncap * sizeof(*a));
            if (a == NULL)
                goto oom;
            out->entries = a;
            ecap = ncap;
        }
        ent = &out->entries[out->n_entries++];
        ent->start = start;
        ent->end = end;
        ent->offset = offset;
        ent->module = (uint32_t)mod;
        ent->flags = flags;
        {
            struct ha_maps_module *md = &out->modules[mod];

            if (start < md->lo) {
                md->lo = start;
                md->base = start - offset;
            }
            if (end > md->hi)
                md->hi = end;
            md->exec |= (flags & HA_MAPS_X) != 0;
            md->deleted |= deleted;
            md->n_maps++;
        }
    }
    if (out->n_entries > 1)
        qsort(out->entries, out->n_entries, sizeof(*out->entries),
              cmp_entry);
    out->paths = (char *)paths.data;
    out->paths_len = paths.len;
    if (out->paths == NULL && (out->paths = calloc(1, 1)) == NULL)
        goto oom;
    return 0;

bad:
    ha_err_set(err, errlen, "maps line %zu: expected %s", line_no, what);
    goto fail;
oom:
    ha_err_set(err, errlen, "maps line %zu: out of memory", line_no);
fail:
    ha_buf_free(&paths);
    out->paths = NULL;
    ha_maps_free(out);
    return -1;
}

void
ha_maps_free(struct ha_maps *m)
{
    if (m == NULL)
        return;
    free(m->entries);
    free(m->modules);
    free(m->paths);
    memset(m, 0, sizeof(*m));
}

long
ha_maps_lookup(const struct ha_maps *m, uint64_t addr, uint64_t *file_off)
{
    size_t lo = 0, hi = m->n_entries;

    /* Last entry with start <= addr. Mappings do not overlap in a real
     * maps file; in a hostile one the answer is one of the candidates. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (m->entries[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= m->entries[lo - 1].end)
        return -1;
    if (file_off != NULL)
        *file_off = addr - m->entries[lo - 1].start +
                    m->entries[lo - 1].offset;
    return (long)(lo - 1);
}

long
ha_maps_find_module(const struct ha_maps *m, const char *path)
{
    for (size_t i = 0; i < m->n_modules; i++)
        if (strcmp(ha_maps_module_path(m, i), path) == 0)
            return (long)i;
    return -1;
}

/* ------------------------------------------------------------------ */
/* Build-id side file                                                  */
/* ------------------------------------------------------------------ */

int
ha_buildid_to_hex(const uint8_t *id, size_t n, char *hex)
{
    static const char digits[] = "0123456789abcdef";

    if (n == 0 || n > HA_BUILDID_MAX)
        return -1;
    for (size_t i = 0; i < n; i++) {
        hex[2 * i] = digits[id[i] >> 4];
        hex[2 * i + 1] = digits[id[i] & 15];
    }
    hex[2 * n] = '\0';
    return 0;
}

/* "# dumped_at <s>.<9 digits>" in [s, e) into *ns; other comments are
 * left alone. */
static void
dumped_at(const char *s, const char *e, int64_t *ns)
{
    static const char tag[] = "# dumped_at ";
    const char *p = s + sizeof(tag) - 1;
    int64_t sec = 0, frac = 0;
    int n = 0;

    if ((size_t)(e - s) < sizeof(tag) - 1 ||
        memcmp(s, tag, sizeof(tag) - 1) != 0)
        return;
    for (; p < e && *p >= '0' && *p <= '9'; p++, n++) {
        if (n >= 12) /* past year 33000: not a time */
            return;
        sec = sec * 10 + (*p - '0');
    }
    if (n == 0 || p >= e || *p != '.')
        return;
    p++;
    for (n = 0; p < e && *p >= '0' && *p <= '9' && n < 9; p++, n++)
        frac = frac * 10 + (*p - '0');
    /* Twelve digits pass above, and a leading zero makes room for 11 of
     * year 2286: past 2262 the ns no longer fit. */
    if (n != 9 || p != e || sec > INT64_MAX / 1000000000 - 1)
        return;
    *ns = sec * 1000000000 + frac;
}

int
ha_buildids_parse(const char *buf, size_t len, struct ha_buildids *out,
                  char *err, size_t errlen)
{
    struct ha_buf paths = HA_BUF_INIT;
    size_t pos = 0, line_no = 0, cap = 0;
    const char *what = NULL;

    memset(out, 0, sizeof(*out));
    if (buf == NULL)
        len = 0;
    while (pos < len) {
        const char *s = buf + pos, *e, *p, *nl;
        struct ha_buildid *id;
        size_t n = 0;

        nl = memchr(s, '\n', len - pos);
        e = nl != NULL ? nl : buf + len;
        pos = nl != NULL ? (size_t)(nl - buf) + 1 : len;
        line_no++;
        if (e > s && e[-1] == '\r')
            e--;
        if (s == e)
            continue;
        if (*s == '#') {
            dumped_at(s, e, &out->dumped_at_ns);
            continue;
        }
        if (out->n_ids == cap) {
            size_t ncap = cap ? cap * 2 : 16;
            struct ha_buildid *a = realloc(out->ids, ncap * sizeof(*a));

            if (a == NULL)
                goto oom;
            out->ids = a;
            cap = ncap;
        }
        id = &out->ids[out->n_ids];
        what = "'<hex build-id> <path>' (an even number of hex digits, "
               "at most 128)";
        for (p = s; p < e && ha_hex_digit(*p) >= 0; p++) {
            if (n + 1 >= HA_BUILDID_HEX_MAX)
                goto bad;
            id->hex[n++] = (char)(*p | 0x20); /* lower case */
        }
        id->hex[n] = '\0';
        if (n == 0 || n % 2 != 0 || p >= e || *p != ' ')
            goto bad;
        p++;
        what = "an absolute path after the build-id";
        if (p >= e || *p != '/' || memchr(p, '\0', (size_t)(e - p)) != NULL)
            goto bad;
        if (paths.len > UINT32_MAX)
            goto oom;
        id->path_off = (uint32_t)paths.len;
        ha_buf_append(&paths, p, (size_t)(e - p));
        ha_buf_append_u8(&paths, 0);
        if (ha_buf_failed(&paths))
            goto oom;
        out->n_ids++;
    }
    out->paths = (char *)paths.data;
    out->paths_len = paths.len;
    if (out->paths == NULL && (out->paths = calloc(1, 1)) == NULL)
        goto oom;
    return 0;

bad:
    ha_err_set(err, errlen, "buildid line %zu: expected %s", line_no, what);
    goto fail;
oom:
    ha_err_set(err, errlen, "buildid line %zu: out of memory", line_no);
fail:
    ha_buf_free(&paths);
    out->paths = NULL;
    ha_buildids_free(out);
    return -1;
}

void
ha_buildids_free(struct ha_buildids *b)
{
    if (b == NULL)
        return;
    free(b->ids);
    free(b->paths);
    memset(b, 0, sizeof(*b));
}

const char *
ha_buildids_find(const struct ha_buildids *b, const char *path)
{
    for (size_t i = 0; i < b->n_ids; i++)
        if (strcmp(b->paths + b->ids[i].path_off, path) == 0)
            return b->ids[i].hex;
    return NULL;
}
