/* SPDX-License-Identifier: MIT
 *
 * Parsing SAVE/LOAD statements (see persist_parse.h). Pure.
 */
#include "admin/persist_parse.h"

#include <string.h>

#include "core/util.h"

#define EXPECTED                                                            \
    "expected SAVE|LOAD JEMALLOC|ADMIN VARIABLES TO|FROM DISK|MEMORY|"     \
    "RUNTIME, or SAVE CONFIG TO FILE <name>"

static bool
is_any(const struct ha_lex *lx, size_t i, const char *a, const char *b)
{
    return ha_lex_is_word(lx, i, a) || (b != NULL && ha_lex_is_word(lx, i, b));
}

/* The word at i as written, for messages. */
static void
word(const struct ha_lex *lx, size_t i, char *buf, size_t len)
{
    if (i < lx->n)
        ha_lex_text(lx, i, buf, len);
    else
        ha_strlcpy(buf, "end of statement", len);
}

/* Nothing but an optional ';' from i on? */
static bool
at_end(const struct ha_lex *lx, size_t i)
{
    return i >= lx->n ||
           (ha_lex_is_punct(lx, i, ';') && ha_lex_next(lx, i) >= lx->n);
}

int
ha_persist_parse(const struct ha_lex *lx, size_t i,
                 struct ha_persist_cmd *cmd, char *err, size_t errlen)
{
    bool save = ha_lex_is_word(lx, i, "SAVE");
    char w[64];
    size_t j;

    memset(cmd, 0, sizeof(*cmd));
    if (!save && !ha_lex_is_word(lx, i, "LOAD")) {
        ha_err_set(err, errlen, "%s", EXPECTED);
        return -1;
    }
    j = ha_lex_next(lx, i);
    if (ha_lex_is_word(lx, j, "CONFIG")) {
        size_t k = ha_lex_next(lx, j), f;

        f = ha_lex_next(lx, ha_lex_next(lx, k));
        if (!save || !ha_lex_is_word(lx, k, "TO") ||
            !ha_lex_is_word(lx, ha_lex_next(lx, k), "FILE") || f >= lx->n) {
            ha_err_set(err, errlen, "%s", EXPECTED);
            return -1;
        }
        if (lx->toks[f].kind == HA_TOK_STRING ||
            lx->toks[f].kind == HA_TOK_QUOTED_ID) {
            /* 'name' or "name": unquoted by ha_lex_text. */
            ha_lex_text(lx, f, cmd->file, sizeof(cmd->file));
            if (!at_end(lx, ha_lex_next(lx, f))) {
                word(lx, ha_lex_next(lx, f), w, sizeof(w));
                ha_err_set(err, errlen,
                           "SAVE CONFIG TO FILE takes one file name; '%s' "
                           "follows it",
                           w);
                return -1;
            }
        } else {
            /* ProxySQL's unquoted form (saved.cnf lexes as three
             * tokens): the text up to the end or a ';'. */
            size_t end = f, len;

            for (size_t t = f; t < lx->n && !ha_lex_is_punct(lx, t, ';');
                 t = ha_lex_next(lx, t))
                end = t;
            len = lx->toks[end].start + lx->toks[end].len - lx->toks[f].start;
            if (len >= sizeof(cmd->file)) {
                ha_err_set(err, errlen, "file name too long");
                return -1;
            }
            memcpy(cmd->file, lx->s + lx->toks[f].start, len);
            cmd->file[len] = '\0';
        }
        cmd->module = HA_PERSIST_CONFIG;
        cmd->action = HA_PERSIST_TO_FILE;
        return 0;
    }
    if (ha_lex_is_word(lx, j, "JEMALLOC")) {
        cmd->module = HA_PERSIST_JEMALLOC;
    } else if (ha_lex_is_word(lx, j, "ADMIN")) {
        cmd->module = HA_PERSIST_ADMIN;
    } else {
        word(lx, j, w, sizeof(w));
        ha_err_set(err, errlen,
                   "heapadmin has no %s VARIABLES: it keeps JEMALLOC "
                   "VARIABLES and ADMIN VARIABLES (and SAVE CONFIG TO FILE)",
                   w);
        return -1;
    }
    j = ha_lex_next(lx, j);
    if (!ha_lex_is_word(lx, j, "VARIABLES")) {
        ha_err_set(err, errlen, "%s", EXPECTED);
        return -1;
    }
    j = ha_lex_next(lx, j);
    {
        bool to = ha_lex_is_word(lx, j, "TO");
        size_t l = ha_lex_next(lx, j);
        bool disk = ha_lex_is_word(lx, l, "DISK");
        bool mem = is_any(lx, l, "MEMORY", "MEM");
        bool run = is_any(lx, l, "RUNTIME", "RUN");

        if ((!to && !ha_lex_is_word(lx, j, "FROM")) ||
            !at_end(lx, ha_lex_next(lx, l)) || !(disk || mem || run)) {
            ha_err_set(err, errlen, "%s", EXPECTED);
            return -1;
        }
        /* ProxySQL's pairs: the direction names one edge of
         * disk <-> memory <-> runtime. */
        if (save && ((to && disk) || (!to && mem)))
            cmd->action = HA_PERSIST_TO_DISK;
        else if (save && ((to && mem) || (!to && run)))
            cmd->action = HA_PERSIST_TO_MEMORY;
        else if (!save && ((!to && disk) || (to && mem)))
            cmd->action = HA_PERSIST_FROM_DISK;
        else if (!save && ((to && run) || (!to && mem)))
            cmd->action = HA_PERSIST_TO_RUNTIME;
        else {
            word(lx, l, w, sizeof(w));
            ha_err_set(err, errlen,
                       "%s ... VARIABLES %s %s has no meaning: %s",
                       save ? "SAVE" : "LOAD", to ? "TO" : "FROM", w,
                       EXPECTED);
            return -1;
        }
    }
    return 0;
}
