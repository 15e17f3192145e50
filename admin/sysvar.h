/* SPDX-License-Identifier: MIT
 *
 * MySQL system variables as clients expect to read them with @@name
 * (mysql CLI, Connector/J's start-up SELECT, .NET and Go drivers). Values
 * are what a MySQL 8.0 server with utf8mb4 defaults would report, so
 * drivers configure themselves without extra round trips.
 */
#ifndef HA_SYSVAR_H
#define HA_SYSVAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/config.h"

/* "8.0.35-heapadmin-<version>": starts with a decimal major (PyMySQL
 * parses it) and does not say MariaDB (mysql2 would switch dialects). */
#define HA_SERVER_VERSION "8.0.35-heapadmin-" PACKAGE_VERSION
#define HA_VERSION_COMMENT "heapadmin admin interface for jemalloc"

enum ha_sysvar_type { HA_SYSVAR_INT, HA_SYSVAR_TEXT, HA_SYSVAR_NULL };

struct ha_sysvar {
    const char *name;          /* lower case, without @@ */
    enum ha_sysvar_type type;
    int64_t ival;              /* HA_SYSVAR_INT */
    const char *sval;          /* HA_SYSVAR_TEXT */
    bool read_only;            /* SET refuses it (ERR 1238) */
};

/* Looks up a global system variable by name (case-insensitive). Returns
 * NULL for names the server does not know. */
const struct ha_sysvar *ha_sysvar_find(const char *name);

/* The variables whose global value follows one instance's config rather
 * than the table: what that server enforces. Kept per server (in
 * struct ha_session_shared), never in the table, so two servers in one
 * process report their own. A field of 0 (never a valid setting; config
 * minimums are 1) reports the table's default. */
struct ha_sysvar_limits {
    int64_t max_allowed_packet;  /* bytes */
    int64_t wait_timeout;        /* seconds */
    int64_t net_write_timeout;   /* seconds */
    int64_t max_execution_time;  /* ms; the ceiling SET may lower */
};

/* The integer global value of sv as an instance with limits lim (NULL:
 * none) reports it: lim's value for the three above, else sv->ival. */
int64_t ha_sysvar_int(const struct ha_sysvar *sv,
                      const struct ha_sysvar_limits *lim);

/* The table in order, for SHOW VARIABLES: entry i, or NULL past the end. */
const struct ha_sysvar *ha_sysvar_at(size_t i);

#endif /* HA_SYSVAR_H */
