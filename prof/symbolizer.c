/* SPDX-License-Identifier: MIT
 *
 * In-process symbolization with elfutils' libdwfl (see symbolize.h): the
 * symbolizer object (ha_symbolizer_*) and one call, batched per file. Its
 * parts are in symbolize_file.c, symbolize_cache.c, symbolize_dwarf.c,
 * symbolize_source.c, symbolize_index.c and symbolize_build.c
 * (symbolize_int.h).
 */
#include "prof/symbolize.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/idmap.h"
#include "core/util.h"
#include "prof/debuginfod.h"
#include "prof/symbolize_int.h"

/* ------------------------------------------------------------------ */
/* The symbolizer                                                     */
/* ------------------------------------------------------------------ */

struct ha_symbolizer *
ha_symbolizer_new(const struct ha_symbolizer_limits *limits)
{
    struct ha_symbolizer *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return NULL;
    if (limits != NULL)
        s->lim = *limits;
    if (s->lim.max_files == 0)
        s->lim.max_files = DEFAULT_MAX_FILES;
    if (s->lim.max_bytes == 0)
        s->lim.max_bytes = DEFAULT_MAX_BYTES;
    if (s->lim.debuginfod_timeout_ms == 0)
        s->lim.debuginfod_timeout_ms = HA_SYMBOLIZE_DEBUGINFOD_TIMEOUT_MS;
    if (s->lim.index_max_bytes == 0)
        s->lim.index_max_bytes = HA_SYMBOLIZE_INDEX_MAX_BYTES;
    /* The caller's strings are not kept: copies (the builder needs the
     * root for a handle of its own). */
    if ((s->lim.debug_root != NULL &&
         (s->debug_root = strdup(s->lim.debug_root)) == NULL) ||
        (s->lim.index_dir != NULL && s->lim.index_dir[0] != '\0' &&
         (s->index_dir = strdup(s->lim.index_dir)) == NULL) ||
        ha_symbolize_file_setup(s, s->debug_root) != 0)
        goto fail;
    s->lim.debug_root = NULL;
    s->lim.index_dir = NULL;
    if (s->lim.debuginfod) {
        struct ha_debuginfod_opts o = {s->lim.thread_init,
                                       s->lim.thread_init_arg};

        if ((s->dbgi = ha_debuginfod_new(&o)) == NULL)
            goto fail;
    }
    return s;
fail:
    ha_symbolize_file_teardown(s);
    free(s->debug_root);
    free(s->index_dir);
    free(s);
    return NULL;
}

void
ha_symbolizer_free(struct ha_symbolizer *s)
{
    if (s == NULL)
        return;
    /* First: fetch threads must be gone before anything they wait on. */
    ha_debuginfod_free(s->dbgi);
    /* The builder holds nothing of s's: it ends on its own. */
    ha_symbolize_build_free(s->builder);
    while (s->files != NULL) {
        struct file *f = s->files;

        s->files = f->next;
        ha_symbolize_file_free(f);
    }
    ha_symbolize_file_teardown(s);
    free(s->debug_root);
    free(s->index_dir);
    free(s);
}

static int
ops_symbolize(void *ctx, const struct ha_maps *maps, const uint64_t *pcs,
              size_t n, struct ha_syms *out, char *err, size_t errlen)
{
    return ha_symbolizer_run(ctx, maps, pcs, n, out, err, errlen);
}

struct ha_symbolize_ops
ha_symbolizer_ops(struct ha_symbolizer *s)
{
    struct ha_symbolize_ops ops = {ops_symbolize, s};

    return ops;
}

/* ------------------------------------------------------------------ */
/* A call                                                             */
/* ------------------------------------------------------------------ */

/* The string at memo offset off, interned in out; strs maps memo offsets
 * to out's for the module being copied, so each string is hashed once.
 * UINT32_MAX on allocation failure. */
static uint32_t
copy_str(struct ha_syms *out, const struct ha_syms *memo, uint32_t off,
         struct ha_idmap *strs)
{
    uint32_t o;
    const char *str;

    if (off == 0)
        return 0;
    if (ha_idmap_get(strs, off, &o))
        return o;
    str = ha_syms_str(memo, off);
    o = ha_strtab_intern(&out->strs, str, strlen(str));
    if (o != UINT32_MAX)
        (void)ha_idmap_put(strs, off, o);
    return o;
}

/* Copies a memo entry into out, its strings interned there. */
static int
copy_entry(struct ha_syms *out, uint64_t pc, uint32_t module, uint32_t flags,
           const struct ha_syms *memo, const struct ha_syms_addr *ma,
           struct ha_idmap *strs)
{
    struct ha_syms_frame fr[MAX_INLINE];
    size_t n = ma != NULL ? ma->n : 0;

    if (n > MAX_INLINE)
        n = MAX_INLINE;
    for (size_t i = 0; i < n; i++) {
        const struct ha_syms_frame *src = &memo->frames[ma->first + i];

        fr[i].func = copy_str(out, memo, src->func, strs);
        fr[i].file = copy_str(out, memo, src->file, strs);
        fr[i].line = src->line;
        if (fr[i].func == UINT32_MAX || fr[i].file == UINT32_MAX)
            return -1;
    }
    if (ha_syms_add(out, pc, module, flags | ma->flags, fr, n) != 0)
        return -1;
    out->addrs[out->n_addrs - 1].fsize = ma != NULL ? ma->fsize : 0;
    return 0;
}

/* Names the addresses of module mod (file f, named from its index) into
 * out, and records the module. Returns 0, or -1 on allocation failure. */
static int
index_module(struct ha_symbolizer *s, struct file *f,
             const struct ha_maps *maps, size_t mod, const uint64_t *pcs,
             size_t n, size_t from, const long *ent, const uint64_t *foff,
             struct ha_syms *out, uint32_t mstr, uint32_t flags,
             struct ha_idmap *strs)
{
    const char *path = ha_maps_module_path(maps, mod);
    struct ha_symindex_cursor at = HA_SYMINDEX_CURSOR_INIT;
    struct ha_syms_module *m;

    for (size_t i = from; i < n; i++) {
        uint64_t va;
        int rc;

        if (ent[i] < 0 || maps->entries[ent[i]].module != mod)
            continue;
        /* An offset outside its segments: as from the file itself. */
        rc = ha_symindex_vaddr(&f->idx, foff[i], &va)
                 ? ha_symbolize_index_add(s, f, out, pcs[i], mstr, flags, va,
                                          strs, &at)
                 : ha_syms_add_unnamed(out, pcs[i], mstr, flags, path,
                                       foff[i]);
        if (rc != 0)
            return -1;
        s->st.index_addrs++;
    }
    if (ha_syms_set_module(out, path, f->build_id, f->from, f->detail) != 0)
        return -1;
    m = (struct ha_syms_module *)ha_syms_find_module(out, mstr);
    if (m != NULL)
        m->from_index = true;
    return 0;
}

int
ha_symbolizer_run(struct ha_symbolizer *s, const struct ha_maps *maps,
                  const uint64_t *pcs, size_t n, struct ha_syms *out,
                  char *err, size_t errlen)
{
    long *ent = NULL;
    uint64_t *foff = NULL;
    struct miss *m = NULL;
    struct file **files = NULL;
    size_t *first = NULL;
    struct ha_idmap strs = {0};
    int pending, ret = -1;

    if (n > 0) {
        ent = malloc(n * sizeof(*ent));
        foff = malloc(n * sizeof(*foff));
        m = malloc(n * sizeof(*m));
        if (ent == NULL || foff == NULL || m == NULL)
            goto oom;
    }
    files = calloc(maps->n_modules ? maps->n_modules : 1, sizeof(*files));
    first = malloc((maps->n_modules ? maps->n_modules : 1) * sizeof(*first));
    if (files == NULL || first == NULL)
        goto oom;
    for (size_t mod = 0; mod < maps->n_modules; mod++)
        first[mod] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        ent[i] = ha_maps_lookup(maps, pcs[i], &foff[i]);
        if (ent[i] < 0) {
            if (ha_syms_add_unnamed(out, pcs[i], 0, HA_SYMS_NO_MODULE, NULL,
                                    0) != 0)
                goto oom;
        } else if (first[maps->entries[ent[i]].module] == SIZE_MAX) {
            first[maps->entries[ent[i]].module] = i;
        }
    }

    /* Every module's file first, held for the whole call, so that all
     * debuginfod questions go out at once and share one wait. */
    for (size_t mod = 0; mod < maps->n_modules; mod++) {
        if (first[mod] == SIZE_MAX)
            continue;
        if ((files[mod] = ha_symbolize_cache_get(
                 s, ha_maps_module_path(maps, mod))) == NULL)
            goto oom;
        files[mod]->pinned = true;
    }
    pending = ha_symbolize_source_debuginfod(s, files, maps->n_modules);
    if (pending < 0)
        goto oom;
    out->pending += (unsigned)pending;

    /* One module at a time: resolve what the cache does not have in one
     * batch, then copy everything out. */
    for (size_t mod = 0; mod < maps->n_modules; mod++) {
        const char *path = ha_maps_module_path(maps, mod);
        uint32_t mstr = UINT32_MAX, flags;
        size_t n_miss = 0;
        struct file *f = files[mod];

        if (f == NULL)
            continue;
        mstr = ha_strtab_intern(&out->strs, path, strlen(path));
        if (mstr == UINT32_MAX)
            goto oom;
        flags = (f->allocator ? HA_SYMS_ALLOCATOR : 0) |
                (f->no_fini ? HA_SYMS_NO_FINI : 0);
        ha_idmap_clear(&strs); /* offsets of another file's memo */
        if (f->has_idx) {
            if (index_module(s, f, maps, mod, pcs, n, first[mod], ent, foff,
                             out, mstr, flags, &strs) != 0)
                goto oom;
            continue;
        }

        for (size_t i = first[mod]; i < n; i++) {
            uint64_t va;

            if (ent[i] < 0 || maps->entries[ent[i]].module != mod)
                continue;
            if (f->mod == NULL || !ha_symbolize_file_vaddr(f, foff[i], &va))
                continue;
            if (ha_syms_find(&f->memo, va) != NULL) {
                s->st.hits++;
                continue;
            }
            /* Duplicates (two pcs, one vaddr) cannot happen: pcs are
             * unique and a mapping is one-to-one. */
            m[n_miss++].vaddr = va;
        }
        if (n_miss > 0) {
            f->touched = true;
            if (ha_symbolize_dwarf_resolve(s, f, m, n_miss) != 0)
                goto oom;
        }
        for (size_t i = first[mod]; i < n; i++) {
            uint64_t va;
            const struct ha_syms_addr *ma = NULL;
            int rc;

            if (ent[i] < 0 || maps->entries[ent[i]].module != mod)
                continue;
            if (f->mod != NULL && ha_symbolize_file_vaddr(f, foff[i], &va))
                ma = ha_syms_find(&f->memo, va);
            /* An unreadable file, or an offset outside its segments:
             * the offset in the file is all there is to give. */
            rc = ma != NULL ? copy_entry(out, pcs[i], mstr, flags, &f->memo,
                                         ma, &strs)
                            : ha_syms_add_unnamed(out, pcs[i], mstr, flags,
                                                  path, foff[i]);
            if (rc != 0)
                goto oom;
        }
        ha_symbolize_source_classify(s, f);
        if (ha_syms_set_module(out, path,
                               f->build_id[0] ? f->build_id : NULL, f->from,
                               f->detail) != 0)
            goto oom;
        f->bytes = ha_symbolize_file_bytes(f);
        if (!f->idx_done && s->index_dir != NULL)
            ha_symbolize_build_mark(s, f);
    }
    ha_syms_finish(out);
    ret = 0;
    goto done;

oom:
    ha_err_set(err, errlen, "out of memory symbolizing %zu addresses", n);
done:
    for (size_t mod = 0; files != NULL && mod < maps->n_modules; mod++)
        if (files[mod] != NULL)
            files[mod]->pinned = false;
    ha_symbolize_build_handover(s);
    if (files != NULL)
        ha_symbolize_cache_evict(s, NULL);
    ha_idmap_free(&strs);
    free(files);
    free(first);
    free(ent);
    free(foff);
    free(m);
    return ret;
}

const char *
ha_symbolizer_build_id(struct ha_symbolizer *s, const char *path)
{
    struct file *f = ha_symbolize_cache_get(s, path);

    return f != NULL && f->build_id[0] != '\0' ? f->build_id : NULL;
}

void
ha_symbolizer_get_stats(const struct ha_symbolizer *s,
                        struct ha_symbolizer_stats *st)
{
    *st = s->st;
    if (s->builder != NULL)
        ha_symbolize_build_counts(s->builder, &st->index_written,
                                  &st->index_failed);
}

int
ha_symbolizer_index_wait(struct ha_symbolizer *s, int64_t deadline_ns)
{
    return s->builder != NULL ? ha_symbolize_build_wait(s->builder,
                                                        deadline_ns)
                              : 0;
}

int
ha_symbolizer_index_stop(struct ha_symbolizer *s, int64_t deadline_ns)
{
    if (s == NULL || s->builder == NULL)
        return 0;
    ha_symbolize_build_stop(s->builder);
    return ha_symbolize_build_wait(s->builder, deadline_ns);
}

uint64_t
ha_symbolizer_generation(const struct ha_symbolizer *s)
{
    return s->dbgi != NULL ? ha_debuginfod_answers(s->dbgi) : 0;
}
