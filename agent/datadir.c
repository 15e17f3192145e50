/* SPDX-License-Identifier: MIT
 *
 * The datadir, and the directories in it of the users the host drops
 * privileges to. They are decided in the first process, as root, before
 * the host changes user or directory; a process served later (a worker
 * running as www-data) finds its own directory there, and is refused
 * with the reason when it is not its user's alone.
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/log.h"
#include "agent/users.h"

/* The datadir, made absolute now: the host may chdir later (redis does,
 * to its --dir). */
void
ha_agent_choose_datadir(void)
{
    char d[PATH_MAX], cwd[PATH_MAX];

    ha_agent_copy_env(d, sizeof(d), "HEAPADMIN_DATADIR");
    if (d[0] == '\0')
        ha_agent_config_keys(d, sizeof(d));
    else
        ha_agent_config_keys(cwd, sizeof(cwd)); /* for mysql_ifaces */
    if (d[0] == '\0') {
        if (geteuid() == 0 || access("/var/lib/heapadmin", W_OK | X_OK) == 0)
            snprintf(d, sizeof(d), "/var/lib/heapadmin");
        else
            snprintf(d, sizeof(d), "/tmp/heapadmin-%ld", (long)getuid());
    }
    if (d[0] != '/' && getcwd(cwd, sizeof(cwd)) != NULL &&
        strlen(cwd) + strlen(d) + 2 < sizeof(ha_agent_settings.datadir))
        ha_agent_fmt(ha_agent_settings.datadir,
                     sizeof(ha_agent_settings.datadir), "%s/%s", cwd, d);
    else
        snprintf(ha_agent_settings.datadir, sizeof(ha_agent_settings.datadir),
                 "%s", d);
}

/* As root, before the host drops privileges: <datadir>/<user>/ (0700,
 * the user's) for each of HEAPADMIN_USERS, where that user's processes
 * are served. The datadir stays root's and writable by root alone;
 * nothing in a user's directory is ever followed by root. */
void
ha_agent_prepare_users(void)
{
    char list[sizeof(ha_agent_settings.users)], *save = NULL, *u;
    int top;
    struct stat st;

    if (ha_agent_settings.users[0] == '\0' || geteuid() != 0)
        return;
    /* The datadir itself: made traversable (not listable, not writable)
     * for the users when it is new. */
    if (mkdir(ha_agent_settings.datadir, 0711) != 0 && errno != EEXIST) {
        ha_agent_log_later(1, "HEAPADMIN_USERS: cannot make the datadir %s: %s",
                           ha_agent_settings.datadir, strerror(errno));
        return;
    }
    top = open(ha_agent_settings.datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (top < 0 || fstat(top, &st) != 0) {
        if (top >= 0)
            close(top);
        return;
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 || st.st_uid != 0) {
        ha_agent_log_later(
            1,
            "HEAPADMIN_USERS: the datadir %s must be root's and "
            "writable by root alone (mode %04o, uid %u): no user "
            "directories made",
            ha_agent_settings.datadir, (unsigned)(st.st_mode & 07777),
            (unsigned)st.st_uid);
        close(top);
        return;
    }
    snprintf(list, sizeof(list), "%s", ha_agent_settings.users);
    for (u = strtok_r(list, ", ", &save); u != NULL;
         u = strtok_r(NULL, ", ", &save)) {
        struct passwd pw, *found = NULL;
        char buf[1024];
        int fd;

        if (getpwnam_r(u, &pw, buf, sizeof(buf), &found) != 0 ||
            found == NULL) {
            ha_agent_log_later(1, "HEAPADMIN_USERS: no user named '%s'", u);
            continue;
        }
        if (pw.pw_uid == 0 || strchr(u, '/') != NULL || u[0] == '.')
            continue;
        if ((st.st_mode & S_IXOTH) == 0)
            ha_agent_log_later(
                1,
                "HEAPADMIN_USERS: %s (mode %04o) cannot be "
                "traversed by %s: chmod o+x %s (it stays unlistable "
                "and unwritable)",
                ha_agent_settings.datadir, (unsigned)(st.st_mode & 07777), u,
                ha_agent_settings.datadir);
        (void)mkdirat(top, u, 0700);
        /* O_NOFOLLOW: a link at the name is never made anyone's. */
        fd = openat(top, u, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            ha_agent_log_later(1, "HEAPADMIN_USERS: %s/%s: %s",
                               ha_agent_settings.datadir, u, strerror(errno));
            continue;
        }
        {
            struct stat ds;

            if (fstat(fd, &ds) == 0 && ds.st_uid == 0 &&
                (fchown(fd, pw.pw_uid, pw.pw_gid) != 0 ||
                 fchmod(fd, 0700) != 0))
                ha_agent_log_later(1, "HEAPADMIN_USERS: %s/%s: %s",
                                   ha_agent_settings.datadir, u,
                                   strerror(errno));
            else if (ds.st_uid != 0 && ds.st_uid != pw.pw_uid)
                ha_agent_log_later(1,
                                   "HEAPADMIN_USERS: %s/%s belongs to uid %u, "
                                   "not %s: left alone",
                                   ha_agent_settings.datadir, u,
                                   (unsigned)ds.st_uid, u);
        }
        close(fd);
    }
    close(top);
}

/* This process's own directory: the datadir for its owner (or root),
 * <datadir>/<user>/ for another user, which must be that user's alone.
 * Returns 0, or -1 with why. */
int
ha_agent_own_dir(char *out, size_t len, char *why, size_t whylen)
{
    char name[64];
    struct stat st;

    if (stat(ha_agent_settings.datadir, &st) != 0 && errno == ENOENT) {
        /* heapadmin_new makes it. */
        snprintf(out, len, "%s", ha_agent_settings.datadir);
        return 0;
    }
    if (geteuid() == 0 ||
        (stat(ha_agent_settings.datadir, &st) == 0 && st.st_uid == geteuid())) {
        snprintf(out, len, "%s", ha_agent_settings.datadir);
        return 0;
    }
    if (!ha_agent_user_name((long)geteuid(), name, sizeof(name))) {
        snprintf(why, whylen,
                 "uid %u is not one of HEAPADMIN_USERS (set "
                 "HEAPADMIN_USERS to the user it runs as: the first "
                 "process, as root, makes its directory)",
                 (unsigned)geteuid());
        return -1;
    }
    if ((size_t)snprintf(out, len, "%s/%s", ha_agent_settings.datadir, name) >=
        len) {
        snprintf(why, whylen, "path too long");
        return -1;
    }
    if (lstat(out, &st) != 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        ha_agent_fmt(why, whylen,
                     "the datadir %s is not %s's, and %s is not a directory "
                     "of %s's alone (HEAPADMIN_USERS=%s makes it, as root, "
                     "before the privilege drop)",
                     ha_agent_settings.datadir, name, out, name, name);
        return -1;
    }
    return 0;
}
