/* SPDX-License-Identifier: MIT
 *
 * Allocation wrappers: functions a program allocates through (redis's
 * zmalloc, nginx's ngx_palloc, glib's g_malloc, OpenSSL's CRYPTO_malloc),
 * which the allocation-site rule of prof/aggregate.h skips like the
 * allocator's own frames: the site is the first frame that is neither
 * allocator nor wrapper. A wrapper and everything it calls is its
 * business, so the cut goes up to the outermost wrapper frame of a stack
 * (a stripped static helper between two wrappers goes with them); a
 * stack made of nothing but wrappers keeps its outermost one as the site
 * (so the sites' flat figures still add up to what jeprof's cut gives).
 *
 * Where the set comes from, in order:
 *   1. a built-in list of well-known wrappers (wrappers.c says where
 *      each name comes from);
 *   2. the operator's additions and removals (jemalloc-alloc_wrappers,
 *      parsed by ha_wrap_conf_parse());
 *   3. detection from the profile itself (ha_wrap_set_make()): a named,
 *      out-of-line function F is a wrapper when all of
 *        - its name says it allocates (contains, in any case, "alloc",
 *          "memalign", "strdup", "strndup" or "memdup"),
 *        - in every sampled stack that holds it, F sits directly above
 *          the allocator's frames or a wrapper already recognised,
 *        - it is reached from at least HA_WRAP_MIN_CALLERS distinct
 *          callers,
 *        - the object size it allocates differs between callers (at
 *          least HA_WRAP_MIN_SIZES distinct mean sizes: a wrapper takes
 *          its size from its caller, a constructor allocates its own
 *          type's),
 *        - its symbol, where its size is known, is at most
 *          HA_WRAP_MAX_FSIZE bytes long.
 *      Rounds repeat while they find new wrappers (a wrapper of a
 *      wrapper sits above the first). The profile alone cannot tell a
 *      small constructor whose size varies with its argument (redis's
 *      createEmbeddedStringObject: small, many callers, many sizes) from
 *      a function that only allocates; the name is the one sign of
 *      intent, so no name, no detection: an unnamed frame
 *      ("nginx+0x277b1", a stripped static helper) is never detected,
 *      though the operator may name it.
 * An inlined entry named like an allocator function (ld.so's inline
 * "malloc" in rtld-malloc.h) is a wrapper too.
 *
 * The operator's syntax (HA_WRAP_CONF_ALLOWED): a comma-separated list,
 * each item "+name" or "name" (a wrapper besides those found),
 * "-name" (never a wrapper: not built in, not detected) or "-*" (no
 * built-in list and no detection: only the names given with +). Names
 * are matched as heap_profile shows them, whole.
 *
 * Pure: no I/O. Thread-compatible: a finished set is read-only and may
 * be read by several threads.
 */
#ifndef HA_WRAPPERS_H
#define HA_WRAPPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ha_heapv2;
struct ha_syms;

#define HA_WRAP_MIN_CALLERS 3   /* distinct callers seen */
#define HA_WRAP_MIN_SIZES 2     /* distinct mean object sizes */
#define HA_WRAP_MAX_FSIZE 512   /* bytes of code, where known */
#define HA_WRAP_MAX_ROUNDS 8    /* detection rounds at most */

#define HA_WRAP_TEXT_MAX 2048   /* the operator's text, NUL included */
#define HA_WRAP_ITEMS_MAX 64
#define HA_WRAP_NAME_MAX 255

#define HA_WRAP_CONF_ALLOWED                                              \
    "a comma-separated list of function names as heap_profile shows "     \
    "them, each '+name' or 'name' (an allocation wrapper besides those "  \
    "built in and detected), '-name' (never a wrapper) or '-*' (no "      \
    "built-in list and no detection); '' for none; at most 64 items of "  \
    "1 to 255 printable characters, no comma in a name"

/* The operator's edits (jemalloc-alloc_wrappers). */
struct ha_wrap_conf {
    char **add;      /* names to treat as wrappers */
    size_t n_add;
    char **del;      /* names never to treat as wrappers */
    size_t n_del;
    bool none;       /* "-*": neither the built-in list nor detection */
    bool no_builtin; /* detection without the built-in list: tests of
                        detection alone (the operator's syntax has no
                        way to it) */
    char *text;      /* the canonical text: items trimmed, ","-joined */
};

/* Parses text (NULL or "" for no edits) into out. Returns 0, or -1 with
 * err naming the item and what is allowed (out is then empty). */
int ha_wrap_conf_parse(const char *text, struct ha_wrap_conf *out,
                       char *err, size_t errlen);

void ha_wrap_conf_free(struct ha_wrap_conf *c);

/* Whether the operator's edits c (NULL: none) remove name. */
bool ha_wrap_conf_removes(const struct ha_wrap_conf *c, const char *name);

/* Why a function is (or is not) a wrapper. */
enum ha_wrap_why {
    HA_WRAP_BUILTIN,     /* on the built-in list */
    HA_WRAP_OPERATOR,    /* added by the operator */
    HA_WRAP_DETECTED,    /* found in the profile */
    HA_WRAP_REMOVED,     /* not a wrapper: the operator removed it */
    HA_WRAP_REJECTED,    /* not a wrapper: a candidate detection refused */
    HA_WRAP_WHY_MAX
};

struct ha_wrap_entry {
    char *name;
    enum ha_wrap_why why;
    /* What the profile showed of it as a candidate (detection's last
     * look; zero when it never sat directly above the cut): */
    uint32_t callers;   /* distinct callers */
    uint32_t sizes;     /* distinct mean object sizes among them */
    uint32_t fsize;     /* its symbol's size in bytes; 0: unknown */
    uint32_t elsewhere; /* stacks holding it not directly above the cut */
    char *detail;       /* for HA_WRAP_DETECTED / _REJECTED: why, in
                           words; else NULL */
};

/* A set of wrappers for one cut. */
struct ha_wrap_set {
    struct ha_wrap_entry *e;  /* wrappers, sorted by name (strcmp) */
    size_t n;
    struct ha_wrap_entry *other; /* names looked at that are not
                                    wrappers (removed, rejected), sorted */
    size_t n_other;
    char *conf;               /* the operator's canonical text it was
                                 made with ("" for none) */
};

/* An empty set (no wrapper at all: jeprof's cut), or NULL. */
struct ha_wrap_set *ha_wrap_set_empty(void);

void ha_wrap_set_free(struct ha_wrap_set *s);

/* The entry of name in s (a wrapper), or NULL. */
const struct ha_wrap_entry *ha_wrap_set_find(const struct ha_wrap_set *s,
                                             const char *name);

/* The entry of a name looked at but not a wrapper, or NULL. */
const struct ha_wrap_entry *ha_wrap_set_find_other(
    const struct ha_wrap_set *s, const char *name);

static inline bool
ha_wrap_set_has(const struct ha_wrap_set *s, const char *name)
{
    return ha_wrap_set_find(s, name) != NULL;
}

/* For prof/wrapdetect.c, which builds sets: the built-in list and the
 * operator's edits as a set (sorted), with the capacities of its two
 * vectors for ha_wrap_entry_add. Returns 0, or -1 on allocation failure
 * (*out NULL). */
int ha_wrap_set_base(const struct ha_wrap_conf *conf, struct ha_wrap_set **out,
                     size_t *cap, size_t *cap_other);

/* Appends a copy of name to (*v, *n) with why, growing the vector;
 * returns the entry, or NULL on allocation failure. */
struct ha_wrap_entry *ha_wrap_entry_add(struct ha_wrap_entry **v, size_t *n,
                                        size_t *cap, const char *name,
                                        enum ha_wrap_why why);

/* Frees what an entry owns (not the entry). */
void ha_wrap_entry_free(struct ha_wrap_entry *e);

/* Sorts entries by name (strcmp), as the set's vectors are kept. */
void ha_wrap_entries_sort(struct ha_wrap_entry *v, size_t n);

/* Whether name is on the built-in list. */
bool ha_wrap_is_builtin(const char *name);

/* The built-in list, sorted (for documentation and tests). */
const char *const *ha_wrap_builtin(size_t *n);

/* Whether name says it allocates (detection's name rule). */
bool ha_wrap_name_allocates(const char *name);

/* "built-in list", "operator", "detected", "removed by operator",
 * "not detected". */
const char *ha_wrap_why_name(enum ha_wrap_why why);

#endif /* HA_WRAPPERS_H */
