/* SPDX-License-Identifier: MIT
 *
 * The failed-login throttle (see throttle.h): per address, per prefix
 * and in total, in a keyed hash table of 8-way buckets that grows up to
 * a memory bound and never drops an entry that still holds something.
 */
#include "engine/throttle.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/util.h"

#define WAYS 8               /* entries per bucket */
#define FIRST_BUCKETS 16     /* the table's first size: 128 entries */

enum key_kind {
    K_FREE,                  /* an empty slot */
    K_ADDR4,                 /* an IPv4 address (4 bytes) */
    K_ADDR6,                 /* an IPv6 address (16 bytes) */
    K_PFX4,                  /* an IPv4 /24 (3 bytes) */
    K_PFX6,                  /* an IPv6 /64 (8 bytes) */
    K_UID,                   /* a unix-socket peer's uid */
    K_UNKNOWN                /* a peer getpeername could not name */
};

struct key {
    uint8_t kind;
    uint8_t b[16];           /* zero past the kind's length */
};

struct ha_throttle_entry {
    struct key k;            /* k.kind K_FREE: unused */
    uint32_t fails;          /* failures not yet forgotten */
    uint32_t user;           /* the account they were for (a hash) */
    bool mixed;              /* ... they were for more than one */
    uint32_t refused;        /* attempts refused this interval */
    int64_t last_fail_ms;
    int64_t next_ms;         /* earliest next check */
    int64_t good_until_ms;   /* known-good address until then */
};

struct rule {
    unsigned free;
    int64_t step_ms, spacing_ms;
};

static const struct rule address_rule = {
    HA_THROTTLE_FREE, HA_THROTTLE_STEP_MS, HA_THROTTLE_SPACING_MS};
static const struct rule prefix_rule = {HA_THROTTLE_PREFIX_FREE,
                                        HA_THROTTLE_PREFIX_STEP_MS,
                                        HA_THROTTLE_PREFIX_SPACING_MS};

/* ------------------------------------------------------------------ */
/* Keys and the table                                                   */
/* ------------------------------------------------------------------ */

/* p's address key, and its prefix key (false when it has none: unix and
 * unknown peers). */
static bool
keys_of(const struct ha_peer *p, struct key *addr, struct key *pfx)
{
    memset(addr, 0, sizeof(*addr));
    memset(pfx, 0, sizeof(*pfx));
    switch (p->family) {
    case HA_PEER_IPV4:
        addr->kind = K_ADDR4;
        memcpy(addr->b, p->addr, 4);
        pfx->kind = K_PFX4;
        memcpy(pfx->b, p->addr, 3);
        return true;
    case HA_PEER_IPV6:
        addr->kind = K_ADDR6;
        memcpy(addr->b, p->addr, 16);
        pfx->kind = K_PFX6;
        memcpy(pfx->b, p->addr, 8);
        return true;
    case HA_PEER_UNIX:
        addr->kind = K_UID;
        memcpy(addr->b, &p->uid, sizeof(p->uid));
        return false;
    default:
        addr->kind = K_UNKNOWN;
        return false;
    }
}

static void
key_text(const struct key *k, char *out, size_t len)
{
    char a[INET6_ADDRSTRLEN];
    uint8_t b[16];
    uid_t uid;

    memset(b, 0, sizeof(b));
    switch (k->kind) {
    case K_ADDR4:
        inet_ntop(AF_INET, k->b, out, (socklen_t)len);
        break;
    case K_ADDR6:
        inet_ntop(AF_INET6, k->b, out, (socklen_t)len);
        break;
    case K_PFX4:
        memcpy(b, k->b, 3);
        inet_ntop(AF_INET, b, a, sizeof(a));
        snprintf(out, len, "%s/24", a);
        break;
    case K_PFX6:
        memcpy(b, k->b, 8);
        inet_ntop(AF_INET6, b, a, sizeof(a));
        snprintf(out, len, "%s/64", a);
        break;
    case K_UID:
        memcpy(&uid, k->b, sizeof(uid));
        snprintf(out, len, "unix socket, uid %lu", (unsigned long)uid);
        break;
    default:
        ha_strlcpy(out, "?", len);
        break;
    }
}

static uint64_t
mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static size_t
bucket_of(const struct ha_throttle *t, const struct key *k, size_t n_buckets)
{
    uint64_t w[2], h = mix(t->seed ^ k->kind);

    memcpy(w, k->b, sizeof(w));
    h = mix(h ^ w[0]);
    h = mix(h ^ w[1]);
    return (size_t)(h & (n_buckets - 1));
}

/* Forgets e's failures once it has been quiet long enough. */
static void
refresh(struct ha_throttle_entry *e, int64_t now)
{
    if (e->fails > 0 && now - e->last_fail_ms >= HA_THROTTLE_FORGET_MS) {
        e->fails = 0;
        if (e->next_ms < now)
            e->next_ms = 0;
    }
}

/* Whether e holds anything that must not be dropped. */
static bool
live(struct ha_throttle_entry *e, int64_t now)
{
    if (e->k.kind == K_FREE)
        return false;
    refresh(e, now);
    return e->fails > 0 || e->next_ms > now || e->good_until_ms > now ||
           e->refused > 0;
}

static int
grow(struct ha_throttle *t, int64_t now)
{
    size_t n = t->n_buckets == 0 ? FIRST_BUCKETS : t->n_buckets * 2;
    struct ha_throttle_entry *e;

    if (n > t->max_buckets)
        return -1;
    e = calloc(n * WAYS, sizeof(*e));
    if (e == NULL)
        return -1;
    t->used = 0;
    for (size_t i = 0; i < t->n_buckets * WAYS; i++) {
        struct ha_throttle_entry *o = &t->e[i];
        struct ha_throttle_entry *b;

        if (!live(o, now))
            continue;
        /* Splitting a bucket in two never overflows either half. */
        b = &e[bucket_of(t, &o->k, n) * WAYS];
        for (size_t w = 0; w < WAYS; w++)
            if (b[w].k.kind == K_FREE) {
                b[w] = *o;
                t->used++;
                break;
            }
    }
    free(t->e);
    t->e = e;
    t->n_buckets = n;
    return 0;
}

/* The entry for k, or NULL; with create, a new one in a free or
 * forgotten slot (growing the table when its bucket is full), NULL when
 * there is no room without dropping a live entry. */
static struct ha_throttle_entry *
find(struct ha_throttle *t, const struct key *k, int64_t now, bool create)
{
    for (;;) {
        struct ha_throttle_entry *b, *spare = NULL;

        if (t->e == NULL) {
            if (!create || grow(t, now) != 0)
                return NULL;
        }
        b = &t->e[bucket_of(t, k, t->n_buckets) * WAYS];
        for (size_t w = 0; w < WAYS; w++) {
            if (b[w].k.kind == k->kind &&
                memcmp(b[w].k.b, k->b, sizeof(k->b)) == 0) {
                refresh(&b[w], now);
                return &b[w];
            }
            if (spare == NULL && !live(&b[w], now))
                spare = &b[w];
        }
        if (!create)
            return NULL;
        if (spare != NULL) {
            if (spare->k.kind == K_FREE)
                t->used++;
            memset(spare, 0, sizeof(*spare));
            spare->k = *k;
            return spare;
        }
        if (grow(t, now) != 0)
            return NULL;
    }
}

/* ------------------------------------------------------------------ */
/* The rules                                                            */
/* ------------------------------------------------------------------ */

static int64_t
wait_for(unsigned fails, const struct rule *r)
{
    int64_t w;

    if (fails < r->free)
        return 0;
    w = (int64_t)(fails - r->free + 1) * r->step_ms;
    return w > HA_THROTTLE_MAX_MS ? HA_THROTTLE_MAX_MS : w;
}

static void
start(struct ha_throttle *t, int64_t now)
{
    if (t->started)
        return;
    t->started = true;
    t->tokens = HA_THROTTLE_GLOBAL_BURST;
    t->tokens_at = now;
    t->report_from = now;
}

static void
fill(struct ha_throttle *t, int64_t now)
{
    if (now > t->tokens_at) {
        t->tokens += (double)(now - t->tokens_at) * HA_THROTTLE_GLOBAL_PER_S /
                     1000.0;
        if (t->tokens > HA_THROTTLE_GLOBAL_BURST)
            t->tokens = HA_THROTTLE_GLOBAL_BURST;
        t->tokens_at = now;
    }
}

static int64_t
refuse(struct ha_throttle *t, struct ha_throttle_entry *e,
       enum ha_throttle_why why, enum ha_throttle_why *out, int64_t ms)
{
    t->cur.refused[why]++;
    if (e != NULL)
        e->refused++;
    if (out != NULL)
        *out = why;
    return ms > 0 ? ms : 1;
}

static int64_t
gate(struct ha_throttle *t, const struct ha_peer *p, int64_t now,
     enum ha_throttle_why *why, bool reserve)
{
    struct key ak, pk;
    bool has_pfx = keys_of(p, &ak, &pk);
    struct ha_throttle_entry *a, *x = NULL;
    bool exempt;

    start(t, now);
    if (why != NULL)
        *why = HA_THROTTLE_NONE;
    a = find(t, &ak, now, false);
    if (a != NULL && a->next_ms > now)
        return refuse(t, a, HA_THROTTLE_ADDRESS, why, a->next_ms - now);
    exempt = p->family == HA_PEER_UNIX ||
             (a != NULL && a->good_until_ms > now);
    if (!exempt && has_pfx) {
        x = find(t, &pk, now, false);
        if (x != NULL && x->next_ms > now)
            return refuse(t, a != NULL ? a : x, HA_THROTTLE_PREFIX, why,
                          x->next_ms - now);
    }
    if (!exempt) {
        fill(t, now);
        if (t->tokens < 1.0)
            return refuse(t, a != NULL ? a : x, HA_THROTTLE_GLOBAL, why,
                          (int64_t)((1.0 - t->tokens) * 1000.0 /
                                    HA_THROTTLE_GLOBAL_PER_S) +
                              1);
    }
    if (!reserve)
        return 0;
    if (a != NULL && a->fails >= address_rule.free)
        a->next_ms = now + address_rule.spacing_ms;
    if (x != NULL && x->fails >= prefix_rule.free)
        x->next_ms = now + prefix_rule.spacing_ms;
    if (!exempt)
        t->tokens -= 1.0;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                         */
/* ------------------------------------------------------------------ */

void
ha_throttle_init(struct ha_throttle *t, size_t memory, uint64_t seed)
{
    size_t entries;

    memset(t, 0, sizeof(*t));
    if (memory == 0)
        memory = HA_THROTTLE_MEMORY;
    entries = memory / sizeof(struct ha_throttle_entry);
    t->max_buckets = FIRST_BUCKETS;
    while (t->max_buckets * 2 * WAYS <= entries)
        t->max_buckets *= 2;
    if (seed == 0 && getrandom(&seed, sizeof(seed), GRND_NONBLOCK) !=
                         (ssize_t)sizeof(seed)) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        seed = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^
               (uint64_t)(uintptr_t)t;
    }
    t->seed = seed;
}

void
ha_throttle_free(struct ha_throttle *t)
{
    free(t->e);
    t->e = NULL;
    t->n_buckets = 0;
    t->used = 0;
}

int64_t
ha_throttle_peek(struct ha_throttle *t, const struct ha_peer *p,
                 int64_t now_ms, enum ha_throttle_why *why)
{
    return gate(t, p, now_ms, why, false);
}

int64_t
ha_throttle_admit(struct ha_throttle *t, const struct ha_peer *p,
                  int64_t now_ms, enum ha_throttle_why *why)
{
    return gate(t, p, now_ms, why, true);
}

static uint32_t
user_hash(const struct ha_throttle *t, const char *user)
{
    uint64_t h = mix(t->seed ^ 0x75736572ULL);

    for (const unsigned char *p = (const unsigned char *)(user != NULL
                                                              ? user
                                                              : "");
         *p != '\0'; p++)
        h = mix(h ^ *p);
    return (uint32_t)h;
}

static void
fail_one(struct ha_throttle *t, const struct key *k, const struct rule *r,
         uint32_t user, int64_t now)
{
    struct ha_throttle_entry *e = find(t, k, now, true);
    int64_t w;

    if (e == NULL) {
        t->cur.untracked++;
        return;
    }
    if (e->fails == 0) {
        e->user = user;
        e->mixed = false;
    } else if (e->user != user) {
        e->mixed = true;
    }
    e->fails++;
    e->last_fail_ms = now;
    w = wait_for(e->fails, r);
    if (w > 0 && e->next_ms < now + w)
        e->next_ms = now + w;
}

void
ha_throttle_failed(struct ha_throttle *t, const struct ha_peer *p,
                   const char *user, int64_t now_ms)
{
    struct key ak, pk;
    bool has_pfx = keys_of(p, &ak, &pk);
    uint32_t u = user_hash(t, user);

    start(t, now_ms);
    t->cur.failed++;
    fail_one(t, &ak, &address_rule, u, now_ms);
    if (has_pfx)
        fail_one(t, &pk, &prefix_rule, u, now_ms);
}

void
ha_throttle_succeeded(struct ha_throttle *t, const struct ha_peer *p,
                      const char *user, int64_t now_ms)
{
    struct key ak, pk;
    struct ha_throttle_entry *a;

    start(t, now_ms);
    (void)keys_of(p, &ak, &pk);
    a = find(t, &ak, now_ms, true);
    /* The token its check took goes back: only failures count. */
    if (p->family != HA_PEER_UNIX &&
        !(a != NULL && a->good_until_ms > now_ms)) {
        fill(t, now_ms);
        t->tokens += 1.0;
        if (t->tokens > HA_THROTTLE_GLOBAL_BURST)
            t->tokens = HA_THROTTLE_GLOBAL_BURST;
    }
    if (a == NULL)
        return;
    /* Someone who mistyped their own password and then got it right is
     * let off; failures for another account (or several) stay. */
    if (a->fails > 0 && !a->mixed && a->user == user_hash(t, user)) {
        a->fails = 0;
        a->next_ms = 0;
    }
    if (p->family == HA_PEER_IPV4 || p->family == HA_PEER_IPV6)
        a->good_until_ms = now_ms + HA_THROTTLE_GOOD_MS;
}

bool
ha_throttle_report(struct ha_throttle *t, int64_t now_ms,
                   struct ha_throttle_report *r)
{
    uint64_t any = t->cur.failed + t->cur.untracked;
    struct ha_throttle_entry *top = NULL;

    start(t, now_ms);
    if (now_ms - t->report_from < HA_THROTTLE_REPORT_MS)
        return false;
    for (int i = 0; i < HA_THROTTLE_WHY_MAX; i++)
        any += t->cur.refused[i];
    if (any == 0) {
        t->report_from = now_ms;
        return false;
    }
    *r = t->cur;
    r->interval_ms = now_ms - t->report_from;
    r->peers = 0;
    for (size_t i = 0; i < t->n_buckets * WAYS; i++) {
        struct ha_throttle_entry *e = &t->e[i];

        if (e->k.kind == K_FREE || e->refused == 0)
            continue;
        r->peers++;
        if (top == NULL || e->refused > top->refused)
            top = e;
    }
    r->top[0] = '\0';
    r->top_refused = 0;
    if (top != NULL) {
        key_text(&top->k, r->top, sizeof(r->top));
        r->top_refused = top->refused;
    }
    for (size_t i = 0; i < t->n_buckets * WAYS; i++)
        t->e[i].refused = 0;
    r->entries = t->used;
    r->capacity = t->n_buckets * WAYS;
    memset(&t->cur, 0, sizeof(t->cur));
    t->report_from = now_ms;
    return true;
}

size_t
ha_throttle_capacity(const struct ha_throttle *t)
{
    return t->n_buckets * WAYS;
}

size_t
ha_throttle_max_capacity(const struct ha_throttle *t)
{
    return t->max_buckets * WAYS;
}
