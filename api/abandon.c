/* SPDX-License-Identifier: MIT
 *
 * heapadmin_abandon(): a fork child lets go of the instance it inherited.
 * Its loop's thread does not exist in the child and the locks it held
 * may stay held for ever, so nothing of libevent's, no join and no free:
 * only the descriptors proven to be ours are closed, each by its
 * identity (a host that closed its descriptors may hold the same number
 * for a file of its own), and the loop's epoll by what it watches. No
 * memory is allocated: it runs in an atfork handler.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/server.h"
#include "api/instance.h"
#include "core/dirwalk.h"
#include "engine/engine.h"
#include "http/http.h"
#include "include/heapadmin.h"

/* True when fd is still the file (dev, ino) we opened. */
static bool
fd_is(int fd, dev_t dev, ino_t ino)
{
    struct stat st;

    return fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == dev &&
           st.st_ino == ino;
}

/* Closes the epoll descriptor of our loop, found by proof, not by
 * number: an epoll instance whose watch list holds descriptor fd with
 * inode ino (our stop pipe; /proc/self/fdinfo lists each watched
 * descriptor with its inode). Any other epoll is the host's. No memory
 * is allocated (it runs in a fork child's atfork handler). */
struct epoll_search {
    int fd;                 /* the watched descriptor ... */
    ino_t ino;              /* ... and its inode */
};

static bool
close_if_our_epoll(long e, void *arg)
{
    const struct epoll_search *s = arg;
    char path[64], link[64], info[4096], *p;
    ssize_t k;
    int ifd;

    snprintf(path, sizeof(path), "/proc/self/fd/%ld", e);
    k = readlink(path, link, sizeof(link) - 1);
    if (k <= 0)
        return true;
    link[k] = '\0';
    if (strcmp(link, "anon_inode:[eventpoll]") != 0)
        return true;
    snprintf(path, sizeof(path), "/proc/self/fdinfo/%ld", e);
    ifd = open(path, O_RDONLY | O_CLOEXEC);
    if (ifd < 0)
        return true;
    k = read(ifd, info, sizeof(info) - 1);
    close(ifd);
    if (k <= 0)
        return true;
    info[k] = '\0';
    for (p = strstr(info, "tfd:"); p != NULL; p = strstr(p + 4, "tfd:")) {
        int tfd;
        unsigned long tino;
        const char *q = strstr(p, " ino:");

        if (sscanf(p, "tfd: %d", &tfd) == 1 && tfd == s->fd && q != NULL &&
            sscanf(q, " ino:%lx", &tino) == 1 && (ino_t)tino == s->ino) {
            close((int)e);
            return false;
        }
    }
    return true;
}

static void
close_our_epoll(int fd, ino_t ino)
{
    struct epoll_search s = {.fd = fd, .ino = ino};

    (void)ha_dirwalk_fds(close_if_our_epoll, &s);
}

void
heapadmin_abandon(struct heapadmin *h)
{
    if (h == NULL)
        return;
    /* No libevent call, no join, no free: the loop's thread does not
     * exist in this process and its locks may be held forever. */
    ha_http_abandon(h->http);
    ha_server_abandon(h->server);
    ha_engine_abandon(h->engine);
    /* The descriptors that are provably ours go too (a child need not
     * carry its parent's loop): the loop's epoll first, then the stop
     * pipe and the log file. */
    if (h->own_thread && h->stop_fds[0] >= 0)
        close_our_epoll(h->stop_fds[0], h->stop_ino[0]);
    for (int i = 0; i < 2; i++)
        if (fd_is(h->stop_fds[i], h->stop_dev[i], h->stop_ino[i]))
            close(h->stop_fds[i]);
    for (size_t i = 0; h->own_thread && i < h->n_base_fds; i++)
        if (fd_is(h->base_fds[i].fd, h->base_fds[i].dev, h->base_fds[i].ino))
            close(h->base_fds[i].fd);
    if (fd_is(h->log_fd, h->log_dev, h->log_ino))
        close(h->log_fd);
    h->stop_fds[0] = h->stop_fds[1] = h->log_fd = -1;
}
