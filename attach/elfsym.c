/* SPDX-License-Identifier: MIT
 *
 * ELF headers and symbol tables read from a buffer (see elfsym.h). Only
 * section headers are used to find the tables: every shared object and
 * executable a distribution ships keeps them, and they name .dynsym
 * and .symtab apart. A version's hidden bit (.gnu.version, 0x8000)
 * tells a compatibility definition (dlopen@GLIBC_2.2.5 in glibc 2.34's
 * libc) from the default one (dlopen@@GLIBC_2.34).
 */
#include "attach/elfsym.h"

#include <elf.h>
#include <string.h>

#include "core/util.h"

#define VERSYM_HIDDEN 0x8000u

/* Whether [off, off + n) lies within len bytes. */
static bool
fits(size_t len, uint64_t off, uint64_t n)
{
    return off <= len && n <= len - off;
}

int
ha_elfsym_info(const uint8_t *buf, size_t len, struct ha_elfsym_info *info,
               char *err, size_t errlen)
{
    Elf64_Ehdr eh;
    uint64_t min = UINT64_MAX;

    memset(info, 0, sizeof(*info));
    if (len < EI_NIDENT || memcmp(buf, ELFMAG, SELFMAG) != 0) {
        ha_err_set(err, errlen, "not an ELF file");
        return -1;
    }
    if (buf[EI_DATA] != ELFDATA2LSB) {
        ha_err_set(err, errlen, "a big-endian ELF file");
        return -1;
    }
    info->elf_class = buf[EI_CLASS];
    if (info->elf_class == ELFCLASS32) {
        Elf32_Ehdr e32;

        if (len < sizeof(e32)) {
            ha_err_set(err, errlen, "a truncated ELF header");
            return -1;
        }
        memcpy(&e32, buf, sizeof(e32));
        info->machine = e32.e_machine;
        info->type = e32.e_type;
        return 0;
    }
    if (info->elf_class != ELFCLASS64 || len < sizeof(eh)) {
        ha_err_set(err, errlen, "an ELF file of unknown class %d",
                   info->elf_class);
        return -1;
    }
    memcpy(&eh, buf, sizeof(eh));
    info->machine = eh.e_machine;
    info->type = eh.e_type;
    if (eh.e_phentsize != sizeof(Elf64_Phdr) ||
        !fits(len, eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr))) {
        ha_err_set(err, errlen, "its program headers lie outside the file");
        return -1;
    }
    for (unsigned i = 0; i < eh.e_phnum; i++) {
        Elf64_Phdr ph;

        memcpy(&ph, buf + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type == PT_LOAD && ph.p_vaddr < min)
            min = ph.p_vaddr;
        else if (ph.p_type == PT_DYNAMIC)
            info->dynamic = ph.p_vaddr;
    }
    if (min == UINT64_MAX) {
        ha_err_set(err, errlen, "no loadable segment");
        return -1;
    }
    info->min_vaddr = min & ~(uint64_t)0xfff;
    return 0;
}

/* Section header i of a 64-bit file whose header is eh, into *sh. */
static bool
section(const uint8_t *buf, const Elf64_Ehdr *eh, unsigned i, Elf64_Shdr *sh)
{
    if (i >= eh->e_shnum)
        return false;
    memcpy(sh, buf + eh->e_shoff + (uint64_t)i * sizeof(*sh), sizeof(*sh));
    return true;
}

int
ha_elfsym_lookup(const uint8_t *buf, size_t len, enum ha_elfsym_table table,
                 const char *name, uint64_t *value, char *err, size_t errlen)
{
    uint32_t want = table == HA_ELFSYM_DYNSYM ? SHT_DYNSYM : SHT_SYMTAB;
    Elf64_Ehdr eh;
    Elf64_Shdr syms = {0}, strs = {0}, vers = {0};
    bool have_syms = false, have_vers = false, found = false;
    size_t nlen = strlen(name);

    if (len < sizeof(eh) || memcmp(buf, ELFMAG, SELFMAG) != 0 ||
        buf[EI_CLASS] != ELFCLASS64 || buf[EI_DATA] != ELFDATA2LSB) {
        ha_err_set(err, errlen, "not a 64-bit little-endian ELF file");
        return -1;
    }
    memcpy(&eh, buf, sizeof(eh));
    if (eh.e_shnum == 0)
        return 0; /* no section headers: nothing to look in */
    if (eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !fits(len, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr))) {
        ha_err_set(err, errlen, "its section headers lie outside the file");
        return -1;
    }
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;

        (void)section(buf, &eh, i, &sh);
        if (sh.sh_type == want && !have_syms) {
            syms = sh;
            have_syms = true;
        } else if (sh.sh_type == SHT_GNU_versym && !have_vers) {
            vers = sh;
            have_vers = true;
        }
    }
    if (!have_syms)
        return 0;
    if (syms.sh_entsize != sizeof(Elf64_Sym) ||
        !fits(len, syms.sh_offset, syms.sh_size) ||
        !section(buf, &eh, syms.sh_link, &strs) ||
        !fits(len, strs.sh_offset, strs.sh_size)) {
        ha_err_set(err, errlen, "its symbol table lies outside the file");
        return -1;
    }
    /* Versions apply to .dynsym only, one 16-bit entry per symbol. */
    if (have_vers && (table != HA_ELFSYM_DYNSYM ||
                      !fits(len, vers.sh_offset, vers.sh_size) ||
                      vers.sh_size / 2 < syms.sh_size / sizeof(Elf64_Sym)))
        have_vers = false;
    for (uint64_t i = 1; i < syms.sh_size / sizeof(Elf64_Sym); i++) {
        Elf64_Sym s;
        uint16_t ver = 0;

        memcpy(&s, buf + syms.sh_offset + i * sizeof(s), sizeof(s));
        if (s.st_shndx == SHN_UNDEF || s.st_name >= strs.sh_size ||
            strs.sh_size - s.st_name <= nlen ||
            memcmp(buf + strs.sh_offset + s.st_name, name, nlen + 1) != 0)
            continue;
        if (ELF64_ST_BIND(s.st_info) == STB_LOCAL &&
            table == HA_ELFSYM_DYNSYM)
            continue;
        if (have_vers)
            memcpy(&ver, buf + vers.sh_offset + i * 2, 2);
        *value = s.st_value;
        found = true;
        if ((ver & VERSYM_HIDDEN) == 0)
            return 1; /* the default version */
    }
    return found ? 1 : 0;
}

bool
ha_elfsym_contains(const uint8_t *buf, size_t len, const void *needle,
                   size_t n)
{
    return n > 0 && len >= n && memmem(buf, len, needle, n) != NULL;
}
