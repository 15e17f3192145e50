/* SPDX-License-Identifier: MIT
 *
 * The notes of fragmentation by call site (see fragment.h): per row, in
 * words, how its regions were placed, why a class's regions in use have
 * no sampled object standing for them, and what sizes were recorded.
 * Pure.
 */
#include "prof/fragment.h"

#include "core/util.h"
#include "prof/fragment_int.h"

/* Why sampled objects that were to be expected are not there. */
static void
rest_reason(const struct ha_frag *f, char *buf, size_t len, size_t *at)
{
    char when[32];

    if (f->sampling_since > 0) {
        ha_utc_stamp(when, sizeof(when), f->sampling_since / 1000000000,
                     ' ');
        (void)ha_appendf(buf, len, at,
                         "they were allocated before sampling last started "
                         "(%s UTC: prof.active switched on, or prof.reset), "
                         "which the profile cannot see",
                         when);
    } else if (f->sampling_since == -1) {
        (void)ha_appendf(buf, len, at,
                         "sampling has been on since the process started "
                         "(opt.prof_active), so they are regions thread "
                         "caches hold or objects of threads that do not "
                         "sample (thread.prof.active false)");
    } else {
        (void)ha_appendf(buf, len, at,
                         "objects allocated while sampling was off (when it "
                         "started is unknown: not switched by heapadmin), "
                         "regions thread caches hold, or objects of threads "
                         "that do not sample");
    }
}

void
ha_frag_note(const struct ha_frag *f, const struct ha_frag_row *r,
             char *out, size_t len)
{
    const struct ha_dumpmem_bin *b = &f->bins[r->bin];
    double wm1 = ha_frag_weight(f->period, b->size) - 1;
    size_t at = 0;
    bool est;

    out[0] = '\0';
    if (r->rest == HA_FRAG_NONE_LIVE) {
        double e = ha_frag_expected_samples(f->period, b);

        if (b->curregs == 0) {
            (void)ha_appendf(out, len, &at,
                             "no region of this class is in use: its slabs "
                             "hold only free regions");
        } else if (f->period == 0) {
            (void)ha_appendf(out, len, &at,
                             "no sampled object of this class is live");
        } else if (e < SIGMAS) {
            (void)ha_appendf(out, len, &at,
                             "no sampled object of this class is live: its "
                             "%llu regions in use would hold %.1f sampled "
                             "objects on average (one sample per %llu "
                             "bytes allocated), too few to expect one",
                             (unsigned long long)b->curregs, e,
                             (unsigned long long)f->period);
        } else {
            (void)ha_appendf(out, len, &at,
                             "no sampled object of this class is live, "
                             "though its %llu regions in use would hold "
                             "%.0f on average (one sample per %llu bytes "
                             "allocated): ",
                             (unsigned long long)b->curregs, e,
                             (unsigned long long)f->period);
            rest_reason(f, out, len, &at);
        }
        return;
    }
    if (r->rest == HA_FRAG_UNACCOUNTED) {
        (void)ha_appendf(out, len, &at,
                         "%.0f of the class's %llu regions in use have no "
                         "live sampled object standing for them (about "
                         "%.0f samples' worth), more than sampling error "
                         "(3 sigma: %.0f regions): ",
                         r->live_regions, (unsigned long long)b->curregs,
                         wm1 > 0 ? r->live_regions / wm1 : 0,
                         SIGMAS * ha_frag_sigma(f->period, b));
        rest_reason(f, out, len, &at);
        return;
    }
    est = r->live_regions - r->exact_regions > 0.5 ||
          (r->how & (HA_FRAG_MEAN | HA_FRAG_FITTED | HA_FRAG_RESCALED));
    if (r->how & HA_FRAG_RESCALED)
        (void)ha_appendf(out, len, &at,
                         "%sestimated: its sizes were recorded at another "
                         "moment than the profile; their classes kept, "
                         "scaled to its count",
                         at ? "; " : "");
    if (r->how & HA_FRAG_MEAN)
        (void)ha_appendf(out, len, &at,
                         "%sestimated: a stack's mean size is this class's",
                         at ? "; " : "");
    if (r->how & HA_FRAG_FITTED)
        (void)ha_appendf(out, len, &at,
                         "%sestimated: a stack's objects span several "
                         "classes (mean %.0f bytes) and not all their sizes "
                         "were recorded: placed within what the classes "
                         "hold",
                         at ? "; " : "", r->fit_mean);
    if (est && f->sizes == HA_LIVESIZES_NONE)
        (void)ha_appendf(out, len, &at,
                         "%sno sizes were recorded with this profile (a "
                         ".mem from before they were)",
                         at ? "; " : "");
    else if (est && f->sizes == HA_LIVESIZES_OFF)
        (void)ha_appendf(out, len, &at,
                         "%sno sizes were recorded with this profile: %s",
                         at ? "; " : "",
                         f->sizes_why[0] ? f->sizes_why : "recording off");
    if (r->how & HA_FRAG_CAPPED)
        (void)ha_appendf(out, len, &at,
                         "%sthe class's estimates came to more than its "
                         "%llu regions in use (sampling error) and were "
                         "scaled down to them",
                         at ? "; " : "", (unsigned long long)b->curregs);
}
