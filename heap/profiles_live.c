/* SPDX-License-Identifier: MIT
 *
 * The live profile's text: a fresh prof.dump written where no disk can
 * stall the loop (the process's memory directory, heap/dumpfiles.h, or
 * else the datadir on the I/O thread), read back and removed, and the
 * memory beside it. Loading it as a profile is profiles_load.c's; a
 * delta of two is profiles_delta.c's.
 */
#include "heap/profiles.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/blockio.h"
#include "core/task.h"
#include "core/util.h"
#include "prof/dumpfile.h"
#include "heap/dumpfiles.h"
#include "heap/mallctl.h"
#include "heap/profiles_int.h"
#include "heap/sizeclasses.h"

/* ------------------------------------------------------------------
 * Live profiles
 * ------------------------------------------------------------------ */

/* Memory now, for a live profile: resident, the cgroup, the bins of a
 * fresh epoch. */
void
ha_profiles_live_memory(struct ha_heap *heap, struct ha_dumpmem *m)
{
    struct ha_sizeclasses cl;

    ha_dumpmem_init(m);
    ha_strlcpy(m->trigger, "live", sizeof(m->trigger));
    m->resident = ha_dumpfiles_resident();
    m->sampling_since = ha_mallctl_sampling_since(heap->ops);
    memset(&cl, 0, sizeof(cl));
    if (ha_mallctl_epoch(heap->ops) == 0 && ha_sizeclasses_load(heap->ops, &cl))
        (void)ha_sizeclasses_read_bins(heap->ops, &cl, m->bins,
                                       HA_DUMPMEM_BINS_MAX, &m->n_bins);
    ha_sizeclasses_free(&cl);
}

/* prof.dump into file, read back and removed: the text of a fresh
 * profile. Returns 0, HA_HEAP_BUSY (another dump is being written) or
 * HA_HEAP_ERROR, with err. */
int
ha_profiles_dump_read(const struct ha_mallctl_ops *ops, const char *file,
                      char **buf, size_t *len, char *err, size_t errlen)
{
    struct stat st;
    int rc, fd, ret = -1;

    rc = ha_mallctl_dump_to(ops, file);
    if (rc != 0) {
        struct ha_mallctl_failure f = {
            .errnum = rc,
            .mallctl = "prof.dump",
            .variable = NULL,
            .value = file,
            .prof_built = ha_mallctl_prof_built(ops),
        };
        char why[512];

        ha_mallctl_errmsg(&f, why, sizeof(why));
        ha_err_set(err, errlen, "live profile: %s", why);
        if (rc == EBUSY)
            ret = HA_HEAP_BUSY;
        goto out;
    }
    fd = open(file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0 || fstat(fd, &st) != 0) {
        ha_err_set(err, errlen, "live profile: %s: %s", file, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    ret = ha_dumpfile_read_fd(fd, HA_HEAP_LIVE, &st, buf, len, err, errlen);
    close(fd);
out:
    unlink(file);
    return ret;
}

/* A live profile in a private directory of the datadir, where no memory
 * directory is to be had: on the I/O thread (core/blockio.h). */
struct live_disk {
    const struct ha_mallctl_ops *ops;
    char dir[PATH_MAX];
    char *buf;
    size_t len;
    int rc;
    char err[1024];
};

static void
live_disk_run(void *arg)
{
    struct live_disk *j = arg;
    char file[PATH_MAX + 16];

    j->rc = HA_HEAP_ERROR;
    if (mkdtemp(j->dir) == NULL) {
        ha_err_set(j->err, sizeof(j->err),
                   "live profile: cannot make a private directory in the "
                   "datadir: %s",
                   strerror(errno));
        return;
    }
    snprintf(file, sizeof(file), "%s/live.heap", j->dir);
    j->rc = ha_profiles_dump_read(j->ops, file, &j->buf, &j->len, j->err,
                                  sizeof(j->err));
    rmdir(j->dir);
}

static void
live_disk_free(void *arg)
{
    struct live_disk *j = arg;

    free(j->buf);
    free(j);
}

/* The text of a fresh profile. jemalloc writes it on this thread, the
 * loop's, into this process's private directory in memory
 * (heap/dumpfiles.h): never on a disk, which may stop answering while
 * jemalloc holds its dump lock and the loop waits (issue 35). Without
 * one, in a private directory of the datadir, on the I/O thread.
 * Returns 0, HA_HEAP_BUSY (another dump is being written) or
 * HA_HEAP_ERROR. */
int
ha_profiles_live_dump(struct ha_heap *heap, char **buf, size_t *len, char *err,
                      size_t errlen)
{
    struct ha_heap_cache *c = ha_profiles_cache_of(heap);
    char prefix[PATH_MAX], mem[PATH_MAX], file[PATH_MAX + 32];
    struct live_disk *j;
    int rc;

    *buf = NULL;
    *len = 0;
    if (c == NULL || heap->datadir == NULL || heap->ops == NULL) {
        ha_err_set(err, errlen,
                   "a live profile needs a datadir and "
                   "jemalloc");
        return -1;
    }
    if ((size_t)snprintf(prefix, sizeof(prefix), "%s/live", heap->datadir) <
            sizeof(prefix) &&
        ha_dumpfiles_memory_prefix(prefix, mem, sizeof(mem)) == 0) {
        snprintf(file, sizeof(file), "%s.%ld.%u.heap", mem, (long)getpid(),
                 c->live_seq++);
        return ha_profiles_dump_read(heap->ops, file, buf, len, err, errlen);
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    j->ops = heap->ops;
    if ((size_t)snprintf(j->dir, sizeof(j->dir), "%s/.live.%ld.%u.XXXXXX",
                         heap->datadir, (long)getpid(),
                         c->live_seq++) >= sizeof(j->dir)) {
        free(j);
        ha_err_set(err, errlen, "live profile: datadir path too long");
        return -1;
    }
    if (ha_blockio_call("writing a live profile in the datadir", live_disk_run,
                        live_disk_free, j, err, errlen) != 0)
        return -1;
    rc = j->rc;
    if (rc == 0) {
        *buf = j->buf;
        *len = j->len;
        j->buf = NULL;
    } else {
        ha_err_set(err, errlen, "%s", j->err);
    }
    live_disk_free(j);
    return rc;
}

/* A text checked to parse, off the loop. */
struct text_check {
    const char *text;
    size_t len;
    char name[NAME_MAX + 1];
    int rc;
    char err[1024];
};

static void
text_check_run(void *arg)
{
    struct text_check *t = arg;
    struct ha_heapv2 p;
    char why[512];

    t->rc = ha_heapv2_parse(t->text, t->len, &p, why, sizeof(why));
    if (t->rc == 0)
        ha_heapv2_free(&p);
    else
        ha_err_set(t->err, sizeof(t->err), "%s: not a heap profile: %s",
                   t->name, why);
}

static void
text_check_discard(void *arg)
{
    struct text_check *t = arg;

    free((char *)t->text);
    free(t);
}

/* Checks that text parses (a file that is not a dump is never served).
 * On HA_HEAP_STOPPED the text is freed. */
static int
check_text(const char *name, char *text, size_t len, char *err, size_t errlen)
{
    struct text_check *t = calloc(1, sizeof(*t));
    int rc;

    if (t == NULL) {
        free(text);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    t->text = text;
    t->len = len;
    ha_strlcpy(t->name, name, sizeof(t->name));
    if (ha_task_offload(text_check_run, text_check_discard, t) != 0)
        return HA_HEAP_STOPPED;
    rc = t->rc;
    if (rc != 0)
        ha_err_set(err, errlen, "%s", t->err);
    free(t);
    return rc == 0 ? 0 : HA_HEAP_ERROR;
}

int
ha_heap_live_text(struct ha_heap *heap, char **buf, size_t *len, char *err,
                  size_t errlen)
{
    int rc;

    if ((rc = ha_profiles_live_dump(heap, buf, len, err, errlen)) != 0)
        return rc;
    rc = check_text(HA_HEAP_LIVE, *buf, *len, err, errlen);
    if (rc == HA_HEAP_ERROR)
        free(*buf);
    if (rc != 0)
        *buf = NULL;
    return rc;
}
