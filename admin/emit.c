/* SPDX-License-Identifier: MIT
 *
 * The token emitter (see emit.h): writes a lexed MySQL statement back out
 * as SQLite SQL, rewriting @@var, @var, LIMIT a,b, the stats. qualifier
 * and MySQL string escapes on the way. Beneath show.c, setvar.c and
 * dialect.c, which all rewrite whole statements or parts of them.
 */
#include "admin/emit.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/catalog.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Emitter                                                              */
/* ------------------------------------------------------------------ */

/* Words that may follow a complete result column. */
static const char *const column_end_words[] = {
    "FROM", "WHERE", "LIMIT", "ORDER", "GROUP", "HAVING",
    "UNION", "INTO", "WINDOW", "FOR", "LOCK", NULL,
};

/* True when tokens first..last (a @@var or @var) form a whole result
 * column without an alias, so it must be labelled with its MySQL name
 * (clients such as Connector/J and the mysql CLI look columns up by that
 * label). */
static bool
needs_label(const struct ha_lex *lx, size_t first, size_t last, int depth)
{
    size_t p = ha_lex_prev(lx, first), n = ha_lex_next(lx, last);

    if (depth != 0 || p == SIZE_MAX)
        return false;
    if (!ha_lex_is_word(lx, p, "SELECT") &&
        !ha_lex_is_word(lx, p, "DISTINCT") && !ha_lex_is_punct(lx, p, ','))
        return false;
    if (n >= lx->n || ha_lex_is_punct(lx, n, ',') ||
        ha_lex_is_punct(lx, n, ';'))
        return true;
    for (size_t k = 0; column_end_words[k] != NULL; k++)
        if (ha_lex_is_word(lx, n, column_end_words[k]))
            return true;
    return false;
}

/* Appends " AS `<bytes from..to of the input>`". */
static void
emit_label(struct ha_buf *out, const char *s, size_t from, size_t to)
{
    ha_buf_append_str(out, " AS `");
    for (size_t k = from; k < to; k++) {
        if (s[k] == '`')
            ha_buf_append_u8(out, '`');
        ha_buf_append_u8(out, (uint8_t)s[k]);
    }
    ha_buf_append_u8(out, '`');
}

/* Appends the MySQL string literal tok as an SQLite literal: escapes are
 * decoded, quotes doubled, and NUL bytes spliced in with char(0) because
 * an SQLite literal cannot hold one. */
static void
emit_string(struct ha_buf *out, const char *s, const struct ha_tok *t)
{
    char q = s[t->start];
    size_t end = t->start + t->len - 1;

    ha_buf_append_u8(out, '\'');
    for (size_t i = t->start + 1; i < end; i++) {
        char c = s[i];
        if (c == '\\' && i + 1 < end) {
            char e = s[++i];
            switch (e) {
            case 'n': c = '\n'; break;
            case 'r': c = '\r'; break;
            case 't': c = '\t'; break;
            case 'b': c = '\b'; break;
            case 'Z': c = 0x1a; break;
            case '0':
                ha_buf_append_str(out, "'||char(0)||'");
                continue;
            case '%':
            case '_':
                /* MySQL keeps the backslash so LIKE sees an escape. */
                ha_buf_append_u8(out, '\\');
                c = e;
                break;
            default: c = e; break;
            }
        } else if (c == q && i + 1 < end && s[i + 1] == q) {
            i++; /* doubled quote */
        }
        if (c == '\'')
            ha_buf_append_u8(out, '\'');
        ha_buf_append_u8(out, (uint8_t)c);
    }
    ha_buf_append_u8(out, '\'');
}

/* Appends bytes from..to as a lower-cased variable name without quotes
 * (MySQL variable names are case-insensitive). */
static void
emit_var_name(struct ha_buf *out, const char *s, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        char c = s[i];
        if (c == '`' || c == '\'' || c == '"')
            continue;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        ha_buf_append_u8(out, (uint8_t)c);
    }
}

/* Token i is '@' directly followed by a name: a user variable. */
static bool
is_user_var(const struct ha_lex *lx, size_t i)
{
    const struct ha_tok *t = &lx->toks[i];

    return ha_lex_is_punct(lx, i, '@') && i + 1 < lx->n &&
           lx->toks[i + 1].start == t->start + 1 &&
           (lx->toks[i + 1].kind == HA_TOK_WORD ||
            lx->toks[i + 1].kind == HA_TOK_QUOTED_ID ||
            lx->toks[i + 1].kind == HA_TOK_STRING) &&
           /* not the @ of 'user'@'host' */
           !(i > 0 && lx->toks[i - 1].start + lx->toks[i - 1].len ==
                          t->start &&
             (lx->toks[i - 1].kind == HA_TOK_WORD ||
              lx->toks[i - 1].kind == HA_TOK_STRING ||
              lx->toks[i - 1].kind == HA_TOK_QUOTED_ID));
}

/* Token i is the `stats` of `stats.stats_x`: a qualifier to drop. */
static bool
is_stats_qualifier(const struct ha_lex *lx, size_t i)
{
    char name[8];

    if (!ha_lex_is_ident(lx, i) || i + 2 >= lx->n ||
        !ha_lex_is_punct(lx, i + 1, '.') ||
        (i > 0 && ha_lex_is_punct(lx, i - 1, '.')))
        return false;
    ha_lex_text(lx, i, name, sizeof(name));
    if (!ha_str_ieq(name, "stats") || !ha_lex_is_ident(lx, i + 2))
        return false;
    {
        char table[64];

        ha_lex_text(lx, i + 2, table, sizeof(table));
        return ha_catalog_is_stats_name(table);
    }
}

/* Token i is a bare global_variables (no schema before it, no column or
 * call after it, not an alias or a pragma's argument): it is emitted
 * temp.global_variables, the session's own instance (session.c), which
 * takes no lock of the shared scratch database. Named explicitly: the
 * disk layer's real table global_variables (schema "disk") must never
 * win the lookup, or an UPDATE would go to the read-only saved copy. */
static bool
is_bare_global_variables(const struct ha_lex *lx, size_t i)
{
    char name[24];
    size_t prev = ha_lex_prev(lx, i), next = ha_lex_next(lx, i);

    if (!ha_lex_is_ident(lx, i))
        return false;
    ha_lex_text(lx, i, name, sizeof(name));
    if (!ha_str_ieq(name, "global_variables"))
        return false;
    /* "(global_variables)" is PRAGMA table_info's argument. */
    if (prev < lx->n &&
        (ha_lex_is_punct(lx, prev, '.') || ha_lex_is_word(lx, prev, "AS") ||
         ha_lex_is_punct(lx, prev, '(')))
        return false;
    return !(next < lx->n && (ha_lex_is_punct(lx, next, '.') ||
                              ha_lex_is_punct(lx, next, '(')));
}

/* Token i is "main" in front of one of heapadmin's tables
 * (main.global_variables): emitted "temp", the session's own instance,
 * which takes no lock of the shared scratch database. */
static bool
is_main_of_table(const struct ha_lex *lx, size_t i)
{
    size_t dot = ha_lex_next(lx, i), t, prev = ha_lex_prev(lx, i);
    const struct ha_catalog_table *c;
    char name[64];

    if (!ha_lex_is_word(lx, i, "MAIN") || dot >= lx->n ||
        !ha_lex_is_punct(lx, dot, '.') ||
        (prev < lx->n && ha_lex_is_punct(lx, prev, '.')))
        return false;
    t = ha_lex_next(lx, dot);
    if (t >= lx->n || !ha_lex_is_ident(lx, t))
        return false;
    ha_lex_text(lx, t, name, sizeof(name));
    c = ha_catalog_find(name);
    return c != NULL && c->module;
}

/* A result column being emitted: where it started and whether it needs
 * its MySQL label because a rewrite changed its text. */
struct column {
    bool in_list;       /* inside a SELECT list at depth 0 */
    size_t first;       /* first significant token, or SIZE_MAX */
    size_t last;        /* last significant token so far */
    bool rewritten;     /* holds @@var or @var */
    bool labelled;      /* has AS, or the rewrite labelled it */
};

static bool
is_column_end_word(const struct ha_lex *lx, size_t i)
{
    for (size_t k = 0; column_end_words[k] != NULL; k++)
        if (ha_lex_is_word(lx, i, column_end_words[k]))
            return true;
    return false;
}

/* Ends the current column: an expression a rewrite changed gets its
 * MySQL label (SELECT @@a + 1 is column `@@a + 1` there). */
static void
column_end(const struct ha_lex *lx, struct column *col, struct ha_buf *out)
{
    if (col->in_list && col->first != SIZE_MAX && col->rewritten &&
        !col->labelled)
        emit_label(out, lx->s, lx->toks[col->first].start,
                   lx->toks[col->last].start + lx->toks[col->last].len);
    col->first = SIZE_MAX;
    col->rewritten = col->labelled = false;
}

/* Tracks SELECT-list columns at depth 0 before token i is emitted. */
static void
column_track(const struct ha_lex *lx, size_t i, int depth, struct column *col,
             struct ha_buf *out)
{
    if (!ha_lex_is_significant(&lx->toks[i]))
        return;
    if (depth != 0) {
        if (col->in_list && col->first != SIZE_MAX)
            col->last = i;
        return;
    }
    if (ha_lex_is_word(lx, i, "SELECT")) {
        column_end(lx, col, out);
        col->in_list = true;
        return;
    }
    if (!col->in_list)
        return;
    if (ha_lex_is_punct(lx, i, ',') || ha_lex_is_punct(lx, i, ';') ||
        ha_lex_is_punct(lx, i, ')') || is_column_end_word(lx, i)) {
        column_end(lx, col, out);
        if (!ha_lex_is_punct(lx, i, ','))
            col->in_list = false;
        return;
    }
    if ((ha_lex_is_word(lx, i, "DISTINCT") || ha_lex_is_word(lx, i, "ALL")) &&
        col->first == SIZE_MAX)
        return;
    if (ha_lex_is_word(lx, i, "AS"))
        col->labelled = true;
    if (col->first == SIZE_MAX)
        col->first = i;
    col->last = i;
}

void
ha_emit_sql(const struct ha_lex *lx, size_t from, size_t to,
                struct ha_buf *out)
{
    const char *sql = lx->s;
    struct column col = {false, SIZE_MAX, 0, false, false};
    int depth = 0;

    if (to > lx->n)
        to = lx->n;
    for (size_t i = from; i < to; i++) {
        const struct ha_tok *t = &lx->toks[i];

        column_track(lx, i, depth, &col, out);

        switch (t->kind) {
        case HA_TOK_EXEC_OPEN:
        case HA_TOK_EXEC_CLOSE:
            ha_buf_append_u8(out, ' ');
            break;
        case HA_TOK_HASH_COMMENT:
            ha_buf_append_str(out, "--");
            ha_buf_append(out, sql + t->start + 1, t->len - 1);
            break;
        case HA_TOK_STRING:
            emit_string(out, sql, t);
            break;
        case HA_TOK_SYSVAR:
            ha_buf_append_str(out, "ha_sysvar('");
            emit_var_name(out, sql, t->name_off, t->start + t->len);
            ha_buf_append_str(out, "')");
            col.rewritten = true;
            if (needs_label(lx, i, i, depth)) {
                emit_label(out, sql, t->start, t->start + t->len);
                col.labelled = true;
            }
            break;
        case HA_TOK_WORD:
        case HA_TOK_QUOTED_ID:
            if (is_stats_qualifier(lx, i)) {
                i++; /* and the '.' */
                break;
            }
            if (is_bare_global_variables(lx, i))
                ha_buf_append_str(out, "temp.");
            if (is_main_of_table(lx, i)) {
                /* main.<one of heapadmin's tables>: the session's own,
                 * as for a bare name. */
                ha_buf_append_str(out, "temp");
                break;
            }
            if (ha_lex_is_word(lx, i, "LIMIT")) {
                /* LIMIT a, b  ->  LIMIT b OFFSET a */
                size_t a = ha_lex_next(lx, i), c = ha_lex_next(lx, a),
                       b = ha_lex_next(lx, c);
                if (b < to && ha_lex_is_punct(lx, c, ',') &&
                    (lx->toks[a].kind == HA_TOK_WORD ||
                     ha_lex_is_punct(lx, a, '?')) &&
                    (lx->toks[b].kind == HA_TOK_WORD ||
                     ha_lex_is_punct(lx, b, '?'))) {
                    ha_buf_append_str(out, "LIMIT ");
                    ha_buf_append(out, sql + lx->toks[b].start,
                                  lx->toks[b].len);
                    ha_buf_append_str(out, " OFFSET ");
                    ha_buf_append(out, sql + lx->toks[a].start,
                                  lx->toks[a].len);
                    i = b;
                    break;
                }
            }
            ha_buf_append(out, sql + t->start, t->len);
            break;
        case HA_TOK_PUNCT:
            if (is_user_var(lx, i)) {
                const struct ha_tok *nt = &lx->toks[i + 1];
                ha_buf_append_str(out, "ha_uservar('");
                emit_var_name(out, sql, nt->start, nt->start + nt->len);
                ha_buf_append_str(out, "')");
                col.rewritten = true;
                if (needs_label(lx, i, i + 1, depth)) {
                    emit_label(out, sql, t->start, nt->start + nt->len);
                    col.labelled = true;
                }
                if (col.in_list && depth == 0)
                    col.last = i + 1;
                i++;
                break;
            }
            if (sql[t->start] == '(')
                depth++;
            else if (sql[t->start] == ')' && depth > 0)
                depth--;
            ha_buf_append(out, sql + t->start, t->len);
            break;
        default:
            ha_buf_append(out, sql + t->start, t->len);
            break;
        }
    }
    if (to == lx->n)
        column_end(lx, &col, out);
}
