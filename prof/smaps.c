/* SPDX-License-Identifier: MIT
 *
 * /proc/<pid>/smaps by kind of mapping (see smaps.h): a pure parser and
 * a reader.
 */
#include "prof/smaps.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/util.h"

/* No process holds an exabyte; past it the input is not smaps. */
#define SMAPS_TOTAL_MAX ((uint64_t)1 << 60)

enum kind { KIND_FILES, KIND_STACKS, KIND_HEAP, KIND_ANON };

/* The mapping being read. */
struct mapping {
    uint64_t start, end;
    char perms[5];
    bool has_path;       /* a path or a [name] */
    enum kind kind;
};

/* Figures that are only shown saturate instead of wrapping. */
static uint64_t
add_sat(uint64_t a, uint64_t b)
{
    return b > SMAPS_TOTAL_MAX - a ? SMAPS_TOTAL_MAX : a + b;
}

/* A hex number at *p (up to e), at most 16 digits; advances *p. */
static bool
hex(const char **p, const char *e, uint64_t *out)
{
    uint64_t v = 0;
    int n = 0;

    while (*p < e && ha_hex_digit(**p) >= 0) {
        if (++n > 16)
            return false;
        v = v << 4 | (uint64_t)ha_hex_digit(**p);
        (*p)++;
    }
    *out = v;
    return n > 0;
}

static const char *
skip_blanks(const char *p, const char *e)
{
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    return p;
}

/* A non-blank word at p; returns its end. */
static const char *
word_end(const char *p, const char *e)
{
    while (p < e && *p != ' ' && *p != '\t')
        p++;
    return p;
}

/* "start-end perms offset dev inode [path]" into m, classified against
 * the previous mapping prev (NULL for the first). */
static bool
header(const char *s, const char *e, const struct mapping *prev,
       struct mapping *m)
{
    const char *p = s, *w;
    uint64_t v;

    memset(m, 0, sizeof(*m));
    if (!hex(&p, e, &m->start) || p >= e || *p != '-')
        return false;
    p++;
    if (!hex(&p, e, &m->end) || m->end < m->start)
        return false;
    p = skip_blanks(p, e);
    w = word_end(p, e);
    if (w - p != 4)
        return false;
    memcpy(m->perms, p, 4);
    p = skip_blanks(w, e);
    if (!hex(&p, e, &v)) /* offset */
        return false;
    p = skip_blanks(p, e);
    w = word_end(p, e);  /* dev "fe:00" */
    if (w == p || memchr(p, ':', (size_t)(w - p)) == NULL)
        return false;
    p = skip_blanks(w, e);
    w = word_end(p, e);  /* inode, decimal */
    if (w == p)
        return false;
    for (const char *q = p; q < w; q++)
        if (*q < '0' || *q > '9')
            return false;
    p = skip_blanks(w, e);
    m->has_path = p < e;

    if (p < e && *p == '/')
        m->kind = KIND_FILES;
    else if (e - p == 7 && memcmp(p, "[stack]", 7) == 0)
        m->kind = KIND_STACKS;
    else if (e - p == 6 && memcmp(p, "[heap]", 6) == 0)
        m->kind = KIND_HEAP;
    else if (p < e && e - p >= 12 && memcmp(p, "[anon_shmem:", 12) == 0)
        m->kind = KIND_FILES; /* shared memory, named */
    else
        m->kind = KIND_ANON;
    /* A thread's (or fiber's) stack: anonymous, read-write, starting
     * where its PROT_NONE guard ends. */
    if (m->kind == KIND_ANON && !m->has_path && prev != NULL &&
        !prev->has_path && prev->end == m->start &&
        memcmp(prev->perms, "---", 3) == 0 && m->perms[0] == 'r' &&
        m->perms[1] == 'w')
        m->kind = KIND_STACKS;
    return true;
}

/* "Name:   N kB" -> bytes; false when the value is not that. */
static bool
kb_value(const char *p, const char *e, uint64_t *out)
{
    uint64_t v = 0;
    int n = 0;

    p = skip_blanks(p, e);
    while (p < e && *p >= '0' && *p <= '9') {
        if (++n > 15)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
        p++;
    }
    p = skip_blanks(p, e);
    if (n == 0 || e - p != 2 || p[0] != 'k' || p[1] != 'B' ||
        v > SMAPS_TOTAL_MAX / 1024)
        return false;
    *out = v * 1024;
    return true;
}

static bool
is_field(const char *s, const char *e, const char **colon)
{
    const char *p = s;

    if (p >= e || !((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
        return false;
    while (p < e && *p != ':') {
        if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return false;
        p++;
    }
    if (p >= e)
        return false;
    *colon = p;
    return true;
}

int
ha_smaps_parse(const char *buf, size_t len, struct ha_smaps *out, char *err,
               size_t errlen)
{
    struct mapping cur, prev;
    bool have_cur = false, have_prev = false;
    size_t pos = 0, line = 0;

    memset(out, 0, sizeof(*out));
    out->detailed = true;
    while (pos < len) {
        const char *s = buf + pos, *e, *nl, *colon;
        size_t flen;
        uint64_t v;

        nl = memchr(s, '\n', len - pos);
        e = nl != NULL ? nl : buf + len;
        pos = nl != NULL ? (size_t)(nl - buf) + 1 : len;
        line++;
        if (s == e)
            continue;
        if (is_field(s, e, &colon)) {
            if (!have_cur) {
                ha_err_set(err, errlen,
                           "line %zu: expected a mapping before its fields",
                           line);
                return -1;
            }
            flen = (size_t)(colon - s);
            if (flen == 3 && memcmp(s, "Rss", 3) == 0) {
                if (!kb_value(colon + 1, e, &v))
                    goto bad_value;
                /* Totals stay exact and fit an int64 with room. */
                if (v > SMAPS_TOTAL_MAX - out->rss) {
                    ha_err_set(err, errlen,
                               "line %zu: expected a total Rss below 2^60 "
                               "bytes",
                               line);
                    return -1;
                }
                out->rss += v;
                switch (cur.kind) {
                case KIND_FILES:
                    out->files += v;
                    break;
                case KIND_STACKS:
                    out->stacks += v;
                    break;
                case KIND_HEAP:
                    out->heap += v;
                    break;
                case KIND_ANON:
                    out->anon += v;
                    break;
                }
            } else if (flen == 3 && memcmp(s, "Pss", 3) == 0) {
                if (!kb_value(colon + 1, e, &v))
                    goto bad_value;
                out->pss = add_sat(out->pss, v);
            } else if (flen == 4 && memcmp(s, "Swap", 4) == 0) {
                if (!kb_value(colon + 1, e, &v))
                    goto bad_value;
                out->swap = add_sat(out->swap, v);
            } else if (flen == 8 && memcmp(s, "LazyFree", 8) == 0) {
                if (!kb_value(colon + 1, e, &v))
                    goto bad_value;
                out->lazyfree = add_sat(out->lazyfree, v);
            } else if (flen == 9 && memcmp(s, "Anonymous", 9) == 0) {
                if (!kb_value(colon + 1, e, &v))
                    goto bad_value;
                out->anonymous = add_sat(out->anonymous, v);
            }
            continue;
        }
        if (have_cur) {
            prev = cur;
            have_prev = true;
        }
        if (!header(s, e, have_prev ? &prev : NULL, &cur)) {
            ha_err_set(err, errlen,
                       "line %zu: expected 'start-end perms offset dev "
                       "inode [path]' or 'Name: value'",
                       line);
            return -1;
        }
        have_cur = true;
        out->n_mappings++;
        if (cur.kind == KIND_STACKS)
            out->n_stacks++;
        continue;
    bad_value:
        ha_err_set(err, errlen, "line %zu: expected '%.*s: <number> kB'",
                   line, (int)flen, s);
        return -1;
    }
    return 0;
}

/* Reads path whole into *buf (malloc'd). /proc files have no size:
 * read until the end. Returns 0, or -1 with err set. */
static int
read_all(const char *path, char **buf, size_t *len, char *err, size_t errlen)
{
    size_t cap = 0;
    int fd;

    *buf = NULL;
    *len = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    for (;;) {
        ssize_t n;

        if (cap - *len < 65536) {
            size_t ncap = cap ? cap * 2 : 262144;
            char *p = realloc(*buf, ncap);

            if (p == NULL) {
                ha_err_set(err, errlen, "%s: out of memory", path);
                goto fail;
            }
            *buf = p;
            cap = ncap;
        }
        n = read(fd, *buf + *len, cap - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
            goto fail;
        }
        if (n == 0)
            break;
        *len += (size_t)n;
    }
    close(fd);
    return 0;
fail:
    close(fd);
    free(*buf);
    *buf = NULL;
    return -1;
}

/* Reads path whole and parses it with parse; a parse error is prefixed
 * with path. Returns 0 or -1. */
static int
read_parsed(const char *path,
            int (*parse)(const char *buf, size_t len, struct ha_smaps *out,
                         char *err, size_t errlen),
            struct ha_smaps *out, char *err, size_t errlen)
{
    char *buf, why[256];
    size_t len;
    int rc;

    if (read_all(path, &buf, &len, err, errlen) != 0)
        return -1;
    rc = parse(buf, len, out, why, sizeof(why));
    free(buf);
    if (rc != 0)
        ha_err_set(err, errlen, "%s: %s", path, why);
    return rc;
}

int
ha_smaps_read(const char *path, struct ha_smaps *out, char *err,
              size_t errlen)
{
    return read_parsed(path, ha_smaps_parse, out, err, errlen);
}

int
ha_smaps_parse_status(const char *buf, size_t len, struct ha_smaps *out,
                      char *err, size_t errlen)
{
    static const char *const names[] = {"RssAnon", "RssFile", "RssShmem",
                                        "VmSwap"};
    uint64_t v[4] = {0, 0, 0, 0};
    bool seen[4] = {false, false, false, false};
    size_t pos = 0;

    memset(out, 0, sizeof(*out));
    while (pos < len) {
        const char *s = buf + pos, *e, *nl, *colon;

        nl = memchr(s, '\n', len - pos);
        e = nl != NULL ? nl : buf + len;
        pos = nl != NULL ? (size_t)(nl - buf) + 1 : len;
        if (!is_field(s, e, &colon))
            continue;
        for (int i = 0; i < 4; i++)
            if ((size_t)(colon - s) == strlen(names[i]) &&
                memcmp(s, names[i], strlen(names[i])) == 0 &&
                kb_value(colon + 1, e, &v[i]))
                seen[i] = true;
    }
    for (int i = 0; i < 3; i++)
        if (!seen[i]) {
            ha_err_set(err, errlen, "no '%s: <number> kB' line", names[i]);
            return -1;
        }
    out->anon = v[0];
    out->anonymous = v[0];
    out->files = v[1] + v[2];
    out->rss = out->anon + out->files;
    out->swap = v[3];
    return 0;
}

int
ha_smaps_read_status(const char *path, struct ha_smaps *out, char *err,
                     size_t errlen)
{
    return read_parsed(path, ha_smaps_parse_status, out, err, errlen);
}
