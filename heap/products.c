/* SPDX-License-Identifier: MIT
 *
 * Products kept with a result (products.h): made on the worker thread,
 * landed on the loop.
 */
#include "heap/products.h"

#include <stdlib.h>
#include <string.h>

#include "core/task.h"
#include "core/util.h"
#include "heap/heap.h"

struct ha_product_slot {
    char *kind;
    struct ha_buf bytes;
    struct ha_product_slot *next;
};

const struct ha_buf *
ha_products_find(const struct ha_products *slots, const char *kind)
{
    for (const struct ha_product_slot *s = slots->head; s != NULL;
         s = s->next)
        if (strcmp(s->kind, kind) == 0)
            return &s->bytes;
    return NULL;
}

size_t
ha_products_bytes(const struct ha_products *slots)
{
    size_t n = 0;

    for (const struct ha_product_slot *s = slots->head; s != NULL;
         s = s->next)
        n += sizeof(*s) + s->bytes.cap;
    return n;
}

void
ha_products_free(struct ha_products *slots)
{
    struct ha_product_slot *s = slots->head, *next;

    for (; s != NULL; s = next) {
        next = s->next;
        ha_buf_free(&s->bytes);
        free(s->kind);
        free(s);
    }
    slots->head = NULL;
}

void
ha_product_done(struct ha_product *made)
{
    ha_buf_free(&made->own);
    made->bytes = NULL;
}

/* The worker's part: arg in, bytes out. */
struct make_job {
    ha_product_make_fn make;
    void *arg;
    void (*arg_free)(void *);
    struct ha_buf out;
    int rc;
    char err[512];
};

static void
make_run(void *p)
{
    struct make_job *j = p;

    j->rc = j->make(j->arg, &j->out, j->err, sizeof(j->err));
}

static void
make_free(void *p)
{
    struct make_job *j = p;

    if (j->arg_free != NULL)
        j->arg_free(j->arg);
    ha_buf_free(&j->out);
    free(j);
}

int
ha_products_get(struct ha_products *slots, const char *kind, bool keep,
                ha_product_make_fn make, void *arg,
                void (*arg_free)(void *arg), struct ha_product *made,
                char *err, size_t errlen)
{
    struct ha_product_slot *s;
    struct make_job *j;
    const struct ha_buf *kept;

    memset(made, 0, sizeof(*made));
    /* Not to be kept (a diff against a base, a live profile): made anew,
     * whatever the slots hold. */
    if (keep && (kept = ha_products_find(slots, kind)) != NULL) {
        if (arg_free != NULL)
            arg_free(arg);
        made->bytes = kept;
        return 0;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        if (arg_free != NULL)
            arg_free(arg);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->make = make;
    j->arg = arg;
    j->arg_free = arg_free;
    /* On -1 the job is make_free's: never touch it again. */
    if (ha_task_offload(make_run, make_free, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        ha_err_set(err, errlen, "%s", j->err);
        make_free(j);
        return HA_HEAP_ERROR;
    }
    /* Landed, on the loop. Another task may have kept the same kind
     * while this one was made: the first stays, this one is the
     * caller's. */
    if (keep && ha_products_find(slots, kind) == NULL &&
        (s = calloc(1, sizeof(*s))) != NULL) {
        if ((s->kind = strdup(kind)) != NULL) {
            s->bytes = j->out;
            ha_buf_init(&j->out);
            s->next = slots->head;
            slots->head = s;
            made->bytes = &s->bytes;
        } else {
            free(s);
        }
    }
    if (made->bytes == NULL) {
        made->own = j->out;
        ha_buf_init(&j->out);
        made->bytes = &made->own;
    }
    make_free(j);
    return 0;
}
