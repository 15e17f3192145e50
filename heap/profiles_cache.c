/* SPDX-License-Identifier: MIT
 *
 * A loaded profile's references and size, and the bounded cache loaded
 * profiles are kept in (see heap/profiles.h): least recently used
 * dropped past HA_HEAP_CACHE_MAX profiles or HA_HEAP_CACHE_BYTES, a
 * profile found again by its file's identity. Apart from the loading
 * (profiles_load.c), which fills it, so that every user of a profile
 * needs only this.
 */
#include "heap/profiles.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "prof/symbolize.h"
#include "heap/profiles_int.h"

/* ------------------------------------------------------------------
 * Profiles
 * ------------------------------------------------------------------ */

static void
profile_free(struct ha_heap_profile *pr)
{
    if (pr == NULL)
        return;
    if (pr->top != NULL) {
        ha_agg_free(pr->top);
        free(pr->top);
    }
    free(pr->modules);
    free(pr->threads);
    ha_logfile_free(pr->log);
    free(pr->log);
    ha_products_free(&pr->products);
    ha_syms_free(&pr->syms);
    ha_maps_free(&pr->maps);
    ha_heapv2_free(&pr->p);
    free(pr->stale);
    free(pr->mem);
    free(pr->wrap_conf);
    if (pr->sizes != NULL)
        ha_livesizes_free(pr->sizes);
    free(pr->sizes);
    free(pr->name);
    free(pr);
}

struct ha_heap_profile *
ha_heap_profile_ref(struct ha_heap_profile *pr)
{
    if (pr != NULL)
        pr->refs++;
    return pr;
}

void
ha_heap_profile_put(struct ha_heap_profile *pr)
{
    if (pr != NULL && --pr->refs == 0)
        profile_free(pr);
}

/* Memory a profile holds, roughly (its arrays and strings). */
size_t
ha_profiles_bytes(const struct ha_heap_profile *pr)
{
    size_t b = sizeof(*pr) + pr->p.n_stacks * sizeof(*pr->p.stacks) +
               pr->p.n_frames * sizeof(*pr->p.frames) + pr->p.maps_len +
               pr->maps.n_entries * sizeof(*pr->maps.entries) +
               pr->syms.addrs_cap * sizeof(*pr->syms.addrs) +
               pr->syms.frames_cap * sizeof(*pr->syms.frames) +
               pr->syms.strs.buf.cap + pr->syms.strs.n_slots * 4 +
               pr->syms.modules_cap * sizeof(*pr->syms.modules);

    b += pr->p.n_tlines * sizeof(*pr->p.tlines) +
         pr->p.n_threads * sizeof(*pr->p.threads) + pr->p.names_len +
         pr->n_threads * sizeof(*pr->threads);
    if (pr->modules != NULL)
        b += pr->syms.n_modules * sizeof(*pr->modules);
    if (pr->top != NULL)
        b += pr->top->rows_cap * sizeof(*pr->top->rows) +
             pr->top->index_cap * 4 + pr->top->names.buf.cap +
             pr->top->names.n_slots * 4;
    if (pr->log != NULL)
        b += ha_logfile_bytes(pr->log);
    return b + ha_products_bytes(&pr->products);
}

int
ha_heap_profile_product(struct ha_heap_profile *pr, const char *kind, bool keep,
                        ha_product_make_fn make, void *arg,
                        void (*arg_free)(void *arg), struct ha_product *made,
                        char *err, size_t errlen)
{
    int rc = ha_products_get(&pr->products, kind, keep && !pr->live, make, arg,
                             arg_free, made, err, errlen);

    if (rc == 0)
        pr->bytes = ha_profiles_bytes(pr);
    return rc;
}

/* True when pr was symbolized while debuginfod answers were pending and
 * some answer has come since (the generation is atomic: the loop may ask
 * while the worker or a fetch thread answers). */
static bool
has_news(const struct ha_heap *heap, const struct ha_heap_profile *pr)
{
    return pr->syms.pending > 0 && heap->symbolizer != NULL &&
           ha_symbolizer_generation(heap->symbolizer) != pr->generation;
}

struct ha_heap_cache *
ha_profiles_cache_of(struct ha_heap *heap)
{
    if (heap->profiles == NULL)
        heap->profiles = calloc(1, sizeof(*heap->profiles));
    if (heap->profiles != NULL)
        heap->profiles->used = ha_clock_s();
    return heap->profiles;
}

/* Drops least recently used profiles until the cache is within bounds;
 * keep stays. */
static void
cache_trim(struct ha_heap_cache *c, const struct ha_heap_profile *keep)
{
    for (;;) {
        struct ha_heap_profile **pp, **lru = NULL, *victim;
        size_t n = 0, bytes = 0;

        for (pp = &c->list; *pp != NULL; pp = &(*pp)->next) {
            n++;
            bytes += (*pp)->bytes;
            if (*pp != keep &&
                (lru == NULL || (*pp)->last_use < (*lru)->last_use))
                lru = pp;
        }
        if ((n <= HA_HEAP_CACHE_MAX && bytes <= HA_HEAP_CACHE_BYTES) ||
            lru == NULL)
            return;
        victim = *lru;
        *lru = victim->next;
        victim->next = NULL;
        ha_heap_profile_put(victim);
    }
}

bool
ha_profiles_same_file(const struct stat *a, dev_t dev, ino_t ino, off_t size,
                      const struct timespec *mtime)
{
    return a->st_dev == dev && a->st_ino == ino && a->st_size == size &&
           a->st_mtim.tv_sec == mtime->tv_sec &&
           a->st_mtim.tv_nsec == mtime->tv_nsec;
}

/* The cached profile of name read from the file st describes, made with
 * the current wrapper edits, or NULL. */
struct ha_heap_profile *
ha_profiles_cache_find(const struct ha_heap *heap, struct ha_heap_cache *c,
                       const char *name, const struct stat *st)
{
    for (struct ha_heap_profile *pr = c->list; pr != NULL; pr = pr->next)
        if (strcmp(pr->name, name) == 0 &&
            ha_profiles_same_file(st, pr->dev, pr->ino, pr->size, &pr->mtime) &&
            !has_news(heap, pr) &&
            strcmp(pr->wrap_conf != NULL ? pr->wrap_conf : "",
                   heap->alloc_wrappers) == 0)
            return pr;
    return NULL;
}

/* Puts pr (holding one reference for the cache) in front, replacing an
 * older file of the same name. */
void
ha_profiles_cache_insert(struct ha_heap_cache *c, struct ha_heap_profile *pr)
{
    for (struct ha_heap_profile **pp = &c->list; *pp != NULL; pp = &(*pp)->next)
        if (strcmp((*pp)->name, pr->name) == 0) {
            struct ha_heap_profile *old = *pp;

            *pp = old->next;
            old->next = NULL;
            ha_heap_profile_put(old);
            break;
        }
    pr->bytes = ha_profiles_bytes(pr);
    pr->last_use = ++c->clock;
    pr->next = c->list;
    c->list = pr;
    cache_trim(c, pr);
}

void
ha_heap_cache_free(struct ha_heap *heap)
{
    struct ha_heap_cache *c = heap->profiles;

    if (c == NULL)
        return;
    while (c->list != NULL) {
        struct ha_heap_profile *pr = c->list;

        c->list = pr->next;
        pr->next = NULL;
        ha_heap_profile_put(pr);
    }
    /* Loads still in flight were discarded with the worker (it is freed
     * first), so nothing refers to c now. */
    free(c);
    heap->profiles = NULL;
}

int
ha_heap_cache_release(struct ha_heap *heap, unsigned idle_s)
{
    struct ha_heap_cache *c = heap->profiles;

    if (c != NULL &&
        (c->inflight != NULL || ha_clock_s() - c->used < (time_t)idle_s))
        return -1;
    if (c != NULL)
        ha_heap_cache_free(heap);
    /* The fetch threads of debuginfod would be joined here, on the loop:
     * with it on, the symbols stay. */
    if (heap->symbolizer != NULL &&
        (heap->je == NULL || !heap->je->debuginfod)) {
        ha_symbolizer_free(heap->symbolizer);
        heap->symbolizer = NULL;
    }
    return 0;
}
