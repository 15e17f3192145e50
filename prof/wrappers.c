/* SPDX-License-Identifier: MIT
 *
 * Allocation wrappers (see wrappers.h): the built-in list, the
 * operator's edits, and detection from a profile's stacks through the
 * aggregate's walker (the cut itself lives in prof/aggregate_site.c alone).
 */
#include "prof/wrappers.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* The built-in list                                                   */
/* ------------------------------------------------------------------ */

/* Well-known allocation wrappers, checked against the sources named (and,
 * where Debian ships the program, against its exported symbols: nm -D of
 * redis-server 7.0, nginx 1.22, libglib-2.0.so.0, libcrypto.so.3,
 * libsqlite3.so.0, libc.so.6). Static helpers are listed too: with debug
 * info they are named, and they are the wrapper's own code. Free-side
 * wrappers are here for the free stacks of a lifetime log (heap_lifetimes'
 * free site). Sorted for bsearch (strcmp order).
 *
 *   redis 7.0 src/zmalloc.c: z{,try}{malloc,calloc,realloc}{,_usable},
 *     zcalloc_num, zstrdup, zfree{,_usable}, z*_no_tcache (defrag
 *     builds); sds's s_malloc and friends are macros for these.
 *   nginx src/os/unix/ngx_alloc.c (ngx_alloc, ngx_calloc, ngx_memalign)
 *     and src/core/ngx_palloc.c (ngx_palloc, ngx_pnalloc, ngx_pcalloc,
 *     ngx_pmemalign, ngx_pfree; static ngx_palloc_small, _large, _block).
 *     ngx_free is a macro for free. ngx_create_pool is left a site: a
 *     pool's creator is what its memory is for.
 *   glib glib/gmem.c, gslice.c, gstrfuncs.c: g_malloc*, g_realloc*,
 *     g_try_*, g_aligned_alloc*, g_free, g_strdup, g_strndup, g_memdup*,
 *     g_slice_alloc*, g_slice_copy, g_slice_free*.
 *   xmalloc family: GNU libiberty xmalloc.c/xstrdup.c, gnulib xalloc.h,
 *     OpenSSH xmalloc.c, git wrapper.c: xmalloc, xcalloc, xrealloc,
 *     xreallocarray, xrecallocarray, xzalloc, xstrdup, xstrndup, xmemdup,
 *     xmemdupz, xnmalloc.
 *   PHP Zend/zend_alloc.h: emalloc, ecalloc, erealloc, estrdup,
 *     estrndup, efree and their underscored functions (_emalloc, ...,
 *     _safe_emalloc, _safe_erealloc, _emalloc_large, _emalloc_huge).
 *   APR apr_pools.h, apr_strings.h: apr_palloc, apr_pcalloc,
 *     apr_pmemdup, apr_pstrdup, apr_pstrndup, apr_pstrmemdup.
 *   OpenSSL 3 crypto/mem.c, mem_sec.c, o_str.c: CRYPTO_malloc, _zalloc,
 *     _realloc, _clear_realloc, _strdup, _strndup, _memdup, _free,
 *     _clear_free, _secure_malloc, _secure_zalloc, _secure_free
 *     (OPENSSL_malloc and friends are macros for these).
 *   SQLite src/malloc.c, mem1.c: sqlite3_malloc{,64}, sqlite3_realloc
 *     {,64}, sqlite3_free, sqlite3Malloc, sqlite3MallocZero,
 *     sqlite3Realloc, sqlite3DbMallocRaw{,NN}, sqlite3DbMallocZero,
 *     sqlite3DbRealloc, sqlite3DbReallocOrFree, sqlite3DbStrDup,
 *     sqlite3DbStrNDup, sqlite3DbFree{,NN}, sqlite3_free, and the static
 *     mallocWithAlarm, dbMallocRawFinish, sqlite3MemMalloc,
 *     sqlite3MemRealloc, sqlite3MemFree.
 *   glibc string/strdup.c, strndup.c, wcsmbs/wcsdup.c: strdup, strndup,
 *     __strdup, __strndup, wcsdup (copying allocators; their callers are
 *     the sites).
 */
static const char *const builtin[] = {
    "CRYPTO_clear_free",
    "CRYPTO_clear_realloc",
    "CRYPTO_free",
    "CRYPTO_malloc",
    "CRYPTO_memdup",
    "CRYPTO_realloc",
    "CRYPTO_secure_free",
    "CRYPTO_secure_malloc",
    "CRYPTO_secure_zalloc",
    "CRYPTO_strdup",
    "CRYPTO_strndup",
    "CRYPTO_zalloc",
    "__strdup",
    "__strndup",
    "_ecalloc",
    "_efree",
    "_emalloc",
    "_emalloc_huge",
    "_emalloc_large",
    "_erealloc",
    "_estrdup",
    "_estrndup",
    "_safe_emalloc",
    "_safe_erealloc",
    "apr_palloc",
    "apr_pcalloc",
    "apr_pmemdup",
    "apr_pstrdup",
    "apr_pstrmemdup",
    "apr_pstrndup",
    "dbMallocRawFinish",
    "ecalloc",
    "efree",
    "emalloc",
    "erealloc",
    "estrdup",
    "estrndup",
    "g_aligned_alloc",
    "g_aligned_alloc0",
    "g_aligned_free",
    "g_free",
    "g_malloc",
    "g_malloc0",
    "g_malloc0_n",
    "g_malloc_n",
    "g_memdup",
    "g_memdup2",
    "g_realloc",
    "g_realloc_n",
    "g_slice_alloc",
    "g_slice_alloc0",
    "g_slice_copy",
    "g_slice_free1",
    "g_slice_free_chain_with_offset",
    "g_strdup",
    "g_strndup",
    "g_try_malloc",
    "g_try_malloc0",
    "g_try_malloc0_n",
    "g_try_malloc_n",
    "g_try_realloc",
    "g_try_realloc_n",
    "mallocWithAlarm",
    "ngx_alloc",
    "ngx_calloc",
    "ngx_memalign",
    "ngx_palloc",
    "ngx_palloc_block",
    "ngx_palloc_large",
    "ngx_palloc_small",
    "ngx_pcalloc",
    "ngx_pfree",
    "ngx_pmemalign",
    "ngx_pnalloc",
    "sqlite3DbFree",
    "sqlite3DbFreeNN",
    "sqlite3DbMallocRaw",
    "sqlite3DbMallocRawNN",
    "sqlite3DbMallocZero",
    "sqlite3DbRealloc",
    "sqlite3DbReallocOrFree",
    "sqlite3DbStrDup",
    "sqlite3DbStrNDup",
    "sqlite3Malloc",
    "sqlite3MallocZero",
    "sqlite3MemFree",
    "sqlite3MemMalloc",
    "sqlite3MemRealloc",
    "sqlite3Realloc",
    "sqlite3_free",
    "sqlite3_malloc",
    "sqlite3_malloc64",
    "sqlite3_realloc",
    "sqlite3_realloc64",
    "strdup",
    "strndup",
    "wcsdup",
    "xcalloc",
    "xmalloc",
    "xmemdup",
    "xmemdupz",
    "xnmalloc",
    "xrealloc",
    "xreallocarray",
    "xrecallocarray",
    "xstrdup",
    "xstrndup",
    "xzalloc",
    "zcalloc",
    "zcalloc_num",
    "zcalloc_usable",
    "zfree",
    "zfree_no_tcache",
    "zfree_usable",
    "zmalloc",
    "zmalloc_no_tcache",
    "zmalloc_usable",
    "zrealloc",
    "zrealloc_usable",
    "zstrdup",
    "ztrycalloc",
    "ztrycalloc_usable",
    "ztrymalloc",
    "ztrymalloc_usable",
    "ztryrealloc",
    "ztryrealloc_usable",
};

static int
cmp_str(const void *k, const void *e)
{
    return strcmp(k, *(const char *const *)e);
}

bool
ha_wrap_is_builtin(const char *name)
{
    return name != NULL &&
           bsearch(name, builtin, HA_ARRAY_SIZE(builtin), sizeof(builtin[0]),
                   cmp_str) != NULL;
}

const char *const *
ha_wrap_builtin(size_t *n)
{
    *n = HA_ARRAY_SIZE(builtin);
    return builtin;
}

bool
ha_wrap_name_allocates(const char *name)
{
    static const char *const words[] = {"alloc", "memalign", "strdup",
                                        "strndup", "memdup"};
    char low[HA_WRAP_NAME_MAX + 1];
    size_t i;

    if (name == NULL)
        return false;
    for (i = 0; name[i] != '\0' && i < HA_WRAP_NAME_MAX; i++)
        low[i] = (char)tolower((unsigned char)name[i]);
    low[i] = '\0';
    for (size_t k = 0; k < HA_ARRAY_SIZE(words); k++)
        if (strstr(low, words[k]) != NULL)
            return true;
    return false;
}

const char *
ha_wrap_why_name(enum ha_wrap_why why)
{
    switch (why) {
    case HA_WRAP_BUILTIN:
        return "built-in list";
    case HA_WRAP_OPERATOR:
        return "operator";
    case HA_WRAP_DETECTED:
        return "detected";
    case HA_WRAP_REMOVED:
        return "removed by operator";
    case HA_WRAP_REJECTED:
        return "not detected";
    default:
        return "?";
    }
}

/* ------------------------------------------------------------------ */
/* The operator's edits                                                */
/* ------------------------------------------------------------------ */

void
ha_wrap_conf_free(struct ha_wrap_conf *c)
{
    if (c == NULL)
        return;
    for (size_t i = 0; i < c->n_add; i++)
        free(c->add[i]);
    for (size_t i = 0; i < c->n_del; i++)
        free(c->del[i]);
    free(c->add);
    free(c->del);
    free(c->text);
    memset(c, 0, sizeof(*c));
}

static bool
in_names(char *const *v, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(v[i], name) == 0)
            return true;
    return false;
}

int
ha_wrap_conf_parse(const char *text, struct ha_wrap_conf *out, char *err,
                   size_t errlen)
{
    struct ha_buf canon = HA_BUF_INIT;
    size_t item = 0;
    const char *p = text != NULL ? text : "";

    memset(out, 0, sizeof(*out));
    if (strlen(p) >= HA_WRAP_TEXT_MAX) {
        ha_err_set(err, errlen, "%zu characters, over %d; allowed: %s",
                   strlen(p), HA_WRAP_TEXT_MAX - 1, HA_WRAP_CONF_ALLOWED);
        return -1;
    }
    if ((out->add = calloc(HA_WRAP_ITEMS_MAX, sizeof(char *))) == NULL ||
        (out->del = calloc(HA_WRAP_ITEMS_MAX, sizeof(char *))) == NULL)
        goto oom;
    /* An empty or blank value is no edit at all. */
    while (isspace((unsigned char)*p))
        p++;
    while (*p != '\0') {
        const char *end = strchr(p, ','), *b = p, *e;
        char sign = '+';
        size_t len;
        char *name;

        if (end == NULL)
            end = p + strlen(p);
        e = end;
        while (b < e && isspace((unsigned char)*b))
            b++;
        while (e > b && isspace((unsigned char)e[-1]))
            e--;
        item++;
        if (b < e && (*b == '+' || *b == '-'))
            sign = *b++;
        len = (size_t)(e - b);
        if (item > HA_WRAP_ITEMS_MAX) {
            ha_err_set(err, errlen, "more than %d items; allowed: %s",
                       HA_WRAP_ITEMS_MAX, HA_WRAP_CONF_ALLOWED);
            goto fail;
        }
        if (sign == '-' && len == 1 && *b == '*') {
            out->none = true;
            ha_buf_printf(&canon, "%s-*", canon.len ? "," : "");
        } else {
            if (len == 0 || len > HA_WRAP_NAME_MAX) {
                ha_err_set(err, errlen, "item %zu is %s; allowed: %s", item,
                           len == 0 ? "empty" : "longer than 255 characters",
                           HA_WRAP_CONF_ALLOWED);
                goto fail;
            }
            for (const char *c = b; c < e; c++)
                if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) {
                    ha_err_set(err, errlen,
                               "item %zu holds a control or non-ASCII "
                               "character (byte 0x%02x); allowed: %s",
                               item, (unsigned)(unsigned char)*c,
                               HA_WRAP_CONF_ALLOWED);
                    goto fail;
                }
            if ((name = strndup(b, len)) == NULL)
                goto oom;
            if (in_names(sign == '+' ? out->del : out->add,
                         sign == '+' ? out->n_del : out->n_add, name)) {
                ha_err_set(err, errlen,
                           "item %zu names '%s' both to add (+) and to "
                           "remove (-); allowed: %s",
                           item, name, HA_WRAP_CONF_ALLOWED);
                free(name);
                goto fail;
            }
            if (in_names(sign == '+' ? out->add : out->del,
                         sign == '+' ? out->n_add : out->n_del, name))
                free(name); /* said twice: once is enough */
            else if (sign == '+')
                out->add[out->n_add++] = name;
            else
                out->del[out->n_del++] = name;
            ha_buf_printf(&canon, "%s%s%.*s", canon.len ? "," : "",
                          sign == '-' ? "-" : "+", (int)len, b);
        }
        p = *end == ',' ? end + 1 : end;
        if (*end == ',' && *p == '\0') {
            ha_err_set(err, errlen, "item %zu is empty (a trailing comma); "
                                    "allowed: %s",
                       item + 1, HA_WRAP_CONF_ALLOWED);
            goto fail;
        }
    }
    ha_buf_append_u8(&canon, 0);
    if (ha_buf_failed(&canon))
        goto oom;
    out->text = (char *)canon.data;
    return 0;
oom:
    ha_err_set(err, errlen, "out of memory");
fail:
    ha_buf_free(&canon);
    ha_wrap_conf_free(out);
    return -1;
}

/* ------------------------------------------------------------------ */
/* Sets                                                                */
/* ------------------------------------------------------------------ */

static void
entry_free(struct ha_wrap_entry *e)
{
    free(e->name);
    free(e->detail);
}

void
ha_wrap_set_free(struct ha_wrap_set *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->n; i++)
        entry_free(&s->e[i]);
    for (size_t i = 0; i < s->n_other; i++)
        entry_free(&s->other[i]);
    free(s->e);
    free(s->other);
    free(s->conf);
    free(s);
}

struct ha_wrap_set *
ha_wrap_set_empty(void)
{
    struct ha_wrap_set *s = calloc(1, sizeof(*s));

    if (s != NULL && (s->conf = strdup("")) == NULL) {
        free(s);
        s = NULL;
    }
    return s;
}

static int
cmp_entry(const void *x, const void *y)
{
    return strcmp(((const struct ha_wrap_entry *)x)->name,
                  ((const struct ha_wrap_entry *)y)->name);
}

static int
cmp_key_entry(const void *k, const void *e)
{
    return strcmp(k, ((const struct ha_wrap_entry *)e)->name);
}

const struct ha_wrap_entry *
ha_wrap_set_find(const struct ha_wrap_set *s, const char *name)
{
    if (s == NULL || s->n == 0 || name == NULL)
        return NULL;
    return bsearch(name, s->e, s->n, sizeof(s->e[0]), cmp_key_entry);
}

const struct ha_wrap_entry *
ha_wrap_set_find_other(const struct ha_wrap_set *s, const char *name)
{
    if (s == NULL || s->n_other == 0 || name == NULL)
        return NULL;
    return bsearch(name, s->other, s->n_other, sizeof(s->other[0]),
                   cmp_key_entry);
}

/* Appends a copy of name to (*v, *n) with why; the vector is grown as
 * needed. Returns the entry or NULL on OOM. */
static struct ha_wrap_entry *
entry_add(struct ha_wrap_entry **v, size_t *n, size_t *cap, const char *name,
          enum ha_wrap_why why)
{
    struct ha_wrap_entry *e;

    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        struct ha_wrap_entry *nv = realloc(*v, nc * sizeof(*nv));

        if (nv == NULL)
            return NULL;
        *v = nv;
        *cap = nc;
    }
    e = &(*v)[*n];
    memset(e, 0, sizeof(*e));
    if ((e->name = strdup(name)) == NULL)
        return NULL;
    e->why = why;
    (*n)++;
    return e;
}

struct ha_wrap_entry *
ha_wrap_entry_add(struct ha_wrap_entry **v, size_t *n, size_t *cap,
                  const char *name, enum ha_wrap_why why)
{
    return entry_add(v, n, cap, name, why);
}

void
ha_wrap_entry_free(struct ha_wrap_entry *e)
{
    entry_free(e);
}

void
ha_wrap_entries_sort(struct ha_wrap_entry *v, size_t n)
{
    /* qsort's array may not be NULL, even for no element (C11 7.22.5). */
    if (n > 1)
        qsort(v, n, sizeof(v[0]), cmp_entry);
}

int
ha_wrap_set_base(const struct ha_wrap_conf *conf, struct ha_wrap_set **out,
                 size_t *cap, size_t *cap_other)
{
    struct ha_wrap_set *s = calloc(1, sizeof(*s));

    *out = NULL;
    *cap = *cap_other = 0;
    if (s == NULL ||
        (s->conf = strdup(conf != NULL && conf->text != NULL ? conf->text
                                                             : "")) == NULL)
        goto oom;
    if (conf == NULL || (!conf->none && !conf->no_builtin))
        for (size_t i = 0; i < HA_ARRAY_SIZE(builtin); i++)
            if ((conf == NULL ||
                 !in_names(conf->del, conf->n_del, builtin[i])) &&
                entry_add(&s->e, &s->n, cap, builtin[i], HA_WRAP_BUILTIN) ==
                    NULL)
                goto oom;
    for (size_t i = 0; conf != NULL && i < conf->n_add; i++)
        if (!ha_wrap_is_builtin(conf->add[i]) || conf->none ||
            conf->no_builtin)
            if (entry_add(&s->e, &s->n, cap, conf->add[i],
                          HA_WRAP_OPERATOR) == NULL)
                goto oom;
    for (size_t i = 0; conf != NULL && i < conf->n_del; i++)
        if (entry_add(&s->other, &s->n_other, cap_other, conf->del[i],
                      HA_WRAP_REMOVED) == NULL)
            goto oom;
    ha_wrap_entries_sort(s->e, s->n);
    *out = s;
    return 0;
oom:
    ha_wrap_set_free(s);
    return -1;
}

bool
ha_wrap_conf_removes(const struct ha_wrap_conf *c, const char *name)
{
    return c != NULL && in_names(c->del, c->n_del, name);
}
