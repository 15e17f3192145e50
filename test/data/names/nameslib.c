/* SPDX-License-Identifier: MIT
 *
 * A shared library for the name tests (test/check_prof.c,
 * test/integration/names.sh). Its allocation sites are where a stripped
 * copy can name nothing for certain:
 *   - two static functions (never in .dynsym) placed right after the
 *     small exported names_lib_alloc: the nearest dynamic symbol below
 *     them, which jeprof would name them after;
 *   - code after a label without a size (names_label_alloc, x86-64
 *     assembly), which says nothing about where its code ends.
 * Built -O0 -fno-toplevel-reorder (the tests do) so this order and these
 * frames hold; -g for the debug file the tests split off.
 */
#include <stdlib.h>
#include <string.h>

void *names_lib_alloc(size_t n, int how);
void *names_label_alloc(size_t n);

static void *hidden_grow(size_t n);
static void *hidden_fill(size_t n);

/* Exported and small: a stripped copy names only this. */
__attribute__((noinline)) void *
names_lib_alloc(size_t n, int how)
{
    return how ? hidden_fill(n) : hidden_grow(n);
}

__attribute__((noinline)) static void *
hidden_grow(size_t n)
{
    char *p = malloc(n);

    if (p != NULL)
        memset(p, 1, n);
    return p;
}

__attribute__((noinline)) static void *
hidden_fill(size_t n)
{
    return calloc(1, n);
}

#if defined(__x86_64__)
/* A function-typed label with no .size, with call frame information so
 * that jemalloc's unwinder walks through it. */
__asm__(".text\n"
        ".globl names_label_alloc\n"
        ".type names_label_alloc, @function\n"
        "names_label_alloc:\n"
        "    .cfi_startproc\n"
        "    pushq %rbp\n"
        "    .cfi_def_cfa_offset 16\n"
        "    .cfi_offset 6, -16\n"
        "    movq %rsp, %rbp\n"
        "    .cfi_def_cfa_register 6\n"
        "    call malloc@PLT\n"
        "    popq %rbp\n"
        "    .cfi_def_cfa 7, 8\n"
        "    ret\n"
        "    .cfi_endproc\n");
#else
void *
names_label_alloc(size_t n)
{
    return malloc(n);
}
#endif
