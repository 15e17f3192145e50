/* SPDX-License-Identifier: MIT
 *
 * The flame graphs' call tree (see calltree.h).
 */
#include "http/calltree.h"

#include <stdlib.h>
#include <string.h>

size_t
ha_calltree_child(struct ha_calltree *t, size_t parent, const char *name)
{
    uint32_t off = ha_strtab_intern(&t->names, name, strlen(name)), at;
    uint64_t key;

    if (off == UINT32_MAX)
        return SIZE_MAX;
    key = (uint64_t)(parent + 1) << 32 | off;
    if (ha_idmap_get(&t->index, key, &at))
        return at;
    if (t->n == t->cap) {
        size_t ncap = t->cap * 2;
        struct ha_calltree_node *v = realloc(t->nodes, ncap * sizeof(*v));

        if (v == NULL)
            return SIZE_MAX;
        t->nodes = v;
        t->cap = ncap;
    }
    if (ha_idmap_put(&t->index, key, (uint32_t)t->n) != 0)
        return SIZE_MAX;
    t->nodes[t->n] = (struct ha_calltree_node){.name = off,
                                   .child = 0,
                                   .next = t->nodes[parent].child,
                                   .v = 0,
                                   .d = 0};
    t->nodes[parent].child = (uint32_t)t->n + 1;
    return t->n++;
}

int
ha_calltree_init(struct ha_calltree *t)
{
    memset(t, 0, sizeof(*t));
    t->cap = 1024;
    t->nodes = calloc(t->cap, sizeof(*t->nodes));
    if (t->nodes == NULL)
        return -1;
    t->nodes[0].name = ha_strtab_intern(&t->names, "all", 3);
    t->n = 1;
    return t->nodes[0].name == UINT32_MAX ? -1 : 0;
}

void
ha_calltree_free(struct ha_calltree *t)
{
    free(t->nodes);
    ha_idmap_free(&t->index);
    ha_strtab_free(&t->names);
}

void
ha_json_str(struct ha_buf *b, const char *s)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\') {
            ha_buf_append_u8(b, '\\');
            ha_buf_append_u8(b, c);
        } else if (c < 0x20) {
            ha_buf_printf(b, "\\u%04x", c);
        } else {
            ha_buf_append_u8(b, c);
        }
    }
}

int
ha_calltree_json(const struct ha_calltree *t, struct ha_buf *b, bool diff, double min)
{
    struct frame {
        uint32_t node, next_child; /* index + 1 */
    } *stack = malloc(t->n * sizeof(*stack));
    size_t depth = 0;

    if (stack == NULL)
        return -1;
    stack[depth++] = (struct frame){1, t->nodes[0].child};
    ha_buf_append_str(b, "{\"n\":\"all\",\"v\":");
    ha_buf_printf(b, "%.0f", t->nodes[0].v);
    if (diff)
        ha_buf_printf(b, ",\"d\":%.0f", t->nodes[0].d);
    ha_buf_append_str(b, ",\"c\":[");
    while (depth > 0) {
        struct frame *fr = &stack[depth - 1];
        const struct ha_calltree_node *c;

        while (fr->next_child != 0 &&
               t->nodes[fr->next_child - 1].v < min)
            fr->next_child = t->nodes[fr->next_child - 1].next;
        if (fr->next_child == 0) {
            ha_buf_append_str(b, "]}");
            depth--;
            continue;
        }
        c = &t->nodes[fr->next_child - 1];
        /* A comma unless this is the parent's first written child. */
        if (b->len > 0 && b->data[b->len - 1] != '[')
            ha_buf_append_u8(b, ',');
        ha_buf_append_str(b, "{\"n\":\"");
        ha_json_str(b, ha_strtab_str(&t->names, c->name));
        ha_buf_printf(b, "\",\"v\":%.0f", c->v);
        if (diff)
            ha_buf_printf(b, ",\"d\":%.0f", c->d);
        ha_buf_append_str(b, ",\"c\":[");
        stack[depth++] = (struct frame){fr->next_child, c->child};
        fr->next_child = c->next;
    }
    free(stack);
    return 0;
}
