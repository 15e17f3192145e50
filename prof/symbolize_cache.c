/* SPDX-License-Identifier: MIT
 *
 * The symbolizer's cache of files (see symbolize_int.h): each opened file
 * and every address resolved in it kept across calls, keyed by path and
 * the file's device, inode, size and mtime so a replaced binary is
 * reopened, bounded in files and bytes, least recently used evicted
 * first (never a file the running call holds). A file with a fit symbol
 * index is named from it and never opened with libdwfl.
 */
#include "prof/symbolize_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/util.h"

void
ha_symbolize_cache_evict(struct ha_symbolizer *s, const struct file *keep)
{
    for (;;) {
        size_t n = 0, bytes = 0;
        struct file **pp, **lru = NULL;

        for (pp = &s->files; *pp != NULL; pp = &(*pp)->next) {
            n++;
            bytes += (*pp)->bytes;
            if (*pp != keep && !(*pp)->pinned &&
                (lru == NULL || (*pp)->last_use < (*lru)->last_use))
                lru = pp;
        }
        s->st.files = n;
        s->st.bytes = bytes;
        if ((n <= s->lim.max_files && bytes <= s->lim.max_bytes) || lru == NULL)
            return;
        {
            struct file *f = *lru;

            *lru = f->next;
            ha_symbolize_file_free(f);
            s->st.evicted++;
        }
    }
}

struct file *
ha_symbolize_cache_get(struct ha_symbolizer *s, const char *path)
{
    struct stat sb;
    struct file **pp, *f;
    bool have = stat(path, &sb) == 0;
    int stat_errno = errno;

    for (pp = &s->files; (f = *pp) != NULL; pp = &f->next) {
        if (strcmp(f->path, path) != 0)
            continue;
        /* The running call holds it (a path mapped twice): keep it. */
        if (!f->pinned &&
            (!have || f->dev != sb.st_dev || f->ino != sb.st_ino ||
             f->size != sb.st_size || f->mtime.tv_sec != sb.st_mtim.tv_sec ||
             f->mtime.tv_nsec != sb.st_mtim.tv_nsec)) {
            *pp = f->next;
            ha_symbolize_file_free(f);
            s->st.evicted++;
            break;
        }
        f->last_use = ++s->clock;
        return f;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL || (f->path = strdup(path)) == NULL) {
        free(f);
        return NULL;
    }
    if (have) {
        f->dev = sb.st_dev;
        f->ino = sb.st_ino;
        f->size = sb.st_size;
        f->mtime = sb.st_mtim;
        /* Its index when a fit one is there: no DWARF read at all. */
        if (ha_symbolize_index_open(s, f) != 0)
            ha_symbolize_file_open(s, f);
    } else {
        ha_err_set(f->open_err, sizeof(f->open_err), "cannot read it: %s",
                   strerror(stat_errno));
    }
    f->allocator = ha_symbolize_is_allocator_path(path);
    f->last_use = ++s->clock;
    f->bytes = ha_symbolize_file_bytes(f);
    f->next = s->files;
    s->files = f;
    ha_symbolize_cache_evict(s, f);
    return f;
}
