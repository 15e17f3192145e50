/* SPDX-License-Identifier: MIT
 *
 * Products: what one face makes from a result of the heap service (a
 * loaded profile, a growth series) for its own readers, as bytes: the
 * HTTP front-end's gzipped profile.proto, its flame graph's and growth
 * view's JSON. The heap service neither knows nor names them; it keeps
 * them with their result, because the result never changes (a dump is
 * never rewritten), so a repeated request (a dashboard, `pprof -http`
 * reloading) costs no work.
 *
 * One rule for all of them: made off the loop (the maker runs on the
 * worker thread while the asking task waits), landed on the loop (kept in
 * the result's slots by the loop's thread, which alone touches them). A
 * kind is a name the face chooses ("pprof.proto.gz"); slots hold one
 * product per kind.
 */
#ifndef HA_PRODUCTS_H
#define HA_PRODUCTS_H

#include <stdbool.h>
#include <stddef.h>

#include "core/buf.h"

/* The products kept with one result. Zeroed is empty. Loop thread. */
struct ha_products {
    struct ha_product_slot *head;
};

/* What ha_products_get hands back: bytes is either a kept product
 * (valid while the caller holds its result) or own. Free it with
 * ha_product_done. */
struct ha_product {
    const struct ha_buf *bytes;
    struct ha_buf own;
};

/* Makes a product on the worker thread: fills out from arg. Returns 0,
 * or -1 with err set (out is then discarded). */
typedef int (*ha_product_make_fn)(void *arg, struct ha_buf *out, char *err,
                                  size_t errlen);

/* With keep, kind's product from slots, or made now by make(arg) off the
 * loop and kept in slots; without, made now and the caller's alone
 * (a product of other inputs than the result's own, such as a diff). arg is always taken over: arg_free(arg)
 * runs once it is no longer needed (at once when a kept product answers,
 * after make otherwise, or on the loop when a stopped task's job ends).
 * Returns 0 with *made set, HA_HEAP_ERROR (err: make's reason) or
 * HA_HEAP_STOPPED (the task was stopped while it waited). */
int ha_products_get(struct ha_products *slots, const char *kind, bool keep,
                    ha_product_make_fn make, void *arg,
                    void (*arg_free)(void *arg), struct ha_product *made,
                    char *err, size_t errlen);

/* kind's kept product, or NULL. */
const struct ha_buf *ha_products_find(const struct ha_products *slots,
                                      const char *kind);

/* Bytes the kept products hold, for a cache's accounting. */
size_t ha_products_bytes(const struct ha_products *slots);

/* Frees every kept product. */
void ha_products_free(struct ha_products *slots);

/* Releases what ha_products_get handed back. */
void ha_product_done(struct ha_product *made);

#endif /* HA_PRODUCTS_H */
