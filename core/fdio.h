/* SPDX-License-Identifier: MIT
 *
 * A buffer written whole to a descriptor: write(2) may write less than
 * asked (a signal, a pipe, a nearly full disk) and be interrupted
 * (EINTR); every file heapadmin writes (a dump's side files, a run's
 * record, a symbolized copy, a copied dump) wants all of it or an error
 * it can report.
 */
#ifndef HA_FDIO_H
#define HA_FDIO_H

#include <stddef.h>

/* Writes the len bytes at buf to fd, retrying short and interrupted
 * writes. Returns 0, or the errno of the write that failed (EIO when
 * write returned 0: nothing more would be written). */
int ha_fdio_write_all(int fd, const void *buf, size_t len);

#endif /* HA_FDIO_H */
