/* SPDX-License-Identifier: MIT
 *
 * SET statement parser (see setvar.h): walks the lexer's tokens, so a
 * value such as 'a,b' or CONCAT(@@sql_mode, ',X') is never cut at its
 * comma, and rewrites each value expression with the dialect emitter so
 * SQLite can evaluate it.
 */
#include "admin/setvar.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/dialect.h"
#include "admin/emit.h"
#include "admin/lex.h"
#include "core/util.h"

static void
lower(char *s)
{
    for (; *s != '\0'; s++)
        if (*s >= 'A' && *s <= 'Z')
            *s = (char)(*s + 32);
}

static int
add_item(struct ha_setvar *v, enum ha_set_scope scope, const char *name,
         enum ha_set_value kind, const char *value, size_t vlen)
{
    struct ha_set_item *items, *it;

    items = realloc(v->items, (v->n + 1) * sizeof(*items));
    if (items == NULL)
        return -1;
    v->items = items;
    it = &items[v->n];
    memset(it, 0, sizeof(*it));
    it->scope = scope;
    ha_strlcpy(it->name, name, sizeof(it->name));
    lower(it->name);
    it->is_module = scope != HA_SET_USER && strchr(it->name, '-') != NULL;
    it->kind = kind;
    if (value != NULL) {
        it->value = malloc(vlen + 1);
        if (it->value == NULL)
            return -1;
        memcpy(it->value, value, vlen);
        it->value[vlen] = '\0';
    }
    v->n++;
    return 0;
}

/* Appends to name the '-'-joined words directly after token *i (no
 * spaces between: jemalloc-prof_active), advancing *i to the last. */
static void
dashed_tail(const struct ha_lex *lx, size_t *i, char *name, size_t len)
{
    size_t j = *i;

    while (j + 2 < lx->n && ha_lex_is_punct(lx, j + 1, '-') &&
           lx->toks[j + 1].start == lx->toks[j].start + lx->toks[j].len &&
           lx->toks[j + 2].kind == HA_TOK_WORD &&
           lx->toks[j + 2].start == lx->toks[j + 1].start + 1) {
        char part[128];
        size_t n = strlen(name);
        ha_lex_text(lx, j + 2, part, sizeof(part));
        if (n + 1 + strlen(part) < len) {
            name[n] = '-';
            ha_strlcpy(name + n + 1, part, len - n - 1);
        }
        j += 2;
    }
    *i = j;
}

/* Index just past the value starting at i: the next ',' or ';' outside
 * parentheses, or lx->n. */
static size_t
value_end(const struct ha_lex *lx, size_t i)
{
    int depth = 0;

    for (; i < lx->n; i = ha_lex_next(lx, i)) {
        if (ha_lex_is_punct(lx, i, '('))
            depth++;
        else if (ha_lex_is_punct(lx, i, ')') && depth > 0)
            depth--;
        else if (depth == 0 &&
                 (ha_lex_is_punct(lx, i, ',') || ha_lex_is_punct(lx, i, ';')))
            break;
    }
    return i;
}

static bool
at_end(const struct ha_lex *lx, size_t i)
{
    while (i < lx->n && ha_lex_is_punct(lx, i, ';'))
        i = ha_lex_next(lx, i);
    return i >= lx->n;
}

/* A bare word value (ON, utf8mb4, `x`), or -1 when it is an expression. */
static bool
is_bare_word(const struct ha_lex *lx, size_t i, size_t end)
{
    const struct ha_tok *t = &lx->toks[i];
    char c;

    if (ha_lex_next(lx, i) != end)
        return false;
    if (t->kind == HA_TOK_QUOTED_ID)
        return true;
    if (t->kind != HA_TOK_WORD || ha_lex_is_word(lx, i, "NULL"))
        return false;
    c = lx->s[t->start];
    return !(c >= '0' && c <= '9');
}

/* SET NAMES ... / SET CHARACTER SET ...: i is the charset token. */
static int
parse_names(const struct ha_lex *lx, size_t i, bool names,
            struct ha_setvar *v, size_t *bad)
{
    char cs[64], coll[64] = "";
    size_t j = ha_lex_next(lx, i);
    bool dflt = ha_lex_is_word(lx, i, "DEFAULT");
    enum ha_set_value kind = dflt ? HA_SET_DEFAULT : HA_SET_WORD;

    if (!ha_lex_is_ident(lx, i) && (i >= lx->n ||
                                    lx->toks[i].kind != HA_TOK_STRING)) {
        *bad = i;
        return -1;
    }
    ha_lex_text(lx, i, cs, sizeof(cs));
    if (names && ha_lex_is_word(lx, j, "COLLATE")) {
        size_t k = ha_lex_next(lx, j);
        if (!ha_lex_is_ident(lx, k) &&
            (k >= lx->n || lx->toks[k].kind != HA_TOK_STRING)) {
            *bad = k;
            return -1;
        }
        ha_lex_text(lx, k, coll, sizeof(coll));
        j = ha_lex_next(lx, k);
    }
    if (!at_end(lx, j)) {
        *bad = j;
        return -1;
    }
    static const char *const vars[] = {"character_set_client",
                                       "character_set_results",
                                       "character_set_connection"};
    for (size_t k = 0; k < (names ? 3u : 2u); k++)
        if (add_item(v, HA_SET_SESSION, vars[k], kind, dflt ? NULL : cs,
                     strlen(cs)) != 0)
            return -2;
    if (coll[0] != '\0' && add_item(v, HA_SET_SESSION, "collation_connection",
                                    HA_SET_WORD, coll, strlen(coll)) != 0)
        return -2;
    return 0;
}

/* [SESSION|GLOBAL] TRANSACTION characteristic [, ...]: i is the token
 * after TRANSACTION. */
static int
parse_transaction(const struct ha_lex *lx, size_t i, bool scoped,
                  enum ha_set_scope scope, struct ha_setvar *v, size_t *bad)
{
    for (;;) {
        size_t a = ha_lex_next(lx, i), b = ha_lex_next(lx, a),
               c = ha_lex_next(lx, b), d = ha_lex_next(lx, c);
        const char *level = NULL;

        if (ha_lex_is_word(lx, i, "ISOLATION") &&
            ha_lex_is_word(lx, a, "LEVEL")) {
            if (ha_lex_is_word(lx, b, "SERIALIZABLE")) {
                level = "SERIALIZABLE";
                i = c;
            } else if (ha_lex_is_word(lx, b, "REPEATABLE") &&
                       ha_lex_is_word(lx, c, "READ")) {
                level = "REPEATABLE-READ";
                i = d;
            } else if (ha_lex_is_word(lx, b, "READ") &&
                       ha_lex_is_word(lx, c, "COMMITTED")) {
                level = "READ-COMMITTED";
                i = d;
            } else if (ha_lex_is_word(lx, b, "READ") &&
                       ha_lex_is_word(lx, c, "UNCOMMITTED")) {
                level = "READ-UNCOMMITTED";
                i = d;
            } else {
                *bad = b;
                return -1;
            }
            if (scoped && add_item(v, scope, "transaction_isolation",
                                   HA_SET_WORD, level, strlen(level)) != 0)
                return -2;
        } else if (ha_lex_is_word(lx, i, "READ") &&
                   (ha_lex_is_word(lx, a, "ONLY") ||
                    ha_lex_is_word(lx, a, "WRITE"))) {
            const char *ro = ha_lex_is_word(lx, a, "ONLY") ? "ON" : "OFF";
            if (scoped && add_item(v, scope, "transaction_read_only",
                                   HA_SET_WORD, ro, strlen(ro)) != 0)
                return -2;
            i = b;
        } else {
            *bad = i;
            return -1;
        }
        if (!ha_lex_is_punct(lx, i, ','))
            break;
        i = ha_lex_next(lx, i);
    }
    if (!at_end(lx, i)) {
        *bad = i;
        return -1;
    }
    v->transaction_once = !scoped;
    return 0;
}

static int
parse(const struct ha_lex *lx, struct ha_setvar *v, size_t *bad)
{
    enum ha_set_scope scope = HA_SET_SESSION;
    bool scoped = false;
    size_t i = ha_lex_next(lx, ha_lex_next(lx, SIZE_MAX)); /* past SET */

    if (ha_lex_is_word(lx, i, "NAMES"))
        return parse_names(lx, ha_lex_next(lx, i), true, v, bad);
    if (ha_lex_is_word(lx, i, "CHARSET"))
        return parse_names(lx, ha_lex_next(lx, i), false, v, bad);
    if (ha_lex_is_word(lx, i, "CHARACTER") &&
        ha_lex_is_word(lx, ha_lex_next(lx, i), "SET"))
        return parse_names(lx, ha_lex_next(lx, ha_lex_next(lx, i)), false, v,
                           bad);
    for (;;) {
        char name[128];
        enum ha_set_scope item_scope;
        size_t end;

        if (ha_lex_is_word(lx, i, "GLOBAL") ||
            ha_lex_is_word(lx, i, "PERSIST") ||
            ha_lex_is_word(lx, i, "PERSIST_ONLY")) {
            scope = HA_SET_GLOBAL;
            scoped = true;
            i = ha_lex_next(lx, i);
        } else if (ha_lex_is_word(lx, i, "SESSION") ||
                   ha_lex_is_word(lx, i, "LOCAL")) {
            scope = HA_SET_SESSION;
            scoped = true;
            i = ha_lex_next(lx, i);
        }
        if (v->n == 0 && ha_lex_is_word(lx, i, "TRANSACTION"))
            return parse_transaction(lx, ha_lex_next(lx, i), scoped, scope, v,
                                     bad);
        item_scope = scope;
        if (i < lx->n && lx->toks[i].kind == HA_TOK_SYSVAR) {
            const struct ha_tok *t = &lx->toks[i];
            size_t k = 0;
            if (t->name_off > t->start + 2 &&
                (t->name_off - t->start - 3 == 6) &&
                strncasecmp(lx->s + t->start + 2, "global", 6) == 0)
                item_scope = HA_SET_GLOBAL;
            else
                item_scope = HA_SET_SESSION;
            for (size_t p = t->name_off;
                 p < t->start + t->len && k + 1 < sizeof(name); p++)
                if (lx->s[p] != '`')
                    name[k++] = lx->s[p];
            name[k] = '\0';
            dashed_tail(lx, &i, name, sizeof(name));
        } else if (ha_lex_is_punct(lx, i, '@') && i + 1 < lx->n &&
                   lx->toks[i + 1].start == lx->toks[i].start + 1 &&
                   lx->toks[i + 1].kind != HA_TOK_SPACE) {
            item_scope = HA_SET_USER;
            ha_lex_text(lx, i + 1, name, sizeof(name));
            i++;
        } else if (ha_lex_is_ident(lx, i)) {
            ha_lex_text(lx, i, name, sizeof(name));
            if (lx->toks[i].kind == HA_TOK_WORD)
                dashed_tail(lx, &i, name, sizeof(name));
        } else {
            *bad = i;
            return -1;
        }
        i = ha_lex_next(lx, i);
        if (ha_lex_is_punct(lx, i, ':') && i + 1 < lx->n &&
            ha_lex_is_punct(lx, i + 1, '='))
            i++;
        else if (!ha_lex_is_punct(lx, i, '=')) {
            *bad = i;
            return -1;
        }
        i = ha_lex_next(lx, i);
        end = value_end(lx, i);
        if (i >= end) {
            *bad = i;
            return -1;
        }
        if (ha_lex_is_word(lx, i, "DEFAULT") && ha_lex_next(lx, i) == end) {
            if (add_item(v, item_scope, name, HA_SET_DEFAULT, NULL, 0) != 0)
                return -2;
        } else if (is_bare_word(lx, i, end)) {
            char word[256];
            ha_lex_text(lx, i, word, sizeof(word));
            if (add_item(v, item_scope, name, HA_SET_WORD, word,
                         strlen(word)) != 0)
                return -2;
        } else {
            struct ha_buf expr = HA_BUF_INIT;
            int rc;
            ha_emit_sql(lx, i, ha_lex_prev(lx, end) + 1, &expr);
            rc = ha_buf_failed(&expr)
                     ? -1
                     : add_item(v, item_scope, name, HA_SET_EXPR,
                                (const char *)expr.data, expr.len);
            ha_buf_free(&expr);
            if (rc != 0)
                return -2;
        }
        i = end;
        if (!ha_lex_is_punct(lx, i, ','))
            break;
        i = ha_lex_next(lx, i);
    }
    if (!at_end(lx, i)) {
        *bad = i;
        return -1;
    }
    return 0;
}

int
ha_setvar_parse(const char *sql, size_t len, struct ha_setvar *out,
                char *err, size_t errlen)
{
    struct ha_lex lx;
    int rc;

    memset(out, 0, sizeof(*out));
    if (ha_lex_run(&lx, sql, len, err, errlen) != 0) {
        ha_lex_free(&lx);
        return -1;
    }
    rc = ha_setvar_parse_lexed(&lx, out, err, errlen);
    ha_lex_free(&lx);
    return rc;
}

int
ha_setvar_parse_lexed(const struct ha_lex *lx, struct ha_setvar *out,
                      char *err, size_t errlen)
{
    size_t bad = 0, off;
    int rc;

    memset(out, 0, sizeof(*out));
    rc = parse(lx, out, &bad);
    if (rc == -1) {
        off = bad < lx->n ? lx->toks[bad].start : lx->len;
        /* Quoted and counted from the statement's own start. */
        ha_dialect_syntax_error(lx->s + lx->base, lx->len - lx->base,
                                off - lx->base, err, errlen);
    } else if (rc == -2) {
        ha_err_set(err, errlen, "out of memory");
    }
    return rc == 0 ? 0 : -1;
}

void
ha_setvar_free(struct ha_setvar *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->items[i].value);
    free(v->items);
    v->items = NULL;
    v->n = 0;
}
