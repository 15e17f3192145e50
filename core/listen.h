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

/* Looks at path now. *owner gets the replacing file's owner. An lstat()
 * of a name that may be in the datadir: never on the loop's thread once
 * it serves (it waits for the disk, core/blockio.h): see
 * ha_listen_look. */
enum ha_listen_file_state ha_listen_file_check(const char *path,
                                               const struct ha_listen_file *f,
                                               uid_t *owner);

/* A look at several listeners' files, taken off the loop: the loop adds
 * each name with its record (ha_listen_look_add), the I/O thread looks
 * (ha_listen_look_run), and the loop then acts on what was seen
 * (ha_listen_look_find). The entries are copies: the listeners may be
 * bound again, or freed, meanwhile. */
struct ha_listen_look_entry {
    char path[108];                 /* sun_path's size */
    struct ha_listen_file file;     /* the record looked for */
    enum ha_listen_file_state fs;   /* what the look saw */
    uid_t owner;                    /* REPLACED: the file's owner */
};

struct ha_listen_look {
    struct ha_listen_look_entry *e;
    size_t n, cap;
};

/* Adds path, bound at f, to look: nothing when f is not recorded. Returns
 * 0, or -1 when out of memory (that file is not looked at this time). */
int ha_listen_look_add(struct ha_listen_look *look, const char *path,
                       const struct ha_listen_file *f);

/* Looks at every entry (ha_listen_file_check). Any thread. */
void ha_listen_look_run(struct ha_listen_look *look);

/* What look saw of path recorded as f (*owner set for REPLACED); OURS
 * when look is NULL or has no such entry (f recorded anew since). */
enum ha_listen_file_state ha_listen_look_find(const struct ha_listen_look *look,
                                              const char *path,
                                              const struct ha_listen_file *f,
                                              uid_t *owner);

/* Frees look's entries (look itself is the caller's). */
void ha_listen_look_free(struct ha_listen_look *look);

#endif /* HA_LISTEN_H */
