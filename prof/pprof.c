/* SPDX-License-Identifier: MIT
 *
 * profile.proto writer (see pprof.h). Protobuf wire format by hand:
 * varint keys (field << 3 | wire type), varints, length-delimited
 * submessages and packed repeated scalars; a submessage is built in a
 * scratch buffer first, so its length is known before it is written.
 */
#include "prof/pprof.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "core/idmap.h"
#include "core/util.h"
#include "prof/aggregate.h"
#include "prof/threads.h"

/* Wire types (protobuf encoding). */
#define WT_VARINT 0
#define WT_LEN 2

/* message Profile */
#define PROFILE_SAMPLE_TYPE 1
#define PROFILE_SAMPLE 2
#define PROFILE_MAPPING 3
#define PROFILE_LOCATION 4
#define PROFILE_FUNCTION 5
#define PROFILE_STRING_TABLE 6
#define PROFILE_TIME_NANOS 9
#define PROFILE_DURATION_NANOS 10
#define PROFILE_PERIOD_TYPE 11
#define PROFILE_PERIOD 12
#define PROFILE_COMMENT 13
#define PROFILE_DEFAULT_SAMPLE_TYPE 14
/* message ValueType */
#define VALUETYPE_TYPE 1
#define VALUETYPE_UNIT 2
/* message Sample */
#define SAMPLE_LOCATION_ID 1
#define SAMPLE_VALUE 2
#define SAMPLE_LABEL 3
/* message Label */
#define LABEL_KEY 1
#define LABEL_STR 2
/* message Mapping */
#define MAPPING_ID 1
#define MAPPING_START 2
#define MAPPING_LIMIT 3
#define MAPPING_OFFSET 4
#define MAPPING_FILENAME 5
#define MAPPING_BUILD_ID 6
#define MAPPING_HAS_FUNCTIONS 7
#define MAPPING_HAS_FILENAMES 8
#define MAPPING_HAS_LINE_NUMBERS 9
#define MAPPING_HAS_INLINE_FRAMES 10
/* message Location */
#define LOCATION_ID 1
#define LOCATION_MAPPING_ID 2
#define LOCATION_ADDRESS 3
#define LOCATION_LINE 4
/* message Line */
#define LINE_FUNCTION_ID 1
#define LINE_LINE 2
/* message Function */
#define FUNCTION_ID 1
#define FUNCTION_NAME 2
#define FUNCTION_SYSTEM_NAME 3
#define FUNCTION_FILENAME 4

/* ------------------------------------------------------------------ */
/* Wire format                                                         */
/* ------------------------------------------------------------------ */

static void
pb_varint(struct ha_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;

    do {
        tmp[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v != 0);
    ha_buf_append(b, tmp, n);
}

static void
pb_key(struct ha_buf *b, unsigned field, unsigned wt)
{
    pb_varint(b, ((uint64_t)field << 3) | wt);
}

/* A scalar field; zero is the default and is left out (proto3). */
static void
pb_uint(struct ha_buf *b, unsigned field, uint64_t v)
{
    if (v == 0)
        return;
    pb_key(b, field, WT_VARINT);
    pb_varint(b, v);
}

static void
pb_bytes(struct ha_buf *b, unsigned field, const void *p, size_t len)
{
    pb_key(b, field, WT_LEN);
    pb_varint(b, len);
    ha_buf_append(b, p, len);
}

/* Appends sub as field of b and empties sub. */
static void
pb_msg(struct ha_buf *b, unsigned field, struct ha_buf *sub)
{
    pb_bytes(b, field, sub->data, sub->len);
    ha_buf_reset(sub);
}

/* ------------------------------------------------------------------ */
/* String table and functions                                          */
/* ------------------------------------------------------------------ */

/* Strings by index, deduplicated through ha_strtab (offset -> index). */
struct strings {
    struct ha_strtab tab;
    uint32_t *offs;     /* index -> offset */
    size_t n, cap;
    uint32_t *index;    /* open-addressed: offset -> index + 1 */
    size_t index_cap;
    bool oom;
};

static size_t
mix(uint64_t v, size_t cap)
{
    return (size_t)((v * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);
}

static int
strings_grow_index(struct strings *s)
{
    size_t ncap = s->index_cap ? s->index_cap * 2 : 1024;
    uint32_t *v = calloc(ncap, sizeof(*v));

    if (v == NULL)
        return -1;
    for (size_t i = 0; i < s->n; i++) {
        size_t j = mix(s->offs[i], ncap);

        while (v[j] != 0)
            j = (j + 1) & (ncap - 1);
        v[j] = (uint32_t)i + 1;
    }
    free(s->index);
    s->index = v;
    s->index_cap = ncap;
    return 0;
}

/* The string table index of str (added if new). */
static int64_t
str_index(struct strings *s, const char *str)
{
    uint32_t off = ha_strtab_intern(&s->tab, str, strlen(str));
    size_t j;

    if (off == UINT32_MAX ||
        ((s->n + 1) * 2 > s->index_cap && strings_grow_index(s) != 0)) {
        s->oom = true;
        return 0;
    }
    for (j = mix(off, s->index_cap); s->index[j] != 0;
         j = (j + 1) & (s->index_cap - 1))
        if (s->offs[s->index[j] - 1] == off)
            return s->index[j] - 1;
    if (s->n == s->cap) {
        size_t ncap = s->cap ? s->cap * 2 : 1024;
        uint32_t *v = realloc(s->offs, ncap * sizeof(*v));

        if (v == NULL) {
            s->oom = true;
            return 0;
        }
        s->offs = v;
        s->cap = ncap;
    }
    s->offs[s->n] = off;
    s->index[j] = (uint32_t)++s->n;
    return (int64_t)s->n - 1;
}

static void
strings_free(struct strings *s)
{
    ha_strtab_free(&s->tab);
    free(s->offs);
    free(s->index);
}

/* Functions by (name, file) string indexes; ids from 1. */
struct functions {
    uint64_t *keys;     /* name << 32 | file */
    size_t n, cap;
    uint32_t *index;    /* open-addressed: key -> id */
    size_t index_cap;
    bool oom;
};

static uint64_t
function_id(struct functions *f, int64_t name, int64_t file)
{
    uint64_t key = (uint64_t)name << 32 | (uint64_t)(uint32_t)file;
    size_t j;

    if ((f->n + 1) * 2 > f->index_cap) {
        size_t ncap = f->index_cap ? f->index_cap * 2 : 1024;
        uint32_t *v = calloc(ncap, sizeof(*v));

        if (v == NULL) {
            f->oom = true;
            return 0;
        }
        for (size_t i = 0; i < f->n; i++) {
            size_t k = mix(f->keys[i], ncap);

            while (v[k] != 0)
                k = (k + 1) & (ncap - 1);
            v[k] = (uint32_t)i + 1;
        }
        free(f->index);
        f->index = v;
        f->index_cap = ncap;
    }
    for (j = mix(key, f->index_cap); f->index[j] != 0;
         j = (j + 1) & (f->index_cap - 1))
        if (f->keys[f->index[j] - 1] == key)
            return f->index[j];
    if (f->n == f->cap) {
        size_t ncap = f->cap ? f->cap * 2 : 1024;
        uint64_t *v = realloc(f->keys, ncap * sizeof(*v));

        if (v == NULL) {
            f->oom = true;
            return 0;
        }
        f->keys = v;
        f->cap = ncap;
    }
    f->keys[f->n] = key;
    f->index[j] = (uint32_t)++f->n;
    return f->n;
}

/* ------------------------------------------------------------------ */
/* Encoding                                                            */
/* ------------------------------------------------------------------ */

struct enc {
    struct ha_buf out;      /* the Profile */
    struct ha_buf sub, sub2; /* scratch for submessages */
    struct strings strs;
    struct functions funcs;
    uint64_t next_location; /* ids handed out so far */
    uint64_t next_mapping;
    bool alloc;             /* samples carry alloc_objects, alloc_space
                               before the in-use pair */
};

static void
value_type(struct enc *e, unsigned field, const char *type, const char *unit)
{
    pb_uint(&e->sub, VALUETYPE_TYPE, (uint64_t)str_index(&e->strs, type));
    pb_uint(&e->sub, VALUETYPE_UNIT, (uint64_t)str_index(&e->strs, unit));
    pb_msg(&e->out, field, &e->sub);
}

/* Per module of one input: the mapping id and what its addresses have. */
struct modinfo {
    uint64_t id;       /* 0: no address of ours in it */
    bool funcs, files, lines, inlines;
};

/* Mapping id of the module holding pc (0 when none). */
static size_t
module_of(const struct ha_maps *m, uint64_t pc)
{
    long e = ha_maps_lookup(m, pc, NULL);

    return e < 0 ? SIZE_MAX : m->entries[e].module;
}

/* Writes Location id for address a, its lines from inline entry from on
 * (innermost first). Uses e->sub and e->sub2, which must be empty. */
static void
location(struct enc *e, uint64_t id, const struct modinfo *mods,
         const struct ha_maps *maps, const struct ha_syms *syms,
         const struct ha_syms_addr *a, uint32_t from)
{
    size_t m = module_of(maps, a->pc);

    pb_uint(&e->sub, LOCATION_ID, id);
    if (m != SIZE_MAX)
        pb_uint(&e->sub, LOCATION_MAPPING_ID, mods[m].id);
    pb_uint(&e->sub, LOCATION_ADDRESS, a->pc);
    for (uint32_t q = from; q < a->n; q++) {
        const struct ha_syms_frame *fr = &syms->frames[a->first + q];
        const char *name = ha_syms_str(syms, fr->func);
        int64_t ni, fi;

        if (*name == '\0')
            continue;
        ni = str_index(&e->strs, name);
        fi = str_index(&e->strs, ha_syms_str(syms, fr->file));
        pb_uint(&e->sub2, LINE_FUNCTION_ID, function_id(&e->funcs, ni, fi));
        pb_uint(&e->sub2, LINE_LINE, fr->line);
        pb_msg(&e->sub, LOCATION_LINE, &e->sub2);
    }
    pb_msg(&e->out, PROFILE_LOCATION, &e->sub);
}

/* The location of the site's frame when the site is inlined where a
 * wrapper was (ha_agg_cut.skip): the address's lines from the site on,
 * made once per (address, skip) with an id past the plain ones (made
 * maps the pair to its id less loc0). 0 on allocation failure. */
static uint64_t
site_location(struct enc *e, struct ha_idmap *made, uint64_t loc0,
              const struct modinfo *mods, const struct ha_maps *maps,
              const struct ha_syms *syms, const struct ha_syms_addr *a,
              uint32_t skip)
{
    uint64_t key = (uint64_t)(a - syms->addrs) << 8 | (skip & 0xff), id;
    uint32_t v;

    if (ha_idmap_get(made, key, &v))
        return loc0 + v;
    id = e->next_location + 1;
    if (id - loc0 >= UINT32_MAX ||
        ha_idmap_put(made, key, (uint32_t)(id - loc0)) != 0)
        return 0;
    e->next_location = id;
    location(e, id, mods, maps, syms, a, skip);
    return id;
}

static int
encode_input(struct enc *e, const struct ha_pprof_input *in)
{
    const struct ha_syms *syms = in->syms;
    const struct ha_maps *maps = in->maps;
    struct modinfo *mods = calloc(maps->n_modules ? maps->n_modules : 1,
                                  sizeof(*mods));
    uint64_t loc0 = e->next_location; /* location id = loc0 + addr index + 1 */
    uint64_t *ids = NULL;
    size_t ids_cap = 0;
    struct ha_agg_walker *w = NULL;
    struct ha_agg_cut cut;
    struct ha_idmap made = {0}; /* (address, skip) -> site location */
    struct ha_buf wrap = HA_BUF_INIT;
    struct ha_threads_part one[1], *parts = one;
    size_t parts_cap = 1, n_parts;
    bool named = ha_heapv2_has_names(in->p);
    int ret = -1;

    if (mods == NULL)
        return -1;

    /* Modules first: which hold our addresses and what is known there. */
    for (size_t i = 0; i < syms->n_addrs; i++) {
        const struct ha_syms_addr *a = &syms->addrs[i];
        size_t m = module_of(maps, a->pc);

        if (m == SIZE_MAX)
            continue;
        if (mods[m].id == 0)
            mods[m].id = ++e->next_mapping;
        for (uint32_t q = 0; q < a->n; q++) {
            const struct ha_syms_frame *fr = &syms->frames[a->first + q];

            /* "<module>+0x..." is a name we made, not a function. */
            mods[m].funcs |= fr->func != 0 && !(a->flags & HA_SYMS_UNNAMED);
            mods[m].files |= fr->file != 0;
            mods[m].lines |= fr->line != 0;
        }
        mods[m].inlines |= a->n > 1;
    }
    for (size_t m = 0; m < maps->n_modules; m++) {
        const struct ha_maps_module *mm = &maps->modules[m];
        const char *path = ha_maps_module_path(maps, m);
        const char *bid = in->build_id != NULL
                              ? in->build_id(in->build_id_arg, path)
                              : NULL;
        uint64_t off = 0;

        if (mods[m].id == 0)
            continue;
        for (size_t k = 0; k < maps->n_entries; k++)
            if (maps->entries[k].module == m &&
                maps->entries[k].start == mm->lo) {
                off = maps->entries[k].offset;
                break;
            }
        pb_uint(&e->sub, MAPPING_ID, mods[m].id);
        pb_uint(&e->sub, MAPPING_START, mm->lo);
        pb_uint(&e->sub, MAPPING_LIMIT, mm->hi);
        pb_uint(&e->sub, MAPPING_OFFSET, off);
        pb_uint(&e->sub, MAPPING_FILENAME,
                (uint64_t)str_index(&e->strs, path));
        if (bid != NULL)
            pb_uint(&e->sub, MAPPING_BUILD_ID,
                    (uint64_t)str_index(&e->strs, bid));
        pb_uint(&e->sub, MAPPING_HAS_FUNCTIONS, mods[m].funcs);
        pb_uint(&e->sub, MAPPING_HAS_FILENAMES, mods[m].files);
        pb_uint(&e->sub, MAPPING_HAS_LINE_NUMBERS, mods[m].lines);
        pb_uint(&e->sub, MAPPING_HAS_INLINE_FRAMES, mods[m].inlines);
        pb_msg(&e->out, PROFILE_MAPPING, &e->sub);
    }

    /* One location per looked-up address, its lines innermost first. */
    for (size_t i = 0; i < syms->n_addrs; i++)
        location(e, loc0 + i + 1, mods, maps, syms, &syms->addrs[i], 0);
    e->next_location += syms->n_addrs;

    /* Samples: the stacks, leaf first, allocator and wrapper frames
     * cut. */
    if ((w = ha_agg_walker_new_with(syms, in->wrappers)) == NULL)
        goto out;
    for (size_t s = 0; s < in->p->n_stacks; s++) {
        const struct ha_heapv2_stack *st = &in->p->stacks[s];
        const uint64_t *f = ha_heapv2_stack_frames(in->p, s);
        size_t start = ha_agg_walker_stack(w, in->p, s), n_ids = 0;
        int64_t totals[4]; /* alloc objs, bytes; inuse objs, bytes */

        if (start == SIZE_MAX)
            goto out;
        if (st->n_frames > ids_cap) {
            uint64_t *v = realloc(ids, st->n_frames * sizeof(*v));

            if (v == NULL)
                goto out;
            ids = v;
            ids_cap = st->n_frames;
        }
        ha_agg_walker_cut(w, &cut);
        for (size_t j = start; j < st->n_frames; j++) {
            const struct ha_syms_addr *a = ha_agg_walker_frame(w, j);

            if (f[j] >= HA_AGG_HIGH_ADDR || a == NULL)
                continue;
            if (j == start && cut.skip > 0 && cut.skip < a->n) {
                /* The site inlined where a wrapper was: a location of
                 * its own, so flat goes to the site (heap_top's). */
                if ((ids[n_ids] = site_location(e, &made, loc0, mods, maps,
                                                syms, a, cut.skip)) == 0)
                    goto out;
                n_ids++;
                continue;
            }
            ids[n_ids++] = loc0 + (uint64_t)(a - syms->addrs) + 1;
        }
        if (n_ids == 0)
            continue;
        totals[0] = (int64_t)(st->accum_objs + 0.5) * in->weight;
        totals[1] = (int64_t)(st->accum_bytes + 0.5) * in->weight;
        totals[2] = (int64_t)(st->objs + 0.5) * in->weight;
        totals[3] = (int64_t)(st->bytes + 0.5) * in->weight;
        if (totals[2] == 0 && totals[3] == 0 &&
            (!e->alloc || st->accum_objs == 0))
            continue;
        /* The wrapper the site called, which the cut left out: a label,
         * so `pprof -tags` and -tagfocus still see it. */
        if (ha_agg_walker_wrapper(w, in->p, s, &wrap) != 0)
            goto out;
        if (wrap.len > 0) {
            const uint8_t *semi = memchr(wrap.data, ';', wrap.len);
            size_t len = semi != NULL ? (size_t)(semi - wrap.data) : wrap.len;

            if (len >= 8 && memcmp(wrap.data + len - 8, "[inline]", 8) == 0)
                len -= 8;
            wrap.len = len;
            ha_buf_append_u8(&wrap, 0);
        }
        /* One sample per thread name where threads have names (the
         * label thread_name: `pprof -tagfocus=thread_name=io_thd_1`),
         * the stack's figures shared out so they add up. */
        n_parts = 1;
        parts[0].name = NULL;
        memcpy(parts[0].v, totals, sizeof(totals));
        if (named && st->n_threads > 1) {
            if (st->n_threads + 1 > parts_cap) {
                struct ha_threads_part *g =
                    realloc(parts == one ? NULL : parts,
                            (st->n_threads + 1) * sizeof(*g));

                if (g == NULL)
                    goto out;
                parts = g;
                parts_cap = st->n_threads + 1;
            }
            {
                /* ha_threads_split's order: objs, bytes, accum. */
                const int64_t t4[4] = {totals[2], totals[3], totals[0],
                                       totals[1]};

                if (ha_threads_split(in->p, s, t4, parts, &n_parts) != 0)
                    goto out;
            }
            for (size_t k = 0; k < n_parts; k++) {
                int64_t v[4];

                memcpy(v, parts[k].v, sizeof(v));
                parts[k].v[0] = v[2];
                parts[k].v[1] = v[3];
                parts[k].v[2] = v[0];
                parts[k].v[3] = v[1];
            }
        } else if (named && st->n_threads == 1) {
            const struct ha_heapv2_thread *t = ha_heapv2_thread_of(
                in->p, in->p->tlines[st->tline_off].uid);

            parts[0].name = t != NULL ? ha_heapv2_thread_name(in->p, t)
                                      : NULL;
        }
        for (size_t k = 0; k < n_parts; k++) {
            const int64_t *v = parts[k].v;

            if (n_parts > 1 && v[0] == 0 && v[1] == 0 && v[2] == 0 &&
                v[3] == 0)
                continue;
            ha_buf_reset(&e->sub2);
            for (size_t q = 0; q < n_ids; q++)
                pb_varint(&e->sub2, ids[q]);
            pb_msg(&e->sub, SAMPLE_LOCATION_ID, &e->sub2);
            /* int64 values: two's complement varints (negative: 10
             * bytes), in sample_type order. */
            if (e->alloc) {
                pb_varint(&e->sub2, (uint64_t)v[0]);
                pb_varint(&e->sub2, (uint64_t)v[1]);
            }
            pb_varint(&e->sub2, (uint64_t)v[2]);
            pb_varint(&e->sub2, (uint64_t)v[3]);
            pb_msg(&e->sub, SAMPLE_VALUE, &e->sub2);
            if (wrap.len > 0) {
                pb_uint(&e->sub2, LABEL_KEY,
                        (uint64_t)str_index(&e->strs, "wrapper"));
                pb_uint(&e->sub2, LABEL_STR,
                        (uint64_t)str_index(&e->strs,
                                            (const char *)wrap.data));
                pb_msg(&e->sub, SAMPLE_LABEL, &e->sub2);
            }
            if (parts[k].name != NULL) {
                pb_uint(&e->sub2, LABEL_KEY,
                        (uint64_t)str_index(&e->strs, "thread_name"));
                pb_uint(&e->sub2, LABEL_STR,
                        (uint64_t)str_index(&e->strs, parts[k].name));
                pb_msg(&e->sub, SAMPLE_LABEL, &e->sub2);
            }
            pb_msg(&e->out, PROFILE_SAMPLE, &e->sub);
        }
    }
    ret = 0;
out:
    if (parts != one)
        free(parts);
    ha_agg_walker_free(w);
    ha_idmap_free(&made);
    ha_buf_free(&wrap);
    free(ids);
    free(mods);
    return ret;
}

int
ha_pprof_serialize(const struct ha_pprof_input *inputs, size_t n,
                   int64_t time_nanos, struct ha_buf *out, char *err,
                   size_t errlen)
{
    struct ha_pprof_opts o = {time_nanos, false, 0};

    return ha_pprof_serialize_opts(inputs, n, &o, out, err, errlen);
}

int
ha_pprof_serialize_opts(const struct ha_pprof_input *inputs, size_t n,
                        const struct ha_pprof_opts *opts, struct ha_buf *out,
                        char *err, size_t errlen)
{
    struct enc e;
    int64_t space = 0;
    uint64_t period = 0;
    int64_t time_nanos = opts->time_nanos;
    int ret = -1;

    memset(&e, 0, sizeof(e));
    ha_buf_init(&e.out);
    ha_buf_init(&e.sub);
    ha_buf_init(&e.sub2);
    str_index(&e.strs, ""); /* index 0 is "" */
    /* Go's heap profile: the cumulative pair first, where every input
     * carries them (a base without them would make the difference a
     * lie). */
    e.alloc = n > 0;
    for (size_t i = 0; i < n; i++)
        e.alloc = e.alloc && ha_heapv2_has_accum(inputs[i].p);
    if (e.alloc) {
        value_type(&e, PROFILE_SAMPLE_TYPE, "alloc_objects", "count");
        value_type(&e, PROFILE_SAMPLE_TYPE, "alloc_space", "bytes");
    }
    value_type(&e, PROFILE_SAMPLE_TYPE, "inuse_objects", "count");
    value_type(&e, PROFILE_SAMPLE_TYPE, "inuse_space", "bytes");
    space = str_index(&e.strs, e.alloc && opts->alloc_default
                                   ? "alloc_space"
                                   : "inuse_space");
    if (!e.alloc)
        pb_uint(&e.out, PROFILE_COMMENT,
                (uint64_t)str_index(
                    &e.strs, "no alloc_objects/alloc_space: the dump has "
                             "no cumulative counters (start the process "
                             "with prof_accum:true)"));
    for (size_t i = 0; i < n; i++) {
        if (i == 0)
            period = inputs[i].p->period;
        if (encode_input(&e, &inputs[i]) != 0)
            goto done;
    }
    for (size_t i = 0; i < e.funcs.n; i++) {
        uint64_t key = e.funcs.keys[i];

        pb_uint(&e.sub, FUNCTION_ID, i + 1);
        pb_uint(&e.sub, FUNCTION_NAME, key >> 32);
        pb_uint(&e.sub, FUNCTION_SYSTEM_NAME, key >> 32);
        pb_uint(&e.sub, FUNCTION_FILENAME, (uint32_t)key);
        pb_msg(&e.out, PROFILE_FUNCTION, &e.sub);
    }
    pb_uint(&e.out, PROFILE_TIME_NANOS, (uint64_t)time_nanos);
    if (opts->duration_nanos > 0)
        pb_uint(&e.out, PROFILE_DURATION_NANOS,
                (uint64_t)opts->duration_nanos);
    value_type(&e, PROFILE_PERIOD_TYPE, "space", "bytes");
    pb_uint(&e.out, PROFILE_PERIOD, period);
    pb_uint(&e.out, PROFILE_DEFAULT_SAMPLE_TYPE, (uint64_t)space);
    /* The string table last: everything above has interned its strings
     * (field order does not matter to readers). */
    for (size_t i = 0; i < e.strs.n; i++) {
        const char *s = ha_strtab_str(&e.strs.tab, e.strs.offs[i]);

        pb_bytes(&e.out, PROFILE_STRING_TABLE, s, strlen(s));
    }
    if (e.strs.oom || e.funcs.oom || ha_buf_failed(&e.out) ||
        ha_buf_failed(&e.sub) || ha_buf_failed(&e.sub2))
        goto done;
    ha_buf_append(out, e.out.data, e.out.len);
    ret = ha_buf_failed(out) ? -1 : 0;
done:
    if (ret != 0)
        ha_err_set(err, errlen, "out of memory encoding the pprof profile");
    ha_buf_free(&e.out);
    ha_buf_free(&e.sub);
    ha_buf_free(&e.sub2);
    strings_free(&e.strs);
    free(e.funcs.keys);
    free(e.funcs.index);
    return ret;
}

int
ha_pprof_encode(const struct ha_pprof_input *inputs, size_t n,
                int64_t time_nanos, struct ha_buf *out, char *err,
                size_t errlen)
{
    struct ha_pprof_opts o = {time_nanos, false, 0};

    return ha_pprof_encode_opts(inputs, n, &o, out, err, errlen);
}

int
ha_pprof_encode_opts(const struct ha_pprof_input *inputs, size_t n,
                     const struct ha_pprof_opts *opts, struct ha_buf *out,
                     char *err, size_t errlen)
{
    struct ha_buf raw = HA_BUF_INIT;
    z_stream z;
    uint8_t chunk[65536];
    int rc;

    if (ha_pprof_serialize_opts(inputs, n, opts, &raw, err, errlen) != 0)
        return -1;
    memset(&z, 0, sizeof(z));
    /* windowBits 15 + 16: a gzip wrapper (RFC 1952), as pprof expects. */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                     Z_DEFAULT_STRATEGY) != Z_OK) {
        ha_buf_free(&raw);
        ha_err_set(err, errlen, "zlib: deflateInit2 failed");
        return -1;
    }
    z.next_in = raw.data;
    z.avail_in = (uInt)raw.len;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof(chunk);
        rc = deflate(&z, Z_FINISH);
        if (rc == Z_STREAM_ERROR)
            break;
        ha_buf_append(out, chunk, sizeof(chunk) - z.avail_out);
    } while (rc != Z_STREAM_END);
    deflateEnd(&z);
    ha_buf_free(&raw);
    if (rc != Z_STREAM_END || ha_buf_failed(out)) {
        ha_err_set(err, errlen, "zlib: compressing the profile failed");
        return -1;
    }
    return 0;
}
