/* SPDX-License-Identifier: MIT
 *
 * MySQL dialect -> SQLite rewriter (see dialect.h). Two passes: the lexer
 * (lex.c) turns the statement into tokens (so quotes, backticks and
 * comments are never mistaken for code), then the emitter (emit.c) writes
 * SQLite SQL, rewriting the few constructs SQLite does not share with
 * MySQL.
 * SHOW statements are handed to show.c, which builds a SELECT.
 */
#include "admin/dialect.h"

#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/emit.h"
#include "admin/show.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Classification                                                       */
/* ------------------------------------------------------------------ */

void
ha_dialect_syntax_error(const char *sql, size_t len, size_t off, char *buf,
                        size_t buflen)
{
    unsigned line = 1;
    size_t n;

    if (off > len)
        off = len;
    for (size_t k = 0; k < off; k++)
        if (sql[k] == '\n')
            line++;
    n = len - off;
    /* MySQL quotes at most 80 bytes and drops a trailing ';'. */
    while (n > 0 && (sql[off + n - 1] == ';' || sql[off + n - 1] == ' '))
        n--;
    if (n > 80)
        n = 80;
    snprintf(buf, buflen,
             "You have an error in your SQL syntax; check the manual that "
             "corresponds to your MySQL server version for the right syntax "
             "to use near '%.*s' at line %u",
             (int)n, sql + off, line);
}

static void
set_error(const struct ha_lex *lx, size_t tok, struct ha_dialect_result *res)
{
    size_t off = tok < lx->n ? lx->toks[tok].start : lx->len;

    res->kind = HA_STMT_ERROR;
    res->err_code = 1064;
    memcpy(res->sqlstate, "42000", 6);
    /* Quoted and counted from the statement's own start. */
    ha_dialect_syntax_error(lx->s + lx->base, lx->len - lx->base,
                            off - lx->base, res->arg, sizeof(res->arg));
}

/* A statement refused as MySQL's ER_NOT_SUPPORTED_YET, with why. */
static void
unsupported(struct ha_dialect_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
unsupported(struct ha_dialect_result *res, const char *fmt, ...)
{
    va_list ap;

    res->kind = HA_STMT_ERROR;
    res->err_code = 1235;
    memcpy(res->sqlstate, "42000", 6);
    va_start(ap, fmt);
    vsnprintf(res->arg, sizeof(res->arg), fmt, ap);
    va_end(ap);
}

/* Every statement commits as it runs (admin/session.c says why), so
 * BEGIN, COMMIT and ROLLBACK answer OK; what needs a transaction to be
 * open is refused. */
static void
refuse_transaction(struct ha_dialect_result *res, const char *what)
{
    unsupported(res,
                "This version of heapadmin doesn't yet support '%s': on the "
                "admin interface every statement commits as it runs (BEGIN, "
                "COMMIT and ROLLBACK are accepted and do nothing, as in "
                "ProxySQL's admin)",
                what);
}

/* Token i is the whole statement but for a final ';'. */
static bool
alone(const struct ha_lex *lx, size_t i)
{
    size_t j = ha_lex_next(lx, i);

    return i < lx->n &&
           (j >= lx->n ||
            (ha_lex_is_punct(lx, j, ';') && ha_lex_next(lx, j) >= lx->n));
}

/* KILL [QUERY | CONNECTION] <id> */
static void
classify_kill(const struct ha_lex *lx, size_t i, struct ha_dialect_result *res)
{
    size_t j = ha_lex_next(lx, i), k;
    char num[24];
    char *end;
    unsigned long long id;

    res->kill_query = false;
    if (ha_lex_is_word(lx, j, "QUERY")) {
        res->kill_query = true;
        j = ha_lex_next(lx, j);
    } else if (ha_lex_is_word(lx, j, "CONNECTION")) {
        j = ha_lex_next(lx, j);
    }
    k = ha_lex_next(lx, j);
    if (j >= lx->n || lx->toks[j].kind != HA_TOK_WORD ||
        lx->toks[j].len >= sizeof(num) ||
        (k < lx->n && !ha_lex_is_punct(lx, k, ';'))) {
        set_error(lx, j < lx->n && lx->toks[j].kind == HA_TOK_WORD ? k : j,
                  res);
        return;
    }
    ha_lex_text(lx, j, num, sizeof(num));
    id = strtoull(num, &end, 10);
    if (*end != '\0' || num[0] < '0' || num[0] > '9' || id > UINT32_MAX) {
        set_error(lx, j, res);
        return;
    }
    res->kind = HA_STMT_KILL;
    res->kill_id = (uint32_t)id;
}

static void
classify(const struct ha_lex *lx, struct ha_dialect_result *res)
{
    size_t i = ha_lex_next(lx, SIZE_MAX), j;

    res->kind = HA_STMT_OTHER;
    res->arg[0] = '\0';
    res->err_code = 0;
    res->sqlstate[0] = '\0';
    res->kill_id = 0;
    res->kill_query = false;
    res->verb[0] = '\0';
    if (i < lx->n && lx->toks[i].kind == HA_TOK_WORD)
        ha_lex_text(lx, i, res->verb, sizeof(res->verb));
    if (i >= lx->n || ha_lex_is_punct(lx, i, ';')) {
        /* Only ';' and comments left: nothing to run. */
        for (j = i; j < lx->n; j = ha_lex_next(lx, j))
            if (!ha_lex_is_punct(lx, j, ';'))
                return;
        res->kind = HA_STMT_EMPTY;
        return;
    }
    /* MySQL 8.0 has no dollar quoting: `select $$` (the 8.1+ CLI's probe)
     * must fail with a syntax error, not reach SQLite as a parameter. */
    for (j = i; j < lx->n; j = ha_lex_next(lx, j)) {
        const struct ha_tok *t = &lx->toks[j];
        if (t->kind == HA_TOK_WORD && t->len >= 2 && lx->s[t->start] == '$' &&
            lx->s[t->start + 1] == '$') {
            set_error(lx, j, res);
            return;
        }
    }
    j = ha_lex_next(lx, i);
    if (ha_lex_is_word(lx, i, "SET")) {
        res->kind = HA_STMT_SET;
    } else if (ha_lex_is_word(lx, i, "USE") && j < lx->n) {
        ha_lex_text(lx, j, res->arg, sizeof(res->arg));
        res->kind = HA_STMT_USE;
    } else if (ha_lex_is_word(lx, i, "BEGIN") ||
               (ha_lex_is_word(lx, i, "START") &&
                ha_lex_is_word(lx, j, "TRANSACTION"))) {
        res->kind = HA_STMT_BEGIN;
    } else if (ha_lex_is_word(lx, i, "COMMIT")) {
        res->kind = HA_STMT_COMMIT;
    } else if (ha_lex_is_word(lx, i, "ROLLBACK")) {
        size_t k = ha_lex_is_word(lx, j, "WORK") ? ha_lex_next(lx, j) : j;
        if (!ha_lex_is_word(lx, k, "TO"))
            res->kind = HA_STMT_ROLLBACK;
        else
            refuse_transaction(res, "ROLLBACK TO SAVEPOINT");
    } else if (ha_lex_is_word(lx, i, "SAVEPOINT") ||
               ha_lex_is_word(lx, i, "RELEASE")) {
        refuse_transaction(res, "SAVEPOINT and RELEASE");
    } else if (ha_lex_is_word(lx, i, "END")) {
        refuse_transaction(res, "END TRANSACTION");
    } else if (ha_lex_is_word(lx, i, "REINDEX") && alone(lx, i)) {
        /* Bare REINDEX rebuilds every schema's indexes, and the attached
         * disk and stats_history files are read-only. */
        unsupported(res, "REINDEX needs a table or index name here (REINDEX "
                         "main.<table>): the disk and stats_history schemas "
                         "are read-only");
    } else if (ha_lex_is_word(lx, i, "SHOW")) {
        res->kind = HA_STMT_SHOW;
    } else if (ha_lex_is_word(lx, i, "KILL")) {
        classify_kill(lx, i, res);
    } else if (ha_lex_is_word(lx, i, "SAVE") ||
               ha_lex_is_word(lx, i, "LOAD")) {
        res->kind = HA_STMT_PERSIST;
    }
}

int
ha_dialect_rewrite(const char *sql, size_t len, struct ha_buf *out,
                   struct ha_dialect_result *res, char *err, size_t errlen)
{
    return ha_dialect_rewrite_in(sql, len, NULL, out, res, err, errlen);
}

int
ha_dialect_rewrite_in(const char *sql, size_t len, const char *schema,
                      struct ha_buf *out, struct ha_dialect_result *res,
                      char *err, size_t errlen)
{
    struct ha_lex lx;
    int rc;

    if (ha_lex_run(&lx, sql, len, err, errlen) != 0) {
        ha_lex_free(&lx);
        return -1;
    }
    rc = ha_dialect_rewrite_lexed(&lx, schema, out, res, err, errlen);
    ha_lex_free(&lx);
    return rc;
}

/* The statement is ANALYZE with no argument. */
static bool
bare_analyze(const struct ha_lex *lx)
{
    size_t i = ha_lex_next(lx, SIZE_MAX);

    return ha_lex_is_word(lx, i, "ANALYZE") && alone(lx, i);
}

int
ha_dialect_rewrite_lexed(const struct ha_lex *lx, const char *schema,
                         struct ha_buf *out, struct ha_dialect_result *res,
                         char *err, size_t errlen)
{
    classify(lx, res);
    if (res->kind == HA_STMT_SHOW) {
        size_t bad = 0;
        if (ha_show_rewrite(lx, ha_lex_next(lx, SIZE_MAX), schema, out,
                            &bad) !=
            0) {
            ha_buf_reset(out);
            set_error(lx, bad, res);
            ha_emit_sql(lx, 0, lx->n, out);
        }
    } else if (bare_analyze(lx)) {
        /* ANALYZE alone would analyze every schema, and the attached
         * disk and stats_history files are read-only. */
        ha_buf_append_str(out, "ANALYZE main");
    } else {
        ha_emit_sql(lx, 0, lx->n, out);
    }
    ha_buf_append_u8(out, '\0');
    if (ha_buf_failed(out)) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    out->len--; /* the NUL is there but not counted */
    return 0;
}

/* ------------------------------------------------------------------ */
/* Multi-statement splitting                                            */
/* ------------------------------------------------------------------ */

/* Tokens [from, to) hold a CREATE [TEMP|TEMPORARY] TRIGGER's start. */
static bool
starts_trigger(const struct ha_lex *lx, size_t first)
{
    size_t j = ha_lex_next(lx, first);

    if (!ha_lex_is_word(lx, first, "CREATE"))
        return false;
    if (ha_lex_is_word(lx, j, "TEMP") || ha_lex_is_word(lx, j, "TEMPORARY"))
        j = ha_lex_next(lx, j);
    return ha_lex_is_word(lx, j, "TRIGGER");
}

int
ha_dialect_split(const char *sql, size_t len, struct ha_dialect_span **spans,
                 size_t *n, char *err, size_t errlen)
{
    struct ha_lex lx;
    int rc;

    *spans = NULL;
    *n = 0;
    if (ha_lex_run(&lx, sql, len, err, errlen) != 0) {
        ha_lex_free(&lx);
        return -1;
    }
    rc = ha_dialect_split_lexed(&lx, spans, n, err, errlen);
    ha_lex_free(&lx);
    return rc;
}

int
ha_dialect_split_lexed(const struct ha_lex *lxp,
                       struct ha_dialect_span **spans, size_t *n, char *err,
                       size_t errlen)
{
    const struct ha_lex lx = *lxp;
    struct ha_dialect_span *v = NULL;
    size_t nv = 0, cap = 0, start = 0, first = SIZE_MAX, tok_start = 0;
    size_t len = lx.len;
    int exec = 0, block = 0;
    bool trigger = false;

    *spans = NULL;
    *n = 0;
    for (size_t i = 0; i <= lx.n; i++) {
        bool end = i == lx.n;
        if (!end) {
            const struct ha_tok *t = &lx.toks[i];
            if (t->kind == HA_TOK_EXEC_OPEN)
                exec++;
            else if (t->kind == HA_TOK_EXEC_CLOSE)
                exec--;
            if (!ha_lex_is_significant(t))
                continue;
            if (first == SIZE_MAX) {
                first = i;
                trigger = starts_trigger(&lx, i);
            }
            if (trigger && (ha_lex_is_word(&lx, i, "BEGIN") ||
                            ha_lex_is_word(&lx, i, "CASE")))
                block++;
            else if (trigger && ha_lex_is_word(&lx, i, "END") && block > 0)
                block--;
            if (!ha_lex_is_punct(&lx, i, ';') || exec > 0 || block > 0)
                continue;
        }
        if (first != SIZE_MAX && !ha_lex_is_punct(&lx, first, ';')) {
            size_t stop = end ? len : lx.toks[i].start;
            if (nv == cap) {
                size_t ncap = cap ? cap * 2 : 4;
                struct ha_dialect_span *p = realloc(v, ncap * sizeof(*p));
                if (p == NULL) {
                    free(v);
                    ha_err_set(err, errlen, "out of memory");
                    return -1;
                }
                v = p;
                cap = ncap;
            }
            v[nv].off = start;
            v[nv].len = stop - start;
            v[nv].tok_from = tok_start;
            v[nv].tok_to = i;
            nv++;
        }
        if (!end) {
            start = lx.toks[i].start + 1;
            tok_start = i + 1;
        }
        first = SIZE_MAX;
        trigger = false;
        block = 0;
    }
    *spans = v;
    *n = nv;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Common table expressions                                             */
/* ------------------------------------------------------------------ */

/* Token i opens a '(': the index of its matching ')', or to. */
static size_t
skip_parens(const struct ha_lex *lx, size_t i, size_t to)
{
    int depth = 0;

    for (; i < to; i = ha_lex_next(lx, i)) {
        if (ha_lex_is_punct(lx, i, '('))
            depth++;
        else if (ha_lex_is_punct(lx, i, ')') && --depth == 0)
            return i;
    }
    return to;
}

size_t
ha_dialect_cte_names(const struct ha_lex *lx, size_t from, size_t to,
                     char (*names)[64], size_t max)
{
    size_t n = 0;

    if (to > lx->n)
        to = lx->n;
    for (size_t i = from; i < to && n < max; i = ha_lex_next(lx, i)) {
        size_t j;

        if (!ha_lex_is_word(lx, i, "WITH"))
            continue;
        j = ha_lex_next(lx, i);
        if (ha_lex_is_word(lx, j, "RECURSIVE"))
            j = ha_lex_next(lx, j);
        /* name [(cols)] AS [NOT] [MATERIALIZED] (body) [, ...] */
        while (j < to && n < max && ha_lex_is_ident(lx, j)) {
            ha_lex_text(lx, j, names[n], 64);
            n++;
            j = ha_lex_next(lx, j);
            if (ha_lex_is_punct(lx, j, '('))
                j = ha_lex_next(lx, skip_parens(lx, j, to));
            if (!ha_lex_is_word(lx, j, "AS"))
                break;
            j = ha_lex_next(lx, j);
            if (ha_lex_is_word(lx, j, "NOT"))
                j = ha_lex_next(lx, j);
            if (ha_lex_is_word(lx, j, "MATERIALIZED"))
                j = ha_lex_next(lx, j);
            if (!ha_lex_is_punct(lx, j, '('))
                break;
            /* A WITH inside the body is found when the outer loop walks
             * on from i. */
            j = ha_lex_next(lx, skip_parens(lx, j, to));
            if (!ha_lex_is_punct(lx, j, ','))
                break;
            j = ha_lex_next(lx, j);
        }
    }
    return n;
}
