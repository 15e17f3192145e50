/* SPDX-License-Identifier: MIT
 *
 * MySQL dialect -> SQLite rewriter (see dialect.h). Two passes: a lexer
 * turns the statement into tokens (so quotes, backticks and comments are
 * never mistaken for code), then an emitter writes SQLite SQL, rewriting
 * the few constructs SQLite does not share with MySQL.
 */
#include "dialect.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

enum tok_kind {
    TOK_SPACE,
    TOK_COMMENT,      /* -- ..., /+ ... +/ kept as is */
    TOK_HASH_COMMENT, /* # ... (MySQL only) */
    TOK_EXEC_OPEN,    /* /+!NNNNN opening a comment whose body runs */
    TOK_EXEC_CLOSE,   /* the +/ closing it */
    TOK_STRING,       /* '...' or "..." (MySQL string literals) */
    TOK_QUOTED_ID,    /* `...` */
    TOK_WORD,         /* identifier, keyword or number */
    TOK_SYSVAR,       /* @@[scope.]name */
    TOK_PUNCT         /* any other single byte */
};

struct tok {
    enum tok_kind kind;
    size_t start;     /* offset in the input */
    size_t len;       /* bytes in the input */
    size_t name_off;  /* TOK_SYSVAR: offset of the bare variable name */
};

struct lexer {
    const char *s;
    size_t len;
    struct tok *toks;
    size_t n, cap;
    int exec_depth;   /* open /+! comments whose bodies are being lexed */
};

static bool
is_word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '_' || c == '$' || c >= 0x80;
}

static int
push(struct lexer *lx, enum tok_kind kind, size_t start, size_t len)
{
    if (lx->n == lx->cap) {
        size_t cap = lx->cap ? lx->cap * 2 : 64;
        struct tok *t = realloc(lx->toks, cap * sizeof(*t));
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

static int
lex(struct lexer *lx, char *err, size_t errlen)
{
    const char *s = lx->s;
    size_t len = lx->len, i = 0;

    while (i < len) {
        unsigned char c = (unsigned char)s[i];
        size_t j;

        if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' ||
            c == '\v') {
            for (j = i; j < len && strchr(" \t\n\r\f\v", s[j]) && s[j]; j++)
                ;
            if (push(lx, TOK_SPACE, i, j - i) != 0)
                goto oom;
            i = j;
        } else if (c == '#' ||
                   (c == '-' && i + 1 < len && s[i + 1] == '-')) {
            for (j = i; j < len && s[j] != '\n'; j++)
                ;
            if (push(lx, c == '#' ? TOK_HASH_COMMENT : TOK_COMMENT, i,
                     j - i) != 0)
                goto oom;
            i = j;
        } else if (c == '/' && i + 1 < len && s[i + 1] == '*') {
            if (i + 2 < len && s[i + 2] == '!') {
                /* MySQL versioned comment: /+!NNNNN body +/ runs the body
                 * when the server is at least version NNNNN. */
                long ver = 0;
                j = i + 3;
                size_t digits = 0;
                while (j < len && s[j] >= '0' && s[j] <= '9' && digits < 6) {
                    ver = ver * 10 + (s[j] - '0');
                    j++;
                    digits++;
                }
                if (digits == 0 || ver <= HA_DIALECT_SERVER_VERSION_ID) {
                    if (push(lx, TOK_EXEC_OPEN, i, j - i) != 0)
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
            if (push(lx, TOK_COMMENT, i, j + 2 - i) != 0)
                goto oom;
            i = j + 2;
        } else if (c == '*' && i + 1 < len && s[i + 1] == '/' &&
                   lx->exec_depth > 0) {
            if (push(lx, TOK_EXEC_CLOSE, i, 2) != 0)
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
            if (push(lx, c == '`' ? TOK_QUOTED_ID : TOK_STRING, i, n) != 0)
                goto oom;
            i += n;
        } else if (c == '@' && i + 1 < len && s[i + 1] == '@') {
            /* @@name or @@scope.name; the name may be backquoted. */
            j = i + 2;
            size_t name = j;
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
            if (j == i + 2) {
                if (push(lx, TOK_PUNCT, i, 1) != 0)
                    goto oom;
                i++;
                continue;
            }
            if (push(lx, TOK_SYSVAR, i, j - i) != 0)
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
            if (push(lx, TOK_WORD, i, j - i) != 0)
                goto oom;
            i = j;
        } else {
            if (push(lx, TOK_PUNCT, i, 1) != 0)
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

/* ------------------------------------------------------------------ */
/* Emitter                                                              */
/* ------------------------------------------------------------------ */

static bool
is_significant(const struct tok *t)
{
    return t->kind != TOK_SPACE && t->kind != TOK_COMMENT &&
           t->kind != TOK_HASH_COMMENT && t->kind != TOK_EXEC_OPEN &&
           t->kind != TOK_EXEC_CLOSE;
}

/* Index of the next significant token after i, or n. */
static size_t
next_sig(const struct lexer *lx, size_t i)
{
    for (i++; i < lx->n; i++)
        if (is_significant(&lx->toks[i]))
            break;
    return i;
}

/* Index of the previous significant token before i, or SIZE_MAX. */
static size_t
prev_sig(const struct lexer *lx, size_t i)
{
    while (i-- > 0)
        if (is_significant(&lx->toks[i]))
            return i;
    return SIZE_MAX;
}

static bool
tok_is_word(const struct lexer *lx, size_t i, const char *word)
{
    const struct tok *t;
    size_t wl = strlen(word);

    if (i >= lx->n)
        return false;
    t = &lx->toks[i];
    if (t->kind != TOK_WORD || t->len != wl)
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

static bool
tok_is_punct(const struct lexer *lx, size_t i, char c)
{
    return i < lx->n && lx->toks[i].kind == TOK_PUNCT &&
           lx->s[lx->toks[i].start] == c;
}

/* Words that may follow a complete result column. */
static const char *const column_end_words[] = {
    "FROM", "WHERE", "LIMIT", "ORDER", "GROUP", "HAVING",
    "UNION", "INTO", "WINDOW", "FOR", "LOCK", NULL,
};

/* True when the @@var at i is a whole result column without an alias, so
 * it must be labelled with its MySQL name (clients such as Connector/J
 * and the mysql CLI look columns up by that label). */
static bool
sysvar_needs_label(const struct lexer *lx, size_t i, int depth)
{
    size_t p = prev_sig(lx, i), n = next_sig(lx, i);

    if (depth != 0 || p == SIZE_MAX)
        return false;
    if (!tok_is_word(lx, p, "SELECT") && !tok_is_word(lx, p, "DISTINCT") &&
        !tok_is_punct(lx, p, ','))
        return false;
    if (n >= lx->n || tok_is_punct(lx, n, ',') || tok_is_punct(lx, n, ';'))
        return true;
    for (size_t k = 0; column_end_words[k] != NULL; k++)
        if (tok_is_word(lx, n, column_end_words[k]))
            return true;
    return false;
}

/* Appends the MySQL string literal tok as an SQLite literal: escapes are
 * decoded, quotes doubled, and NUL bytes spliced in with char(0) because
 * an SQLite literal cannot hold one. */
static void
emit_string(struct ha_buf *out, const char *s, const struct tok *t)
{
    char q = s[t->start];
    size_t end = t->start + t->len - 1;
    bool spliced = false;

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
                spliced = true;
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
    (void)spliced;
}

/* Appends the bare variable name of a @@ token, without backquotes and
 * lower-cased (MySQL system variable names are case-insensitive). */
static void
emit_sysvar_name(struct ha_buf *out, const char *s, const struct tok *t)
{
    for (size_t i = t->name_off; i < t->start + t->len; i++) {
        char c = s[i];
        if (c == '`' || c == '\'')
            continue;
        if (c >= 'A' && c <= 'Z')
            c = (char)(c + 32);
        ha_buf_append_u8(out, (uint8_t)c);
    }
}

static void
classify(const struct lexer *lx, struct ha_dialect_result *res)
{
    size_t i = next_sig(lx, SIZE_MAX), j;

    res->kind = HA_STMT_OTHER;
    res->arg[0] = '\0';
    if (i >= lx->n || tok_is_punct(lx, i, ';')) {
        /* Only ';' and comments left: nothing to run. */
        for (j = i; j < lx->n; j = next_sig(lx, j))
            if (!tok_is_punct(lx, j, ';'))
                return;
        res->kind = HA_STMT_EMPTY;
        return;
    }
    j = next_sig(lx, i);
    if (tok_is_word(lx, i, "SET")) {
        res->kind = HA_STMT_SET;
    } else if (tok_is_word(lx, i, "USE") && j < lx->n) {
        const struct tok *t = &lx->toks[j];
        size_t off = t->start, n = t->len;
        if (t->kind == TOK_QUOTED_ID && n >= 2) {
            off++;
            n -= 2;
        }
        if (n >= sizeof(res->arg))
            n = sizeof(res->arg) - 1;
        memcpy(res->arg, lx->s + off, n);
        res->arg[n] = '\0';
        res->kind = HA_STMT_USE;
    } else if (tok_is_word(lx, i, "BEGIN") ||
               (tok_is_word(lx, i, "START") &&
                tok_is_word(lx, j, "TRANSACTION"))) {
        res->kind = HA_STMT_BEGIN;
    } else if (tok_is_word(lx, i, "COMMIT")) {
        res->kind = HA_STMT_COMMIT;
    } else if (tok_is_word(lx, i, "ROLLBACK")) {
        size_t k = tok_is_word(lx, j, "WORK") ? next_sig(lx, j) : j;
        if (!tok_is_word(lx, k, "TO"))
            res->kind = HA_STMT_ROLLBACK;
    }
}

int
ha_dialect_rewrite(const char *sql, size_t len, struct ha_buf *out,
                   struct ha_dialect_result *res, char *err, size_t errlen)
{
    struct lexer lx = {sql, len, NULL, 0, 0, 0};
    int depth = 0;

    if (lex(&lx, err, errlen) != 0) {
        free(lx.toks);
        return -1;
    }
    classify(&lx, res);
    for (size_t i = 0; i < lx.n; i++) {
        const struct tok *t = &lx.toks[i];

        switch (t->kind) {
        case TOK_EXEC_OPEN:
        case TOK_EXEC_CLOSE:
            ha_buf_append_u8(out, ' ');
            break;
        case TOK_HASH_COMMENT:
            ha_buf_append_str(out, "--");
            ha_buf_append(out, sql + t->start + 1, t->len - 1);
            break;
        case TOK_STRING:
            emit_string(out, sql, t);
            break;
        case TOK_SYSVAR:
            ha_buf_append_str(out, "ha_sysvar('");
            emit_sysvar_name(out, sql, t);
            ha_buf_append_str(out, "')");
            if (sysvar_needs_label(&lx, i, depth)) {
                ha_buf_append_str(out, " AS `");
                for (size_t k = t->start; k < t->start + t->len; k++) {
                    if (sql[k] == '`')
                        ha_buf_append_u8(out, '`');
                    ha_buf_append_u8(out, (uint8_t)sql[k]);
                }
                ha_buf_append_u8(out, '`');
            }
            break;
        case TOK_WORD:
            if (tok_is_word(&lx, i, "LIMIT")) {
                /* LIMIT a, b  ->  LIMIT b OFFSET a */
                size_t a = next_sig(&lx, i), c = next_sig(&lx, a),
                       b = next_sig(&lx, c);
                if (b < lx.n && tok_is_punct(&lx, c, ',') &&
                    (lx.toks[a].kind == TOK_WORD ||
                     tok_is_punct(&lx, a, '?')) &&
                    (lx.toks[b].kind == TOK_WORD ||
                     tok_is_punct(&lx, b, '?'))) {
                    ha_buf_append_str(out, "LIMIT ");
                    ha_buf_append(out, sql + lx.toks[b].start,
                                  lx.toks[b].len);
                    ha_buf_append_str(out, " OFFSET ");
                    ha_buf_append(out, sql + lx.toks[a].start,
                                  lx.toks[a].len);
                    i = b;
                    break;
                }
            }
            ha_buf_append(out, sql + t->start, t->len);
            break;
        case TOK_PUNCT:
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
    ha_buf_append_u8(out, '\0');
    free(lx.toks);
    if (ha_buf_failed(out)) {
        ha_err_set(err, errlen, "out of memory");
        return -1;
    }
    out->len--; /* the NUL is there but not counted */
    return 0;
}
