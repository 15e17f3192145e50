/* SPDX-License-Identifier: MIT
 *
 * The disk layer's operations (see persist.h): save, load, write the
 * config file, and apply the saved values at start-up.
 */
#include "engine/persist.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "engine/config_write.h"
#include "engine/diskstore.h"
#include "engine/ownfiles.h"
#include "core/blockio.h"
#include "core/buf.h"
#include "core/fdio.h"
#include "core/log.h"
#include "core/task.h"
#include "core/util.h"
#include "core/datadir.h"
#include "heap/settings.h"
#include "prof/wrappers.h"

#define JE_PREFIX "jemalloc-"

/* The saved rows of a module, as read back. */
struct rows {
    char **names;
    char **values;
    size_t n, cap;
};

static void
rows_free(struct rows *rw)
{
    for (size_t i = 0; i < rw->n; i++) {
        free(rw->names[i]);
        free(rw->values[i]);
    }
    free(rw->names);
    free(rw->values);
    memset(rw, 0, sizeof(*rw));
}

static int
rows_add(void *arg, const char *name, const char *value)
{
    struct rows *rw = arg;

    if (rw->n == rw->cap) {
        size_t cap = rw->cap ? rw->cap * 2 : 16;
        char **a = realloc(rw->names, cap * sizeof(*a));

        if (a == NULL)
            return -1;
        rw->names = a;
        a = realloc(rw->values, cap * sizeof(*a));
        if (a == NULL)
            return -1;
        rw->values = a;
        rw->cap = cap;
    }
    rw->names[rw->n] = strdup(name != NULL ? name : "");
    rw->values[rw->n] = strdup(value != NULL ? value : "");
    if (rw->names[rw->n] == NULL || rw->values[rw->n] == NULL)
        return -1;
    rw->n++;
    return 0;
}

/* Drops the rows of rw that no SAVE writes, each logged: actions (a
 * jemalloc-dump_now saved by an older version would dump at every
 * start, a purge_now purge), read-only rows and names this version does
 * not have. what says who reads ("start-up", "LOAD ... FROM DISK"); the
 * names dropped go to dropped ("a, b"). Returns how many. */
static size_t
drop_unsaveable(struct rows *rw, const char *path, const char *what,
                char *dropped, size_t droppedlen)
{
    size_t kept = 0, n = 0, used = 0;

    if (droppedlen > 0)
        dropped[0] = '\0';
    for (size_t i = 0; i < rw->n; i++) {
        if (ha_settings_persistable(rw->names[i])) {
            rw->names[kept] = rw->names[i];
            rw->values[kept] = rw->values[i];
            kept++;
            continue;
        }
        ha_log_warn("%s: saved %s = '%s' in %s ignored: not a setting SAVE "
                    "JEMALLOC VARIABLES TO DISK keeps (an action such as "
                    "jemalloc-dump_now, a read-only row, or no such "
                    "variable), so never applied from disk; the next SAVE "
                    "rewrites the file without it",
                    what, rw->names[i], rw->values[i], path);
        if (used < droppedlen) {
            int k = snprintf(dropped + used, droppedlen - used, "%s%s",
                             n > 0 ? ", " : "", rw->names[i]);

            used = k < 0 ? droppedlen : used + (size_t)k;
        }
        n++;
        free(rw->names[i]);
        free(rw->values[i]);
    }
    rw->n = kept;
    return n;
}

/* The live jemalloc-* settings SAVE keeps, from global_variables. */
static int
live_rows(sqlite3 *db, struct rows *rw, char *err, size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc;

    if (sqlite3_prepare_v2(db,
                           "SELECT variable_name, variable_value FROM "
                           "global_variables WHERE variable_name "
                           "LIKE 'jemalloc-%' ORDER BY 1",
                           -1, &st, NULL) != SQLITE_OK) {
        ha_err_set(err, errlen, "%s", sqlite3_errmsg(db));
        return -1;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        const char *value = (const char *)sqlite3_column_text(st, 1);

        /* NULL: not available now (lg_prof_sample with profiling off);
         * nothing to keep. */
        if (name == NULL || value == NULL || !ha_settings_persistable(name))
            continue;
        if (rows_add(rw, name, value) != 0) {
            ha_err_set(err, errlen, "out of memory");
            sqlite3_finalize(st);
            return -1;
        }
    }
    if (rc != SQLITE_DONE)
        ha_err_set(err, errlen, "%s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* UPDATE global_variables for one row, as an operator's UPDATE would be
 * (validated, logged by the table). Returns 0, or -1 with err. */
static int
apply_one(sqlite3 *db, const char *name, const char *value, char *err,
          size_t errlen)
{
    sqlite3_stmt *st = NULL;
    int rc;

    rc = sqlite3_prepare_v2(db,
                            "UPDATE global_variables "
                            "SET variable_value = ?1 WHERE variable_name = ?2",
                            -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, value, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    if (rc != SQLITE_DONE)
        ha_err_set(err, errlen, "%s = '%s': %s", name, value,
                   sqlite3_errmsg(db));
    else if (sqlite3_changes(db) == 0) {
        ha_err_set(err, errlen, "%s: no such variable", name);
        rc = SQLITE_ERROR;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : -1;
}

/* The current value of one row, or "NULL". */
static void
current(sqlite3 *db, const char *name, char *out, size_t outlen)
{
    sqlite3_stmt *st = NULL;

    ha_strlcpy(out, "NULL", outlen);
    if (sqlite3_prepare_v2(db,
                           "SELECT variable_value FROM global_variables "
                           "WHERE variable_name = ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
        ha_strlcpy(out, (const char *)sqlite3_column_text(st, 0), outlen);
    sqlite3_finalize(st);
}

/* ------------------------------------------------------------------
 * heapadmin.db's file work, off the loop
 * ------------------------------------------------------------------ */

/* A SAVE's write or a LOAD's read of heapadmin.db, as a job for the disk
 * worker (core/task.h ha_task_offload_to): it owns what it reads and
 * writes, as a killed statement stops waiting and leaves it to end
 * alone (disk_discard). */
struct disk_job {
    char datadir[PATH_MAX];
    bool save;                  /* else load */
    struct rows rw;             /* save: in; load: out */
    int rc;
    char err[PATH_MAX + 512];
};

static void
disk_run(void *arg)
{
    struct disk_job *j = arg;

    if (j->save)
        j->rc = ha_diskstore_save(j->datadir, JE_PREFIX,
                                  (const char *const *)j->rw.names,
                                  (const char *const *)j->rw.values,
                                  j->rw.n, j->err, sizeof(j->err));
    else
        j->rc = ha_diskstore_load(j->datadir, JE_PREFIX, rows_add, &j->rw,
                                  j->err, sizeof(j->err));
}

static void
disk_discard(void *arg)
{
    struct disk_job *j = arg;

    if (j->save && j->rc == 0)
        ha_log_notice("SAVE JEMALLOC VARIABLES TO DISK completed after "
                      "the statement that asked for it stopped waiting");
    rows_free(&j->rw);
    free(j);
}

/* Runs j on the disk worker while the statement waits, a bounded time
 * (core/blockio.h). Returns 0 with j run (the caller frees it), or -1
 * with err set (j is no longer the caller's). */
static int
disk_do(const struct ha_persist_ctx *ctx, struct disk_job *j, char *err,
        size_t errlen)
{
    j->rc = -1;
    return ha_blockio_call_on(ctx->disk_worker,
                              j->save ? "writing heapadmin.db"
                                      : "reading heapadmin.db",
                              disk_run, disk_discard, j, err, errlen);
}

/* ------------------------------------------------------------------
 * Operations
 * ------------------------------------------------------------------ */

int
ha_persist_save(const struct ha_persist_ctx *ctx, size_t *n, char *msg,
                size_t msglen)
{
    struct rows rw = {0};
    struct disk_job *j = NULL;
    char err[PATH_MAX + 512], path[PATH_MAX];
    int ret = -1;

    *n = 0;
    ha_diskstore_path(ctx->datadir, path, sizeof(path));
    if (live_rows(ctx->db, &rw, err, sizeof(err)) == 0 &&
        (j = calloc(1, sizeof(*j))) == NULL)
        ha_err_set(err, sizeof(err), "out of memory");
    if (j != NULL) {
        /* The rows are the job's from here. */
        ha_strlcpy(j->datadir, ctx->datadir, sizeof(j->datadir));
        j->save = true;
        j->rw = rw;
        memset(&rw, 0, sizeof(rw));
        if (disk_do(ctx, j, err, sizeof(err)) != 0)
            j = NULL; /* disk_discard's now */
        else if (j->rc != 0)
            ha_strlcpy(err, j->err, sizeof(err));
    }
    if (j == NULL || j->rc != 0) {
        ha_log_warn("control: %s: SAVE JEMALLOC VARIABLES TO DISK "
                    "failed: %s",
                    ctx->who, err);
        ha_err_set(msg, msglen, "SAVE JEMALLOC VARIABLES TO DISK: %s", err);
        goto out;
    }
    ha_log_notice("control: %s: SAVE JEMALLOC VARIABLES TO DISK: %zu "
                  "variables saved to %s",
                  ctx->who, j->rw.n, path);
    ha_err_set(msg, msglen,
               "%zu jemalloc variables saved to %s; they apply at every "
               "start (heapadmind --initial discards them)",
               j->rw.n, path);
    *n = j->rw.n;
    ret = 0;
out:
    rows_free(&rw);
    if (j != NULL) {
        rows_free(&j->rw);
        free(j);
    }
    return ret;
}

int
ha_persist_load(const struct ha_persist_ctx *ctx, size_t *n,
                enum ha_persist_error *why, char *msg, size_t msglen)
{
    struct rows rw = {0};
    char err[PATH_MAX + 512], path[PATH_MAX], dropped[512];
    size_t ignored;
    int ret = -1;

    *n = 0;
    *why = HA_PERSIST_IO;
    ha_diskstore_path(ctx->datadir, path, sizeof(path));
    {
        /* The file is read on the disk worker; the rows applied here. */
        struct disk_job *j = calloc(1, sizeof(*j));

        if (j == NULL) {
            ha_err_set(msg, msglen,
                       "LOAD JEMALLOC VARIABLES FROM DISK: out of memory");
            goto out;
        }
        ha_strlcpy(j->datadir, ctx->datadir, sizeof(j->datadir));
        if (disk_do(ctx, j, err, sizeof(err)) != 0) {
            ha_err_set(msg, msglen, "LOAD JEMALLOC VARIABLES FROM DISK: %s",
                       err);
            goto out;
        }
        int rc = j->rc;

        rw = j->rw; /* the rows are ours now, read or not */
        if (rc != 0)
            ha_err_set(msg, msglen, "LOAD JEMALLOC VARIABLES FROM DISK: %s",
                       j->err);
        free(j);
        if (rc != 0)
            goto out;
    }
    ignored = drop_unsaveable(&rw, path, "LOAD JEMALLOC VARIABLES FROM DISK",
                              dropped, sizeof(dropped));
    /* All or nothing: one savepoint, so the table applies every change
     * at its end or none. */
    if (sqlite3_exec(ctx->db, "SAVEPOINT ha_load", NULL, NULL, NULL) !=
        SQLITE_OK) {
        *why = HA_PERSIST_SQL;
        ha_err_set(msg, msglen, "%s", sqlite3_errmsg(ctx->db));
        goto out;
    }
    for (size_t i = 0; i < rw.n; i++) {
        if (apply_one(ctx->db, rw.names[i], rw.values[i], err,
                      sizeof(err)) != 0) {
            sqlite3_exec(ctx->db, "ROLLBACK TO ha_load", NULL, NULL, NULL);
            sqlite3_exec(ctx->db, "RELEASE ha_load", NULL, NULL, NULL);
            ha_log_warn("control: %s: LOAD JEMALLOC VARIABLES FROM DISK "
                        "refused: %s",
                        ctx->who, err);
            *why = HA_PERSIST_INVALID;
            ha_err_set(msg, msglen,
                       "LOAD JEMALLOC VARIABLES FROM DISK: %s (from %s); "
                       "nothing was changed",
                       err, path);
            goto out;
        }
    }
    if (sqlite3_exec(ctx->db, "RELEASE ha_load", NULL, NULL, NULL) !=
        SQLITE_OK) {
        *why = HA_PERSIST_SQL;
        ha_err_set(msg, msglen, "%s", sqlite3_errmsg(ctx->db));
        goto out;
    }
    ha_log_notice("control: %s: LOAD JEMALLOC VARIABLES FROM DISK: %zu "
                  "variables applied from %s",
                  ctx->who, rw.n, path);
    if (ignored > 0)
        ha_err_set(msg, msglen,
                   "%zu jemalloc variables loaded from %s and applied (memory "
                   "and runtime are one layer); %zu saved rows ignored, "
                   "not settings SAVE keeps (actions, read-only or unknown): "
                   "%s",
                   rw.n, path, ignored, dropped);
    else
        ha_err_set(msg, msglen,
                   "%zu jemalloc variables loaded from %s and applied (memory "
                   "and runtime are one layer)",
                   rw.n, path);
    *n = rw.n;
    ret = 0;
out:
    rows_free(&rw);
    return ret;
}

/* Reads an integer row into a long long field. */
static void
live_ll(sqlite3 *db, const char *name, long long *field)
{
    char v[64];

    current(db, name, v, sizeof(v));
    if (strcmp(v, "NULL") != 0)
        *field = atoll(v);
}

/* Reads a text row into a char array field of len bytes. */
static void
live_str(sqlite3 *db, const char *name, char *field, size_t len)
{
    char v[HA_WRAP_TEXT_MAX];

    current(db, name, v, sizeof(v));
    if (strcmp(v, "NULL") != 0)
        ha_strlcpy(field, v, len);
}

/* Reads "true"/"false" or an integer row into an int field. */
static void
live_int(sqlite3 *db, const char *name, int *field, bool boolean)
{
    char v[64];

    current(db, name, v, sizeof(v));
    if (strcmp(v, "NULL") == 0)
        return;
    if (boolean)
        *field = strcmp(v, "true") == 0;
    else
        *field = atoi(v);
}

/* SAVE CONFIG TO FILE's file work, as a job for the disk worker: what
 * it replaces, the temporary file, fsync, rename and the directory's
 * fsync never run on the loop (a full or hung datadir disk). */
struct cfgfile_job {
    char datadir[PATH_MAX], file[NAME_MAX + 1];
    char path[PATH_MAX], tmp[PATH_MAX + 32];
    struct ha_buf text;
    const struct ha_config *cfg;   /* for the daemon's own names */
    char replaced[NAME_MAX + 96];
    char own[256];                 /* what file is, when heapadmind's own */
    int rc, errnum;
};

static void
cfgfile_run(void *arg)
{
    struct cfgfile_job *j = arg;
    struct stat old;
    int fd;

    j->rc = -1;
    /* Never over one of the daemon's own files (engine/ownfiles.h): a
     * key, a database, a dump or the log overwritten by a slip. Here,
     * where the disk may keep it waiting. */
    if (ha_ownfiles_is_own(j->datadir, j->cfg, j->file, j->own,
                           sizeof(j->own))) {
        j->rc = -2;
        return;
    }
    /* What it replaces, for the message and the log. */
    if (lstat(j->path, &old) == 0) {
        char when[32];

        (void)ha_utc_stamp(when, sizeof(when), old.st_mtime, ' ');
        snprintf(j->replaced, sizeof(j->replaced),
                 "replaced the earlier %s (%lld bytes, written %s UTC)",
                 j->file, (long long)old.st_size, when);
    } else {
        snprintf(j->replaced, sizeof(j->replaced), "a new file");
    }
    /* Passwords are in it: 0600 (mkostemp's), a fresh file beside the
     * target, synced, renamed into place, the directory synced: a crash
     * leaves the old file or the new one, never half of either. */
    if ((fd = mkostemp(j->tmp, O_CLOEXEC)) < 0) {
        j->errnum = errno;
        return;
    }
    if ((j->errnum = ha_fdio_write_all(fd, j->text.data, j->text.len)) !=
            0 ||
        (fsync(fd) != 0 && (j->errnum = errno) != 0)) {
        close(fd);
        unlink(j->tmp);
        return;
    }
    if (close(fd) != 0 || rename(j->tmp, j->path) != 0) {
        j->errnum = errno;
        unlink(j->tmp);
        return;
    }
    if ((fd = open(j->datadir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    j->rc = 0;
}

static void
cfgfile_discard(void *arg)
{
    struct cfgfile_job *j = arg;

    if (j->rc == 0)
        ha_log_notice("SAVE CONFIG TO FILE: %s written (%s) after the "
                      "statement that asked for it stopped waiting",
                      j->path, j->replaced);
    ha_buf_free(&j->text);
    free(j);
}

int
ha_persist_save_config(const struct ha_persist_ctx *ctx, const char *file,
                       char *msg, size_t msglen)
{
    struct ha_config copy;
    struct cfgfile_job *j;
    char why[256], header[256], stamp[32];
    time_t now = time(NULL);
    int n, ret = -1;

    if (ctx->cfg == NULL) {
        ha_err_set(msg, msglen, "SAVE CONFIG TO FILE: no config");
        return -1;
    }
    /* Only a name in the datadir: SQL never picks where files go. */
    if (!ha_datadir_plain_name(file, why, sizeof(why))) {
        ha_err_set(msg, msglen,
                   "SAVE CONFIG TO FILE '%s': %s; give a file name, "
                   "written into the datadir %s",
                   file, why, ctx->datadir);
        return -1;
    }
    if ((j = calloc(1, sizeof(*j))) == NULL) {
        ha_err_set(msg, msglen, "SAVE CONFIG TO FILE: out of memory");
        return -1;
    }
    n = snprintf(j->path, sizeof(j->path), "%s/%s", ctx->datadir, file);
    if (n < 0 || (size_t)n >= sizeof(j->path) ||
        strlen(file) >= sizeof(j->file) ||
        strlen(ctx->datadir) >= sizeof(j->datadir) ||
        snprintf(j->tmp, sizeof(j->tmp), "%s/.%s.XXXXXX", ctx->datadir,
                 file) >= (int)sizeof(j->tmp)) {
        free(j);
        ha_err_set(msg, msglen, "SAVE CONFIG TO FILE: name too long");
        return -1;
    }
    ha_strlcpy(j->file, file, sizeof(j->file));
    ha_strlcpy(j->datadir, ctx->datadir, sizeof(j->datadir));
    j->cfg = ctx->cfg;
    /* The config as loaded, with the settings that change at run time
     * as they are now. */
    copy = *ctx->cfg;
    live_int(ctx->db, "jemalloc-prof_active", &copy.jemalloc.prof_active,
             true);
    live_int(ctx->db, "jemalloc-lg_prof_sample", &copy.jemalloc.lg_prof_sample,
             false);
    live_int(ctx->db, "jemalloc-prof_gdump", &copy.jemalloc.prof_gdump, true);
    live_int(ctx->db, "jemalloc-stats_max_age_ms",
             &copy.jemalloc.stats_max_age_ms, false);
    live_int(ctx->db, "jemalloc-dump_symbolized",
             &copy.jemalloc.dump_symbolized, true);
    live_ll(ctx->db, "jemalloc-dirty_decay_ms", &copy.jemalloc.dirty_decay_ms);
    live_ll(ctx->db, "jemalloc-muzzy_decay_ms", &copy.jemalloc.muzzy_decay_ms);
    live_str(ctx->db, "jemalloc-alloc_wrappers", copy.jemalloc.alloc_wrappers,
             sizeof(copy.jemalloc.alloc_wrappers));
    (void)ha_utc_stamp(stamp, sizeof(stamp), now, 'T');
    snprintf(header, sizeof(header),
             "# heapadmin config written by SAVE CONFIG TO FILE at %sZ (the "
             "config loaded, with the live jemalloc settings)",
             stamp);
    ha_config_write(&copy, ctx->datadir, header, &j->text);
    if (ha_buf_failed(&j->text)) {
        ha_buf_free(&j->text);
        free(j);
        ha_err_set(msg, msglen, "SAVE CONFIG TO FILE: out of memory");
        return -1;
    }
    /* On -1 the job belongs to cfgfile_discard. */
    j->rc = -1;
    if (ha_blockio_call_on(ctx->disk_worker, "writing a config file",
                           cfgfile_run, cfgfile_discard, j, why,
                           sizeof(why)) != 0) {
        ha_err_set(msg, msglen, "SAVE CONFIG TO FILE %s/%s: %s",
                   ctx->datadir, file, why);
        return -1;
    }
    if (j->rc == -2) {
        ha_log_warn("control: %s: SAVE CONFIG TO FILE '%s' refused: %s",
                    ctx->who, file, j->own);
        ha_err_set(msg, msglen,
                   "SAVE CONFIG TO FILE '%s': that is %s, one of "
                   "heapadmind's own files; give another name in the "
                   "datadir %s (not " HA_OWNFILES_LIST "), such as "
                   "saved.cnf",
                   file, j->own, ctx->datadir);
    } else if (j->rc != 0) {
        ha_err_set(msg, msglen, "SAVE CONFIG TO FILE %s: %s", j->path,
                   strerror(j->errnum));
    } else {
        ha_log_notice("control: %s: SAVE CONFIG TO FILE: %s written (%s)",
                      ctx->who, j->path, j->replaced);
        ha_err_set(msg, msglen,
                   "config written to %s (%s); start with it: heapadmind -c "
                   "%s",
                   j->path, j->replaced, j->path);
        ret = 0;
    }
    ha_buf_free(&j->text);
    free(j);
    return ret;
}

/* ------------------------------------------------------------------
 * Start-up
 * ------------------------------------------------------------------ */

/* Applies one saved value through the settings engine, as an operator's
 * UPDATE would be (checked, logged with set's who). Returns 0, or -1
 * with err. */
static int
apply_saved_one(struct ha_settings *set, const char *name,
                const char *value, char *err, size_t errlen)
{
    char info[HA_SETTINGS_INFO_MAX], why[PATH_MAX + 2048];

    if (ha_settings_stage(set, name, value, why, sizeof(why)) != 0 ||
        ha_settings_commit(set, info, sizeof(info), why, sizeof(why)) != 0) {
        ha_settings_rollback(set);
        ha_err_set(err, errlen, "%s = '%s': %s", name, value, why);
        return -1;
    }
    return 0;
}

/* Applies the rows of rw that differ from the live value, each on its
 * own, logged. Returns how many were applied. */
static int
apply_saved_rows(const struct ha_persist_ctx *ctx, const struct rows *rw,
                 const char *path)
{
    struct ha_settings set;
    char err[PATH_MAX + 2560], was[256];
    int applied = 0;

    ha_settings_begin(&set, ctx->heap, "start-up (saved on disk)");
    for (size_t i = 0; i < rw->n; i++) {
        if (!ha_settings_get(ctx->heap, rw->names[i], was, sizeof(was)))
            ha_strlcpy(was, "NULL", sizeof(was));
        if (strcmp(was, rw->values[i]) == 0) {
            ha_log_info("start-up: %s = '%s' (saved in %s; the same as "
                        "the config file or jemalloc's default)",
                        rw->names[i], rw->values[i], path);
            continue;
        }
        if (apply_saved_one(&set, rw->names[i], rw->values[i], err,
                            sizeof(err)) != 0) {
            ha_log_warn("start-up: saved %s not applied: %s", rw->names[i],
                        err);
            continue;
        }
        applied++;
        ha_log_notice("start-up: %s = '%s' from %s (saved on disk), over "
                      "'%s' from the config file or jemalloc's default",
                      rw->names[i], rw->values[i], path, was);
    }
    ha_settings_end(&set);
    return applied;
}

int
ha_persist_apply_saved(const struct ha_persist_ctx *ctx, bool initial)
{
    struct rows rw = {0};
    char err[PATH_MAX + 512], path[PATH_MAX], was[256];
    int applied;

    ha_diskstore_path(ctx->datadir, path, sizeof(path));
    if (initial) {
        if (ha_diskstore_clear(ctx->datadir, JE_PREFIX, err, sizeof(err)) !=
            0) {
            ha_log_error("--initial: cannot discard the saved values: %s",
                         err);
            return -1;
        }
        ha_log_notice("--initial: saved jemalloc variables in %s discarded; "
                      "the config file alone applies",
                      path);
        return 0;
    }
    if (ha_diskstore_load(ctx->datadir, JE_PREFIX, rows_add, &rw, err,
                          sizeof(err)) != 0) {
        ha_log_error("saved variables not applied: %s", err);
        rows_free(&rw);
        return -1;
    }
    (void)drop_unsaveable(&rw, path, "start-up", was, sizeof(was));
    applied = apply_saved_rows(ctx, &rw, path);
    rows_free(&rw);
    return applied;
}
