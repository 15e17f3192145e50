/* SPDX-License-Identifier: MIT
 *
 * The label contract: what every series and profile of a served process
 * is known by, the same whether Prometheus scrapes it through a host
 * gateway (http/sd.h gives the targets), Pyroscope or Parca scrapes its
 * profiles, or it pushes them (engine/push.h):
 *
 *   service_name   admin_variables.service_names' entry for the program,
 *                  else the program's name: Pyroscope keys on it, and it
 *                  is OpenTelemetry's service.name
 *   program        the served program, as the agents' registry names it
 *                  (core/agentreg.h)
 *   host           this machine's node name (uname), where a push has no
 *                  scraper to say instance
 *
 *   heapadmin_build_info{program,service_name,build_id,version} 1
 *                  build_id: the GNU build-id of the program's
 *                  executable as mapped (the build that is running);
 *                  version: heapadmin's
 *
 * What keys on the pid, and what does not: the pid changes at every
 * restart, so nothing meant to span restarts keys on it where one
 * process per program is the rule (a gateway's targets carry it only
 * for a program that runs several processes of one user: nginx's
 * workers); pushed profiles never carry it, so that a service's
 * profiles from several processes add up as one service's.
 */
#ifndef HA_LABELS_H
#define HA_LABELS_H

#include <stddef.h>

#include "core/expo.h"
#include "engine/pushcfg.h"

struct ha_labels {
    char program[64];
    char service_name[64];
    char build_id[48];    /* lower-case hex; "" unknown */
    char host[65];        /* uname's nodename */
    char version[32];     /* heapadmin's */
};

/* This process's labels: program as given, its service under map (n
 * entries), the build-id of the executable mapped in memory (the
 * auxiliary vector's program headers: no file read, no lock taken),
 * the node name. */
void ha_labels_init(struct ha_labels *l, const char *program,
                    const struct ha_service_name *map, size_t n);

/* Writes heapadmin_build_info into e. */
void ha_labels_expo(const struct ha_labels *l, struct ha_expo *e);

/* The GNU build-id note of ELF notes (len bytes, as a PT_NOTE segment
 * holds them) as hex into out (outlen bytes). Returns 0, or -1 when
 * there is none. Pure. */
int ha_labels_note_build_id(const void *notes, size_t len, char *out,
                            size_t outlen);

#endif /* HA_LABELS_H */
