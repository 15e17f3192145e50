/* SPDX-License-Identifier: MIT
 *
 * Symbolized-address container and string interning (see syms.h).
 */
#include "prof/syms.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/radix.h"
#include "prof/wrappers.h"

/* ------------------------------------------------------------------ */
/* String table                                                        */
/* ------------------------------------------------------------------ */

static uint64_t
hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h;
}

static int
strtab_rehash(struct ha_strtab *t, size_t n_slots)
{
    uint32_t *slots = calloc(n_slots, sizeof(*slots));

    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < t->n_slots; i++) {
        uint32_t off = t->slots[i];
        const char *s;
        size_t j;

        if (off == 0)
            continue;
        s = (const char *)t->buf.data + off;
        j = hash_bytes(s, strlen(s)) & (n_slots - 1);
        while (slots[j] != 0)
            j = (j + 1) & (n_slots - 1);
        slots[j] = off;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

uint32_t
ha_strtab_intern(struct ha_strtab *t, const char *s, size_t n)
{
    size_t j, off;

    /* A name with a NUL inside is kept up to the NUL, so every stored
     * string is exactly its C string. */
    n = strnlen(s, n);
    if (n == 0)
        return 0;
    if (t->buf.len == 0) {
        ha_buf_append_u8(&t->buf, 0); /* offset 0 is "" */
        if (ha_buf_failed(&t->buf))
            return UINT32_MAX;
    }
    /* Keep the load under 1/2. */
    if ((t->n_strs + 1) * 2 > t->n_slots &&
        strtab_rehash(t, t->n_slots ? t->n_slots * 2 : 256) != 0)
        return UINT32_MAX;
    j = hash_bytes(s, n) & (t->n_slots - 1);
    while (t->slots[j] != 0) {
        const char *q = (const char *)t->buf.data + t->slots[j];

        if (strncmp(q, s, n) == 0 && q[n] == '\0')
            return t->slots[j];
        j = (j + 1) & (t->n_slots - 1);
    }
    off = t->buf.len;
    if (off + n + 1 > UINT32_MAX)
        return UINT32_MAX;
    ha_buf_append(&t->buf, s, n);
    ha_buf_append_u8(&t->buf, 0);
    if (ha_buf_failed(&t->buf))
        return UINT32_MAX;
    t->slots[j] = (uint32_t)off;
    t->n_strs++;
    return (uint32_t)off;
}

void
ha_strtab_free(struct ha_strtab *t)
{
    ha_buf_free(&t->buf);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

/* ------------------------------------------------------------------ */
/* Addresses                                                           */
/* ------------------------------------------------------------------ */

static int
grow(void **arr, size_t *cap, size_t need, size_t size)
{
    size_t ncap;
    void *a;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 64;
    while (ncap < need)
        ncap *= 2;
    if (ncap > SIZE_MAX / size || (a = realloc(*arr, ncap * size)) == NULL)
        return -1;
    *arr = a;
    *cap = ncap;
    return 0;
}

int
ha_syms_add(struct ha_syms *s, uint64_t pc, uint32_t module, uint32_t flags,
            const struct ha_syms_frame *frames, size_t n)
{
    struct ha_syms_addr *a;

    if (s->n_frames + n > UINT32_MAX ||
        grow((void **)&s->addrs, &s->addrs_cap, s->n_addrs + 1,
             sizeof(*s->addrs)) != 0 ||
        grow((void **)&s->frames, &s->frames_cap, s->n_frames + n,
             sizeof(*s->frames)) != 0)
        return -1;
    a = &s->addrs[s->n_addrs++];
    a->pc = pc;
    a->first = (uint32_t)s->n_frames;
    a->n = (uint32_t)n;
    a->module = module;
    a->flags = flags;
    a->fsize = 0;
    if (n > 0)
        memcpy(s->frames + s->n_frames, frames, n * sizeof(*frames));
    s->n_frames += n;
    s->sorted = false;
    return 0;
}

void
ha_syms_unnamed_name(char *buf, size_t len, const char *path, uint64_t off)
{
    const char *base;

    if (path == NULL || *path == '\0') {
        snprintf(buf, len, "0x%016" PRIx64, off);
        return;
    }
    base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    snprintf(buf, len, "%s+0x%" PRIx64, base, off);
}

int
ha_syms_add_unnamed(struct ha_syms *s, uint64_t pc, uint32_t module,
                    uint32_t flags, const char *path, uint64_t off)
{
    char name[320];
    struct ha_syms_frame fr = {0, 0, 0};

    ha_syms_unnamed_name(name, sizeof(name), path,
                         path != NULL && *path ? off : pc);
    fr.func = ha_strtab_intern(&s->strs, name, strlen(name));
    if (fr.func == UINT32_MAX)
        return -1;
    return ha_syms_add(s, pc, module, flags | HA_SYMS_UNNAMED, &fr, 1);
}

int
ha_syms_rename_unnamed(struct ha_syms *s, size_t i, uint32_t flags,
                       const char *path, uint64_t off)
{
    char name[320];
    struct ha_syms_addr *a = &s->addrs[i];
    uint32_t func;

    ha_syms_unnamed_name(name, sizeof(name), path,
                         path != NULL && *path ? off : a->pc);
    func = ha_strtab_intern(&s->strs, name, strlen(name));
    if (func == UINT32_MAX || s->n_frames + 1 > UINT32_MAX ||
        grow((void **)&s->frames, &s->frames_cap, s->n_frames + 1,
             sizeof(*s->frames)) != 0)
        return -1;
    s->frames[s->n_frames].func = func;
    s->frames[s->n_frames].file = 0;
    s->frames[s->n_frames].line = 0;
    a->first = (uint32_t)s->n_frames++;
    a->n = 1;
    a->flags |= flags | HA_SYMS_UNNAMED;
    a->fsize = 0;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Modules                                                             */
/* ------------------------------------------------------------------ */

int
ha_syms_set_module(struct ha_syms *s, const char *path, const char *build_id,
                   enum ha_syms_source from, const char *detail)
{
    uint32_t p = ha_strtab_intern(&s->strs, path, strlen(path));
    uint32_t b = build_id != NULL
                     ? ha_strtab_intern(&s->strs, build_id, strlen(build_id))
                     : 0;
    uint32_t d = detail != NULL
                     ? ha_strtab_intern(&s->strs, detail, strlen(detail))
                     : 0;
    struct ha_syms_module *m = NULL;

    if (p == UINT32_MAX || b == UINT32_MAX || d == UINT32_MAX)
        return -1;
    /* A dump maps tens of modules: a scan is cheaper than an index. */
    for (size_t i = 0; i < s->n_modules; i++)
        if (s->modules[i].path == p)
            m = &s->modules[i];
    if (m == NULL) {
        if (grow((void **)&s->modules, &s->modules_cap, s->n_modules + 1,
                 sizeof(*s->modules)) != 0)
            return -1;
        m = &s->modules[s->n_modules++];
    }
    m->path = p;
    m->build_id = b;
    m->detail = d;
    m->from = from;
    m->from_index = false;
    return 0;
}

const struct ha_syms_module *
ha_syms_find_module(const struct ha_syms *s, uint32_t path)
{
    for (size_t i = 0; i < s->n_modules; i++)
        if (s->modules[i].path == path)
            return &s->modules[i];
    return NULL;
}

const char *
ha_syms_source_name(enum ha_syms_source from)
{
    static const char *const names[HA_SYMS_SRC_MAX] = {
        [HA_SYMS_SRC_NONE] = "none",
        [HA_SYMS_SRC_DYNSYM] = "dynsym",
        [HA_SYMS_SRC_SYMTAB] = "symtab",
        [HA_SYMS_SRC_DWARF] = "dwarf",
        [HA_SYMS_SRC_DEBUGINFOD] = "debuginfod",
    };

    return (unsigned)from < HA_SYMS_SRC_MAX ? names[from] : "none";
}

static int
cmp_addr(const void *x, const void *y)
{
    const struct ha_syms_addr *a = x, *b = y;

    if (a->pc != b->pc)
        return a->pc < b->pc ? -1 : 1;
    /* Stable for duplicates: later additions sort after. */
    return a->first < b->first ? -1 : a->first > b->first;
}

/* Sorts addrs[from .. n) by pc, keeping the order of equal pcs (their
 * order of addition): a radix sort, qsort when its scratch cannot be
 * had. */
static void
sort_range(struct ha_syms *s, size_t from)
{
    size_t n = s->n_addrs - from;
    struct ha_radix_item *it = malloc(n * sizeof(*it));
    struct ha_syms_addr *out = malloc(n * sizeof(*out));

    if (it != NULL && out != NULL) {
        for (size_t i = 0; i < n; i++) {
            it[i].key = s->addrs[from + i].pc;
            it[i].val = i;
        }
        if (ha_radix_sort(it, n) == 0) {
            for (size_t i = 0; i < n; i++)
                out[i] = s->addrs[from + it[i].val];
            memcpy(s->addrs + from, out, n * sizeof(*out));
            free(it);
            free(out);
            return;
        }
    }
    free(it);
    free(out);
    qsort(s->addrs + from, n, sizeof(*s->addrs), cmp_addr);
}

/* Sorts addrs[from .. n) and merges it into the sorted addrs[0 .. from),
 * newer entries after older ones of the same pc. -1 when the merge's
 * scratch cannot be had (the caller sorts it all instead). */
static int
merge_tail(struct ha_syms *s, size_t from)
{
    size_t n_new = s->n_addrs - from, i = from, j = n_new, k = s->n_addrs;
    struct ha_syms_addr *tail = malloc(n_new * sizeof(*tail));

    if (tail == NULL)
        return -1;
    sort_range(s, from);
    memcpy(tail, s->addrs + from, n_new * sizeof(*tail));
    /* From the back: on equal pcs the newer (tail) one goes last. */
    while (j > 0) {
        if (i > 0 && s->addrs[i - 1].pc > tail[j - 1].pc)
            s->addrs[--k] = s->addrs[--i];
        else
            s->addrs[--k] = tail[--j];
    }
    free(tail);
    return 0;
}

void
ha_syms_finish(struct ha_syms *s)
{
    size_t out = 0;
    bool in_order = true;

    /* The symbolizer adds a module's addresses in order, and modules in
     * the order of the maps: often nothing to sort. A file's memo grows
     * by a batch per call: only the batch is sorted, then merged. */
    for (size_t i = 1; i < s->n_addrs && in_order; i++)
        in_order = s->addrs[i - 1].pc < s->addrs[i].pc;
    if (!in_order && (s->n_sorted == 0 || s->n_sorted >= s->n_addrs ||
                      merge_tail(s, s->n_sorted) != 0))
        sort_range(s, 0);
    for (size_t i = 0; i < s->n_addrs; i++) {
        if (out > 0 && s->addrs[out - 1].pc == s->addrs[i].pc)
            out--;
        s->addrs[out++] = s->addrs[i];
    }
    s->n_addrs = out;
    s->n_sorted = out;
    s->sorted = true;
}

void
ha_syms_set_frame_index(struct ha_syms *s, const uint64_t *pcs, size_t n,
                        uint32_t *index, size_t n_frames)
{
    bool same = s->sorted && s->n_addrs == n;

    for (size_t i = 0; same && i < n; i++)
        same = s->addrs[i].pc == pcs[i];
    free(s->by_frame);
    s->by_frame = same ? index : NULL;
    s->n_by_frame = same ? n_frames : 0;
    if (!same)
        free(index);
}

const struct ha_syms_addr *
ha_syms_find(const struct ha_syms *s, uint64_t pc)
{
    size_t lo = 0, hi = s->n_addrs;

    if (!s->sorted)
        return NULL;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (s->addrs[mid].pc < pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n_addrs && s->addrs[lo].pc == pc ? &s->addrs[lo] : NULL;
}

void
ha_syms_free(struct ha_syms *s)
{
    if (s == NULL)
        return;
    free(s->addrs);
    free(s->frames);
    free(s->modules);
    free(s->by_frame);
    ha_wrap_set_free(s->wrappers);
    ha_strtab_free(&s->strs);
    memset(s, 0, sizeof(*s));
}
