/* SPDX-License-Identifier: MIT
 *
 * The agent's start-up, shared by its files and private to them: the
 * settings read once at load (settings.c), which every part reads, and
 * the calls that cross from one part to the next. The calls run one way,
 * down: agent.c (the entry points) -> launch.c (the start-up thread) ->
 * instance.c (this process's instance) -> datadir.c, config.c,
 * program.c -> settings.c.
 */
#ifndef HA_AGENT_INT_H
#define HA_AGENT_INT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "agent/fork.h"

/* Settings, read once in the constructor. */
struct ha_agent_settings {
    bool active;                 /* this process is one to serve */
    char conf[PATH_MAX];         /* HEAPADMIN_CONF, "" if none */
    char datadir[PATH_MAX];      /* absolute: the top datadir */
    char socket_tmpl[PATH_MAX];  /* HEAPADMIN_SOCKET, "" if none */
    char tcp[256];               /* HEAPADMIN_TCP, "" if none */
    char log[PATH_MAX];          /* HEAPADMIN_LOG, "" if none */
    char programs[1024];         /* HEAPADMIN_PROGRAMS, "" if none */
    char users[1024];            /* HEAPADMIN_USERS, "" if none */
    char cfg_ifaces[PATH_MAX];   /* the config's mysql_ifaces, "" */
    char program[128];           /* this process's program name */
    char so_path[PATH_MAX];      /* this agent's file */
    unsigned long so_base;       /* ... and where it is mapped */
    unsigned delay_ms;
    enum ha_agent_fork fork;
    bool bad_fork_policy;        /* HEAPADMIN_FORK was not understood */
    pid_t first_pid;             /* the process the agent was loaded in */
    char *conf_text;             /* the config, read once (mmap'd: never
                                    in the host's heap); NULL if none */
    char conf_err[512];          /* why it could not be read */
};

/* settings.c */
extern struct ha_agent_settings ha_agent_settings;

/* While heapadmin_agent_attach() runs: its request, read instead of
 * the environment (an attached process's is its own). */
extern const char *ha_agent_attach_req;

/* A setting: the environment's variable, or the attach request's line
 * of that name (buf, len bytes, holds it then). NULL when unset. */
const char *ha_agent_setting(const char *name, char *buf, size_t len);

/* The setting name into dst (len bytes), "" when unset or too long. */
void ha_agent_copy_env(char *dst, size_t len, const char *name);

/* program.c: which processes are served. */
bool ha_agent_have_jemalloc(void);
void ha_agent_self_program(char *out, size_t len, char *exe, size_t exelen);
bool ha_agent_is_served(const char *exe);

/* config.c: HEAPADMIN_CONF, read once. */
void ha_agent_read_config(void);
void ha_agent_config_keys(char *datadir, size_t dlen);

/* datadir.c: the datadir, and the users' directories in it. */
void ha_agent_choose_datadir(void);
void ha_agent_prepare_users(void);
int ha_agent_own_dir(char *out, size_t len, char *why, size_t whylen);

/* instance.c: this process's instance. */
bool ha_agent_serve(pid_t parent);
void ha_agent_withdraw(void);
void ha_agent_forget_inherited(void);

/* launch.c: the start-up thread. */
void ha_agent_launch(unsigned delay_ms, bool wait_parent, pid_t parent);

#endif /* HA_AGENT_INT_H */
