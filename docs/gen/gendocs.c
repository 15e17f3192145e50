/* SPDX-License-Identifier: MIT
 *
 * gendocs: writes the reference pages (docs/reference/tables.md,
 * variables.md, config.md, http.md) and heapadmind(8)'s list of config
 * keys from the code's own catalogues, so they cannot drift from it:
 *
 *   tables.md     engine/catalog.c (the tables, each with its doc string),
 *                 engine/catalog_columns.c (what each column means) and
 *                 the columns themselves as SQLite reports them for a
 *                 real admin session (PRAGMA table_xinfo: types, hidden
 *                 argument columns), the history tables' from the file
 *                 engine/history.c makes;
 *   variables.md  heap/settings_catalog.c's rows (doc, source, whether an
 *                 UPDATE may set it, whether SAVE keeps it), a row
 *                 without a doc of its own taking its config key's;
 *   config.md     engine/config_keys.c (group, type, range, doc) and
 *                 ha_config_init()'s defaults;
 *   http.md       http/paths.c (path, methods, who may ask, doc).
 *
 * Usage: gendocs OUTDIR [MAN]
 *   Writes OUTDIR/{tables,variables,config,http}.md; with MAN (the
 *   heapadmind.8 source) also OUTDIR/heapadmind.8: MAN with the lines
 *   between its "GENERATED CONFIG KEYS" markers replaced. `make docs`
 *   writes them into docs/reference/ and daemon/; test/docs.sh writes
 *   them into a temporary directory and compares.
 *
 * A missing doc string is an error, never a blank: each is named with
 * the file to add it to, and gendocs exits 1 having written nothing.
 * The output depends on the code alone (no jemalloc is asked: a
 * mallctl backend that knows nothing stands in), so any build makes the
 * same pages.
 */
#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/session.h"
#include "core/buf.h"
#include "core/util.h"
#include "engine/catalog.h"
#include "engine/config.h"
#include "engine/config_write.h"
#include "engine/diskstore.h"
#include "engine/history.h"
#include "heap/heap.h"
#include "heap/mallctl.h"
#include "heap/settings.h"
#include "http/paths.h"

#define MAN_BEGIN ".\\\" GENERATED CONFIG KEYS BEGIN"
#define MAN_END ".\\\" GENERATED CONFIG KEYS END"

static int n_errors;

static void
missing(const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    fputs("gendocs: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    n_errors++;
}

/* ------------------------------------------------------------------
 * Text: doc strings are plain text with `code` in backquotes
 * ------------------------------------------------------------------ */

/* Appends doc as Markdown: outside code spans, the characters Markdown
 * or HTML would take as markup are escaped; in a table cell (cell),
 * '|' is escaped inside code spans too (GitHub's tables split on it). */
static void
md_text(struct ha_buf *b, const char *doc, bool cell)
{
    bool code = false;

    for (const char *p = doc; *p != '\0'; p++) {
        char c = *p;

        if (c == '`') {
            code = !code;
            ha_buf_append_u8(b, '`');
        } else if (c == '|' && cell) {
            ha_buf_append_str(b, "\\|");
        } else if (code) {
            ha_buf_append_u8(b, (uint8_t)c);
        } else if (c == '<') {
            ha_buf_append_str(b, "&lt;");
        } else if (c == '>') {
            ha_buf_append_str(b, "&gt;");
        } else if (c == '*' || c == '\\') {
            ha_buf_append_u8(b, '\\');
            ha_buf_append_u8(b, (uint8_t)c);
        } else {
            ha_buf_append_u8(b, (uint8_t)c);
        }
    }
}

/* Appends doc as roff text for man(7): code spans bold, '\' and '-'
 * escaped, one line per sentence-sized piece (at most ~72 columns), a
 * line that would start with '.' or '\'' guarded. */
static void
roff_text(struct ha_buf *b, const char *doc)
{
    bool code = false;
    size_t col = 0;

    for (const char *p = doc; *p != '\0'; p++) {
        char c = *p;

        if (col == 0 && (c == '.' || c == '\''))
            ha_buf_append_str(b, "\\&");
        if (c == '`') {
            ha_buf_append_str(b, code ? "\\fR" : "\\fB");
            code = !code;
        } else if (c == '\\') {
            ha_buf_append_str(b, "\\e");
        } else if (c == '-') {
            ha_buf_append_str(b, "\\-");
        } else if (c == ' ' && !code && col >= 64) {
            ha_buf_append_u8(b, '\n');
            col = 0;
            continue;
        } else {
            ha_buf_append_u8(b, (uint8_t)c);
        }
        col++;
    }
    if (code)
        ha_buf_append_str(b, "\\fR");
    ha_buf_append_u8(b, '\n');
}

/* ------------------------------------------------------------------
 * tables.md
 * ------------------------------------------------------------------ */

/* A mallctl backend that knows no name: the tables' schemas do not
 * depend on jemalloc, and the pages must not either. */
static int
no_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp,
           size_t newlen)
{
    (void)name;
    (void)oldp;
    (void)oldlenp;
    (void)newp;
    (void)newlen;
    return ENOENT;
}

static int
no_nametomib(const char *name, size_t *mibp, size_t *miblenp)
{
    (void)name;
    (void)mibp;
    (void)miblenp;
    return ENOENT;
}

static int
no_bymib(const size_t *mib, size_t miblen, void *oldp, size_t *oldlenp,
         void *newp, size_t newlen)
{
    (void)mib;
    (void)miblen;
    (void)oldp;
    (void)oldlenp;
    (void)newp;
    (void)newlen;
    return ENOENT;
}

static const struct ha_mallctl_ops no_ops = {no_mallctl, no_nametomib,
                                             no_bymib};

/* What the generator needs of an admin session. */
struct sess {
    char dir[64]; /* a datadir of its own, removed */
    struct ha_config cfg;
    struct ha_heap heap;
    struct ha_vtab_ctx ctx;
    struct ha_session_shared shared;
    struct ha_session s;
    sqlite3 *keeper; /* holds the memdb database */
    bool opened;     /* s is open */
};

static void sess_close(struct sess *x);

/* Opens an admin session as a login does, on a datadir that has the
 * history and saved-variables files, so that stats_history is
 * attached. Returns 0, or -1 having said why (and removed what it
 * made). */
static int
sess_open(struct sess *x)
{
    char err[512] = "", path[PATH_MAX];
    sqlite3 *h;

    memset(x, 0, sizeof(*x));
    ha_strlcpy(x->dir, "/tmp/gendocs.XXXXXX", sizeof(x->dir));
    if (mkdtemp(x->dir) == NULL) {
        fprintf(stderr, "gendocs: mkdtemp: %s\n", strerror(errno));
        return -1;
    }
    ha_config_init(&x->cfg);
    snprintf(path, sizeof(path), "%s/%s", x->dir, "heapadmin_stats.db");
    if ((h = ha_history_open(path, err, sizeof(err))) == NULL ||
        (sqlite3_close(h), ha_diskstore_init(x->dir, err, sizeof(err))) != 0) {
        fprintf(stderr, "gendocs: %s\n", err);
        goto fail;
    }
    x->heap.ops = &no_ops;
    x->heap.datadir = x->dir;
    x->ctx.heap = &x->heap;
    x->heap.admin_value = ha_config_admin_value;
    x->heap.admin_arg = &x->cfg;
    snprintf(x->shared.db_uri, sizeof(x->shared.db_uri),
             "file:/gendocs-%ld?vfs=memdb", (long)getpid());
    x->shared.vtab = &x->ctx;
    if (sqlite3_open_v2(x->shared.db_uri, &x->keeper,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
                            SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK) {
        fprintf(stderr, "gendocs: the scratch database: %s\n",
                sqlite3_errmsg(x->keeper));
        goto fail;
    }
    if (ha_session_open(&x->s, &x->shared, 1, err, sizeof(err)) != 0) {
        fprintf(stderr, "gendocs: an admin session: %s\n", err);
        goto fail;
    }
    x->opened = true;
    return 0;
fail:
    sess_close(x);
    return -1;
}

static void
sess_close(struct sess *x)
{
    static const char *const files[] = {
        "heapadmin_stats.db",     "heapadmin_stats.db-wal",
        "heapadmin_stats.db-shm", "heapadmin.db",
        "heapadmin.db-wal",       "heapadmin.db-shm",
        "heapadmin.db-journal"};
    char path[PATH_MAX];

    if (x->opened)
        ha_session_close(&x->s);
    sqlite3_close(x->keeper);
    ha_config_free(&x->cfg);
    for (size_t i = 0; i < HA_ARRAY_SIZE(files); i++) {
        snprintf(path, sizeof(path), "%s/%s", x->dir, files[i]);
        (void)unlink(path);
    }
    (void)rmdir(x->dir);
}

/* The doc of table.column, from the table's own docs or the table whose
 * docs it shares; NULL when none. */
static const char *
column_doc(const char *table, const char *column)
{
    size_t n;
    const struct ha_catalog_column *c = ha_catalog_columns(&n);
    const char *like = ha_catalog_columns_like(table);

    for (size_t i = 0; i < n; i++)
        if (strcmp(c[i].table, table) == 0 && strcmp(c[i].name, column) == 0)
            return c[i].doc;
    if (like != NULL)
        for (size_t i = 0; i < n; i++)
            if (strcmp(c[i].table, like) == 0 && strcmp(c[i].name, column) == 0)
                return c[i].doc;
    return NULL;
}

/* Whether table (or one that shares its docs) has column. */
static bool
has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *st = NULL;
    bool has = false;

    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM pragma_table_xinfo(?1) WHERE "
                           "name = ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, column, -1, SQLITE_STATIC);
    has = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return has;
}

/* "heap_top(dump)", "heap_growth(since, until, dump_kind)": a
 * table-valued function's call form, from its hidden columns; the name
 * alone for a table. */
static void
call_form(sqlite3 *db, const char *table, struct ha_buf *out)
{
    sqlite3_stmt *st = NULL;
    int n = 0;

    ha_buf_append_str(out, table);
    if (sqlite3_prepare_v2(db,
                           "SELECT name FROM pragma_table_xinfo(?1) WHERE "
                           "hidden <> 0 ORDER BY cid",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    while (sqlite3_step(st) == SQLITE_ROW)
        ha_buf_printf(out, "%s%s", n++ ? ", " : "(",
                      (const char *)sqlite3_column_text(st, 0));
    if (n > 0)
        ha_buf_append_u8(out, ')');
    sqlite3_finalize(st);
}

static const char *
schema_words(const struct ha_catalog_table *t, bool function)
{
    if (function)
        return "a table-valued function, in every session; not listed by "
               "SHOW TABLES";
    if (t->schema == NULL)
        return t->eponymous ? "every session's own; not listed by SHOW TABLES"
                            : "not listed by SHOW TABLES";
    if (strcmp(t->schema, "stats_history") == 0)
        return "schema `stats_history` (a file in the datadir, read-only to "
               "sessions)";
    if (strcmp(t->schema, "stats") == 0)
        return "schema `stats` (`stats.name` and `name` are the same table)";
    return "schema `main`";
}

static int
gen_tables(struct ha_buf *b)
{
    struct sess x;
    size_t n, nc;
    const struct ha_catalog_table *t = ha_catalog_tables(&n);
    const struct ha_catalog_column *cols = ha_catalog_columns(&nc);

    if (sess_open(&x) != 0)
        return -1;
    ha_buf_append_str(
        b, "# Tables and columns\n\n"
           "<!-- Generated by `make docs` (docs/gen/gendocs.c) from "
           "engine/catalog.c, engine/catalog_columns.c and the tables' "
           "schemas as SQLite reports them; do not edit. -->\n\n"
           "Every table an admin session has, in `SHOW TABLES` order, with "
           "each column as SQLite reports it (`PRAGMA table_xinfo`). A "
           "table-valued function (`heap_top(dump)`) takes its arguments in "
           "its hidden columns: `heap_top('x.heap')` is `SELECT ... FROM "
           "heap_top WHERE dump = 'x.heap'`. The settings in "
           "`global_variables` are in [variables.md](variables.md).\n\n"
           "| table | where | stats users |\n|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        struct ha_buf call = HA_BUF_INIT;

        call_form(x.s.db, t[i].name, &call);
        ha_buf_append_u8(&call, 0);
        ha_buf_printf(b, "| [`%s`](#%s) | %s | %s |\n",
                      call.data != NULL ? (char *)call.data : t[i].name,
                      t[i].name, t[i].schema != NULL ? t[i].schema : "-",
                      t[i].stats_readable ? "read" : "no");
        ha_buf_free(&call);
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_stmt *st = NULL;
        struct ha_buf call = HA_BUF_INIT;
        int ncol = 0;

        ha_buf_printf(b, "\n## %s\n\n", t[i].name);
        if (t[i].doc == NULL || t[i].doc[0] == '\0') {
            missing("engine/catalog.c: table %s has no doc string", t[i].name);
        } else {
            md_text(b, t[i].doc, false);
            ha_buf_append_str(b, "\n\n");
        }
        call_form(x.s.db, t[i].name, &call);
        ha_buf_append_u8(&call, 0);
        ha_buf_printf(
            b, "`%s`: %s; stats users %s.\n\n", (char *)call.data,
            schema_words(&t[i], strchr((char *)call.data, '(') != NULL),
            t[i].stats_readable ? "may read it"
                                : "may not read "
                                  "it");
        ha_buf_free(&call);
        if (sqlite3_prepare_v2(x.s.db,
                               "SELECT name, type, hidden FROM "
                               "pragma_table_xinfo(?1) ORDER BY cid",
                               -1, &st, NULL) != SQLITE_OK) {
            fprintf(stderr, "gendocs: %s\n", sqlite3_errmsg(x.s.db));
            sess_close(&x);
            return -1;
        }
        sqlite3_bind_text(st, 1, t[i].name, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *col = (const char *)sqlite3_column_text(st, 0);
            const char *type = (const char *)sqlite3_column_text(st, 1);
            const char *doc = column_doc(t[i].name, col);

            if (ncol++ == 0)
                ha_buf_append_str(b, "| column | type | what |\n"
                                     "|---|---|---|\n");
            ha_buf_printf(b, "| `%s` | %s | ", col,
                          sqlite3_column_int(st, 2) != 0    ? "argument"
                          : type != NULL && type[0] != '\0' ? type
                                                            : "any");
            if (doc == NULL || doc[0] == '\0')
                missing("engine/catalog_columns.c: column %s.%s has no doc "
                        "string",
                        t[i].name, col);
            else
                md_text(b, doc, true);
            ha_buf_append_str(b, " |\n");
        }
        sqlite3_finalize(st);
        if (ncol == 0) {
            fprintf(stderr,
                    "gendocs: table %s has no columns in an admin session, "
                    "which gendocs opens as a login does (sess_open): a "
                    "virtual table needs its module registered there, a "
                    "table in a file of the datadir that file made there\n",
                    t[i].name);
            sess_close(&x);
            return -1;
        }
    }
    /* A doc that names no column is a leftover, or a typo. */
    for (size_t i = 0; i < nc; i++)
        if (ha_catalog_find(cols[i].table) == NULL ||
            !has_column(x.s.db, cols[i].table, cols[i].name))
            missing("engine/catalog_columns.c: the doc of %s.%s names no "
                    "column of a table",
                    cols[i].table, cols[i].name);
    sess_close(&x);
    return 0;
}

/* ------------------------------------------------------------------
 * config.md and the man page's keys
 * ------------------------------------------------------------------ */

static const char *
type_words(const struct ha_config_key *k)
{
    switch (k->type) {
    case HA_KEY_STRING:
        return "string";
    case HA_KEY_INT:
        return "integer";
    case HA_KEY_INT64:
        return "integer (64-bit: an L past 2147483647)";
    case HA_KEY_BOOL:
        return "boolean (true/false, 1/0, \"on\"/\"off\")";
    default:
        return "?";
    }
}

/* ", 1 to 100000", ", at most 1023 bytes": the values k allows beyond
 * its type ("" for a boolean). */
static void
range_words(const struct ha_config_key *k, struct ha_buf *b)
{
    switch (k->type) {
    case HA_KEY_STRING:
        if (k->min > 0)
            ha_buf_printf(b, ", %lld to %lld bytes", k->min, k->max);
        else
            ha_buf_printf(b, ", at most %lld bytes", k->max);
        return;
    case HA_KEY_INT:
    case HA_KEY_INT64:
        ha_buf_printf(b, ", %lld to %lld", k->min, k->max);
        return;
    default:
        ha_buf_append_str(b, "");
        return;
    }
}

/* The default of k (ha_config_init()'s) as a config file would write it,
 * or "unset". */
static void
default_words(const struct ha_config *dflt, const struct ha_config_key *k,
              struct ha_buf *b)
{
    struct ha_buf v = HA_BUF_INIT;

    if (ha_config_key_value(dflt, k, &v)) {
        ha_buf_append_u8(b, '`');
        ha_buf_append(b, v.data, v.len);
        ha_buf_append_u8(b, '`');
    } else {
        ha_buf_append_str(b, "unset");
    }
    ha_buf_free(&v);
}

/* The global_variables row that shows key, or NULL: ProxySQL's naming,
 * in which group <module>_variables's key x is the variable <module>-x
 * (admin_variables.max_connections: admin-max_connections). */
static const char *
variable_of(const struct ha_config_key *k, char *buf, size_t len)
{
    const char *end = k->group != NULL ? strstr(k->group, "_variables") : NULL;

    if (end == NULL || end[strlen("_variables")] != '\0')
        return NULL;
    snprintf(buf, len, "%.*s-%s", (int)(end - k->group), k->group, k->name);
    return ha_settings_find(buf) >= 0 ? buf : NULL;
}

static void
gen_config(struct ha_buf *b, struct ha_buf *man)
{
    size_t n, ng;
    const struct ha_config_key *keys = ha_config_keys(&n);
    const char *const *groups = ha_config_groups(&ng);
    struct ha_config dflt;

    ha_config_init(&dflt);
    ha_buf_append_str(
        b, "# Config file keys\n\n"
           "<!-- Generated by `make docs` (docs/gen/gendocs.c) from "
           "engine/config_keys.c and ha_config_init()'s defaults; do not "
           "edit. -->\n\n"
           "Every key heapadmind, the library and the agent read from a config "
           "file, by group, with its type, the values allowed and its default. "
           "The syntax, the layout and how an existing proxysql.cnf loads are "
           "in [configuration.md](../configuration.md); `SAVE CONFIG TO FILE` "
           "writes the same keys. A key left out takes its default; \"unset\" "
           "keeps jemalloc's own value or what the text says.\n");
    for (size_t g = 0; g <= ng; g++) {
        const char *group = g == 0 ? NULL : groups[g - 1];

        ha_buf_printf(b, "\n## %s\n", group != NULL ? group : "Top level");
        ha_buf_printf(man, ".SS %s\n", group != NULL ? group : "Top level");
        for (size_t i = 0; i < n; i++) {
            const struct ha_config_key *k = &keys[i];
            struct ha_buf r = HA_BUF_INIT, d = HA_BUF_INIT;
            char var[96];

            if ((group == NULL) != (k->group == NULL) ||
                (group != NULL && strcmp(group, k->group) != 0))
                continue;
            range_words(k, &r);
            default_words(&dflt, k, &d);
            ha_buf_append_u8(&r, 0);
            ha_buf_append_u8(&d, 0);
            ha_buf_printf(b, "\n### %s\n\n", k->name);
            ha_buf_printf(man, ".TP\n.B %s\n", k->name);
            if (k->doc == NULL || k->doc[0] == '\0') {
                missing("engine/config_keys.c: key %s%s%s has no doc string",
                        group != NULL ? group : "", group != NULL ? "." : "",
                        k->name);
            } else {
                md_text(b, k->doc, false);
                ha_buf_append_str(b, "\n\n");
                roff_text(man, k->doc);
            }
            ha_buf_printf(b, "Type: %s%s. Default: %s.", type_words(k),
                          (char *)r.data, (char *)d.data);
            if (variable_of(k, var, sizeof(var)) != NULL)
                ha_buf_printf(b, " Shown as [`%s`](variables.md#%s).", var,
                              var);
            ha_buf_append_str(b, "\n");
            ha_buf_append_str(man, ".br\n");
            {
                struct ha_buf line = HA_BUF_INIT;

                ha_buf_printf(&line, "Type: %s%s. Default: %s.", type_words(k),
                              (char *)r.data, (char *)d.data);
                ha_buf_append_u8(&line, 0);
                roff_text(man, (char *)line.data);
                ha_buf_free(&line);
            }
            ha_buf_free(&r);
            ha_buf_free(&d);
        }
    }
    ha_config_free(&dflt);
}

/* ------------------------------------------------------------------
 * variables.md
 * ------------------------------------------------------------------ */

/* The config key a global_variables row mirrors (variable_of's naming,
 * the other way), or NULL. */
static const struct ha_config_key *
key_of(const char *variable)
{
    size_t n;
    const struct ha_config_key *keys = ha_config_keys(&n);
    char var[128];

    for (size_t i = 0; i < n; i++)
        if (variable_of(&keys[i], var, sizeof(var)) != NULL &&
            strcmp(var, variable) == 0)
            return &keys[i];
    return NULL;
}

static void
gen_variables(struct ha_buf *b)
{
    static const struct {
        const char *title;
        const char *intro;
    } kinds[] = {
        {"Read-write",
         "An admin's UPDATE acts at once; the rows marked so are kept by "
         "`SAVE JEMALLOC VARIABLES TO DISK` and applied again at the next "
         "start."},
        {"Actions",
         "They read `false` (or what they are doing); an UPDATE acts once "
         "and is never saved."},
        {"Read-only",
         "Start-up settings and state. An UPDATE is refused with how to "
         "change it instead, which each row says here too."},
    };

    ha_buf_append_str(
        b, "# global_variables\n\n"
           "<!-- Generated by `make docs` (docs/gen/gendocs.c) from "
           "heap/settings_catalog.c and engine/config_keys.c; do not edit. "
           "-->\n\n"
           "Every row of `global_variables` (`SELECT * FROM global_variables` "
           "lists them with their live values; `SHOW VARIABLES LIKE "
           "'jemalloc-%'` too). Booleans accept `true/false/1/0/on/off` in "
           "any case. An invalid UPDATE changes nothing and its error names "
           "the variable, the value and what is allowed; an UPDATE of several "
           "rows is all or nothing. Stats users read every value as NULL. "
           "With profiling off (`MALLOC_CONF=prof:false`), statistics still "
           "work and every profiler write says how to enable it.\n");
    for (size_t kind = 0; kind < HA_ARRAY_SIZE(kinds); kind++) {
        ha_buf_printf(b, "\n## %s\n\n%s\n", kinds[kind].title,
                      kinds[kind].intro);
        for (int i = 0; i < ha_settings_count(); i++) {
            struct ha_settings_var v, *r = &v;
            const struct ha_config_key *k;
            bool action, writable;
            size_t mine;

            (void)ha_settings_describe(i, &v);
            k = key_of(r->name);
            action = (r->flags & HA_SETTINGS_ACTION) != 0;
            writable = (r->flags & HA_SETTINGS_WRITABLE) != 0;
            mine = action ? 1 : writable ? 0 : 2;
            if (mine != kind)
                continue;
            ha_buf_printf(b, "\n### %s\n\n", r->name);
            if (r->doc != NULL && r->doc[0] != '\0') {
                md_text(b, r->doc, false);
            } else if (k != NULL && k->doc != NULL) {
                ha_buf_printf(b, "The config file's setting, shown "
                                 "read-only. ");
                md_text(b, k->doc, false);
            } else {
                missing("heap/settings_catalog.c: global_variables row %s "
                        "has no doc string (and no config key of its name "
                        "to take one from)",
                        r->name);
            }
            ha_buf_append_str(b, "\n\n");
            ha_buf_printf(b, "%s",
                          action     ? "Action"
                          : writable ? "Read-write"
                                     : "Read-only");
            if (writable && !action)
                ha_buf_append_str(b, (r->flags & HA_SETTINGS_SAVED) != 0
                                         ? "; kept by SAVE"
                                         : "; not saved");
            if ((r->flags & HA_SETTINGS_PROF) != 0)
                ha_buf_append_str(b, "; needs profiling (`opt.prof`)");
            if (r->mallctl != NULL)
                ha_buf_printf(b, "; jemalloc `%s`", r->mallctl);
            if (k != NULL)
                ha_buf_printf(b, "; config [`%s.%s`](config.md#%s)", k->group,
                              k->name, k->name);
            ha_buf_append_str(b, ".");
            if (!writable && r->hint != NULL) {
                ha_buf_append_str(b, " To change it: ");
                md_text(b, r->hint, false);
                ha_buf_append_str(b, ".");
            }
            ha_buf_append_str(b, "\n");
        }
    }
}

/* ------------------------------------------------------------------
 * http.md
 * ------------------------------------------------------------------ */

static void
gen_http(struct ha_buf *b)
{
    size_t n;
    const struct ha_http_path *p = ha_http_paths(&n);

    ha_buf_append_str(
        b, "# HTTP routes\n\n"
           "<!-- Generated by `make docs` (docs/gen/gendocs.c) from "
           "http/paths.c; do not edit. -->\n\n"
           "What the HTTP listeners (`admin_variables.http_ifaces`) serve. "
           "Every request logs in with HTTP Basic against the MySQL port's "
           "accounts; admin users may ask for everything, stats users for all "
           "but the rows marked admin, and for no live profile; profile "
           "users (`profile_credentials`) for the rows marked profile "
           "alone, live profiles included, and for `?dump=` of dumps only. "
           "Another method gets 405 with `Allow`, another path 404, a path "
           "the role may not ask 403. A host gateway "
           "(`heapadmind --gateway`) also answers `?pid=N` on `/metrics` "
           "and on `/debug/pprof/`, `/pprof/` and `/heap/` paths, or those "
           "under `/pid/N/` (which jeprof takes as a base URL), from process "
           "N (digits only). How each is used: "
           "[http-and-prometheus.md](../http-and-prometheus.md); the "
           "gateway's `/sd`: [fleet.md](../fleet.md).\n\n"
           "| path | methods | who | what |\n|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        ha_buf_printf(b, "| `%s%s` | %s | %s | ", p[i].path,
                      p[i].prefix ? "..." : "",
                      (p[i].methods & HA_HTTP_POST) != 0 ? "GET, HEAD, POST"
                                                         : "GET, HEAD",
                      p[i].admin     ? "admin"
                      : p[i].profile ? "admin, stats, profile"
                                     : "admin, stats");
        if (p[i].doc == NULL || p[i].doc[0] == '\0')
            missing("http/paths.c: path %s has no doc string", p[i].path);
        else
            md_text(b, p[i].doc, true);
        ha_buf_append_str(b, " |\n");
    }
}

/* ------------------------------------------------------------------
 * Files
 * ------------------------------------------------------------------ */

static int
read_file(const char *path, struct ha_buf *out)
{
    FILE *f = fopen(path, "r");
    char chunk[8192];
    size_t got;

    if (f == NULL) {
        fprintf(stderr, "gendocs: %s: %s\n", path, strerror(errno));
        return -1;
    }
    while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
        ha_buf_append(out, chunk, got);
    fclose(f);
    return ha_buf_failed(out) ? -1 : 0;
}

/* man with the lines between its markers replaced by keys. */
static int
splice_man(const char *path, const struct ha_buf *keys, struct ha_buf *out)
{
    struct ha_buf in = HA_BUF_INIT;
    const char *begin, *end, *text;

    if (read_file(path, &in) != 0)
        return -1;
    ha_buf_append_u8(&in, 0);
    text = (const char *)in.data;
    begin = strstr(text, MAN_BEGIN "\n");
    end = begin != NULL ? strstr(begin, MAN_END "\n") : NULL;
    if (begin == NULL || end == NULL) {
        fprintf(stderr,
                "gendocs: %s: no lines \"%s\" and \"%s\" to put the config "
                "keys between\n",
                path, MAN_BEGIN, MAN_END);
        ha_buf_free(&in);
        return -1;
    }
    begin += strlen(MAN_BEGIN "\n");
    ha_buf_append(out, text, (size_t)(begin - text));
    ha_buf_append(out, keys->data, keys->len);
    ha_buf_append_str(out, end);
    ha_buf_free(&in);
    return 0;
}

static int
write_file(const char *dir, const char *name, const struct ha_buf *b)
{
    char path[PATH_MAX];
    FILE *f;

    snprintf(path, sizeof(path), "%s/%s", dir, name);
    if ((f = fopen(path, "w")) == NULL ||
        fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        fprintf(stderr, "gendocs: %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    struct ha_buf tables = HA_BUF_INIT, vars = HA_BUF_INIT,
                  config = HA_BUF_INIT, http = HA_BUF_INIT, keys = HA_BUF_INIT,
                  man = HA_BUF_INIT;
    int rc = 1;

    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: gendocs OUTDIR [heapadmind.8]\n");
        return 2;
    }
    if (gen_tables(&tables) != 0)
        goto done;
    gen_variables(&vars);
    gen_config(&config, &keys);
    gen_http(&http);
    if (n_errors > 0) {
        fprintf(stderr,
                "gendocs: %d doc string%s missing or naming nothing: mend "
                "each where named above, then run `make docs`\n",
                n_errors, n_errors == 1 ? "" : "s");
        goto done;
    }
    if (argc == 3 && splice_man(argv[2], &keys, &man) != 0)
        goto done;
    if (ha_buf_failed(&tables) || ha_buf_failed(&vars) ||
        ha_buf_failed(&config) || ha_buf_failed(&http) ||
        ha_buf_failed(&keys) || ha_buf_failed(&man)) {
        fprintf(stderr, "gendocs: out of memory\n");
        goto done;
    }
    if (write_file(argv[1], "tables.md", &tables) == 0 &&
        write_file(argv[1], "variables.md", &vars) == 0 &&
        write_file(argv[1], "config.md", &config) == 0 &&
        write_file(argv[1], "http.md", &http) == 0 &&
        (argc < 3 || write_file(argv[1], "heapadmind.8", &man) == 0))
        rc = 0;
done:
    ha_buf_free(&tables);
    ha_buf_free(&vars);
    ha_buf_free(&config);
    ha_buf_free(&http);
    ha_buf_free(&keys);
    ha_buf_free(&man);
    return rc;
}
