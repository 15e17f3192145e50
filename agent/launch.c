/* SPDX-License-Identifier: MIT
 *
 * The agent's start-up thread: started from the host's thread (at load,
 * in a fork child, or by heapadmin-attach) without touching the host's
 * heap or signals, it waits out the start delay (or a fork child's
 * parent), and starts the instance again while the host is still
 * changing its user or group. Apart from instance.c: when to start is
 * this file's question, what serving means is that one's.
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agent/fork.h"
#include "agent/log.h"
#include "include/heapadmin.h"

#define DROP_SETTLE_MS 250     /* a root process's fork child, with
                                  HEAPADMIN_USERS: time to drop its
                                  privileges before the agent looks */
#define IDS_RETRIES 5          /* starts, when the host changes its ids */
#define IDS_SETTLE_MS 500      /* ... this long apart */

static void
sleep_ms(unsigned ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* The process's user and group ids, which a host may change while the
 * agent starts (squid's master drops to proxy and back in its first
 * second). */
struct ids {
    uid_t u[3];
    gid_t g[3];
};

static struct ids
ids_now(void)
{
    struct ids x;

    memset(&x, 0, sizeof(x));
    (void)getresuid(&x.u[0], &x.u[1], &x.u[2]);
    (void)getresgid(&x.g[0], &x.g[1], &x.g[2]);
    return x;
}

static _Atomic bool launcher_named;

static struct launch {
    unsigned delay_ms;
    bool wait_parent;
    pid_t parent;
} launch_args;

static void *
launcher(void *arg)
{
    struct launch l = *(struct launch *)arg;

    pthread_setname_np(pthread_self(), "heapadmin");
    atomic_store(&launcher_named, true);
    /* From here on, what the agent allocates is in its own arena. */
    (void)heapadmin_adopt_thread();
    /* A child whose parent lives on is never served: its thread ends
     * here (fork.c). */
    if (l.wait_parent && !ha_agent_await_parent(l.parent, l.delay_ms))
        return NULL;
    if (l.wait_parent)
        ha_agent_log(3, "parent %ld is gone: taking over", (long)l.parent);
    /* A worker a root master forks drops privileges right after the
     * fork: its directory is decided once it has, not before. */
    if (getpid() != ha_agent_settings.first_pid && geteuid() == 0 &&
        ha_agent_settings.users[0] != '\0' && l.delay_ms < DROP_SETTLE_MS)
        l.delay_ms = DROP_SETTLE_MS;
    sleep_ms(l.delay_ms);
    /* A host that changed its user or group while the instance started
     * may have made it fail (bind: EACCES) or left it files it can no
     * longer write: it starts again once the ids held still. */
    for (int attempt = 1;; attempt++) {
        struct ids before = ids_now(), after;
        bool ok = ha_agent_serve(l.wait_parent ? l.parent : 0);

        after = ids_now();
        if (memcmp(&before, &after, sizeof(before)) == 0 ||
            attempt == IDS_RETRIES)
            break;
        ha_agent_withdraw();
        ha_agent_log(2, "the host changed its user or group while the "
                        "agent started (uids %ld %ld %ld, gids %ld %ld %ld; "
                        "then uids %ld %ld %ld, gids %ld %ld %ld)%s: "
                        "starting again in %d ms",
                     (long)before.u[0], (long)before.u[1], (long)before.u[2],
                     (long)before.g[0], (long)before.g[1], (long)before.g[2],
                     (long)after.u[0], (long)after.u[1], (long)after.u[2],
                     (long)after.g[0], (long)after.g[1], (long)after.g[2],
                     ok ? "" : ", which it could not finish", IDS_SETTLE_MS);
        sleep_ms(IDS_SETTLE_MS);
    }
    return NULL;
}

/* Starts serving from this process on a detached thread after delay_ms
 * (0: at once). When wait_parent is set, the thread first waits until
 * the parent it had when forked is gone (ha_agent_await_parent) and
 * serves only then: a child whose parent lives on (a BGSAVE) never
 * serves, and its thread ends. */
void
ha_agent_launch(unsigned delay_ms, bool wait_parent, pid_t parent)
{
    pthread_attr_t attr;
    pthread_t t;
    sigset_t all, old;

    if (!ha_agent_settings.active)
        return;
    /* Static, not malloc'd: this runs on the host's thread (at load, or
     * in a fork child), whose heap is the host's. One launch at a time
     * per process. */
    launch_args.delay_ms = delay_ms;
    launch_args.wait_parent = wait_parent;
    launch_args.parent = parent;
    /* No signal of the host's is ever delivered to our threads. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* Named before this returns: a helper the host execs at once looks
     * for this name among its ancestors' threads (ha_agent_is_served).
     * The thread names itself (it is detached: its handle is not ours to
     * use) and this waits for it, a few microseconds. */
    atomic_store(&launcher_named, false);
    /* Attached (heapadmin-attach): no helper the host execs has the
     * agent (nothing preloads it), and the host's thread waits. */
    if (pthread_create(&t, &attr, launcher, &launch_args) == 0 &&
        ha_agent_attach_req == NULL)
        for (int i = 0; i < 100000 && !atomic_load(&launcher_named); i++)
            sched_yield();
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}
