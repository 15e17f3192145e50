/* SPDX-License-Identifier: MIT
 *
 * The agent's own code, given back when it is not running (agent.h). A
 * query, a history sample (once a minute: SQLite, the cgroup files, the
 * run record) or a gateway's scrape faults in about 1 MB of the agent's
 * code and read-only data (the kernel maps 64 KiB around each fault),
 * which then stays in the host's resident set. Once the agent is quiet
 * again those pages are dropped from this process (MADV_DONTNEED): they
 * stay in the page cache, shared, and the next use faults them back from
 * there. Only segments no one writes (never the relocated ones), and
 * only the agent's own file.
 *
 * Quiet is measured, not timed: at each tick (every second, on the admin
 * thread) /proc/self/pagemap says how many of those pages are mapped
 * here; when that grew past what an idle tick keeps and held still for a
 * tick (the work that faulted them in is over, on whichever of the
 * agent's threads it ran), they are dropped. An idle agent's ticks fault
 * nothing, so it never drops twice; a busy one drops at most every
 * other second, each costing a few dozen minor faults.
 */
#include "agent/codepages.h"

#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define SEGS_MAX 8
#define SLACK_PAGES 32 /* over the idle floor before a drop: two
                          fault-around windows (the tick's own path) */

static struct {
    uintptr_t start, end;
} segs[SEGS_MAX];
static int n_segs;
static unsigned long base;
static long page;

static int
find(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (info->dlpi_addr != base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum && n_segs < SEGS_MAX; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

        if (ph->p_type != PT_LOAD || (ph->p_flags & PF_W) != 0)
            continue;
        segs[n_segs].start =
            (info->dlpi_addr + ph->p_vaddr) & ~(uintptr_t)(page - 1);
        segs[n_segs].end = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz +
                            (uintptr_t)page - 1) &
                           ~(uintptr_t)(page - 1);
        n_segs++;
    }
    return 1;
}

void
ha_agent_code_find(unsigned long so_base)
{
    page = sysconf(_SC_PAGESIZE);
    base = so_base;
    if (page > 0)
        dl_iterate_phdr(find, NULL);
}

/* The pages of the segments mapped in this process now (pagemap's
 * "present" bit, bit 63, which needs no privilege), or -1 when pagemap
 * cannot be read. Opened and closed here: the host may close every
 * descriptor, and none is held between two ticks. */
static long
resident(void)
{
    uint64_t e[512];
    long n = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return -1;
    for (int i = 0; i < n_segs; i++)
        for (uintptr_t a = segs[i].start; a < segs[i].end;) {
            size_t want = (segs[i].end - a) / (uintptr_t)page;
            ssize_t got;

            if (want > sizeof(e) / sizeof(e[0]))
                want = sizeof(e) / sizeof(e[0]);
            got = pread(fd, e, want * sizeof(e[0]),
                        (off_t)(a / (uintptr_t)page * sizeof(e[0])));
            if (got <= 0) {
                close(fd);
                return -1;
            }
            for (ssize_t k = 0; k < got / (ssize_t)sizeof(e[0]); k++)
                n += (long)(e[k] >> 63);
            a += (uintptr_t)(got / (ssize_t)sizeof(e[0])) * (uintptr_t)page;
        }
    close(fd);
    return n;
}

void
ha_agent_code_drop(void)
{
    for (int i = 0; i < n_segs; i++)
        (void)madvise((void *)segs[i].start, segs[i].end - segs[i].start,
                      MADV_DONTNEED);
}

int
ha_agent_code_tick(void)
{
    static long floor = 0, last = -1; /* 0: start-up's pages all go */
    static unsigned ticks;
    long now;

    if (n_segs == 0)
        return 0;
    now = resident();
    if (now < 0) {
        /* No pagemap (a kernel without it, a sandbox): once a minute. */
        if (++ticks % 60 != 10)
            return 0;
        ha_agent_code_drop();
        return 1;
    }
    /* The floor is what an idle tick keeps: the least seen since the
     * last drop (the tick's own pages fault back in after it). */
    if (floor < 0 || now < floor)
        floor = now;
    if (now > floor + SLACK_PAGES && now == last) {
        ha_agent_code_drop();
        floor = -1;
        last = -1;
        return 1;
    }
    last = now;
    return 0;
}
