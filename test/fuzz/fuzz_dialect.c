/* SPDX-License-Identifier: MIT
 *
 * Fuzz target: the MySQL -> SQLite dialect rewriter on any COM_QUERY
 * text. The input is split at top-level ';' (ha_dialect_split) as the
 * session does, each piece is rewritten, and the whole input is rewritten
 * once more as a single statement; SAVE/LOAD statements are also parsed
 * as the session parses them (admin/persist_parse.c). Seeds:
 * corpus/dialect/, queries real clients send at connect time (mysql CLI,
 * Connector/J, .NET, mycli) and ProxySQL admin statements.
 *
 * Invariants: rc is 0 or -1; on 0 out holds out.len bytes followed by a
 * NUL and the kind is in range with its text fields terminated; on -1 err
 * is set; spans lie inside the input.
 */
#include "fuzz.h"

#include "core/buf.h"
#include "admin/dialect.h"
#include "admin/lex.h"
#include "admin/persist_parse.h"

static void
rewrite_one(const char *sql, size_t len)
{
    struct ha_dialect_result res;
    struct ha_buf out;
    char err[256];
    int rc;

    ha_buf_init(&out);
    memset(&res, 0, sizeof(res));
    err[0] = '\0';
    rc = ha_dialect_rewrite(sql, len, &out, &res, err, sizeof(err));
    FUZZ_CHECK(rc == 0 || rc == -1, "rc %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(out.data != NULL, "no output buffer");
        FUZZ_CHECK(out.len < out.cap && out.data[out.len] == '\0',
                   "output not NUL-terminated (len %zu cap %zu)", out.len,
                   out.cap);
        FUZZ_CHECK(res.kind < HA_STMT_KIND_MAX, "kind %d", (int)res.kind);
        FUZZ_CHECK(fuzz_has_nul(res.arg, sizeof(res.arg)), "arg");
        FUZZ_CHECK(fuzz_has_nul(res.sqlstate, sizeof(res.sqlstate)),
                   "sqlstate");
    } else {
        FUZZ_CHECK(err[0] != '\0', "error without text");
    }
    ha_buf_free(&out);
    if (rc == 0 && res.kind == HA_STMT_PERSIST) {
        /* SAVE/LOAD: what the session parses from the same tokens. */
        struct ha_persist_cmd cmd;
        struct ha_lex lx;

        if (ha_lex_run(&lx, sql, len, err, sizeof(err)) == 0) {
            err[0] = '\0';
            if (ha_persist_parse(&lx, ha_lex_next(&lx, SIZE_MAX), &cmd, err,
                                 sizeof(err)) == 0) {
                FUZZ_CHECK(cmd.module < HA_PERSIST_MODULE_MAX, "module");
                FUZZ_CHECK(cmd.action < HA_PERSIST_ACTION_MAX, "action");
                FUZZ_CHECK(fuzz_has_nul(cmd.file, sizeof(cmd.file)), "file");
            } else {
                FUZZ_CHECK(err[0] != '\0', "persist error without text");
            }
            ha_lex_free(&lx);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *sql = (const char *)data;
    struct ha_dialect_span *spans = NULL;
    size_t n = 0;
    char err[256];
    int rc;

    err[0] = '\0';
    rc = ha_dialect_split(sql, size, &spans, &n, err, sizeof(err));
    FUZZ_CHECK(rc == 0 || rc == -1, "split rc %d", rc);
    if (rc == 0) {
        for (size_t i = 0; i < n; i++) {
            FUZZ_CHECK(spans[i].off <= size &&
                           spans[i].len <= size - spans[i].off,
                       "span %zu [%zu, +%zu) outside %zu bytes", i,
                       spans[i].off, spans[i].len, size);
            rewrite_one(sql + spans[i].off, spans[i].len);
        }
    } else {
        FUZZ_CHECK(err[0] != '\0', "split error without text");
    }
    free(spans);

    rewrite_one(sql, size);

    /* The syntax error text quotes the statement from any offset, into
     * a roomy and a cramped buffer. */
    {
        char msg[512], tiny[8];
        size_t off = size > 0 ? (size_t)data[0] % (size + 1) : 0;

        ha_dialect_syntax_error(sql, size, off, msg, sizeof(msg));
        FUZZ_CHECK(fuzz_has_nul(msg, sizeof(msg)), "syntax error text");
        ha_dialect_syntax_error(sql, size, size, tiny, sizeof(tiny));
        FUZZ_CHECK(fuzz_has_nul(tiny, sizeof(tiny)), "cramped text");
    }
    return 0;
}
