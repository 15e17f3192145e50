/* SPDX-License-Identifier: MIT
 *
 * Where each module's names come from (see symbolize_int.h): debuginfod
 * asked, all at once and for a bounded wait, for the files that have no
 * DWARF of their own nor under a debug root; and the verdict heap_modules
 * shows (DWARF and whose, a .symtab, .dynsym only, nothing), with what
 * would name a stripped file.
 */
#include "prof/symbolize_int.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/util.h"

/* True when f has no DWARF of its own nor under a debug root, and
 * debuginfod may help: it has a build-id, and no answer is in yet. */
static bool
wants_debuginfod(const struct ha_symbolizer *s, const struct file *f)
{
    return s->dbgi != NULL && f->mod != NULL && f->build_id[0] != '\0' &&
           !f->own_dwarf && f->local_debug == NULL && f->dbgi_path == NULL;
}

int
ha_symbolize_source_debuginfod(struct ha_symbolizer *s, struct file **files,
                               size_t n)
{
    const char **ids = NULL;
    size_t n_ids = 0;
    int pending = 0;

    if (s->dbgi == NULL)
        return 0;
    if ((ids = calloc(n ? n : 1, sizeof(*ids))) == NULL)
        return -1;
    for (size_t k = 0; k < n; k++)
        if (files[k] != NULL && wants_debuginfod(s, files[k]) &&
            ha_debuginfod_request(s->dbgi, files[k]->build_id) ==
                HA_DEBUGINFOD_PENDING)
            ids[n_ids++] = files[k]->build_id;
    if (n_ids > 0)
        ha_debuginfod_wait(s->dbgi, ids, n_ids,
                           ha_clock_ns() +
                               (int64_t)s->lim.debuginfod_timeout_ms *
                                   1000000);
    free(ids);
    for (size_t k = 0; k < n; k++) {
        struct file *f = files[k];
        char what[PATH_MAX + 64];

        if (f == NULL || !wants_debuginfod(s, f))
            continue;
        switch (ha_debuginfod_lookup(s->dbgi, f->build_id, what,
                                     sizeof(what))) {
        case HA_DEBUGINFOD_FOUND:
            if (f->touched) {
                char id[HA_BUILDID_HEX_MAX];

                memcpy(id, f->build_id, sizeof(id));
                ha_symbolize_file_reopen(s, f);
                /* The build-id is read again: the answer is for it
                 * unless the file was replaced meanwhile. */
                if (strcmp(id, f->build_id) != 0)
                    break;
            }
            if ((f->dbgi_path = strdup(what)) == NULL)
                return -1;
            f->dbgi_pending = false;
            f->dbgi_why[0] = '\0';
            break;
        case HA_DEBUGINFOD_PENDING:
            f->dbgi_pending = true;
            ha_err_set(f->dbgi_why, sizeof(f->dbgi_why),
                       "no answer within %u ms; still fetching (a later "
                       "query uses it)",
                       s->lim.debuginfod_timeout_ms);
            pending++;
            break;
        case HA_DEBUGINFOD_FAILED:
            f->dbgi_pending = false;
            ha_strlcpy(f->dbgi_why, what, sizeof(f->dbgi_why));
            break;
        default:
            f->dbgi_pending = false;
            ha_strlcpy(f->dbgi_why, "not asked", sizeof(f->dbgi_why));
            break;
        }
    }
    return pending;
}

void
ha_symbolize_source_classify(struct ha_symbolizer *s, struct file *f)
{
    const char *debugfile = NULL;
    Dwarf_Addr dwbias;
    Dwarf *dw;
    int n_syms;
    char hint[PATH_MAX + 256] = "";

    if (f->mod == NULL) {
        f->from = HA_SYMS_SRC_NONE;
        ha_strlcpy(f->detail, f->open_err[0] ? f->open_err : "not read",
                   sizeof(f->detail));
        return;
    }
    dw = dwfl_module_getdwarf(f->mod, &dwbias);
    f->touched = true;
    dwfl_module_info(f->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debugfile);
    if (dw != NULL) {
        if (f->dbgi_path != NULL && debugfile != NULL &&
            strcmp(debugfile, f->dbgi_path) == 0) {
            f->from = HA_SYMS_SRC_DEBUGINFOD;
            snprintf(f->detail, sizeof(f->detail), "DWARF from debuginfod, "
                                                   "cached as %s",
                     debugfile);
        } else if (debugfile != NULL && strcmp(debugfile, f->path) != 0) {
            f->from = HA_SYMS_SRC_DWARF;
            snprintf(f->detail, sizeof(f->detail), "DWARF in %s", debugfile);
        } else {
            f->from = HA_SYMS_SRC_DWARF;
            ha_strlcpy(f->detail, "DWARF in the file", sizeof(f->detail));
        }
        return;
    }
    /* What would name it: a -dbgsym package, or debuginfod. */
    if (f->build_id[0] != '\0')
        snprintf(hint, sizeof(hint), "; its debug file would be %s/.build-id/"
                                     "%.2s/%s.debug (the -dbgsym package)",
                 HA_SYMBOLIZE_DEBUG_DIR, f->build_id, f->build_id + 2);
    else
        ha_strlcpy(hint, "; it has no build-id to find debug info by",
                   sizeof(hint));
    if (s->dbgi == NULL)
        ha_strlcpy(hint + strlen(hint), " or debuginfod (off)",
                   sizeof(hint) - strlen(hint));
    else if (f->dbgi_why[0] != '\0')
        snprintf(hint + strlen(hint), sizeof(hint) - strlen(hint),
                 "; debuginfod: %s", f->dbgi_why);
    n_syms = dwfl_module_getsymtab(f->mod);
    if (f->own_symtab) {
        f->from = HA_SYMS_SRC_SYMTAB;
        snprintf(f->detail, sizeof(f->detail), "no DWARF; the file's "
                                               ".symtab%s",
                 hint);
    } else if (debugfile != NULL && n_syms > 0) {
        f->from = HA_SYMS_SRC_SYMTAB;
        snprintf(f->detail, sizeof(f->detail), "no DWARF; .symtab of %s",
                 debugfile);
    } else if (n_syms > 0) {
        f->from = HA_SYMS_SRC_DYNSYM;
        snprintf(f->detail, sizeof(f->detail), "stripped: only exported "
                                               "functions are named%s",
                 hint);
    } else {
        f->from = HA_SYMS_SRC_NONE;
        snprintf(f->detail, sizeof(f->detail), "no symbols%s", hint);
    }
}
