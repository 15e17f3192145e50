/* SPDX-License-Identifier: MIT
 *
 * Stack traces kept once each, and as a heap profile (see traces.h).
 */
#include "prof/traces.h"

#include <stdlib.h>
#include <string.h>

static uint64_t
hash_frames(const uint64_t *f, size_t n)
{
    uint64_t h = 1469598103934665603ull ^ n;

    for (size_t i = 0; i < n; i++) {
        h ^= f[i];
        h *= 1099511628211ull;
        h ^= h >> 29;
    }
    return h;
}

static bool
same(const struct ha_traces *t, uint32_t id, const uint64_t *f, size_t n)
{
    return t->len[id] == n &&
           memcmp(t->frames + t->off[id], f, n * sizeof(*f)) == 0;
}

static int
index_grow(struct ha_traces *t)
{
    size_t cap = t->index_cap ? t->index_cap * 2 : 256;
    uint32_t *v = calloc(cap, sizeof(*v));

    if (v == NULL)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = hash_frames(t->frames + t->off[i], t->len[i]) & (cap - 1);

        while (v[j] != 0)
            j = (j + 1) & (cap - 1);
        v[j] = (uint32_t)i + 1;
    }
    free(t->index);
    t->index = v;
    t->index_cap = cap;
    return 0;
}

int
ha_traces_add(struct ha_traces *t, const uint64_t *frames, size_t n,
              bool dedup, uint32_t *id)
{
    size_t j = 0;

    if (n > HA_TRACES_MAX_FRAMES || t->n >= UINT32_MAX - 1 ||
        t->n_frames + n >= UINT32_MAX)
        return -1;
    if (dedup) {
        if ((t->n + 1) * 2 > t->index_cap && index_grow(t) != 0)
            return -1;
        j = hash_frames(frames, n) & (t->index_cap - 1);
        while (t->index[j] != 0) {
            if (same(t, t->index[j] - 1, frames, n)) {
                *id = t->index[j] - 1;
                return 0;
            }
            j = (j + 1) & (t->index_cap - 1);
        }
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        uint32_t *o = realloc(t->off, cap * sizeof(*o)), *l;

        if (o == NULL)
            return -1;
        t->off = o;
        if ((l = realloc(t->len, cap * sizeof(*l))) == NULL)
            return -1;
        t->len = l;
        t->cap = cap;
    }
    if (t->n_frames + n > t->cap_frames) {
        size_t cap = t->cap_frames ? t->cap_frames : 1024;
        uint64_t *f;

        while (cap < t->n_frames + n)
            cap *= 2;
        if ((f = realloc(t->frames, cap * sizeof(*f))) == NULL)
            return -1;
        t->frames = f;
        t->cap_frames = cap;
    }
    if (n > 0)
        memcpy(t->frames + t->n_frames, frames, n * sizeof(*frames));
    t->off[t->n] = (uint32_t)t->n_frames;
    t->len[t->n] = (uint32_t)n;
    t->n_frames += n;
    if (dedup)
        t->index[j] = (uint32_t)t->n + 1;
    *id = (uint32_t)t->n++;
    return 0;
}

void
ha_traces_free(struct ha_traces *t)
{
    if (t == NULL)
        return;
    free(t->frames);
    free(t->off);
    free(t->len);
    free(t->index);
    memset(t, 0, sizeof(*t));
}

int
ha_traces_as_heapv2(const struct ha_traces *t, const double *objs,
                    const double *bytes, uint64_t period, const char *maps,
                    size_t maps_len, struct ha_heapv2 *out)
{
    memset(out, 0, sizeof(*out));
    out->period = period;
    /* Never NULL, even with nothing in them (frames + off is then
     * defined), as ha_heapv2_parse leaves them. */
    out->frames = malloc((t->n_frames ? t->n_frames : 1) * sizeof(uint64_t));
    out->stacks = calloc(t->n ? t->n : 1, sizeof(*out->stacks));
    out->maps = malloc(maps_len + 1);
    if (out->frames == NULL || out->stacks == NULL || out->maps == NULL) {
        ha_heapv2_free(out);
        return -1;
    }
    if (t->n_frames > 0)
        memcpy(out->frames, t->frames, t->n_frames * sizeof(uint64_t));
    out->n_frames = t->n_frames;
    for (size_t i = 0; i < t->n; i++) {
        struct ha_heapv2_stack *s = &out->stacks[i];

        s->frame_off = t->off[i];
        s->n_frames = t->len[i];
        s->objs = objs != NULL ? objs[i] : 0;
        s->bytes = bytes != NULL ? bytes[i] : 0;
        out->scaled_objs += s->objs;
        out->scaled_bytes += s->bytes;
    }
    out->n_stacks = t->n;
    if (maps_len > 0)
        memcpy(out->maps, maps, maps_len);
    out->maps[maps_len] = '\0';
    out->maps_len = maps_len;
    out->has_maps = maps_len > 0;
    return 0;
}
