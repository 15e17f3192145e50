/* SPDX-License-Identifier: MIT
 *
 * Symbol index files: the private directory, mapping, atomic writes, the
 * byte bound, and build-ids read from ELF headers (see symcache.h).
 */
#include "prof/symcache.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "core/util.h"

#define TMP_PREFIX ".tmp."
#define STALE_TMP_S 3600   /* a writer's temporary left this long died */
#define TOUCH_EVERY_S 3600 /* mtime refreshed at most this often */
#define NOTE_MAX 65536     /* PT_NOTE bytes read at most */
#define PHNUM_MAX 1024

/* ------------------------------------------------------------------ */
/* The directory                                                      */
/* ------------------------------------------------------------------ */

int
ha_symcache_dir_open(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    int fd;

    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        ha_err_set(err, errlen, "cannot make %s: %s", dir, strerror(errno));
        return -1;
    }
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;

        ha_err_set(err, errlen, "cannot open %s: %s", dir,
                   lstat(dir, &st) == 0 && S_ISLNK(st.st_mode)
                       ? "a symbolic link: refused"
                       : strerror(e));
        return -1;
    }
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode)) {
        ha_err_set(err, errlen, "%s is not a directory", dir);
        goto fail;
    }
    if (st.st_uid != geteuid()) {
        ha_err_set(err, errlen, "%s belongs to uid %u, not to this "
                   "process's uid %u: not used", dir, (unsigned)st.st_uid,
                   (unsigned)geteuid());
        goto fail;
    }
    if ((st.st_mode & 077) != 0 && fchmod(fd, 0700) != 0) {
        ha_err_set(err, errlen, "%s is mode %03o and cannot be made 0700: "
                   "%s", dir, (unsigned)(st.st_mode & 0777),
                   strerror(errno));
        goto fail;
    }
    return fd;
fail:
    close(fd);
    return -1;
}

void
ha_symcache_name(char *name, size_t len, const char *hex, bool demangled)
{
    snprintf(name, len, "%s.%c" HA_SYMCACHE_SUFFIX, hex,
             demangled ? 'd' : 'm');
}

/* ------------------------------------------------------------------ */
/* Reading                                                            */
/* ------------------------------------------------------------------ */

int
ha_symcache_map(int dirfd, const char *name, struct ha_symcache_map *m,
                char *why, size_t whylen)
{
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
                                     O_NOCTTY | O_NONBLOCK);
    void *p;

    memset(m, 0, sizeof(*m));
    if (fd < 0) {
        if (errno == ENOENT)
            return 1;
        ha_err_set(why, whylen, "cannot open it: %s%s", strerror(errno),
                   errno == ELOOP ? " (a symbolic link)" : "");
        return -1;
    }
    if (fstat(fd, &m->st) != 0 || !S_ISREG(m->st.st_mode)) {
        ha_err_set(why, whylen, "not a regular file");
        goto fail;
    }
    if (m->st.st_uid != geteuid() || (m->st.st_mode & 077) != 0) {
        ha_err_set(why, whylen, "owned by uid %u with mode %03o: only a "
                   "file of uid %u with mode 0600 is read",
                   (unsigned)m->st.st_uid,
                   (unsigned)(m->st.st_mode & 0777), (unsigned)geteuid());
        goto fail;
    }
    if (m->st.st_size <= 0 || (uint64_t)m->st.st_size > HA_SYMCACHE_MAX_FILE) {
        ha_err_set(why, whylen, "%lld bytes: not a size an index has",
                   (long long)m->st.st_size);
        goto fail;
    }
    p = mmap(NULL, (size_t)m->st.st_size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        ha_err_set(why, whylen, "cannot map it: %s", strerror(errno));
        goto fail;
    }
    close(fd);
    m->data = p;
    m->len = (size_t)m->st.st_size;
    return 0;
fail:
    close(fd);
    return -1;
}

void
ha_symcache_unmap(struct ha_symcache_map *m)
{
    if (m->data != NULL)
        munmap(m->data, m->len);
    memset(m, 0, sizeof(*m));
}

/* ------------------------------------------------------------------ */
/* Writing                                                            */
/* ------------------------------------------------------------------ */

int
ha_symcache_write(int dirfd, const char *name, const void *data, size_t len,
                  char *err, size_t errlen)
{
    static _Atomic unsigned seq;
    char tmp[HA_SYMCACHE_NAME_MAX + 48];
    const char *p = data;
    size_t left = len;
    int fd;

    snprintf(tmp, sizeof(tmp), TMP_PREFIX "%ld.%u.%s", (long)getpid(),
             seq++, name);
    fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
                                O_CLOEXEC, 0600);
    if (fd < 0) {
        ha_err_set(err, errlen, "cannot create %s: %s", tmp,
                   strerror(errno));
        return -1;
    }
    while (left > 0) {
        ssize_t n = write(fd, p, left);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            ha_err_set(err, errlen, "cannot write %s: %s", tmp,
                       n < 0 ? strerror(errno) : "no progress");
            goto fail;
        }
        p += n;
        left -= (size_t)n;
    }
    /* Its bytes reach the disk before its name does: after a crash the
     * name holds the old index or the whole new one (a torn file would
     * still fail its CRC, but need not be rebuilt for nothing). */
    if (fdatasync(fd) != 0) {
        ha_err_set(err, errlen, "cannot sync %s: %s", tmp, strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        ha_err_set(err, errlen, "cannot close %s: %s", tmp, strerror(errno));
        goto fail;
    }
    fd = -1;
    if (renameat(dirfd, tmp, dirfd, name) != 0) {
        ha_err_set(err, errlen, "cannot rename %s to %s: %s", tmp, name,
                   strerror(errno));
        goto fail;
    }
    return 0;
fail:
    if (fd >= 0)
        close(fd);
    unlinkat(dirfd, tmp, 0);
    return -1;
}

/* ------------------------------------------------------------------ */
/* The bound                                                          */
/* ------------------------------------------------------------------ */

struct entry {
    char name[HA_SYMCACHE_NAME_MAX + 48];
    struct timespec mtime;
    uint64_t bytes;
};

static int
cmp_age(const void *x, const void *y)
{
    const struct entry *a = x, *b = y;

    if (a->mtime.tv_sec != b->mtime.tv_sec)
        return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
    if (a->mtime.tv_nsec != b->mtime.tv_nsec)
        return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
    return strcmp(a->name, b->name);
}

static bool
has_suffix(const char *name, const char *suffix)
{
    size_t n = strlen(name), k = strlen(suffix);

    return n > k && strcmp(name + n - k, suffix) == 0;
}

uint64_t
ha_symcache_trim(int dirfd, uint64_t max_bytes, const char *keep)
{
    struct entry *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    struct dirent *de;
    /* Not a dup: that would share (and move) dirfd's read position. */
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

    if (d == NULL) {
        if (fd >= 0)
            close(fd);
        return 0;
    }
    while ((de = readdir(d)) != NULL) {
        struct stat st;
        bool tmp = strncmp(de->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) == 0;

        if ((!tmp && !has_suffix(de->d_name, HA_SYMCACHE_SUFFIX)) ||
            strlen(de->d_name) >= sizeof(v->name) ||
            fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(st.st_mode) || st.st_uid != geteuid())
            continue;
        if (tmp) {
            if (now - st.st_mtim.tv_sec > STALE_TMP_S)
                unlinkat(dirfd, de->d_name, 0);
            continue;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            struct entry *nv = realloc(v, ncap * sizeof(*nv));

            if (nv == NULL)
                break;
            v = nv;
            cap = ncap;
        }
        memcpy(v[n].name, de->d_name, strlen(de->d_name) + 1);
        v[n].mtime = st.st_mtim;
        v[n].bytes = (uint64_t)st.st_size;
        total += v[n].bytes;
        n++;
    }
    closedir(d);
    if (total > max_bytes)
        qsort(v, n, sizeof(*v), cmp_age);
    for (size_t i = 0; i < n && total > max_bytes; i++) {
        if (keep != NULL && strcmp(v[i].name, keep) == 0)
            continue;
        if (unlinkat(dirfd, v[i].name, 0) == 0)
            total -= v[i].bytes;
    }
    free(v);
    return total;
}

void
ha_symcache_touch(int dirfd, const char *name, const struct stat *st)
{
    if (time(NULL) - st->st_mtim.tv_sec > TOUCH_EVERY_S)
        utimensat(dirfd, name, NULL, AT_SYMLINK_NOFOLLOW);
}

/* ------------------------------------------------------------------ */
/* Build-ids from ELF headers                                         */
/* ------------------------------------------------------------------ */

static bool
read_at(int fd, void *buf, size_t len, uint64_t off)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = pread(fd, p, len, (off_t)off);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return false;
        p += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return true;
}

/* The build-id note among the notes in buf, entries aligned to align. */
static int
notes_build_id(const unsigned char *buf, size_t size, size_t align,
               char *hex)
{
    size_t at = 0;

    while (size - at >= sizeof(ElfW(Nhdr))) {
        ElfW(Nhdr) h;
        size_t name, desc;

        memcpy(&h, buf + at, sizeof(h));
        at += sizeof(h);
        name = ((size_t)h.n_namesz + align - 1) & ~(align - 1);
        desc = ((size_t)h.n_descsz + align - 1) & ~(align - 1);
        if (name > size - at || desc > size - at - name)
            return -1;
        if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 &&
            memcmp(buf + at, "GNU", 4) == 0)
            return ha_buildid_to_hex(buf + at + name, h.n_descsz, hex);
        at += name + desc;
    }
    return -1;
}

int
ha_symcache_build_id(const char *path, char *hex, struct stat *st)
{
    static const unsigned char ident[] = {ELFMAG0, ELFMAG1, ELFMAG2,
                                          ELFMAG3};
    ElfW(Ehdr) eh;
    ElfW(Phdr) *ph = NULL;
    unsigned char *notes = NULL;
    int fd, ret = -1;

    hex[0] = '\0';
    /* A dump's maps may name anything: no device or FIFO is opened. */
    if (stat(path, st) != 0 || !S_ISREG(st->st_mode) ||
        (fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)) < 0)
        return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode) ||
        !read_at(fd, &eh, sizeof(eh), 0) ||
        memcmp(eh.e_ident, ident, sizeof(ident)) != 0 ||
        eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64
                                                     : ELFCLASS32) ||
        eh.e_ident[EI_DATA] != (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
                                    ? ELFDATA2LSB
                                    : ELFDATA2MSB) ||
        eh.e_phentsize != sizeof(ElfW(Phdr)) || eh.e_phnum == 0 ||
        eh.e_phnum > PHNUM_MAX)
        goto done;
    ph = malloc((size_t)eh.e_phnum * sizeof(*ph));
    if (ph == NULL ||
        !read_at(fd, ph, (size_t)eh.e_phnum * sizeof(*ph), eh.e_phoff))
        goto done;
    for (size_t i = 0; i < eh.e_phnum && ret != 0; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_filesz == 0 ||
            ph[i].p_filesz > NOTE_MAX)
            continue;
        free(notes);
        notes = malloc(ph[i].p_filesz);
        if (notes == NULL ||
            !read_at(fd, notes, ph[i].p_filesz, ph[i].p_offset))
            continue;
        ret = notes_build_id(notes, ph[i].p_filesz,
                             ph[i].p_align == 8 ? 8 : 4, hex);
    }
done:
    if (ret != 0)
        hex[0] = '\0';
    free(notes);
    free(ph);
    close(fd);
    return ret;
}
