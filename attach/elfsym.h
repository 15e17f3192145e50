/* SPDX-License-Identifier: MIT
 *
 * What heapadmin-attach reads in an ELF file before it touches a
 * process: its class and machine, and where a symbol is, by its
 * .dynsym (what the dynamic loader and dlsym see) or its .symtab (what
 * a linker saw, to tell a static jemalloc that is not exported). Pure:
 * every function reads a caller's buffer (a file mapped whole) and
 * checks every offset against its length, so a truncated or hostile
 * file is refused, never read past. Format: the System V gABI and the
 * GNU symbol-versioning extension (.gnu.version, .gnu.version_d).
 */
#ifndef HA_ATTACH_ELFSYM_H
#define HA_ATTACH_ELFSYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ha_elfsym_info {
    int elf_class;        /* ELFCLASS32 or ELFCLASS64 */
    int machine;          /* e_machine: EM_X86_64, EM_386, ... */
    int type;             /* e_type: ET_EXEC, ET_DYN */
    uint64_t min_vaddr;   /* lowest PT_LOAD p_vaddr, page-aligned down:
                             the load bias is where that is mapped,
                             minus this */
    uint64_t dynamic;     /* PT_DYNAMIC's p_vaddr; 0: none (static) */
};

/* The header of buf (len bytes). Returns 0 with *info, or -1 with err:
 * not ELF, truncated, or not little-endian. A 32-bit file is returned
 * (elf_class says so) with min_vaddr 0: the caller refuses it. */
int ha_elfsym_info(const uint8_t *buf, size_t len,
                   struct ha_elfsym_info *info, char *err, size_t errlen);

enum ha_elfsym_table {
    HA_ELFSYM_DYNSYM,     /* .dynsym: what the dynamic loader exports */
    HA_ELFSYM_SYMTAB,     /* .symtab: the linker's (stripped in most
                             packages) */
    HA_ELFSYM_TABLE_MAX
};

/* Looks name up among the defined symbols of table in a 64-bit
 * little-endian buf. Of several versions the default one (name@@V) wins
 * over a hidden one (name@V); an unversioned definition counts as
 * default. Returns 1 with *value (st_value: add the load bias), 0 when
 * the table has no such defined symbol (or no such table), -1 with err
 * when the file is malformed. */
int ha_elfsym_lookup(const uint8_t *buf, size_t len,
                     enum ha_elfsym_table table, const char *name,
                     uint64_t *value, char *err, size_t errlen);

/* Whether needle (n bytes) occurs in buf: how a stripped executable that
 * holds jemalloc without exporting it is told (its own messages'
 * "<jemalloc>: " prefix). Pure. */
bool ha_elfsym_contains(const uint8_t *buf, size_t len, const void *needle,
                        size_t n);

#endif /* HA_ATTACH_ELFSYM_H */
