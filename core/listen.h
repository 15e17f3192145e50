/* SPDX-License-Identifier: MIT
 *
 * Listening sockets, made the same way for every front-end (the MySQL
 * port, HTTP, the agent socket): non-blocking, close-on-exec, with
 * SO_REUSEADDR on TCP. The caller hands them to libevent.
 *
 * IPv6: a listener on the unspecified address "::" takes IPv4 clients
 * too (dual_stack, as MySQL's bind_address='::' does), seen as
 * ::ffff:a.b.c.d; any other IPv6 address listens on IPv6 only.
 */
#ifndef HA_LISTEN_H
#define HA_LISTEN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Listens on host:port (an address or a name; port 0: any free port).
 * dual_stack matters for "::" only (see above). Returns the socket, or
 * -1 with err naming the address and the reason; *bound_port is the port
 * bound (when not NULL). */
int ha_listen_tcp(const char *host, int port, bool dual_stack, int backlog,
                  int *bound_port, char *err, size_t errlen);

/* Listens on the unix socket path with permissions mode (set before
 * listen(), so nobody connects under the umask's). A socket file left by
 * a dead process is replaced; one that a live process answers on, or a
 * file that is not a socket, is an error. Returns the socket, or -1 with
 * err naming the path and the reason. */
int ha_listen_unix(const char *path, mode_t mode, int backlog, char *err,
                   size_t errlen);

/* The file a unix listener was bound at, as lstat() saw it right after
 * listen(): what tells later that the name still leads to it. */
struct ha_listen_file {
    dev_t dev;
    ino_t ino;
    bool set;           /* recorded */
};

/* Records path's file into f (f->set false when it cannot be read). */
void ha_listen_file_record(const char *path, struct ha_listen_file *f);

/* What became of the name of a unix listener recorded in f. */
enum ha_listen_file_state {
    HA_LISTEN_FILE_OURS,     /* still our socket's file (or unknown) */
    HA_LISTEN_FILE_GONE,     /* nothing at the name (deleted: a tmp
                                cleaner, an operator) */
    HA_LISTEN_FILE_REPLACED  /* another file at the name: another
                                process bound its own socket there */
};

/* Looks at path now. *owner gets the replacing file's owner. */
enum ha_listen_file_state ha_listen_file_check(const char *path,
                                               const struct ha_listen_file *f,
                                               uid_t *owner);

#endif /* HA_LISTEN_H */
