/* SPDX-License-Identifier: MIT
 *
 * Build-ids from ELF files (libelf, libdwelf) and from this process's own
 * mapped objects (dl_iterate_phdr, program headers, PT_NOTE), and the
 * `<dump>.buildid` side file.
 */
#include "prof/buildid.h"

#include <elf.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/forkguard.h"
#include "core/util.h"

int
ha_buildid_from_file(const char *path, char *hex, char *err, size_t errlen)
{
    const void *id = NULL;
    ssize_t n;
    Elf *elf;
    int fd, ret = -1;

    hex[0] = '\0';
    elf_version(EV_CURRENT);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF) {
        ha_err_set(err, errlen, "%s: not an ELF file", path);
        goto done;
    }
    n = dwelf_elf_gnu_build_id(elf, &id);
    if (n <= 0 || ha_buildid_to_hex(id, (size_t)n, hex) != 0) {
        ha_err_set(err, errlen, "%s: no GNU build-id note", path);
        hex[0] = '\0';
        goto done;
    }
    ret = 0;
done:
    if (elf != NULL)
        elf_end(elf);
    close(fd);
    return ret;
}

/* ------------------------------------------------------------------ */
/* This process                                                        */
/* ------------------------------------------------------------------ */

struct record_ctx {
    FILE *out;
    int failed;
};

/* The NT_GNU_BUILD_ID in one PT_NOTE segment of a loaded object. The
 * memory is this process's own, mapped by the loader: trusted, but still
 * walked within p_memsz. */
static int
note_build_id(const ElfW(Nhdr) *nh, size_t size, char *hex)
{
    const char *p = (const char *)nh, *end = p + size;

    while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
        const ElfW(Nhdr) *h = (const ElfW(Nhdr) *)(const void *)p;
        size_t name = (h->n_namesz + 3u) & ~3u;
        size_t desc = (h->n_descsz + 3u) & ~3u;
        const char *np = p + sizeof(*h);

        if (name > (size_t)(end - np) || desc > (size_t)(end - np) - name)
            return -1;
        if (h->n_type == NT_GNU_BUILD_ID && h->n_namesz == 4 &&
            memcmp(np, "GNU", 4) == 0)
            return ha_buildid_to_hex((const uint8_t *)np + name,
                                     h->n_descsz, hex);
        p = np + name + desc;
    }
    return -1;
}

static int
record_one(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct record_ctx *c = arg;
    char hex[HA_BUILDID_HEX_MAX], exe[4096];
    const char *path = info->dlpi_name;

    (void)size;
    if (path == NULL || path[0] == '\0') {
        /* The executable is listed first with an empty name. */
        ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

        if (n <= 0)
            return 0;
        exe[n] = '\0';
        path = exe;
    }
    if (path[0] != '/')
        return 0; /* linux-vdso.so.1: not a file */
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type != PT_NOTE)
            continue;
        if (note_build_id((const ElfW(Nhdr) *)(info->dlpi_addr +
                                               ph->p_vaddr),
                          ph->p_memsz, hex) == 0) {
            if (fprintf(c->out, "%s %s\n", hex, path) < 0)
                c->failed = 1;
            break;
        }
    }
    return 0;
}

int
ha_buildid_record(const char *dump_path, char *err, size_t errlen)
{
    char path[4096], tmp[4096 + 16];
    struct record_ctx c = {NULL, 0};
    struct stat st;
    int fd;

    if ((size_t)snprintf(path, sizeof(path), "%s.buildid", dump_path) >=
            sizeof(path) ||
        (size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp)) {
        ha_err_set(err, errlen, "%s: path too long", dump_path);
        return -1;
    }
    /* Never through a link planted at the temporary name. */
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
              0600);
    if (fd < 0 || (c.out = fdopen(fd, "w")) == NULL) {
        ha_err_set(err, errlen, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    /* When the dump was written, with the dump (its mtime would not
     * survive a copy). */
    if (stat(dump_path, &st) == 0 &&
        fprintf(c.out, "# dumped_at %lld.%09ld\n", (long long)st.st_mtim.tv_sec,
                (long)st.st_mtim.tv_nsec) < 0)
        c.failed = 1;
    /* The loader's write lock (core/forkguard.h): never held at a
     * fork. record_one takes no lock of its own but stdio's (the file's
     * own, and glibc's fork takes the list's). */
    ha_forkguard_enter();
    dl_iterate_phdr(record_one, &c);
    ha_forkguard_leave();
    if (fclose(c.out) != 0)
        c.failed = 1;
    if (c.failed || rename(tmp, path) != 0) {
        ha_err_set(err, errlen, "%s: %s", path,
                   c.failed ? "write failed" : strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

enum ha_buildid_state
ha_buildid_check(const struct ha_buildids *side, const char *path,
                 char *disk_hex)
{
    char hex[HA_BUILDID_HEX_MAX];
    const char *rec = side != NULL ? ha_buildids_find(side, path) : NULL;
    int rc = ha_buildid_from_file(path, hex, NULL, 0);

    if (disk_hex != NULL)
        strcpy(disk_hex, rc == 0 ? hex : "");
    if (rec == NULL || rc != 0)
        return HA_BUILDID_UNKNOWN;
    return strcmp(rec, hex) == 0 ? HA_BUILDID_MATCH : HA_BUILDID_MISMATCH;
}
