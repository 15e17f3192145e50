/* SPDX-License-Identifier: MIT
 *
 * An open-addressed map from a 64-bit key to a 32-bit value (see
 * idmap.h).
 */
#include "core/idmap.h"

#include <stdlib.h>
#include <string.h>

static size_t
slot(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9E3779B97F4A7C15ull) >> 24) & (cap - 1);
}

bool
ha_idmap_get(const struct ha_idmap *m, uint64_t key, uint32_t *val)
{
    if (m->cap == 0)
        return false;
    for (size_t j = slot(key, m->cap); m->vals[j] != 0;
         j = (j + 1) & (m->cap - 1))
        if (m->keys[j] == key) {
            *val = m->vals[j] - 1;
            return true;
        }
    return false;
}

int
ha_idmap_put(struct ha_idmap *m, uint64_t key, uint32_t val)
{
    size_t j;

    if (val == UINT32_MAX)
        return -1;
    if ((m->n + 1) * 2 > m->cap) {
        size_t nc = m->cap ? m->cap * 2 : 1024;
        uint64_t *k = malloc(nc * sizeof(*k));
        uint32_t *v = calloc(nc, sizeof(*v));

        if (k == NULL || v == NULL) {
            free(k);
            free(v);
            return -1;
        }
        for (size_t i = 0; i < m->cap; i++) {
            if (m->vals[i] == 0)
                continue;
            for (j = slot(m->keys[i], nc); v[j] != 0; j = (j + 1) & (nc - 1))
                ;
            k[j] = m->keys[i];
            v[j] = m->vals[i];
        }
        free(m->keys);
        free(m->vals);
        m->keys = k;
        m->vals = v;
        m->cap = nc;
    }
    for (j = slot(key, m->cap); m->vals[j] != 0; j = (j + 1) & (m->cap - 1))
        ;
    m->keys[j] = key;
    m->vals[j] = val + 1;
    m->n++;
    return 0;
}

void
ha_idmap_clear(struct ha_idmap *m)
{
    if (m->n > 0)
        memset(m->vals, 0, m->cap * sizeof(*m->vals));
    m->n = 0;
}

void
ha_idmap_free(struct ha_idmap *m)
{
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof(*m));
}
