/* SPDX-License-Identifier: MIT
 *
 * The label contract (see labels.h).
 */
#include "engine/labels.h"

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>

#include "core/util.h"

#ifndef PACKAGE_VERSION
#define PACKAGE_VERSION "unknown"
#endif

int
ha_labels_note_build_id(const void *notes, size_t len, char *out,
                        size_t outlen)
{
    const unsigned char *p = notes, *end = p + len;

    /* ELF notes: namesz, descsz, type, then name and desc, each padded
     * to 4 bytes (the gABI; glibc's and binutils' GNU notes). */
    while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
        ElfW(Nhdr) nh;
        size_t name, desc;

        memcpy(&nh, p, sizeof(nh));
        name = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
        desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
        p += sizeof(nh);
        if (name > (size_t)(end - p) || desc > (size_t)(end - p) - name)
            return -1;
        if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
            memcmp(p, "GNU", 4) == 0 && nh.n_descsz > 0 &&
            (size_t)nh.n_descsz * 2 < outlen) {
            for (size_t i = 0; i < nh.n_descsz; i++)
                snprintf(out + 2 * i, 3, "%02x", p[name + i]);
            return 0;
        }
        p += name + desc;
    }
    return -1;
}

/* The executable's build-id from its program headers in memory. */
static void
self_build_id(char *out, size_t outlen)
{
    const ElfW(Phdr) *ph = (const ElfW(Phdr) *)getauxval(AT_PHDR);
    size_t n = (size_t)getauxval(AT_PHNUM);
    uintptr_t bias = 0;

    out[0] = '\0';
    if (ph == NULL || n == 0)
        return;
    /* A position-independent executable is loaded at a bias: where its
     * program headers are, less where PT_PHDR says they would be. */
    for (size_t i = 0; i < n; i++)
        if (ph[i].p_type == PT_PHDR)
            bias = (uintptr_t)ph - ph[i].p_vaddr;
    for (size_t i = 0; i < n; i++)
        if (ph[i].p_type == PT_NOTE &&
            ha_labels_note_build_id((const void *)(bias + ph[i].p_vaddr),
                                    ph[i].p_memsz, out, outlen) == 0)
            return;
}

void
ha_labels_init(struct ha_labels *l, const char *program,
               const struct ha_service_name *map, size_t n)
{
    struct utsname u;

    memset(l, 0, sizeof(*l));
    ha_strlcpy(l->program, program, sizeof(l->program));
    ha_strlcpy(l->service_name, ha_pushcfg_service_of(map, n, program),
               sizeof(l->service_name));
    self_build_id(l->build_id, sizeof(l->build_id));
    if (uname(&u) == 0)
        ha_strlcpy(l->host, u.nodename, sizeof(l->host));
    ha_strlcpy(l->version, PACKAGE_VERSION, sizeof(l->version));
}

void
ha_labels_expo(const struct ha_labels *l, struct ha_expo *e)
{
    const char *labels[] = {"program",  l->program, "service_name",
                            l->service_name, "build_id", l->build_id,
                            "version",  l->version, NULL};

    ha_expo_family(e, "heapadmin_build_info", HA_EXPO_GAUGE,
                   "The label contract of this process: its program, "
                   "service, the GNU build-id of its executable and "
                   "heapadmin's version; always 1.");
    ha_expo_sample(e, labels, 1);
}
