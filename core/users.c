/* SPDX-License-Identifier: MIT
 *
 * User names from /etc/passwd, without NSS (see users.h).
 */
#include "core/users.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define PASSWD_FILE "/etc/passwd"

bool
ha_users_parse_line(const char *line, size_t n, uid_t uid, char *out,
                    size_t len)
{
    const char *c1 = memchr(line, ':', n), *c2, *p, *end = line + n;
    unsigned long v = 0;

    /* name:password:uid:gid:gecos:home:shell */
    if (c1 == NULL || c1 == line || (size_t)(c1 - line) >= len)
        return false;
    c2 = memchr(c1 + 1, ':', (size_t)(end - c1 - 1));
    if (c2 == NULL || c2 + 1 >= end)
        return false;
    for (p = c2 + 1; p < end && *p >= '0' && *p <= '9'; p++) {
        v = v * 10 + (unsigned long)(*p - '0');
        if (v > 0xffffffffUL)
            return false;
    }
    if (p == c2 + 1 || p >= end || *p != ':' || (uid_t)v != uid)
        return false;
    memcpy(out, line, (size_t)(c1 - line));
    out[c1 - line] = '\0';
    return true;
}

int
ha_users_name_in(const char *path, uid_t uid, char *out, size_t len)
{
    char buf[4096];
    size_t have = 0;
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd >= 0) {
        while ((n = read(fd, buf + have, sizeof(buf) - have)) > 0) {
            char *p = buf, *eol;

            have += (size_t)n;
            while ((eol = memchr(p, '\n', have - (size_t)(p - buf))) !=
                   NULL) {
                if (ha_users_parse_line(p, (size_t)(eol - p), uid, out,
                                        len)) {
                    close(fd);
                    return 0;
                }
                p = eol + 1;
            }
            have -= (size_t)(p - buf);
            memmove(buf, p, have);
            if (have == sizeof(buf))
                have = 0; /* a line longer than the buffer: skipped */
        }
        if (have > 0 && ha_users_parse_line(buf, have, uid, out, len)) {
            close(fd);
            return 0;
        }
        close(fd);
    }
    snprintf(out, len, "%u", (unsigned)uid);
    return -1;
}

int
ha_users_name(uid_t uid, char *out, size_t len)
{
    return ha_users_name_in(PASSWD_FILE, uid, out, len);
}
