/* SPDX-License-Identifier: MIT
 *
 * heapadmin-attach's pure readers: ELF symbol tables (attach/elfsym.c),
 * checked against what this process's own loader resolves in the real
 * libc and libjemalloc it runs with; /proc's formats
 * (attach/procparse.c), on texts as Linux 6.1 writes them and on
 * hostile ones; and which system calls are safe points
 * (attach/inject_take.c). The injector itself is tested on real
 * processes (test/agent/attach.sh).
 */
#include <check.h>
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach/elfsym.h"
#include "attach/inject_take.h"
#include "attach/procparse.h"
#include "test/check_main.h"

/* ------------------------------------------------------------------
 * ELF
 * ------------------------------------------------------------------ */

struct file {
    uint8_t *buf;
    size_t len;
};

static struct file
map(const char *path)
{
    struct file f = {NULL, 0};
    struct stat st;
    int fd = open(path, O_RDONLY);

    ck_assert_msg(fd >= 0, "open %s", path);
    ck_assert_int_eq(fstat(fd, &st), 0);
    f.len = (size_t)st.st_size;
    f.buf = mmap(NULL, f.len, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
    ck_assert_ptr_ne(f.buf, MAP_FAILED);
    close(fd);
    return f;
}

/* The file that defines sym in this process, and its load bias. */
static struct file
object_of(void *sym, uintptr_t *bias)
{
    Dl_info info;

    ck_assert_int_ne(dladdr(sym, &info), 0);
    *bias = (uintptr_t)info.dli_fbase;
    return map(info.dli_fname);
}

/* name's address in the file that defines it here, by elfsym, must be
 * where this process's loader bound it. */
static void
same_as_loader(const char *name)
{
    void *want = dlsym(RTLD_DEFAULT, name);
    uintptr_t bias;
    struct file f;
    struct ha_elfsym_info info;
    uint64_t v = 0;
    char err[256];

    ck_assert_msg(want != NULL, "%s not found by dlsym", name);
    f = object_of(want, &bias);
    ck_assert_int_eq(ha_elfsym_info(f.buf, f.len, &info, err, sizeof(err)),
                     0);
    ck_assert_int_eq(info.elf_class, ELFCLASS64);
    ck_assert_int_eq(info.machine, EM_X86_64);
    ck_assert_int_eq(ha_elfsym_lookup(f.buf, f.len, HA_ELFSYM_DYNSYM, name,
                                      &v, err, sizeof(err)),
                     1);
    ck_assert_msg(bias + v == (uintptr_t)want, "%s: %#lx + %#lx != %p",
                  name, (unsigned long)bias, (unsigned long)v, want);
    munmap(f.buf, f.len);
}

START_TEST(test_elfsym_as_the_loader)
{
    /* dlopen has a hidden GLIBC_2.2.5 and a default GLIBC_2.34
     * definition in glibc 2.34's libc; pthread_cond_wait's two lie at
     * different addresses: the default one must win. */
    same_as_loader("dlopen");
    same_as_loader("dlerror");
    same_as_loader("__errno_location");
    same_as_loader("pthread_cond_wait");
    same_as_loader("mallctl");
    same_as_loader("malloc");
}
END_TEST

START_TEST(test_elfsym_absent_and_undefined)
{
    uintptr_t bias;
    struct file f = object_of((void *)dlsym(RTLD_DEFAULT, "mallctl"), &bias);
    uint64_t v;

    ck_assert_int_eq(ha_elfsym_lookup(f.buf, f.len, HA_ELFSYM_DYNSYM,
                                      "no_such_symbol_here", &v, NULL, 0),
                     0);
    /* libjemalloc imports pthread_create: undefined there, not found. */
    ck_assert_int_eq(ha_elfsym_lookup(f.buf, f.len, HA_ELFSYM_DYNSYM,
                                      "pthread_create", &v, NULL, 0),
                     0);
    /* A prefix of a name is not the name. */
    ck_assert_int_eq(ha_elfsym_lookup(f.buf, f.len, HA_ELFSYM_DYNSYM,
                                      "mallct", &v, NULL, 0),
                     0);
    ck_assert(ha_elfsym_contains(f.buf, f.len, "<jemalloc>: ", 12));
    ck_assert(!ha_elfsym_contains(f.buf, f.len, "", 0));
    munmap(f.buf, f.len);
}
END_TEST

/* Every truncation of a real library is refused or read within its
 * bounds, never past them (ASan and the mapping's end would say). */
START_TEST(test_elfsym_truncated)
{
    uintptr_t bias;
    struct file f = object_of((void *)dlsym(RTLD_DEFAULT, "mallctl"), &bias);
    static const size_t cuts[] = {0, 3, 16, 63, 64, 100, 4096, 65536};

    for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        size_t n = cuts[i] < f.len ? cuts[i] : f.len;
        uint8_t *copy = malloc(n ? n : 1);
        struct ha_elfsym_info info;
        uint64_t v;
        int rc;

        memcpy(copy, f.buf, n);
        (void)ha_elfsym_info(copy, n, &info, NULL, 0);
        rc = ha_elfsym_lookup(copy, n, HA_ELFSYM_DYNSYM, "mallctl", &v,
                              NULL, 0);
        /* The section headers are at the file's end: never found. */
        ck_assert_msg(rc == -1 || rc == 0, "cut %zu: %d", n, rc);
        free(copy);
    }
    munmap(f.buf, f.len);
}
END_TEST

START_TEST(test_elfsym_header)
{
    uint8_t h[64];
    struct ha_elfsym_info info;
    char err[128];

    memset(h, 0, sizeof(h));
    memcpy(h, ELFMAG, SELFMAG);
    h[EI_CLASS] = ELFCLASS32;
    h[EI_DATA] = ELFDATA2LSB;
    h[18] = EM_386;
    ck_assert_int_eq(ha_elfsym_info(h, sizeof(h), &info, err, sizeof(err)),
                     0);
    ck_assert_int_eq(info.elf_class, ELFCLASS32);
    ck_assert_int_eq(info.machine, EM_386);
    h[EI_DATA] = ELFDATA2MSB;
    ck_assert_int_eq(ha_elfsym_info(h, sizeof(h), &info, err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "a big-endian ELF file");
    ck_assert_int_eq(ha_elfsym_info((const uint8_t *)"#!/bin/sh\n", 10,
                                    &info, err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "not an ELF file");
    /* A 64-bit header whose program headers lie past the end. */
    memset(h, 0, sizeof(h));
    memcpy(h, ELFMAG, SELFMAG);
    h[EI_CLASS] = ELFCLASS64;
    h[EI_DATA] = ELFDATA2LSB;
    h[32] = 0xff; /* e_phoff */
    h[54] = sizeof(Elf64_Phdr);
    h[56] = 1; /* e_phnum */
    ck_assert_int_eq(ha_elfsym_info(h, sizeof(h), &info, err, sizeof(err)),
                     -1);
    ck_assert_str_eq(err, "its program headers lie outside the file");
}
END_TEST

/* ------------------------------------------------------------------
 * /proc
 * ------------------------------------------------------------------ */

START_TEST(test_procparse_status)
{
    struct ha_procstatus s;
    static const char text[] =
        "Name:\tredis-server\nUmask:\t0022\nState:\tS (sleeping)\n"
        "Tgid:\t4242\nPid:\t4242\nPPid:\t1\nTracerPid:\t0\n"
        "Uid:\t106\t106\t106\t106\nGid:\t112\t112\t112\t112\n"
        "CapEff:\t0000000000080000\nSeccomp:\t2\n";

    ck_assert_int_eq(ha_procparse_status(text, &s), 0);
    ck_assert_int_eq(s.state, 'S');
    ck_assert_int_eq(s.tracer, 0);
    ck_assert_int_eq(s.uid[0], 106);
    ck_assert_int_eq(s.uid[3], 106);
    ck_assert_int_eq(s.gid[1], 112);
    ck_assert_int_eq(s.seccomp, 2);
    ck_assert(s.cap_sys_ptrace);
    ck_assert_int_eq(
        ha_procparse_status("State:\tt (tracing stop)\nTracerPid:\t77\n"
                            "Uid:\t0\t0\t0\t0\nCapEff:\t000001ffffb7ffff\n",
                            &s),
        0);
    ck_assert_int_eq(s.state, 't');
    ck_assert_int_eq(s.tracer, 77);
    ck_assert(!s.cap_sys_ptrace); /* bit 19 clear */
    ck_assert_int_eq(s.seccomp, -1);
    ck_assert_int_eq(s.gid[0], -1);
    /* Not a status file: refused, nothing guessed. */
    ck_assert_int_eq(ha_procparse_status("", &s), -1);
    ck_assert_int_eq(ha_procparse_status("State:\tS\nUid:\t1\t2\n", &s), -1);
    ck_assert_int_eq(
        ha_procparse_status("State:\tS\nTracerPid:\t-3\nUid:\t0 0 0 0\n", &s),
        -1);
}
END_TEST

START_TEST(test_procparse_map)
{
    struct ha_procmap m;
    static const char a[] = "7f4ef3e00000-7f4ef3e2a000 r-xp 00026000 fe:00 "
                            "332870                     /usr/lib/x86_64-"
                            "linux-gnu/libjemalloc.so.2";
    static const char b[] = "7ffd1b9f2000-7ffd1ba13000 rw-p 00000000 00:00 "
                            "0                          [stack]";
    static const char c[] = "555555554000-555555556000 r--p 00000000 08:01 "
                            "12 /tmp/a b (deleted)";

    ck_assert_int_eq(ha_procparse_map(a, strlen(a), &m), 0);
    ck_assert_uint_eq(m.start, 0x7f4ef3e00000ull);
    ck_assert_uint_eq(m.end, 0x7f4ef3e2a000ull);
    ck_assert_str_eq(m.perms, "r-xp");
    ck_assert_uint_eq(m.offset, 0x26000);
    ck_assert_uint_eq(m.inode, 332870);
    ck_assert_uint_eq(m.path_len, strlen("/usr/lib/x86_64-linux-gnu/"
                                         "libjemalloc.so.2"));
    ck_assert_int_eq(strncmp(m.path, "/usr/lib/x86_64-linux-gnu/", 26), 0);
    ck_assert_int_eq(ha_procparse_map(b, strlen(b), &m), 0);
    ck_assert_uint_eq(m.inode, 0);
    ck_assert_int_eq(ha_procparse_map(c, strlen(c), &m), 0);
    ck_assert_int_eq((int)m.path_len, (int)strlen("/tmp/a b (deleted)"));
    /* Cut anywhere before the inode: refused. */
    for (size_t n = 0; n < 46; n++)
        ck_assert_msg(ha_procparse_map(a, n, &m) == -1, "cut at %zu", n);
    ck_assert_int_eq(ha_procparse_map("2000-1000 r-xp 0 0:0 0", 22, &m), -1);
    ck_assert_int_eq(
        ha_procparse_map("11112222333344445-1 r-xp 0 0:0 0", 33, &m), -1);
}
END_TEST

START_TEST(test_procparse_auxv)
{
    uint64_t v[8] = {AT_PAGESZ, 4096, AT_SECURE, 1, AT_NULL, 0, AT_UID, 5};
    uint64_t out = 0;

    ck_assert(ha_procparse_auxv((uint8_t *)v, sizeof(v), AT_SECURE, &out));
    ck_assert_uint_eq(out, 1);
    /* Past AT_NULL is not the vector. */
    ck_assert(!ha_procparse_auxv((uint8_t *)v, sizeof(v), AT_UID, &out));
    /* A cut pair is not read. */
    ck_assert(!ha_procparse_auxv((uint8_t *)v, 24, AT_SECURE, &out));
    ck_assert(ha_procparse_auxv((uint8_t *)v, 32, AT_SECURE, &out));
}
END_TEST

START_TEST(test_procparse_syscall_and_scope)
{
    ck_assert_int_eq(
        ha_procparse_syscall("232 0x4 0x7ffc 0x80 0x64 0x0 0x0 0x7ffc 0x7f\n"),
        232);
    ck_assert_int_eq(ha_procparse_syscall("-1 0x7ffc 0x7f12\n"), -1);
    ck_assert_int_eq(ha_procparse_syscall("running\n"), -2);
    ck_assert_int_eq(ha_procparse_syscall(""), -2);
    ck_assert_int_eq(ha_procparse_syscall("23x 0"), -2);
    ck_assert_int_eq(ha_procparse_syscall("99999 0"), -2);
    ck_assert_int_eq(ha_procparse_scope("1\n"), 1);
    ck_assert_int_eq(ha_procparse_scope("3"), 3);
    ck_assert_int_eq(ha_procparse_scope("4\n"), -1);
    ck_assert_int_eq(ha_procparse_scope("one"), -1);
}
END_TEST

START_TEST(test_inject_safe_points)
{
    ck_assert(ha_inject_safe_syscall(SYS_epoll_wait));
    ck_assert(ha_inject_safe_syscall(SYS_epoll_pwait));
    ck_assert(ha_inject_safe_syscall(SYS_poll));
    ck_assert(ha_inject_safe_syscall(SYS_nanosleep));
    ck_assert(ha_inject_safe_syscall(SYS_rt_sigsuspend));
    /* A lock's wait, a read, anything else: a lock may be held. */
    ck_assert(!ha_inject_safe_syscall(SYS_futex));
    ck_assert(!ha_inject_safe_syscall(SYS_read));
    ck_assert(!ha_inject_safe_syscall(SYS_mmap));
    ck_assert(!ha_inject_safe_syscall(-1));
}
END_TEST

static Suite *
attach_suite(void)
{
    Suite *s = suite_create("attach");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, test_elfsym_as_the_loader);
    tcase_add_test(tc, test_procparse_status);
    tcase_add_test(tc, test_procparse_map);
    tcase_add_test(tc, test_procparse_auxv);
    tcase_add_test(tc, test_procparse_syscall_and_scope);
    tcase_add_test(tc, test_inject_safe_points);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, test_elfsym_absent_and_undefined);
    tcase_add_test(tc, test_elfsym_truncated);
    tcase_add_test(tc, test_elfsym_header);
    suite_add_tcase(s, tc);
    return s;
}

HA_CHECK_MAIN(attach_suite)
