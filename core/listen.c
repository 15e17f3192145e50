/* SPDX-License-Identifier: MIT
 *
 * Listening sockets for the front-ends (see listen.h).
 */
#include "core/forkguard.h"
#include "core/listen.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/util.h"

int
ha_listen_tcp(const char *host, int port, bool dual_stack, int backlog,
              int *bound_port, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    char portstr[16];
    const char *lb, *rb;
    int fd = -1, one = 1, gai;

    lb = strchr(host, ':') != NULL ? "[" : "";
    rb = *lb != '\0' ? "]" : "";
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    snprintf(portstr, sizeof(portstr), "%d", port);
    /* NSS and the resolver's locks (core/forkguard.h). */
    ha_forkguard_enter();
    gai = getaddrinfo(host, portstr, &hints, &res);
    ha_forkguard_leave();
    if (gai != 0) {
        ha_err_set(err, errlen, "%s%s%s:%d: cannot resolve: %s", lb, host,
                   rb, port, gai_strerror(gai));
        return -1;
    }
    fd = socket(res->ai_family,
                res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        goto fail;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0)
        goto fail;
    if (res->ai_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)
                                           res->ai_addr;
        int v6only = !(dual_stack && IN6_IS_ADDR_UNSPECIFIED(&a->sin6_addr));

        if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
                       sizeof(v6only)) != 0)
            goto fail;
    }
    if (bind(fd, res->ai_addr, res->ai_addrlen) != 0 ||
        listen(fd, backlog) != 0)
        goto fail;
    if (bound_port != NULL) {
        *bound_port = port;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            *bound_port = ntohs(ss.ss_family == AF_INET6
                                    ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                    : ((struct sockaddr_in *)&ss)->sin_port);
    }
    freeaddrinfo(res);
    return fd;

fail:
    ha_err_set(err, errlen, "cannot listen on %s%s%s:%d: %s", lb, host, rb,
               port, strerror(errno));
    if (fd >= 0)
        close(fd);
    freeaddrinfo(res);
    return -1;
}

int
ha_listen_unix(const char *path, mode_t mode, int backlog, char *err,
               size_t errlen)
{
    struct sockaddr_un sun;
    struct stat st;
    int fd;

    memset(&sun, 0, sizeof(sun));
    sun.sun_family = AF_UNIX;
    if (ha_strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) != 0) {
        ha_err_set(err, errlen, "%s: path longer than %zu bytes", path,
                   sizeof(sun.sun_path) - 1);
        return -1;
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            ha_err_set(err, errlen, "%s: exists and is not a socket", path);
            return -1;
        }
        /* Non-blocking: a live listener with a full backlog answers
         * EAGAIN instead of holding us. */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd >= 0 &&
            (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0 ||
             errno == EAGAIN || errno == EINPROGRESS)) {
            close(fd);
            ha_err_set(err, errlen,
                       "%s: another process is listening on it", path);
            return -1;
        }
        if (fd >= 0)
            close(fd);
        unlink(path);
    }
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        ha_err_set(err, errlen, "%s: socket: %s", path, strerror(errno));
        return -1;
    }
    if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0) {
        ha_err_set(err, errlen, "%s: bind: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    /* Who may connect is decided by write permission on the file. */
    if (chmod(path, mode) != 0) {
        ha_err_set(err, errlen, "%s: chmod %04o: %s", path, (unsigned)mode,
                   strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    if (listen(fd, backlog) != 0) {
        ha_err_set(err, errlen, "%s: listen: %s", path, strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

void
ha_listen_file_record(const char *path, struct ha_listen_file *f)
{
    struct stat st;

    f->set = lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
    f->dev = f->set ? st.st_dev : 0;
    f->ino = f->set ? st.st_ino : 0;
}

enum ha_listen_file_state
ha_listen_file_check(const char *path, const struct ha_listen_file *f,
                     uid_t *owner)
{
    struct stat st;

    if (!f->set)
        return HA_LISTEN_FILE_OURS;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? HA_LISTEN_FILE_GONE : HA_LISTEN_FILE_OURS;
    if (st.st_dev == f->dev && st.st_ino == f->ino)
        return HA_LISTEN_FILE_OURS;
    *owner = st.st_uid;
    return HA_LISTEN_FILE_REPLACED;
}

int
ha_listen_look_add(struct ha_listen_look *look, const char *path,
                   const struct ha_listen_file *f)
{
    struct ha_listen_look_entry *e;

    if (!f->set)
        return 0;
    if (look->n == look->cap) {
        size_t cap = look->cap ? look->cap * 2 : 4;

        if ((e = realloc(look->e, cap * sizeof(*e))) == NULL)
            return -1;
        look->e = e;
        look->cap = cap;
    }
    e = &look->e[look->n++];
    memset(e, 0, sizeof(*e));
    ha_strlcpy(e->path, path, sizeof(e->path));
    e->file = *f;
    e->fs = HA_LISTEN_FILE_OURS;
    return 0;
}

void
ha_listen_look_run(struct ha_listen_look *look)
{
    for (size_t i = 0; i < look->n; i++)
        look->e[i].fs = ha_listen_file_check(look->e[i].path,
                                             &look->e[i].file,
                                             &look->e[i].owner);
}

enum ha_listen_file_state
ha_listen_look_find(const struct ha_listen_look *look, const char *path,
                    const struct ha_listen_file *f, uid_t *owner)
{
    for (size_t i = 0; look != NULL && f->set && i < look->n; i++) {
        const struct ha_listen_look_entry *e = &look->e[i];

        if (strcmp(e->path, path) == 0 && e->file.dev == f->dev &&
            e->file.ino == f->ino) {
            *owner = e->owner;
            return e->fs;
        }
    }
    return HA_LISTEN_FILE_OURS;
}

void
ha_listen_look_free(struct ha_listen_look *look)
{
    free(look->e);
    look->e = NULL;
    look->n = look->cap = 0;
}
