/* SPDX-License-Identifier: MIT
 *
 * dump_now's symbolized copy (see symcopy.h).
 */
#include "heap/symcopy.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/blockio.h"
#include "core/log.h"
#include "core/task.h"
#include "core/fdio.h"
#include "core/util.h"
#include "prof/dumpfile.h"
#include "heap/dumpfiles.h"
#include "prof/heapv2.h"
#include "prof/symfile.h"
#include "heap/profiles.h"

/* The part that reads and writes files: on the dump worker, never on
 * the loop (a dump is tens of MB; the datadir's disk may block). pr is
 * read-only once loaded and held by a reference the loop takes and
 * drops. */
struct symcopy_job {
    struct ha_heap_profile *pr;
    const char *datadir, *name;
    char dump_path[PATH_MAX];
    char out[PATH_MAX + 8];
    char err[512];
    int rc;
};

static void
symcopy_run(void *arg)
{
    struct symcopy_job *j = arg;
    char exe[PATH_MAX], tmp[PATH_MAX + 16], why[512] = "";
    struct ha_buf clean = HA_BUF_INIT, text = HA_BUF_INIT;
    struct stat st;
    char *raw = NULL;
    size_t len = 0;
    ssize_t n;
    int fd, e = 0;

    j->rc = -1;
    if (ha_dumpfile_read(j->datadir, j->name, HA_DUMPFILE_DUMP, &raw, &len,
                         &st, why, sizeof(why)) != 0) {
        ha_err_set(j->err, sizeof(j->err), "%s", why[0] ? why : "interrupted");
        goto out;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (ha_heapv2_clean(raw, len, &clean) != 0 ||
        ha_symfile_write(&j->pr->syms, (const char *)clean.data, clean.len,
                         n > 0 ? exe : NULL, &text) != 0) {
        ha_err_set(j->err, sizeof(j->err), "out of memory");
        goto out;
    }
    snprintf(j->out, sizeof(j->out), "%s.sym", j->dump_path);
    snprintf(tmp, sizeof(tmp), "%s.sym.tmp", j->dump_path);
    unlink(tmp); /* a leftover, or a planted link: never written through */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0 || (e = ha_fdio_write_all(fd, text.data, text.len)) != 0 ||
        fsync(fd) != 0) {
        ha_err_set(j->err, sizeof(j->err), "%s: %s", tmp,
                   strerror(e != 0 ? e : errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        goto out;
    }
    if (close(fd) != 0 || rename(tmp, j->out) != 0) {
        ha_err_set(j->err, sizeof(j->err), "%s: %s", j->out, strerror(errno));
        unlink(tmp);
        goto out;
    }
    (void)ha_dumpfiles_perms(j->out);
    j->rc = 0;
out:
    ha_buf_free(&clean);
    ha_buf_free(&text);
    free(raw);
}

/* The statement stopped waiting: the copy is finished or abandoned by
 * now; say which, and let the profile go (on the loop). */
static void
symcopy_discard(void *arg)
{
    struct symcopy_job *j = arg;

    if (j->rc == 0)
        ha_log_notice("symbolized copy %s written after the statement "
                      "that asked for it stopped waiting",
                      j->out);
    ha_heap_profile_put(j->pr);
    free(j);
}

int
ha_symcopy_write(struct ha_heap *heap, const char *dump_path, char *out,
                 size_t outlen, char *err, size_t errlen)
{
    const char *slash = strrchr(dump_path, '/');
    const char *name = slash != NULL ? slash + 1 : dump_path;
    char dir[PATH_MAX], why[512] = "";
    struct ha_heap_profile *pr = NULL;
    struct symcopy_job *j;
    int ret;

    if (heap->datadir == NULL || slash == NULL ||
        (size_t)(slash - dump_path) >= sizeof(dir) ||
        strlen(dump_path) >= sizeof(j->dump_path)) {
        ha_err_set(err, errlen, "%s is not in the datadir", dump_path);
        return -1;
    }
    memcpy(dir, dump_path, (size_t)(slash - dump_path));
    dir[slash - dump_path] = '\0';
    if (strcmp(dir, heap->datadir) != 0) {
        ha_err_set(err, errlen, "%s is not in the datadir %s", dump_path,
                   heap->datadir);
        return -1;
    }
    /* Loading and symbolizing yield on their own (profiles.h). */
    if (ha_heap_profile_get(heap, name, true, &pr, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s", why[0] ? why : "interrupted");
        return -1;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_heap_profile_put(pr);
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    j->pr = pr;
    j->datadir = heap->datadir;
    j->name = j->dump_path + (name - dump_path);
    ha_strlcpy(j->dump_path, dump_path, sizeof(j->dump_path));
    /* On -1 the job belongs to symcopy_discard. */
    if (ha_blockio_call_on(heap->dump_worker,
                           "writing a symbolized copy (dump_now)",
                           symcopy_run, symcopy_discard, j, err,
                           errlen) != 0)
        return -1;
    ret = j->rc;
    if (ret == 0)
        ha_strlcpy(out, j->out, outlen);
    else
        ha_err_set(err, errlen, "%s", j->err);
    ha_heap_profile_put(pr);
    free(j);
    return ret;
}
