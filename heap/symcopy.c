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
#include "core/fdio.h"
#include "core/util.h"
#include "prof/dumpfile.h"
#include "heap/dumpfiles.h"
#include "prof/heapv2.h"
#include "prof/symfile.h"
#include "heap/profiles.h"

int
ha_symcopy_write(struct ha_heap *heap, const char *dump_path, char *out,
                 size_t outlen, char *err, size_t errlen)
{
    const char *slash = strrchr(dump_path, '/');
    const char *name = slash != NULL ? slash + 1 : dump_path;
    char dir[PATH_MAX], exe[PATH_MAX], path[PATH_MAX + 8], tmp[PATH_MAX + 16];
    struct ha_heap_profile *pr = NULL;
    struct ha_buf clean = HA_BUF_INIT, text = HA_BUF_INIT;
    struct stat st;
    char *raw = NULL, why[512] = "";
    size_t len = 0;
    ssize_t n;
    int fd = -1, ret = -1;

    if (heap->datadir == NULL || slash == NULL ||
        (size_t)(slash - dump_path) >= sizeof(dir)) {
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
    if (ha_heap_profile_get(heap, name, true, &pr, why, sizeof(why)) != 0 ||
        ha_dumpfile_read(heap->datadir, name, HA_DUMPFILE_DUMP, &raw, &len,
                         &st, why, sizeof(why)) != 0) {
        ha_err_set(err, errlen, "%s", why[0] ? why : "interrupted");
        goto out;
    }
    n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    exe[n > 0 ? n : 0] = '\0';
    if (ha_heapv2_clean(raw, len, &clean) != 0 ||
        ha_symfile_write(&pr->syms, (const char *)clean.data, clean.len,
                         n > 0 ? exe : NULL, &text) != 0) {
        ha_err_set(err, errlen, "out of memory");
        goto out;
    }
    snprintf(path, sizeof(path), "%s.sym", dump_path);
    snprintf(tmp, sizeof(tmp), "%s.sym.tmp", dump_path);
    unlink(tmp); /* a leftover, or a planted link: never written through */
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0 || ha_fdio_write_all(fd, text.data, text.len) != 0 ||
        fsync(fd) != 0) {
        ha_err_set(err, errlen, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        goto out;
    }
    if (close(fd) != 0 || rename(tmp, path) != 0) {
        ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
        unlink(tmp);
        goto out;
    }
    (void)ha_dumpfiles_perms(path);
    ha_strlcpy(out, path, outlen);
    ret = 0;
out:
    ha_buf_free(&clean);
    ha_buf_free(&text);
    free(raw);
    ha_heap_profile_put(pr);
    return ret;
}
