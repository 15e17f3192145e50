/* SPDX-License-Identifier: MIT
 *
 * SET as a session runs it (see setexec.h). setvar.c parses the
 * statement; here each value is evaluated on the session's connection
 * and checked as MySQL checks it, and only then does anything change:
 * first the jemalloc-* rows of global_variables (one savepoint, all or
 * nothing), then the session's variables.
 */
#include "admin/setexec.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin/setvar.h"
#include "admin/sysvar.h"
#include "admin/vars.h"
#include "core/util.h"
#include "vtab/vtab.h"

/* ON/OFF, TRUE/FALSE, 1/0 as MySQL's boolean variables take them.
 * Returns 0 with *b set, or -1. */
static int
parse_bool(const struct ha_session_var *v, bool *b)
{
    static const struct {
        const char *word;
        bool value;
    } words[] = {{"on", true},   {"true", true},   {"1", true},
                 {"off", false}, {"false", false}, {"0", false}};

    if (v->type == HA_SYSVAR_INT && (v->ival == 0 || v->ival == 1)) {
        *b = v->ival == 1;
        return 0;
    }
    if (v->type != HA_SYSVAR_TEXT)
        return -1;
    for (size_t i = 0; i < HA_ARRAY_SIZE(words); i++) {
        if (ha_str_ieq(v->sval, words[i].word)) {
            *b = words[i].value;
            return 0;
        }
    }
    return -1;
}

/* The value as text, for messages. */
static const char *
var_text(const struct ha_session_var *v, char *buf, size_t len)
{
    if (v->type == HA_SYSVAR_TEXT)
        return v->sval;
    if (v->type == HA_SYSVAR_NULL)
        return "NULL";
    snprintf(buf, len, "%lld", (long long)v->ival);
    return buf;
}

/* Evaluates a SET value: a bare word is text; an expression is run as
 * SELECT <expr> on the session's connection. Returns 0, or -1 having
 * replied with the SQLite error. */
static int
eval_value(struct ha_session *s, const struct ha_set_item *it,
           struct ha_session_var *out, struct ha_reply *r)
{
    sqlite3_stmt *st = NULL;
    char *sql;
    int rc;

    memset(out, 0, sizeof(*out));
    ha_strlcpy(out->name, it->name, sizeof(out->name));
    if (it->kind == HA_SET_DEFAULT) {
        out->type = HA_SYSVAR_NULL;
        return 0;
    }
    if (it->kind == HA_SET_WORD) {
        out->type = HA_SYSVAR_TEXT;
        out->sval = strdup(it->value);
        return out->sval != NULL ? 0 : -1;
    }
    /* Parenthesised, so "1 b" is an error and not a column alias. */
    sql = sqlite3_mprintf("SELECT (%s)", it->value);
    rc = sql ? sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                            sqlite3_errmsg(s->db));
        sqlite3_finalize(st);
        return -1;
    }
    switch (sqlite3_column_type(st, 0)) {
    case SQLITE_NULL:
        out->type = HA_SYSVAR_NULL;
        break;
    case SQLITE_INTEGER:
        out->type = HA_SYSVAR_INT;
        out->ival = sqlite3_column_int64(st, 0);
        break;
    default:
        out->type = HA_SYSVAR_TEXT;
        out->sval = strdup((const char *)sqlite3_column_text(st, 0));
        break;
    }
    sqlite3_finalize(st);
    if (out->type == HA_SYSVAR_TEXT && out->sval == NULL) {
        ha_reply_err(r, 1105, "HY000", "out of memory");
        return -1;
    }
    return 0;
}

/* Checks a MySQL variable assignment and puts it in the form it is kept
 * in (integers for integer variables). Returns 0, or -1 having replied
 * with MySQL's error. */
static int
check_mysql_var(const struct ha_set_item *it, struct ha_session_var *v,
                bool is_default, const struct ha_sysvar_limits *lim,
                struct ha_reply *r)
{
    const struct ha_sysvar *sv = ha_sysvar_find(it->name);
    char num[32];
    bool b;

    if (ha_str_ieq(it->name, "autocommit")) {
        if (!is_default && parse_bool(v, &b) != 0) {
            ha_reply_err(r, 1231, "42000",
                         "Variable 'autocommit' can't be set to the value "
                         "of '%s'",
                         var_text(v, num, sizeof(num)));
            return -1;
        }
        return 0;
    }
    if ((sv != NULL && sv->read_only) || it->scope == HA_SET_GLOBAL) {
        ha_reply_err(r, 1238, "HY000",
                     "Variable '%s' is a read only variable%s", it->name,
                     sv != NULL && sv->read_only
                         ? ""
                         : " (MySQL variables here are per session: use "
                           "SET SESSION)");
        return -1;
    }
    if (is_default || sv == NULL)
        return 0;
    if (v->type == HA_SYSVAR_NULL) {
        if (strncmp(it->name, "character_set_", 14) == 0)
            return 0;
        ha_reply_err(r, 1231, "42000",
                     "Variable '%s' can't be set to the value of 'NULL'",
                     it->name);
        return -1;
    }
    if (sv->type == HA_SYSVAR_INT && v->type == HA_SYSVAR_TEXT) {
        char *end;
        long long n = strtoll(v->sval, &end, 10);
        if (parse_bool(v, &b) == 0)
            n = b;
        else if (*v->sval == '\0' || *end != '\0') {
            ha_reply_err(r, 1232, "42000",
                         "Incorrect argument type to variable '%s'",
                         it->name);
            return -1;
        }
        free(v->sval);
        v->sval = NULL;
        v->type = HA_SYSVAR_INT;
        v->ival = n;
    } else if (sv->type != HA_SYSVAR_INT && v->type == HA_SYSVAR_INT) {
        snprintf(num, sizeof(num), "%lld", (long long)v->ival);
        v->sval = strdup(num);
        if (v->sval == NULL)
            return -1;
        v->type = HA_SYSVAR_TEXT;
    }
    /* Honoured (ha_session_arm_deadline), so only what it can mean: 0
     * (the admin ceiling) up to the ceiling
     * admin_variables.max_execution_time. */
    if (ha_str_ieq(it->name, "max_execution_time") &&
        v->type == HA_SYSVAR_INT &&
        (v->ival < 0 ||
         (lim->max_execution_time > 0 && v->ival > lim->max_execution_time))) {
        ha_reply_err(r, 1231, "42000",
                     "Variable 'max_execution_time' can't be set to the value "
                     "of '%lld': allowed 0..%lld ms (0: the server's limit, "
                     "admin_variables.max_execution_time = %lld ms, which a "
                     "session may lower but not raise)",
                     (long long)v->ival,
                     (long long)(lim->max_execution_time > 0
                                     ? lim->max_execution_time
                                     : INT64_MAX),
                     (long long)lim->max_execution_time);
        return -1;
    }
    return 0;
}

/* Runs the global_variables UPDATE for each module assignment, all or
 * nothing (one savepoint: the vtab stages rows and applies them when
 * the outermost transaction commits). Returns 0, or -1 having replied. */
static int
set_module_vars(struct ha_session *s, const struct ha_setvar *sv,
                const struct ha_session_var *vals, const bool *dflt,
                struct ha_reply *r, char *info, size_t infolen)
{
    sqlite3_stmt *st = NULL;
    char *zerr = NULL;
    int rc;

    if (sqlite3_exec(s->db, "SAVEPOINT ha_set", NULL, NULL, &zerr) !=
        SQLITE_OK)
        goto sqlite_fail;
    rc = sqlite3_prepare_v2(s->db,
                            "UPDATE temp.global_variables "
                            "SET variable_value = ?1 "
                            "WHERE variable_name = ?2",
                            -1, &st, NULL);
    if (rc != SQLITE_OK)
        goto sqlite_fail_rollback;
    for (size_t k = 0; k < sv->n; k++) {
        const struct ha_set_item *it = &sv->items[k];
        if (!it->is_module)
            continue;
        if (dflt[k]) {
            ha_reply_err(r, 1231, "42000",
                         "Variable '%s' can't be set to the value of "
                         "'DEFAULT'",
                         it->name);
            goto rollback;
        }
        sqlite3_reset(st);
        if (vals[k].type == HA_SYSVAR_INT)
            sqlite3_bind_int64(st, 1, vals[k].ival);
        else if (vals[k].type == HA_SYSVAR_TEXT)
            sqlite3_bind_text(st, 1, vals[k].sval, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 1);
        sqlite3_bind_text(st, 2, it->name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            goto sqlite_fail_rollback;
        if (sqlite3_changes(s->db) == 0) {
            ha_reply_err(r, 1193, "HY000", "Unknown system variable '%s'",
                         it->name);
            goto rollback;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (sqlite3_exec(s->db, "RELEASE ha_set", NULL, NULL, &zerr) !=
        SQLITE_OK)
        goto sqlite_fail_rollback;
    ha_vtab_take_info(s->vtab, info, infolen);
    return 0;
sqlite_fail_rollback:
    ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                        zerr ? zerr : sqlite3_errmsg(s->db));
rollback:
    sqlite3_finalize(st);
    sqlite3_free(zerr);
    sqlite3_exec(s->db, "ROLLBACK TO ha_set", NULL, NULL, NULL);
    sqlite3_exec(s->db, "RELEASE ha_set", NULL, NULL, NULL);
    {
        char sink[1];
        ha_vtab_take_info(s->vtab, sink, sizeof(sink));
    }
    return -1;
sqlite_fail:
    ha_reply_sqlite_err(r, sqlite3_extended_errcode(s->db),
                        zerr ? zerr : sqlite3_errmsg(s->db));
    sqlite3_free(zerr);
    return -1;
}

int
ha_setexec_run(struct ha_session *s, const struct ha_lex *lx,
               struct ha_reply *r)
{
    struct ha_setvar sv;
    struct ha_session_var *vals = NULL;
    bool *dflt = NULL, any_module = false;
    char err[512], info[HA_VTAB_INFO_MAX] = "";
    int rc = -1;

    if (ha_setvar_parse_lexed(lx, &sv, err, sizeof(err)) != 0) {
        ha_reply_err(r, 1064, "42000", "%s", err);
        goto out;
    }
    vals = calloc(sv.n ? sv.n : 1, sizeof(*vals));
    dflt = calloc(sv.n ? sv.n : 1, sizeof(*dflt));
    if (vals == NULL || dflt == NULL) {
        ha_reply_err(r, 1105, "HY000", "out of memory");
        goto out;
    }
    for (size_t k = 0; k < sv.n; k++) {
        const struct ha_set_item *it = &sv.items[k];
        if (eval_value(s, it, &vals[k], r) != 0)
            goto out;
        dflt[k] = it->kind == HA_SET_DEFAULT;
        if (it->is_module)
            any_module = true;
        else if (it->scope != HA_SET_USER &&
                 check_mysql_var(it, &vals[k], dflt[k], &s->shared->limits,
                                 r) != 0)
            goto out;
    }
    if (any_module &&
        set_module_vars(s, &sv, vals, dflt, r, info, sizeof(info)) != 0)
        goto out;
    for (size_t k = 0; k < sv.n; k++) {
        const struct ha_set_item *it = &sv.items[k];
        bool b = true;
        if (it->is_module)
            continue;
        if (it->scope == HA_SET_USER) {
            if (ha_vars_set(&s->user_vars, &s->n_user_vars, it->name,
                        &vals[k]) != 0)
                goto oom;
        } else if (ha_str_ieq(it->name, "autocommit")) {
            if (!dflt[k])
                parse_bool(&vals[k], &b);
            s->autocommit = b; /* reported, never acted on */
        } else if (dflt[k]) {
            ha_vars_unset(s->vars, &s->n_vars, it->name);
        } else if (ha_vars_set(&s->vars, &s->n_vars, it->name, &vals[k]) !=
                   0) {
            goto oom;
        }
    }
    r->status = ha_session_status(s);
    ha_reply_ok(r, 0, 0, info[0] ? info : NULL);
    rc = 0;
    goto out;
oom:
    ha_reply_err(r, 1105, "HY000", "out of memory");
out:
    if (vals != NULL)
        for (size_t k = 0; k < sv.n; k++)
            free(vals[k].sval);
    free(vals);
    free(dflt);
    ha_setvar_free(&sv);
    return rc;
}
