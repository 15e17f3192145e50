/* SPDX-License-Identifier: MIT
 *
 * The session authorizer (see authorizer.h): one pure decision function
 * over SQLite's callback arguments, the callback that records refusals for
 * the reply, and the per-connection hardening done before it is armed.
 */
#include "engine/authorizer.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "engine/catalog.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Lists                                                                */
/* ------------------------------------------------------------------ */

/* Read-only introspection pragmas any admin may run. Anything else
 * changes connection or database state or names a file. */
static const char *const admin_pragmas[] = {
    "table_info",    "table_xinfo",      "table_list",
    "index_list",    "index_info",       "index_xinfo",
    "foreign_key_list", "foreign_key_check", "collation_list",
    "function_list", "module_list",      "pragma_list",
    "compile_options", "database_list",  "integrity_check",
    "quick_check",   "data_version",
};

/* What stats users may run: what the compatibility queries use. */
static const char *const stats_pragmas[] = {"table_info", "table_xinfo"};

/* Tables whose variable_value stats users read as NULL: the values hold
 * admin settings and the credential lists. runtime_global_variables is
 * the same rows under ProxySQL's runtime_ name, and disk's table of the
 * same name the saved ones: each is hidden alike. */
static const char *const stats_hidden_values[] = {
    "global_variables", "runtime_global_variables"};

/* Functions and tables that reach files or the process; none is
 * compiled into the system SQLite with our flags, but a name check costs
 * nothing and survives a library swap. */
static const char *const file_functions[] = {
    "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer",
    "zipfile", "zipfile_cds", "sqlar_compress", "sqlar_uncompress", "lsmode",
};
static const char *const file_tables[] = {
    "fsdir", "zipfile", "sqlite_dbpage", "sqlite_dbdata", "sqlite_dbptr",
};


static bool
in_list(const char *name, const char *const *list, size_t n)
{
    if (name == NULL)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcasecmp(name, list[i]) == 0)
            return true;
    return false;
}

/* ------------------------------------------------------------------ */
/* Decision                                                             */
/* ------------------------------------------------------------------ */

static int
deny(struct ha_authz_denial *d, uint16_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
deny(struct ha_authz_denial *d, uint16_t code, const char *fmt, ...)
{
    va_list ap;

    d->code = code;
    ha_strlcpy(d->sqlstate, "42000", sizeof(d->sqlstate));
    va_start(ap, fmt);
    vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
    va_end(ap);
    return SQLITE_DENY;
}

/* MySQL's ER_TABLEACCESS_DENIED_ERROR. */
static int
deny_table(struct ha_authz_denial *d, const struct ha_authz_who *who,
           const char *command, const char *table)
{
    return deny(d, 1142,
                "%s command denied to user '%s'@'%s' for table '%s'",
                command, who->user ? who->user : "",
                who->host ? who->host : "", table ? table : "");
}

/* MySQL's ER_SPECIFIC_ACCESS_DENIED_ERROR. */
static int
deny_super(struct ha_authz_denial *d)
{
    return deny(d, 1227,
                "Access denied; you need (at least one of) the SUPER "
                "privilege(s) for this operation");
}

/* Refusals that apply to every user: SQL never touches files or the
 * process. Returns SQLITE_OK when action is none of those. */
static int
decide_all(int action, const char *arg1, const char *arg2,
           struct ha_authz_denial *d)
{
    switch (action) {
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
        return deny(d, 1227,
                    "Access denied; ATTACH, DETACH and VACUUM INTO are not "
                    "allowed: SQL on the admin interface cannot touch "
                    "files");
    case SQLITE_FUNCTION:
        if (in_list(arg2, file_functions, HA_ARRAY_SIZE(file_functions)))
            return deny(d, 1227,
                        "Access denied; function %s() is not allowed: SQL "
                        "on the admin interface cannot touch files or the "
                        "process",
                        arg2);
        return SQLITE_OK;
    case SQLITE_PRAGMA:
        if (!in_list(arg1, admin_pragmas, HA_ARRAY_SIZE(admin_pragmas)))
            return deny(d, 1227,
                        "Access denied; PRAGMA %s is not allowed: only "
                        "read-only introspection pragmas are (table_info, "
                        "index_list, ...)",
                        arg1 ? arg1 : "");
        return SQLITE_OK;
    case SQLITE_READ:
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_CREATE_VTABLE:
        if (in_list(arg1, file_tables, HA_ARRAY_SIZE(file_tables)) ||
            (action == SQLITE_CREATE_VTABLE &&
             in_list(arg2, file_tables, HA_ARRAY_SIZE(file_tables))))
            return deny(d, 1227,
                        "Access denied; table %s is not allowed: SQL on "
                        "the admin interface cannot touch files",
                        action == SQLITE_CREATE_VTABLE ? arg2 : arg1);
        return SQLITE_OK;
    default:
        return SQLITE_OK;
    }
}

/* Tables stats users may read: the catalogue's stats-readable ones, and
 * names starting "stats_" (the stats schema's naming) and "pragma_" (a
 * pragma_* table runs its PRAGMA, checked on its own). */
static bool
stats_may_read(const char *table)
{
    const struct ha_catalog_table *t = ha_catalog_find(table);

    return table != NULL &&
           (ha_catalog_is_stats_name(table) ||
            strncasecmp(table, "pragma_", 7) == 0 ||
            (t != NULL && t->stats_readable));
}

/* Stats users: read-only. */
static bool
is_schema_table(const char *table)
{
    return table != NULL && (strcasecmp(table, "sqlite_master") == 0 ||
                             strcasecmp(table, "sqlite_schema") == 0 ||
                             strcasecmp(table, "sqlite_temp_master") == 0 ||
                             strcasecmp(table, "sqlite_temp_schema") == 0);
}

/* arg1 is one of the statement's CTE names (case-insensitive, as SQL
 * names are). */
static bool
is_cte(const struct ha_authz_who *who, const char *name)
{
    for (size_t i = 0; name != NULL && i < who->n_ctes; i++)
        if (strcasecmp(who->ctes[i], name) == 0)
            return true;
    return false;
}

static int
decide_stats(const struct ha_authz_who *who, int action, const char *arg1,
             const char *arg2, const char *dbname, struct ha_authz_denial *d)
{
    switch (action) {
    case SQLITE_SELECT:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
        return SQLITE_OK;
    case SQLITE_READ:
        /* A CTE of this statement: no database, and what it reads comes
         * through here on its own. */
        if (dbname == NULL && is_cte(who, arg1))
            return SQLITE_OK;
        /* SQLite itself reads the rowid when it first sets up a table-
         * valued function (heap_top) on the connection; a rowid tells
         * nothing. */
        if (is_schema_table(arg1) && arg2 != NULL &&
            strcasecmp(arg2, "ROWID") == 0)
            return SQLITE_OK;
        /* The schema table holds the definitions of the tables admins
         * created; SHOW TABLES reads it, and for stats users sees none
         * of them (their columns read as NULL). */
        if (is_schema_table(arg1))
            return who->in_show ? SQLITE_IGNORE
                                : deny_table(d, who, "SELECT", arg1);
        if (!stats_may_read(arg1))
            return deny_table(d, who, "SELECT", arg1);
        /* Values may hold admin settings and the credential lists. */
        if (in_list(arg1, stats_hidden_values,
                    HA_ARRAY_SIZE(stats_hidden_values)) &&
            arg2 != NULL && strcasecmp(arg2, "variable_value") == 0)
            return SQLITE_IGNORE;
        return SQLITE_OK;
    case SQLITE_PRAGMA:
        if (in_list(arg1, stats_pragmas, HA_ARRAY_SIZE(stats_pragmas)))
            return SQLITE_OK;
        return deny_super(d);
    case SQLITE_UPDATE:
    case SQLITE_INSERT:
    case SQLITE_DELETE:
        /* The schema tables change only through DDL (checked by its own
         * action codes) or when SQLite first sets up an eponymous
         * virtual table on the connection: SQLite refuses a user's own
         * write to them (no writable_schema). Letting these through
         * makes the DDL check the one that names the refusal. */
        if (arg1 != NULL && (strcasecmp(arg1, "sqlite_master") == 0 ||
                             strcasecmp(arg1, "sqlite_temp_master") == 0))
            return SQLITE_OK;
        return deny_table(d, who,
                          action == SQLITE_UPDATE   ? "UPDATE"
                          : action == SQLITE_INSERT ? "INSERT"
                                                    : "DELETE",
                          arg1);
    case SQLITE_CREATE_TABLE:
    case SQLITE_CREATE_TEMP_TABLE:
    case SQLITE_CREATE_VIEW:
    case SQLITE_CREATE_TEMP_VIEW:
        return deny_table(d, who, "CREATE", arg1);
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TEMP_INDEX:
        return deny_table(d, who, "INDEX", arg2);
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_DROP_TEMP_TRIGGER:
        return deny_table(d, who, "TRIGGER", arg2);
    case SQLITE_CREATE_VTABLE:
        return deny_table(d, who, "CREATE", arg1);
    case SQLITE_DROP_TABLE:
    case SQLITE_DROP_TEMP_TABLE:
    case SQLITE_DROP_VIEW:
    case SQLITE_DROP_TEMP_VIEW:
    case SQLITE_DROP_VTABLE:
        return deny_table(d, who, "DROP", arg1);
    case SQLITE_ALTER_TABLE:
        return deny_table(d, who, "ALTER", arg2);
    default:
        /* REINDEX, ANALYZE and anything SQLite adds later. */
        return deny_super(d);
    }
}

int
ha_authorizer_decide(const struct ha_authz_who *who, int action,
                     const char *arg1, const char *arg2, const char *dbname,
                     const char *inner, struct ha_authz_denial *d)
{
    int rc;

    (void)inner;
    rc = decide_all(action, arg1, arg2, d);
    if (rc != SQLITE_OK || who->role == HA_ROLE_ADMIN)
        return rc;
    return decide_stats(who, action, arg1, arg2, dbname, d);
}

/* ------------------------------------------------------------------ */
/* Connection                                                           */
/* ------------------------------------------------------------------ */

static int
authorize(void *arg, int action, const char *arg1, const char *arg2,
          const char *dbname, const char *inner)
{
    struct ha_authz_who *who = arg;
    struct ha_authz_denial d;
    int rc = ha_authorizer_decide(who, action, arg1, arg2, dbname, inner,
                                  &d);

    if (rc == SQLITE_DENY) {
        who->denial = d;
        who->has_denial = true;
    }
    return rc;
}

int
ha_authorizer_harden(sqlite3 *db, char *err, size_t errlen)
{
    static const struct {
        int op;
        int value;
        const char *name;
    } configs[] = {
        {SQLITE_DBCONFIG_DEFENSIVE, 1, "DEFENSIVE"},
        {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, "TRUSTED_SCHEMA"},
        {SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, "ENABLE_LOAD_EXTENSION"},
    };
    static const struct {
        int id;
        int value;
    } limits[] = {
        {SQLITE_LIMIT_LENGTH, HA_AUTHZ_MAX_LENGTH},
        {SQLITE_LIMIT_SQL_LENGTH, HA_AUTHZ_MAX_LENGTH},
        {SQLITE_LIMIT_EXPR_DEPTH, HA_AUTHZ_MAX_EXPR_DEPTH},
        {SQLITE_LIMIT_COMPOUND_SELECT, HA_AUTHZ_MAX_COMPOUND},
        {SQLITE_LIMIT_LIKE_PATTERN_LENGTH, HA_AUTHZ_MAX_LIKE},
        {SQLITE_LIMIT_VARIABLE_NUMBER, HA_AUTHZ_MAX_VARIABLES},
        {SQLITE_LIMIT_TRIGGER_DEPTH, HA_AUTHZ_MAX_TRIGGER_DEPTH},
        {SQLITE_LIMIT_ATTACHED, 0},
        {SQLITE_LIMIT_WORKER_THREADS, 0},
    };
    char *zerr = NULL;

    for (size_t i = 0; i < HA_ARRAY_SIZE(configs); i++) {
        int now = -1;
        if (sqlite3_db_config(db, configs[i].op, configs[i].value, &now) !=
                SQLITE_OK ||
            now != configs[i].value) {
            ha_err_set(err, errlen, "cannot set SQLITE_DBCONFIG_%s",
                       configs[i].name);
            return -1;
        }
    }
    for (size_t i = 0; i < HA_ARRAY_SIZE(limits); i++)
        sqlite3_limit(db, limits[i].id, limits[i].value);
    /* Temporary tables and sort spills stay in memory, never in a file
     * under TMPDIR. */
    if (sqlite3_exec(db, "PRAGMA temp_store = MEMORY", NULL, NULL, &zerr) !=
        SQLITE_OK) {
        ha_err_set(err, errlen, "cannot set temp_store: %s",
                   zerr ? zerr : "unknown error");
        sqlite3_free(zerr);
        return -1;
    }
    return 0;
}

void
ha_authorizer_arm(sqlite3 *db, struct ha_authz_who *who)
{
    sqlite3_set_authorizer(db, authorize, who);
}

bool
ha_authorizer_take_denial(struct ha_authz_who *who, struct ha_authz_denial *d)
{
    if (who == NULL || !who->has_denial)
        return false;
    *d = who->denial;
    who->has_denial = false;
    return true;
}
