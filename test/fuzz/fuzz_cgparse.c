/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the memory cgroup files' parsers (prof/cgparse.h) and the
 * records kept beside dumps and runs (prof/dumpmem.h, prof/runrec.h),
 * all on the same input. Seeds: corpus/cgparse/ (the fixture trees'
 * files, a .mem and a run record).
 *
 * Invariants: every parser answers 0 or -1 and reads nothing past the
 * input (ASan); a group path found lies within the input and starts
 * with '/'; a directory made from a mount is the mount point and the
 * path's rest; PSI averages lie in [0, 100]; a record that parses
 * formats again, and that parses to the same figures (a .mem's sizes
 * lines, prof/livesizes.h, too).
 */
#include "fuzz.h"

#include "prof/cgparse.h"
#include "prof/dumpmem.h"
#include "prof/livesizes.h"
#include "prof/runrec.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    struct ha_cgparse_groups pf;
    struct ha_cgparse_mounts m;
    struct ha_dumpmem dm, dm2;
    struct ha_runrec rr, rr2;
    struct ha_psi psi;
    char err[256], dir[512], text[16384];
    uint64_t u;
    int64_t v;
    int len;

    if (ha_cgparse_procfile(buf, size, &pf, err, sizeof(err)) == 0) {
        FUZZ_CHECK(!pf.v1_memory || pf.v1_path[0] == '/', "v1 path");
        FUZZ_CHECK(!pf.v2 || pf.v2_path[0] == '/', "v2 path");
    }
    (void)ha_cgparse_mountinfo(buf, size, &m);
    if (m.v1_memory.found) {
        FUZZ_CHECK(m.v1_memory.root[0] == '/' && m.v1_memory.point[0] == '/',
                   "mount");
        if (ha_cgparse_dir(&m.v1_memory, "/a/b", dir, sizeof(dir)) == 0)
            FUZZ_CHECK(strncmp(dir, m.v1_memory.point,
                               strlen(m.v1_memory.point)) == 0 ||
                           strcmp(m.v1_memory.point, "/") == 0,
                       "dir '%s' outside '%s'", dir, m.v1_memory.point);
    }
    if (ha_cgparse_bytes(buf, size, &v) == 0)
        FUZZ_CHECK(v == HA_CGPARSE_UNLIMITED ||
                       (v >= 0 && v < HA_CGPARSE_V1_UNLIMITED_MIN),
                   "bytes %lld", (long long)v);
    (void)ha_cgparse_key(buf, size, "oom_kill", &u);
    if (ha_cgparse_psi(buf, size, &psi, err, sizeof(err)) == 0)
        FUZZ_CHECK(psi.some.avg10 >= 0 && psi.some.avg10 <= 100 &&
                       psi.some.avg300 >= 0 && psi.some.avg300 <= 100,
                   "psi");

    if (ha_dumpmem_parse(buf, size, &dm, err, sizeof(err)) == 0) {
        len = ha_dumpmem_format(&dm, text, sizeof(text));
        FUZZ_CHECK(len > 0, "a parsed .mem formats");
        FUZZ_CHECK(ha_dumpmem_parse(text, (size_t)len, &dm2, err,
                                    sizeof(err)) == 0,
                   "its text parses: %s", err);
        FUZZ_CHECK(dm2.resident == dm.resident &&
                       dm2.n_bins == dm.n_bins &&
                       dm2.cgroup_limit == dm.cgroup_limit &&
                       dm2.sampling_since == dm.sampling_since,
                   ".mem round trip");
    }
    {
        struct ha_livesizes ls, ls2;
        struct ha_buf b = HA_BUF_INIT;

        if (ha_livesizes_parse(buf, size, &ls, err, sizeof(err)) == 0) {
            FUZZ_CHECK(ha_livesizes_format(&ls, &b) == 0,
                       "parsed sizes format");
            FUZZ_CHECK(ha_livesizes_parse((const char *)b.data, b.len, &ls2,
                                          err, sizeof(err)) == 0,
                       "their text parses: %s", err);
            FUZZ_CHECK(ls2.state == ls.state && ls2.n == ls.n &&
                           (ls.n == 0 ||
                            memcmp(ls.ents, ls2.ents,
                                   ls.n * sizeof(ls.ents[0])) == 0),
                       "sizes round trip");
            ha_livesizes_free(&ls2);
            ha_livesizes_free(&ls);
        }
        ha_buf_free(&b);
    }
    if (ha_runrec_parse(buf, size, &rr, err, sizeof(err)) == 0) {
        len = ha_runrec_format(&rr, text, sizeof(text));
        FUZZ_CHECK(len > 0, "a parsed run formats");
        FUZZ_CHECK(ha_runrec_parse(text, (size_t)len, &rr2, err,
                                   sizeof(err)) == 0,
                   "its text parses: %s", err);
        FUZZ_CHECK(rr2.pid == rr.pid && rr2.started_ns == rr.started_ns &&
                       rr2.oom_kills == rr.oom_kills,
                   "run round trip");
    }
    (void)ha_runrec_parse_end(buf, size, err, 16, &v);
    return 0;
}
