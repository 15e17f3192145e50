/* SPDX-License-Identifier: MIT
 *
 * The datadir: created when missing and proven writable (see datadir.h).
 */
#include "core/datadir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/util.h"

static int
mkdir_p(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    struct stat st;

    if (ha_strlcpy(tmp, path, sizeof(tmp)) != 0) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p != '\0'; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, mode) != 0 && errno != EEXIST)
        return -1;
    if (stat(tmp, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int
ha_datadir_check_owner(const char *abs, char *err, size_t errlen)
{
    struct stat st;

    if (stat(abs, &st) != 0) {
        ha_err_set(err, errlen, "datadir %s: %s", abs, strerror(errno));
        return -1;
    }
    /* sshd's StrictModes, for the same reason: whoever else may create
     * or rename files here can plant a symlink at the next dump's name
     * (jemalloc creat()s it, following links) and make this process
     * overwrite a file of theirs choosing, or swap the TLS key. */
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        ha_err_set(err, errlen,
                   "datadir %s is writable by %s (mode %04o): refusing it, "
                   "as other users could plant files or symlinks at dump "
                   "names; run chmod go-w %s, or choose a private datadir",
                   abs, (st.st_mode & S_IWOTH) ? "others" : "its group",
                   (unsigned)(st.st_mode & 07777), abs);
        return -1;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        ha_err_set(err, errlen,
                   "datadir %s is owned by uid %u, not by this process's "
                   "user (uid %u) or root: refusing it, as its owner could "
                   "replace what is written there; chown it or choose "
                   "another datadir",
                   abs, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    return 0;
}

int
ha_datadir_prepare(const char *datadir, char *abs, size_t abslen,
                          char *err, size_t errlen)
{
    char probe[PATH_MAX];
    int fd;

    if (datadir == NULL || *datadir == '\0') {
        ha_err_set(err, errlen, "datadir is empty");
        return -1;
    }
    if (mkdir_p(datadir, 0750) != 0) {
        ha_err_set(err, errlen, "datadir %s cannot be created: %s", datadir,
                   strerror(errno));
        return -1;
    }
    if (realpath(datadir, probe) == NULL ||
        ha_strlcpy(abs, probe, abslen) != 0) {
        ha_err_set(err, errlen, "datadir %s: cannot resolve its path: %s",
                   datadir, strerror(errno));
        return -1;
    }
    if (ha_datadir_check_owner(abs, err, errlen) != 0)
        return -1;
    /* access(W_OK) says yes to root on a read-only mount; creating a file
     * is the test that matches what dumps and the pid file will do. */
    snprintf(probe, sizeof(probe), "%s/.heapadmin-probe.%ld", abs,
             (long)getpid());
    fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        ha_err_set(err, errlen, "datadir %s is not writable: %s", abs,
                   strerror(errno));
        return -1;
    }
    close(fd);
    unlink(probe);
    return 0;
}

bool
ha_datadir_plain_name(const char *name, char *why, size_t whylen)
{
    if (name == NULL || name[0] == '\0') {
        ha_err_set(why, whylen, "no file named");
        return false;
    }
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            ha_err_set(why, whylen, "a file name may not hold control "
                                    "characters");
            return false;
        }
    if (strchr(name, '/') != NULL || strcmp(name, "..") == 0 ||
        strcmp(name, ".") == 0) {
        ha_err_set(why, whylen,
                   "only the name of a file in the datadir is allowed (no "
                   "'/', no '..')");
        return false;
    }
    return true;
}
