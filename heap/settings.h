/* SPDX-License-Identifier: MIT
 *
 * The settings engine: the admin-* and jemalloc-* variables (the rows of
 * global_variables, in ProxySQL's <module>-<name> naming), how each is
 * read live, and changes to them, checked then applied all or nothing.
 * Every face goes through it: the SQL table (vtab/globals.c) maps its
 * rows and UPDATEs here, and the engine applies the values saved on disk
 * at start-up (engine/persist.c) with the same checks and log lines.
 *
 * A change set is staged one variable at a time (ha_settings_stage
 * checks the value against what the variable allows and what jemalloc
 * can do now; nothing changes yet), then ha_settings_commit applies it in
 * order: if one fails, the settings applied before it are put back
 * (actions already done cannot be, and the message says which). Each
 * refusal and each change is logged with who asked (the audit trail).
 *
 * What the heap service does not own stays behind its hooks (heap.h):
 * the admin-* rows come from heap->admin_value (the config's owner), the
 * watches' state rows from heap->engine_value, the push's cue after a
 * dump from heap->published.
 *
 * Loop thread: jemalloc-dump_now and jemalloc-log_now wait for the disk
 * worker (core/task.h), as the statement that asked.
 */
#ifndef HA_SETTINGS_H
#define HA_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>

struct ha_heap;

/* What a variable is, for the table and the docs (docs/gen/gendocs.c
 * makes docs/reference/variables.md from it). */
struct ha_settings_var {
    const char *name;     /* "jemalloc-prof_active" */
    const char *mallctl;  /* jemalloc's name behind it; NULL: none */
    const char *hint;     /* read-only ones: how to change it instead;
                             NULL: none */
    const char *doc;      /* what it is, plain text, `code` in
                             backquotes; NULL where the config key of
                             the same name says it (admin-x:
                             admin_variables.x, jemalloc-x:
                             jemalloc_variables.x) */
    unsigned flags;       /* HA_SETTINGS_* */
};

#define HA_SETTINGS_WRITABLE (1u << 0) /* a change may set it */
#define HA_SETTINGS_ACTION (1u << 1)   /* reads 'false' (or what is
                                          left of it), acts when set;
                                          never saved */
#define HA_SETTINGS_SAVED (1u << 2)    /* SAVE ... TO DISK keeps it */
#define HA_SETTINGS_PROF (1u << 3)     /* changes need opt.prof */

/* Longest info message of one change, terminating NUL included. */
#define HA_SETTINGS_INFO_MAX 1024

/* How many variables there are; their index runs from 0, in the order
 * global_variables lists them. */
int ha_settings_count(void);

/* Variable i (0 <= i < ha_settings_count()) into out. Returns 0, or -1
 * when there is no such index. */
int ha_settings_describe(int i, struct ha_settings_var *out);

/* The index of the variable called name, or -1. */
int ha_settings_find(const char *name);

/* Whether name is a setting SAVE ... TO DISK keeps: writable and not an
 * action (dump_now, reset_now, purge_now). */
bool ha_settings_persistable(const char *name);

/* The current value of variable i as text into buf (len bytes; cut to
 * fit). Returns false for NULL: jemalloc cannot tell (a mallctl failed,
 * lg_prof_sample with profiling off), or a hook is not set. */
bool ha_settings_read(struct ha_heap *heap, int i, char *buf, size_t len);

/* The same by name; false also for an unknown name. */
bool ha_settings_get(struct ha_heap *heap, const char *name, char *buf,
                     size_t len);

/* Calls visit for every variable in order with its current value (NULL
 * as ha_settings_read says); stops at the first visit that returns
 * non-zero and returns that, else 0. */
int ha_settings_each(struct ha_heap *heap,
                     int (*visit)(void *arg, const char *name,
                               const char *value),
                     void *arg);

/* ------------------------------------------------------------------
 * Change sets
 * ------------------------------------------------------------------ */

struct ha_settings_change;

/* One change set: staged changes waiting for ha_settings_commit. Used on
 * one thread. */
struct ha_settings {
    struct ha_heap *heap;                /* what the changes act on */
    const char *who;                     /* for the log: "user@peer"; the
                                            caller's string, read when a
                                            line is written; NULL or "":
                                            "(unknown)" */
    struct ha_settings_change *changes;  /* staged, in order */
    int n_changes;
    int cap_changes;
};

/* Starts an empty change set on heap for who (kept by pointer). */
void ha_settings_begin(struct ha_settings *s, struct ha_heap *heap,
                       const char *who);

/* Checks that variable name may be set to value (text; NULL is refused
 * by every variable) and stages it. 'false' on an action stages nothing.
 * Returns 0, or -1 with err naming the variable, the value and what is
 * allowed (a read-only one: how to change it instead); a refusal is
 * logged. */
int ha_settings_stage(struct ha_settings *s, const char *name,
                      const char *value, char *err, size_t errlen);

/* How many changes are staged: a mark for ha_settings_rollback_to. */
int ha_settings_staged(const struct ha_settings *s);

/* Applies the staged changes in order, each logged, and empties the set.
 * Returns 0 with what they did in info ("; "-separated, "" when nothing
 * says more than done), or -1 with why in err followed by what was put
 * back: nothing stays changed but actions already done. */
int ha_settings_commit(struct ha_settings *s, char *info, size_t infolen,
                       char *err, size_t errlen);

/* Forgets the changes staged after mark (ha_settings_staged). */
void ha_settings_rollback_to(struct ha_settings *s, int mark);

/* Forgets every staged change; the set stays usable. */
void ha_settings_rollback(struct ha_settings *s);

/* Forgets every staged change and frees the set's memory. */
void ha_settings_end(struct ha_settings *s);

#endif /* HA_SETTINGS_H */
