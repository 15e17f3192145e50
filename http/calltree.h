/* SPDX-License-Identifier: MIT
 *
 * A call tree for flame graphs (the /heap page): stacks added root
 * first, each node keeping the value under it, written as the nested
 * JSON d3-flame-graph draws. Its values are whatever the caller adds:
 * bytes of a profile (flame.c), bytes per hour of growth (growth.c).
 * Pure: no I/O; any thread.
 */
#ifndef HA_HTTP_CALLTREE_H
#define HA_HTTP_CALLTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/idmap.h"
#include "prof/syms.h"

/* Frames below this share of the root's value are left out of the JSON
 * (invisible at any zoom a screen shows without clicking into them). */
#define HA_CALLTREE_MIN_SHARE 1e-4

struct ha_calltree_node {
    uint32_t name;          /* in tree.names */
    uint32_t child, next;   /* first child, next sibling (index + 1) */
    double v;               /* value under this frame */
    double d;               /* own delta: stacks ending here, cur - base */
};

struct ha_calltree {
    struct ha_calltree_node *nodes; /* [0] is the root, "all" */
    size_t n, cap;
    struct ha_idmap index;  /* (parent + 1) << 32 | name -> node index */
    struct ha_strtab names;
    bool oom;
};

/* An empty tree (the root only). Returns 0 or -1 on allocation failure;
 * free it with ha_calltree_free() either way. */
int ha_calltree_init(struct ha_calltree *t);
void ha_calltree_free(struct ha_calltree *t);

/* The child of node parent named name, created (value 0) if new.
 * Returns its index, or SIZE_MAX on allocation failure. */
size_t ha_calltree_child(struct ha_calltree *t, size_t parent,
                         const char *name);

/* Appends the tree as {"n": name, "v": value, ["d": own delta,] "c":
 * [children]}, iteratively (stacks can be deep), leaving out subtrees
 * whose value is below min. Values are written as integers. Returns 0 or
 * -1 on allocation failure. */
int ha_calltree_json(const struct ha_calltree *t, struct ha_buf *b,
                     bool diff, double min);

/* Appends s as a JSON string body (no quotes), RFC 8259 escapes. */
void ha_json_str(struct ha_buf *b, const char *s);

#endif /* HA_HTTP_CALLTREE_H */
