/* SPDX-License-Identifier: MIT
 *
 * MySQL statement lexer shared by the dialect layer (dialect.c, show.c,
 * setvar.c): turns statement text into tokens so quotes, backticks and
 * comments are never mistaken for code. Pure: no SQLite calls. Safe on
 * any input: reads only the len bytes given, and an unterminated quote or
 * comment is an error, not an overread.
 */
#ifndef HA_LEX_H
#define HA_LEX_H

#include <stdbool.h>
#include <stddef.h>

enum ha_tok_kind {
    HA_TOK_SPACE,
    HA_TOK_COMMENT,      /* -- ..., slash-star ... star-slash, kept as is */
    HA_TOK_HASH_COMMENT, /* # ... (MySQL only) */
    HA_TOK_EXEC_OPEN,    /* slash-star-!NNNNN opening a comment that runs */
    HA_TOK_EXEC_CLOSE,   /* the star-slash closing it */
    HA_TOK_STRING,       /* '...' or "..." (MySQL string literals) */
    HA_TOK_QUOTED_ID,    /* `...` */
    HA_TOK_WORD,         /* identifier, keyword or number */
    HA_TOK_SYSVAR,       /* @@[scope.]name */
    HA_TOK_PUNCT,        /* any other single byte */
    HA_TOK_KIND_MAX
};

struct ha_tok {
    enum ha_tok_kind kind;
    size_t start;        /* offset in the input */
    size_t len;          /* bytes in the input */
    size_t name_off;     /* HA_TOK_SYSVAR: offset of the bare name */
};

struct ha_lex {
    const char *s;       /* the text (not owned) */
    size_t len;          /* bytes of it this lex covers */
    size_t base;         /* a view: where its statement starts in s, for
                            messages that quote it; 0 otherwise */
    struct ha_tok *toks; /* malloc'd; ha_lex_free() */
    size_t n, cap;
    int exec_depth;      /* open slash-star-! comments being lexed */
};

/* Versioned comments at or below this MySQL version run (8.0.35). */
#define HA_LEX_SERVER_VERSION_ID 80035

/* Tokenises s (len bytes, need not be NUL-terminated) into lx. Returns
 * 0, or -1 with err naming what was left open (or "out of memory"); lx
 * must be freed with ha_lex_free() either way. */
int ha_lex_run(struct ha_lex *lx, const char *s, size_t len, char *err,
               size_t errlen);
void ha_lex_free(struct ha_lex *lx);

/* A view of tokens [from, to) of lx, one statement of a text lexed once:
 * it shares lx's tokens and text (it owns nothing and is never freed),
 * covers bytes up to token to's start, and quotes its statement from
 * byte base on in messages. Every function that takes a struct ha_lex
 * takes a view. */
void ha_lex_view(const struct ha_lex *lx, size_t from, size_t to,
                 size_t base, struct ha_lex *view);

/* How many times ha_lex_run() ran on the calling thread: the house rule
 * is one lex per statement text, and tests count (check_session). */
unsigned long ha_lex_runs(void);

/* True when s (len bytes) holds nothing but whitespace, comments and
 * ';': what may follow the one statement of a COM_QUERY or
 * COM_STMT_PREPARE without CLIENT_MULTI_STATEMENTS. False also when s
 * does not lex (an unterminated quote is not trivia). */
bool ha_lex_only_trivia(const char *s, size_t len);

/* Comments, whitespace and the /+! markers are not significant. */
bool ha_lex_is_significant(const struct ha_tok *t);
/* Index of the next significant token after i (SIZE_MAX: from the
 * start), or lx->n. */
size_t ha_lex_next(const struct ha_lex *lx, size_t i);
/* Index of the previous significant token before i, or SIZE_MAX. */
size_t ha_lex_prev(const struct ha_lex *lx, size_t i);
/* Token i is the word `word` (upper-case ASCII), case-insensitively. */
bool ha_lex_is_word(const struct ha_lex *lx, size_t i, const char *word);
bool ha_lex_is_punct(const struct ha_lex *lx, size_t i, char c);
/* Token i is an identifier: a word or a `quoted id`. */
bool ha_lex_is_ident(const struct ha_lex *lx, size_t i);
/* Copies token i into buf (NUL-terminated, truncated to buflen): a
 * `quoted id` or a string literal without its quotes (doubled quotes
 * undone, backslash escapes decoded), anything else as written. */
void ha_lex_text(const struct ha_lex *lx, size_t i, char *buf,
                 size_t buflen);

#endif /* HA_LEX_H */
