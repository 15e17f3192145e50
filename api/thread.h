/* SPDX-License-Identifier: MIT
 *
 * Thread mode (thread.c); heapadmin_start() is its public half.
 */
#ifndef HA_API_THREAD_H
#define HA_API_THREAD_H

struct heapadmin;

/* heapadmin_stop() of a started thread: tells it through the stop pipe,
 * joins it (it tears its loop down) and closes the pipe. */
void ha_api_thread_stop(struct heapadmin *h);

#endif /* HA_API_THREAD_H */
