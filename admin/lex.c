/* SPDX-License-Identifier: MIT
 *
 * MySQL statement lexer (see lex.h): one pass over the bytes, one token
 * per run of whitespace, comment, quoted text, word, @@variable or other
 * byte. Versioned comments (slash-star-!NNNNN) open a run whose body is
 * lexed as code when the version is at most the server's, so their
 * statements are seen by the classifier like any other.
 */
#include "admin/lex.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/util.h"

static bool
is_word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '$' || c >= 0x80;
}

static int
push(struct ha_lex *lx, enum ha_tok_kind kind, size_t start, size_t len)
{
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 64;
        struct ha_tok *t = realloc(lx->toks, cap * sizeof(*t));
        if (t == NULL)
            return -1;
        lx->toks = t;
        lx->cap = cap;
    }
    lx->toks[lx->n].kind = kind;
    lx->toks[lx->n].start = start;
    lx->toks[lx->n].len = len;
    lx->toks[lx->n].name_off = 0;
    lx->n++;
    return 0;
}

/* Length of a quoted run starting at i (the opening quote q); MySQL allows
 * both doubling and backslash escapes (backticks: doubling only). Returns 0
 * if the quote is not closed. */
static size_t
quoted_len(const char *s, size_t len, size_t i, char q)
{
    size_t j = i + 1;

    while (j < len) {
        if (s[j] == '\\' && q != '`') {
            j += 2;
            continue;
        }
        if (s[j] == q) {
            if (j + 1 < len && s[j + 1] == q) {
                j += 2;
                continue;
            }
            return j + 1 - i;
        }
        j++;
    }
    return 0;
}

static _Thread_local unsigned long runs;

unsigned long
ha_lex_runs(void)
{
    return runs;
}

void
ha_lex_view(const struct ha_lex *lx, size_t from, size_t to, size_t base,
            struct ha_lex *view)
{
    if (to > lx->n)
        to = lx->n;
    if (from > to)
        from = to;
    memset(view, 0, sizeof(*view));
    view->s = lx->s;
    view->toks = lx->toks + from;
    view->n = to - from;
    view->len = to < lx->n ? lx->toks[to].start : lx->len;
    view->base = base;
}

static int lex_text(struct ha_lex *lx, const char *s, size_t len, char *err,
                    size_t errlen);

int
ha_lex_run(struct ha_lex *lx, const char *s, size_t len, char *err,
           size_t errlen)
{
    runs++;
    return lex_text(lx, s, len, err, errlen);
}

/* The lexer proper; ha_lex_run() counts, the trivia check does not (it
 * reads SQLite's leftover of our own output, not a statement). */
static int
lex_text(struct ha_lex *lx, const char *s, size_t len, char *err,
         size_t errlen)
{
    size_t i = 0;

    memset(lx, 0, sizeof(*lx));
    lx->s = s;
    lx->len = len;
    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        size_t j;

        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
            c == '\v') {
            for (j = i; j < len && strchr(" \t\n\r\f\v", s[j]) && s[j]; j++)
                ;
            if (push(lx, HA_TOK_SPACE, i, j - i) != 0)
                goto oom;
            i = j;
        } else if (c == '#' ||
                   (c == '-' && i + 1 < len && s[i + 1] == '-')) {
            for (j = i; j < len && s[j] != '\n'; j++)
                ;
            if (push(lx, c == '#' ? HA_TOK_HASH_COMMENT : HA_TOK_COMMENT, i,
                     j - i) != 0)
                goto oom;
            i = j;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            if (i + 2 < len && s[i + 2] == '!') {
                /* MySQL versioned comment: /+!NNNNN body +/ runs the body
                 * when the server is at least version NNNNN. */
                long ver = 0;
                size_t digits = 0;
                j = i + 3;
                while (j < len && s[j] >= '0' && s[j] <= '9' && digits < 6) {
                    ver = ver * 10 + (s[j] - '0');
                    j++;
                    digits++;
                }
                if (digits == 0 || ver <= HA_LEX_SERVER_VERSION_ID) {
                    if (push(lx, HA_TOK_EXEC_OPEN, i, j - i) != 0)
                        goto oom;
                    lx->exec_depth++;
                    i = j;
                    continue;
                }
            }
            for (j = i + 2; j + 1 < len && !(s[j] == '*' && s[j + 1] == '/');
                 j++)
                ;
            if (j + 1 >= len) {
                ha_err_set(err, errlen,
                           "unterminated /* comment starting at offset %zu",
                           i);
                return -1;
            }
            if (push(lx, HA_TOK_COMMENT, i, j + 2 - i) != 0)
                goto oom;
            i = j + 2;
        } else if (c == '*' && i + 1 < len && s[i + 1] == '/' &&
                   lx->exec_depth > 0) {
            if (push(lx, HA_TOK_EXEC_CLOSE, i, 2) != 0)
                goto oom;
            lx->exec_depth--;
            i += 2;
        } else if (c == '\'' || c == '"' || c == '`') {
            size_t n = quoted_len(s, len, i, (char)c);
            if (n == 0) {
                ha_err_set(err, errlen,
                           "unterminated %s starting at offset %zu",
                           c == '`' ? "`quoted identifier`"
                                    : "string literal",
                           i);
                return -1;
            }
            if (push(lx, c == '`' ? HA_TOK_QUOTED_ID : HA_TOK_STRING, i,
                     n) != 0)
                goto oom;
            i += n;
        } else if (c == '@' && i + 1 < len && s[i + 1] == '@') {
            /* @@name or @@scope.name; the name may be backquoted. */
            size_t name;
            j = i + 2;
            name = j;
            for (;;) {
                if (j < len && s[j] == '`') {
                    size_t n = quoted_len(s, len, j, '`');
                    if (n == 0)
                        break;
                    j += n;
                } else {
                    while (j < len && is_word_byte((unsigned char)s[j]))
                        j++;
                }
                if (j + 1 < len && s[j] == '.' &&
                    (is_word_byte((unsigned char)s[j + 1]) ||
                     s[j + 1] == '`')) {
                    j++;
                    name = j;
                    continue;
                }
                break;
            }
            /* ProxySQL-style module variables: @@jemalloc-prof_active,
             * @@admin-version ('-' is a minus anywhere else). */
            if (j + 1 < len && s[j] == '-' &&
                is_word_byte((unsigned char)s[j + 1]) &&
                ((j - name == 5 && strncasecmp(s + name, "admin", 5) == 0) ||
                 (j - name == 8 &&
                  strncasecmp(s + name, "jemalloc", 8) == 0)))
                for (j++; j < len && is_word_byte((unsigned char)s[j]); j++)
                    ;
            if (j == i + 2) {
                if (push(lx, HA_TOK_PUNCT, i, 1) != 0)
                    goto oom;
                i++;
                continue;
            }
            if (push(lx, HA_TOK_SYSVAR, i, j - i) != 0)
                goto oom;
            lx->toks[lx->n - 1].name_off = name;
            i = j;
        } else if (is_word_byte(c)) {
            for (j = i; j < len && is_word_byte((unsigned char)s[j]); j++)
                ;
            /* Keep decimal numbers such as 1.5 in one token. */
            if (c >= '0' && c <= '9' && j + 1 < len && s[j] == '.' &&
                s[j + 1] >= '0' && s[j + 1] <= '9')
                for (j++; j < len && is_word_byte((unsigned char)s[j]); j++)
                    ;
            if (push(lx, HA_TOK_WORD, i, j - i) != 0)
                goto oom;
            i = j;
        } else {
            if (push(lx, HA_TOK_PUNCT, i, 1) != 0)
                goto oom;
            i++;
        }
    }
    if (lx->exec_depth > 0) {
        ha_err_set(err, errlen, "unterminated /*! comment");
        return -1;
    }
    return 0;
oom:
    ha_err_set(err, errlen, "out of memory");
    return -1;
}

void
ha_lex_free(struct ha_lex *lx)
{
    free(lx->toks);
    lx->toks = NULL;
    lx->n = lx->cap = 0;
}

/* ------------------------------------------------------------------ */
/* Token helpers                                                        */
/* ------------------------------------------------------------------ */

bool
ha_lex_is_significant(const struct ha_tok *t)
{
    return t->kind != HA_TOK_SPACE && t->kind != HA_TOK_COMMENT &&
           t->kind != HA_TOK_HASH_COMMENT && t->kind != HA_TOK_EXEC_OPEN &&
           t->kind != HA_TOK_EXEC_CLOSE;
}

size_t
ha_lex_next(const struct ha_lex *lx, size_t i)
{
    for (i++; i < lx->n; i++)
        if (ha_lex_is_significant(&lx->toks[i]))
            break;
    return i < lx->n ? i : lx->n;
}

size_t
ha_lex_prev(const struct ha_lex *lx, size_t i)
{
    if (i > lx->n)
        i = lx->n;
    while (i-- > 0)
        if (ha_lex_is_significant(&lx->toks[i]))
            return i;
    return SIZE_MAX;
}

bool
ha_lex_is_word(const struct ha_lex *lx, size_t i, const char *word)
{
    const struct ha_tok *t;
    size_t wl = strlen(word);

    if (i >= lx->n)
        return false;
    t = &lx->toks[i];
    if (t->kind != HA_TOK_WORD || t->len != wl)
        return false;
    for (size_t k = 0; k < wl; k++) {
        char a = lx->s[t->start + k];
        if (a >= 'a' && a <= 'z')
            a = (char)(a - 32);
        if (a != word[k])
            return false;
    }
    return true;
}

bool
ha_lex_is_punct(const struct ha_lex *lx, size_t i, char c)
{
    return i < lx->n && lx->toks[i].kind == HA_TOK_PUNCT &&
           lx->s[lx->toks[i].start] == c;
}

bool
ha_lex_is_ident(const struct ha_lex *lx, size_t i)
{
    return i < lx->n && (lx->toks[i].kind == HA_TOK_WORD ||
                         lx->toks[i].kind == HA_TOK_QUOTED_ID);
}

void
ha_lex_text(const struct ha_lex *lx, size_t i, char *buf, size_t buflen)
{
    const struct ha_tok *t;
    size_t o = 0;

    if (buflen == 0)
        return;
    buf[0] = '\0';
    if (i >= lx->n)
        return;
    t = &lx->toks[i];
    if (t->kind == HA_TOK_QUOTED_ID || t->kind == HA_TOK_STRING) {
        char q = lx->s[t->start];
        size_t end = t->start + t->len - 1;
        for (size_t k = t->start + 1; k < end && o + 1 < buflen; k++) {
            char c = lx->s[k];
            if (c == q && k + 1 < end && lx->s[k + 1] == q) {
                k++;
            } else if (c == '\\' && q != '`' && k + 1 < end) {
                c = lx->s[++k];
                if (c == 'n')
                    c = '\n';
                else if (c == 't')
                    c = '\t';
                else if (c == 'r')
                    c = '\r';
                else if (c == '0')
                    c = ' ';
            }
            buf[o++] = c;
        }
    } else {
        for (size_t k = 0; k < t->len && o + 1 < buflen; k++)
            buf[o++] = lx->s[t->start + k];
    }
    buf[o] = '\0';
}

bool
ha_lex_only_trivia(const char *s, size_t len)
{
    struct ha_lex lx;
    bool trivia = lex_text(&lx, s, len, NULL, 0) == 0;

    for (size_t i = 0; trivia && i < lx.n; i++)
        trivia = !ha_lex_is_significant(&lx.toks[i]) ||
                 ha_lex_is_punct(&lx, i, ';');
    ha_lex_free(&lx);
    return trivia;
}
