/* SPDX-License-Identifier: MIT
 *
 * SAVE/LOAD statements (see persist_stmt.h): parsing them (pure) and
 * running them through the engine's disk layer, with MySQL replies.
 */
#include "admin/persist_stmt.h"

#include <limits.h>
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

int
ha_persist_exec(const struct ha_persist_ctx *ctx, bool admin,
                const struct ha_persist_cmd *cmd, struct ha_reply *r)
{
    enum ha_persist_error why;
    char msg[2 * PATH_MAX + 256];
    size_t n = 0;

    if (!admin) {
        ha_reply_err(r, 1227, "42000",
                     "Access denied; you need (at least one of) the SUPER "
                     "privilege(s) for this operation");
        return -1;
    }
    if (cmd->module == HA_PERSIST_CONFIG) {
        if (ha_persist_save_config(ctx, cmd->file, msg, sizeof(msg)) != 0) {
            ha_reply_err(r, 1105, "HY000", "%s", msg);
            return -1;
        }
        ha_reply_ok(r, 0, 0, msg);
        return 0;
    }
    if (cmd->module == HA_PERSIST_ADMIN) {
        ha_reply_ok(r, 0, 0,
                    "admin-* variables are read-only at run time and come "
                    "from the config file: nothing to save or load (SAVE "
                    "CONFIG TO FILE writes them with the rest)");
        return 0;
    }
    switch (cmd->action) {
    case HA_PERSIST_TO_DISK:
        if (ha_persist_save(ctx, &n, msg, sizeof(msg)) != 0) {
            ha_reply_err(r, 1105, "HY000", "%s", msg);
            return -1;
        }
        ha_reply_ok(r, (uint64_t)n, 0, msg);
        return 0;
    case HA_PERSIST_FROM_DISK:
        if (ha_persist_load(ctx, &n, &why, msg, sizeof(msg)) != 0) {
            if (why == HA_PERSIST_INVALID)
                ha_reply_err(r, 1231, "42000", "%s", msg);
            else
                ha_reply_err(r, 1105, "HY000", "%s", msg);
            return -1;
        }
        ha_reply_ok(r, (uint64_t)n, 0, msg);
        return 0;
    case HA_PERSIST_TO_RUNTIME:
        ha_reply_ok(r, 0, 0,
                    "nothing to do: an UPDATE of global_variables acts at "
                    "once, so memory and runtime are one layer");
        return 0;
    case HA_PERSIST_TO_MEMORY:
        ha_reply_ok(r, 0, 0,
                    "nothing to do: runtime and memory are one layer "
                    "(SAVE JEMALLOC VARIABLES TO DISK keeps them)");
        return 0;
    default:
        ha_reply_err(r, 1105, "HY000", "unsupported");
        return -1;
    }
}
