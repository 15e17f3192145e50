/* SPDX-License-Identifier: MIT
 *
 * The lifetime window's timer (heap/logwin.h): armed only while a window
 * of this engine's heap is open (the heap calls ha_logtimer_kick when
 * one opens), it ticks the window, which closes it when its time is up
 * or its memory passed jemalloc-log_max_bytes. An idle engine has no
 * timer pending.
 */
#ifndef HA_LOGTIMER_H
#define HA_LOGTIMER_H

#include <event2/event.h>

#include "heap/heap.h"

struct ha_logtimer;

/* A timer on base for heap's windows. Returns NULL when out of memory
 * (logged: windows then close at stop or exit only). */
struct ha_logtimer *ha_logtimer_new(struct event_base *base,
                                    struct ha_heap *heap);

/* heap->window_opened: arms the timer now. arg is the ha_logtimer. */
void ha_logtimer_kick(void *arg);

void ha_logtimer_free(struct ha_logtimer *t);

#endif /* HA_LOGTIMER_H */
