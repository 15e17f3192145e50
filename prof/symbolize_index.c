/* SPDX-License-Identifier: MIT
 *
 * Names read from a module's symbol index (see symbolize_int.h): the
 * index found in the symbolizer's index directory, checked whole, then
 * checked to be made for this very file and for the debug files this
 * symbolizer would read now; each address then named by the rule the
 * DWARF path follows (prof/symindex.h).
 */
#include "prof/symbolize_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/log.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* The directory and what an index must say                           */
/* ------------------------------------------------------------------ */

int
ha_symbolize_index_dir(struct ha_symbolizer *s)
{
    char err[PATH_MAX + 128];
    int fd;

    if (s->index_dir == NULL)
        return -1;
    fd = ha_symcache_dir_open(s->index_dir, err, sizeof(err));
    if (fd < 0 && !s->index_dir_bad) {
        s->index_dir_bad = true;
        ha_log_warn("symbol indexes: %s; names are read from the modules' "
                    "files each time", err);
    }
    return fd;
}

static void
ident_of(const struct stat *st, struct ha_symindex_ident *id)
{
    id->size = (uint64_t)st->st_size;
    id->mtime_s = (int64_t)st->st_mtim.tv_sec;
    id->mtime_ns = (int64_t)st->st_mtim.tv_nsec;
}

static bool
ident_eq(const struct ha_symindex_ident *a, const struct ha_symindex_ident *b)
{
    return a->size == b->size && a->mtime_s == b->mtime_s &&
           a->mtime_ns == b->mtime_ns;
}

void
ha_symbolize_index_expect(struct ha_symbolizer *s, const struct file *f,
                          enum ha_syms_source from, const char *fetched,
                          struct ha_symindex_header *h, char *debug_path,
                          size_t debug_len)
{
    char *cand = ha_symbolize_file_local_debug(s->debuginfo_path,
                                               f->build_id);
    struct stat st;

    ha_strlcpy(h->build_id, f->build_id, sizeof(h->build_id));
    h->module.size = (uint64_t)f->size;
    h->module.mtime_s = (int64_t)f->mtime.tv_sec;
    h->module.mtime_ns = (int64_t)f->mtime.tv_nsec;
    h->flags = (s->demangle != NULL ? HA_SYMINDEX_F_DEMANGLED : 0) |
               (s->dbgi != NULL ? HA_SYMINDEX_F_DEBUGINFOD : 0);
    /* The debug file libdwfl would find by build-id: its identity, found
     * or not, so one installed, replaced or removed since is noticed. */
    debug_path[0] = '\0';
    memset(&h->debug, 0, sizeof(h->debug));
    if (cand != NULL && stat(cand, &st) == 0) {
        ident_of(&st, &h->debug);
        ha_strlcpy(debug_path, cand, debug_len);
    }
    free(cand);
    memset(&h->fetched, 0, sizeof(h->fetched));
    if (from == HA_SYMS_SRC_DEBUGINFOD && fetched != NULL &&
        stat(fetched, &st) == 0)
        ident_of(&st, &h->fetched);
}

/* Where this process's debuginfod client keeps the debug file of hex,
 * as elfutils' client (0.188) chooses its cache: $DEBUGINFOD_CACHE_PATH,
 * else ~/.debuginfod_client_cache when it exists, else
 * $XDG_CACHE_HOME/debuginfod_client (~/.cache/debuginfod_client). */
static void
fetched_here(const char *hex, char *path, size_t len)
{
    const char *env = getenv("DEBUGINFOD_CACHE_PATH");
    const char *home = getenv("HOME"), *xdg = getenv("XDG_CACHE_HOME");
    char dir[PATH_MAX - HA_BUILDID_HEX_MAX - 16];
    struct stat st;

    if (home == NULL)
        home = "/";
    if (env != NULL && env[0] != '\0')
        ha_strlcpy(dir, env, sizeof(dir));
    else if (snprintf(dir, sizeof(dir), "%s/.debuginfod_client_cache",
                      home) > 0 &&
             stat(dir, &st) == 0)
        ;
    else if (xdg != NULL && xdg[0] != '\0')
        snprintf(dir, sizeof(dir), "%s/debuginfod_client", xdg);
    else
        snprintf(dir, sizeof(dir), "%s/.cache/debuginfod_client", home);
    if ((size_t)snprintf(path, len, "%s/%s/debuginfo", dir, hex) >= len)
        path[0] = '\0';
}

/* Whether f's index (checked whole) was made for this file and what s
 * would read now; why says what differs. */
static bool
fits(struct ha_symbolizer *s, const struct file *f, char *why, size_t whylen)
{
    const struct ha_symindex_header *h = f->idx.h;
    struct ha_symindex_header want;
    char dpath[PATH_MAX];
    const char *fetched = ha_symindex_str(&f->idx, h->fetched_path);

    memset(&want, 0, sizeof(want));
    /* f->build_id is the file's own, read from its headers. */
    if (strcmp(h->build_id, f->build_id) != 0) {
        ha_err_set(why, whylen, "made for build-id %s, not this file's: a "
                   "misnamed or planted file", h->build_id);
        return false;
    }
    ha_symbolize_index_expect(s, f, h->from, fetched, &want, dpath,
                              sizeof(dpath));
    if (!ident_eq(&h->module, &want.module)) {
        ha_err_set(why, whylen, "made from another copy of the file (size "
                   "or mtime differ)");
        return false;
    }
    if ((h->flags & HA_SYMINDEX_F_DEMANGLED) !=
        (want.flags & HA_SYMINDEX_F_DEMANGLED)) {
        ha_err_set(why, whylen, "its C++ names are demangled otherwise");
        return false;
    }
    if (strcmp(ha_symindex_str(&f->idx, h->debug_path), dpath) != 0 ||
        !ident_eq(&h->debug, &want.debug)) {
        ha_err_set(why, whylen, "the debug file under the debug roots is "
                   "not the one it was made from (now: %s)",
                   dpath[0] ? dpath : "none");
        return false;
    }
    /* From debuginfod: only while it is on, and from the file this
     * process's client would find in its own cache (else it would ask). */
    if (h->from == HA_SYMS_SRC_DEBUGINFOD) {
        fetched_here(f->build_id, dpath, sizeof(dpath));
        if (s->dbgi == NULL || strcmp(fetched, dpath) != 0 ||
            !ident_eq(&h->fetched, &want.fetched) ||
            want.fetched.size == 0) {
            ha_err_set(why, whylen, "its names came from debuginfod's %s, "
                       "%s", fetched,
                       s->dbgi == NULL ? "and debuginfod is off now"
                       : strcmp(fetched, dpath) != 0
                           ? "not this process's debuginfod cache"
                           : "which changed or is gone");
            return false;
        }
    }
    /* Named without DWARF where debuginfod could help: only as good as
     * what this symbolizer would do without asking. */
    if ((h->flags & HA_SYMINDEX_F_WANTS_DEBUGINFOD) &&
        h->from < HA_SYMS_SRC_DWARF &&
        (s->dbgi != NULL || (h->flags & HA_SYMINDEX_F_DEBUGINFOD))) {
        ha_err_set(why, whylen, "%s",
                   s->dbgi != NULL
                       ? "debuginfod is on: it may have the debug file now"
                       : "made while debuginfod was on");
        return false;
    }
    return true;
}

/* ------------------------------------------------------------------ */
/* Opening                                                            */
/* ------------------------------------------------------------------ */

int
ha_symbolize_index_open(struct ha_symbolizer *s, struct file *f)
{
    char name[HA_SYMCACHE_NAME_MAX], why[PATH_MAX + 128];
    const struct ha_symindex_header *h;
    struct stat st;
    int dirfd = -1, rc;

    if (s->index_dir == NULL ||
        ha_symcache_build_id(f->path, f->build_id, &st) != 0 ||
        (dirfd = ha_symbolize_index_dir(s)) < 0)
        goto none;
    /* The file read is the one cache_get stat'ed. */
    if (st.st_dev != f->dev || st.st_ino != f->ino || st.st_size != f->size ||
        st.st_mtim.tv_sec != f->mtime.tv_sec ||
        st.st_mtim.tv_nsec != f->mtime.tv_nsec)
        goto none;
    ha_symcache_name(name, sizeof(name), f->build_id, s->demangle != NULL);
    rc = ha_symcache_map(dirfd, name, &f->idx_map, why, sizeof(why));
    if (rc == 1)
        goto none;
    if (rc < 0 || ha_symindex_open(&f->idx, f->idx_map.data,
                                   f->idx_map.len, why, sizeof(why)) != 0) {
        ha_log_warn("symbol index %s/%s of %s: %s; not used: names are read "
                    "from the files and it is written again",
                    s->index_dir, name, f->path, why);
        goto refused;
    }
    if (!fits(s, f, why, sizeof(why))) {
        ha_log_info("symbol index %s/%s of %s is out of date: %s; names "
                    "are read from the files and it is written again",
                    s->index_dir, name, f->path, why);
        goto refused;
    }
    h = f->idx.h;
    f->has_idx = true;
    f->idx_done = true;
    f->from = (enum ha_syms_source)h->from;
    ha_strlcpy(f->detail, ha_symindex_str(&f->idx, h->detail),
               sizeof(f->detail));
    f->no_fini = (h->flags & HA_SYMINDEX_F_NO_FINI) != 0;
    s->st.index_modules++;
    s->st.opened++;
    ha_symcache_touch(dirfd, name, &f->idx_map.st);
    ha_log_debug("symbol index %s/%s names %s (%zu bytes): its DWARF is not "
                 "read", s->index_dir, name, f->path, f->idx_map.len);
    close(dirfd);
    return 0;

refused:
    s->st.index_refused++;
    ha_symcache_unmap(&f->idx_map);
    memset(&f->idx, 0, sizeof(f->idx));
none:
    if (dirfd >= 0)
        close(dirfd);
    f->build_id[0] = '\0'; /* libdwfl reads it again */
    return -1;
}

/* ------------------------------------------------------------------ */
/* Naming                                                             */
/* ------------------------------------------------------------------ */

/* The index's string off as out's, through strs. UINT32_MAX on
 * allocation failure. */
static uint32_t
out_str(const struct file *f, struct ha_syms *out, uint32_t off,
        struct ha_idmap *strs)
{
    const char *str;
    uint32_t o;

    if (off == 0)
        return 0;
    if (ha_idmap_get(strs, off, &o))
        return o;
    str = ha_symindex_str(&f->idx, off);
    o = ha_strtab_intern(&out->strs, str, strlen(str));
    if (o != UINT32_MAX)
        (void)ha_idmap_put(strs, off, o);
    return o;
}

int
ha_symbolize_index_add(struct ha_symbolizer *s, struct file *f,
                       struct ha_syms *out, uint64_t pc, uint32_t mstr,
                       uint32_t flags, uint64_t va, struct ha_idmap *strs,
                       struct ha_symindex_cursor *at)
{
    struct ha_symindex_link chain[MAX_INLINE];
    struct ha_syms_frame fr[MAX_INLINE];
    uint32_t file, line, sym;
    uint64_t fsize;
    size_t depth = ha_symindex_chain(&f->idx, va, chain, MAX_INLINE, at), n;
    enum ha_symindex_naming naming = HA_SYMINDEX_NAMED;

    (void)s;
    ha_symindex_line(&f->idx, va, &file, &line, at);
    n = ha_symindex_frames(chain, depth, file, line, fr, MAX_INLINE);
    /* The symbol's size is kept whether or not its name is used, as the
     * DWARF path does (resolve_one, symbolize_dwarf.c). */
    sym = ha_symindex_symbol(&f->idx, va, &fsize);
    if (ha_symindex_wants_symbol(fr, n))
        naming = ha_symindex_with_symbol(fr, &n, sym, file, line);
    if (naming == HA_SYMINDEX_UNNAMED)
        return ha_syms_add_unnamed(out, pc, mstr, flags, f->path, va);
    for (size_t i = 0; i < n; i++) {
        fr[i].func = out_str(f, out, fr[i].func, strs);
        fr[i].file = out_str(f, out, fr[i].file, strs);
        if (fr[i].func == UINT32_MAX || fr[i].file == UINT32_MAX)
            return -1;
    }
    if (naming == HA_SYMINDEX_OUTER_UNNAMED) {
        char unnamed[320];

        /* As the DWARF path names a nameless function with inlined
         * callees: the address's own name. */
        ha_syms_unnamed_name(unnamed, sizeof(unnamed), f->path, va);
        fr[n - 1].func = ha_strtab_intern(&out->strs, unnamed,
                                          strlen(unnamed));
        if (fr[n - 1].func == UINT32_MAX)
            return -1;
    }
    if (ha_syms_add(out, pc, mstr, flags, fr, n) != 0)
        return -1;
    out->addrs[out->n_addrs - 1].fsize =
        fsize > UINT32_MAX ? UINT32_MAX : (uint32_t)fsize;
    return 0;
}
