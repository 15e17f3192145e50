/* SPDX-License-Identifier: MIT
 *
 * Everyone the engine serves now, whichever front-end they came through:
 * a MySQL session from its login to its close, an HTTP request from its
 * authentication to its reply. One id space (CONNECTION_ID(), KILL <id>),
 * one list (SHOW PROCESSLIST, stats_admin_sessions), one set of counters
 * (SHOW STATUS, COM_STATISTICS, /metrics), one output budget for
 * both front-ends:
 *   - per client, a reply streams: its producer (a result set's rows,
 *     an HTTP reply read from a file or sent from memory) hands on at
 *     most HA_CLIENTS_STREAM_BYTES beyond what the client has taken,
 *     and waits for it; a client that takes nothing for
 *     net_write_timeout is cut off;
 *   - in total, max_output_total bounds the unsent bytes of every
 *     client, counted through each client's held(): what is built whole
 *     gets only what is left (ha_clients_output_left), or is refused
 *     (MySQL ERR 1041, HTTP 503), never queued past it.
 * A client stays listed until its last reply byte is written, so what
 * it holds is counted as long as it holds it.
 *
 * A front-end embeds a struct ha_client in what it keeps per client and
 * fills in the callbacks: the registry never looks inside the owner.
 * Loop thread only.
 */
#ifndef HA_CLIENTS_H
#define HA_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "engine/credentials.h"
#include "vtab/sessions.h"

/* Reply bytes a client may hold unsent before the producer of a streamed
 * reply waits for it (the per-client budget of a streamed reply). */
#define HA_CLIENTS_STREAM_BYTES (256u << 10)

struct ha_client;

struct ha_client_ops {
    /* Its PROCESSLIST row, strings borrowed for the call. now: time(). */
    void (*row)(const struct ha_client *c, time_t now,
                struct ha_sessions_row *out);
    /* KILL QUERY (query_only) stops what it runs now, KILL also closes
     * it; called on the loop, never from within the client's own
     * callbacks when it closes it (the front-end defers that). */
    void (*kill)(struct ha_client *c, bool query_only);
    /* Reply bytes it holds unsent (built, queued, or in the socket's
     * buffer above the kernel's). NULL: none. */
    size_t (*held)(const struct ha_client *c);
};

struct ha_client {
    uint32_t id;                     /* from ha_clients_next_id */
    enum ha_role role;
    const char *user;                /* the owner's storage */
    const struct ha_client_ops *ops;
    void *owner;                     /* the front-end's object */
    bool listed;                     /* in a registry now */
    struct ha_client *prev, *next;   /* newest first */
};

/* Counters for SHOW STATUS, COM_STATISTICS and /metrics. */
struct ha_clients_stats {
    uint64_t uptime;                 /* seconds since the registry began */
    size_t threads;                  /* clients now */
    uint64_t questions;              /* statements and requests served */
    uint64_t connections;            /* clients admitted since start */
    size_t max_used;                 /* most clients at once */
    uint64_t http_requests;          /* HTTP requests answered */
};

struct ha_clients {
    struct ha_client *head;
    size_t n;
    size_t max_used;
    uint64_t connections;
    uint64_t questions;              /* ha_clients_count_question */
    uint64_t http_requests;
    uint32_t last_id;
    time_t started;
    /* Told how many clients there are after each add and remove (the
     * owner's idle timer); NULL: nobody. */
    void (*on_change)(void *arg, size_t n);
    void *on_change_arg;
};

void ha_clients_init(struct ha_clients *reg);

/* The next id: never 0, and not one a listed client holds. */
uint32_t ha_clients_next_id(struct ha_clients *reg);

/* Lists c (id, ops, owner set) and counts a connection. */
void ha_clients_add(struct ha_clients *reg, struct ha_client *c);
void ha_clients_remove(struct ha_clients *reg, struct ha_client *c);

struct ha_client *ha_clients_find(const struct ha_clients *reg, uint32_t id);

/* KILL [QUERY] id on behalf of a user of role killer_role named killer:
 * a stats user may kill only its own user's clients. Returns 0, or -1
 * with err set and *code MySQL's: 1094 (unknown id) or 1095 (not yours). */
int ha_clients_kill(struct ha_clients *reg, uint32_t id, bool query_only,
                    enum ha_role killer_role, const char *killer,
                    int *code, char *err, size_t errlen);

/* Unsent reply bytes of every client. */
size_t ha_clients_held(const struct ha_clients *reg);

/* Bytes a reply built whole may still add under max_total (the config's
 * max_output_total; 0: no budget, LLONG_MAX returned): max_total less
 * what every listed client holds unsent (the asking one's included);
 * negative when they hold more already. */
long long ha_clients_output_left(const struct ha_clients *reg,
                                 long long max_total);

void ha_clients_stats(const struct ha_clients *reg,
                      struct ha_clients_stats *out);

/* Calls fn for every listed client, oldest first; stops at the first
 * nonzero return, which it returns. */
int ha_clients_each(const struct ha_clients *reg,
                    int (*fn)(const struct ha_client *c, void *arg),
                    void *arg);

#endif /* HA_CLIENTS_H */
