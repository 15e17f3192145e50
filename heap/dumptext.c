/* SPDX-License-Identifier: MIT
 *
 * A dump's text in pieces, off the loop (see dumptext.h).
 */
#include "heap/dumptext.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/blockio.h"
#include "core/task.h"
#include "core/util.h"
#include "heap/dumps.h"
#include "prof/dumpfile.h"

struct ha_dump_text {
    int fd;                      /* the dump, open for reading */
    unsigned long long size;     /* bytes, at open */
    unsigned refs;               /* the owner's, and a read job's under
                                    way (its discard may come later, on
                                    the loop): loop thread */
    char name[NAME_MAX + 1];     /* for messages */
};

static void
text_put(struct ha_dump_text *t)
{
    if (t == NULL || --t->refs > 0)
        return;
    /* Its flush may wait for the disk: never on the loop. */
    ha_blockio_close(t->fd);
    free(t);
}

/* ------------------------------------------------------------------
 * Opening (worker thread)
 * ------------------------------------------------------------------ */

struct open_job {
    struct ha_heap *heap;        /* datadir; dump_totals is the worker's */
    char name[NAME_MAX + 1];
    int fd;
    struct stat st;
    char err[1024];
};

static void
open_run(void *arg)
{
    struct open_job *j = arg;

    j->fd = ha_dumpfile_open(j->heap->datadir, j->name, HA_DUMPFILE_DUMP,
                             &j->st, j->err, sizeof(j->err));
    if (j->fd < 0)
        return;
    if (!ha_dump_totals_parses(j->heap, j->name, j->fd, &j->st)) {
        ha_err_set(j->err, sizeof(j->err),
                   "%s: not a heap profile (it does not parse as "
                   "jemalloc's heap_v2 text)",
                   j->name);
        close(j->fd);
        j->fd = -1;
    }
}

static void
open_discard(void *arg)
{
    struct open_job *j = arg;

    if (j->fd >= 0)
        close(j->fd);
    free(j);
}

int
ha_dump_text_open(struct ha_heap *heap, const char *name,
                  struct ha_dump_text **out, unsigned long long *size,
                  char *err, size_t errlen)
{
    struct open_job *j;
    struct ha_dump_text *t;

    *out = NULL;
    *size = 0;
    if (!ha_dumpfile_name_ok(name, HA_DUMPFILE_DUMP, err, errlen))
        return HA_HEAP_ERROR;
    if ((j = calloc(1, sizeof(*j))) == NULL ||
        (t = calloc(1, sizeof(*t))) == NULL) {
        free(j);
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->heap = heap;
    j->fd = -1;
    ha_strlcpy(j->name, name, sizeof(j->name));
    if (ha_task_offload(open_run, open_discard, j) != 0) {
        free(t);
        return HA_HEAP_STOPPED;
    }
    if (j->fd < 0) {
        ha_err_set(err, errlen, "%s", j->err);
        free(t);
        free(j);
        return HA_HEAP_ERROR;
    }
    t->fd = j->fd;
    t->size = (unsigned long long)j->st.st_size;
    t->refs = 1;
    ha_strlcpy(t->name, name, sizeof(t->name));
    free(j);
    *out = t;
    *size = t->size;
    return 0;
}

/* ------------------------------------------------------------------
 * Reading (worker thread)
 * ------------------------------------------------------------------ */

struct read_job {
    struct ha_dump_text *t;      /* a reference held */
    unsigned long long off;
    size_t max;
    char *buf;
    size_t len;
    int rc;
    char err[512];
};

static void
read_run(void *arg)
{
    struct read_job *j = arg;
    size_t want = j->max;

    j->rc = -1;
    if (j->off >= j->t->size)
        want = 0;
    else if (want > j->t->size - j->off)
        want = (size_t)(j->t->size - j->off);
    if ((j->buf = malloc(want > 0 ? want : 1)) == NULL) {
        ha_err_set(j->err, sizeof(j->err), "out of memory");
        return;
    }
    while (j->len < want) {
        ssize_t n = pread(j->t->fd, j->buf + j->len, want - j->len,
                          (off_t)(j->off + j->len));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            ha_err_set(j->err, sizeof(j->err), "%s: cannot read: %s",
                       j->t->name, strerror(errno));
            return;
        }
        if (n == 0) {
            ha_err_set(j->err, sizeof(j->err),
                       "%s: the file ended at %llu bytes, before the %llu "
                       "it had when opened",
                       j->t->name, j->off + j->len, j->t->size);
            return;
        }
        j->len += (size_t)n;
    }
    j->rc = 0;
}

static void
read_discard(void *arg)
{
    struct read_job *j = arg;

    text_put(j->t);
    free(j->buf);
    free(j);
}

int
ha_dump_text_read(struct ha_dump_text *t, unsigned long long off,
                  size_t max, char **buf, size_t *len, char *err,
                  size_t errlen)
{
    struct read_job *j = calloc(1, sizeof(*j));

    *buf = NULL;
    *len = 0;
    if (j == NULL) {
        ha_err_set(err, errlen, "out of memory");
        return HA_HEAP_ERROR;
    }
    j->t = t;
    t->refs++;
    j->off = off;
    j->max = max;
    if (ha_task_offload(read_run, read_discard, j) != 0)
        return HA_HEAP_STOPPED;
    if (j->rc != 0) {
        ha_err_set(err, errlen, "%s", j->err);
        read_discard(j);
        return HA_HEAP_ERROR;
    }
    *buf = j->buf;
    *len = j->len;
    j->buf = NULL;
    read_discard(j);
    return 0;
}

void
ha_dump_text_close(struct ha_dump_text *t)
{
    text_put(t);
}
