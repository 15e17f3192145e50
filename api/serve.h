/* SPDX-License-Identifier: MIT
 *
 * Serving on an event loop (serve.c): what heapadmin_start()'s thread
 * and heapadmin_start_on_base() both run on their loop's thread.
 */
#ifndef HA_API_SERVE_H
#define HA_API_SERVE_H

#include <stddef.h>

struct heapadmin;

/* On h->base's thread: applies the profiling configuration, makes the
 * engine, the MySQL front-end and, when asked for, the HTTP one, binds
 * their listeners and arms the timers. Returns 0, or -1 with why in err
 * (the caller then calls ha_api_serve_teardown). */
int ha_api_serve_setup(struct heapadmin *h, char *err, size_t errlen);

/* Frees what set-up made (each part may be missing); the loop is freed
 * too when it is the instance's own. */
void ha_api_serve_teardown(struct heapadmin *h);

/* Stops taking clients: the MySQL listeners and connections closed, the
 * HTTP front-end freed. The engine stays until teardown. */
void ha_api_serve_quiesce(struct heapadmin *h);

/* heapadmin_stop() on the host's loop: quiesce, teardown, and the
 * thread's log sink given back as it was before the start. */
void ha_api_serve_stop_on_base(struct heapadmin *h);

#endif /* HA_API_SERVE_H */
