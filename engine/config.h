/* SPDX-License-Identifier: MIT
 *
 * The configuration: a libconfig file in proxysql.cnf layout.
 *
 *   datadir = "..."            created if missing
 *   errorlog = "..."           default <datadir>/heapadmind.log
 *   admin_variables = { admin_credentials, stats_credentials,
 *                       mysql_ifaces, max_connections, connect_timeout,
 *                       wait_timeout, net_write_timeout,
 *                       max_allowed_packet, max_output_buffer }
 *   jemalloc_variables = { prof_active, lg_prof_sample, lg_prof_interval,
 *                          prof_gdump, prof_final, prof_leak, prof_accum,
 *                          dump_prefix }
 *
 * Other proxysql.cnf sections (mysql_variables, mysql_servers, ...) are
 * ignored with one notice each so an existing proxysql.cnf loads. Loading
 * is pure: ha_config_load_string() parses and validates, and collects
 * warnings and notices for the caller to log; nothing is applied.
 */
#ifndef HA_CONFIG_H
#define HA_CONFIG_H

#include <stdbool.h>
#include <sys/types.h>
#include <stddef.h>

#include "engine/credentials.h"
#include "engine/iface.h"
#include "engine/pushcfg.h"
#include "core/buf.h"
#include "heap/jeconfig.h"

#define HA_DEFAULT_ADMIN_CREDENTIALS "admin:admin"
#define HA_DEFAULT_STATS_CREDENTIALS "stats:stats"
#define HA_DEFAULT_HTTP_MAX_CONNECTIONS 64
#define HA_DEFAULT_MAX_EXECUTION_TIME 10000  /* ms */
#define HA_DEFAULT_DISK_TIMEOUT_MS 10000     /* ms */
#define HA_DEFAULT_HTTP_TIMEOUT 30           /* s */
#define HA_DEFAULT_HTTP_HEADER_TIMEOUT 10    /* s */
#define HA_DEFAULT_AUTH_PLUGIN "mysql_native_password"
#define HA_DEFAULT_UNIX_SOCKET_MODE "0660" /* owner and group may connect */

/* Limits (admin_variables); ranges are in config_keys.c's key table. */
#define HA_DEFAULT_MAX_CONNECTIONS 256       /* sessions at once */
#define HA_DEFAULT_MAX_PENDING_LOGINS 64
#define HA_DEFAULT_MAX_PENDING_LOGINS_PER_HOST 32
#define HA_DEFAULT_CONNECT_TIMEOUT 10        /* s to finish the login */
#define HA_DEFAULT_WAIT_TIMEOUT 28800        /* s a session may idle */
#define HA_DEFAULT_NET_WRITE_TIMEOUT 60      /* s a reply may stall */
#define HA_DEFAULT_MAX_ALLOWED_PACKET (64 << 20)  /* bytes, MySQL 8's */
#define HA_DEFAULT_MAX_OUTPUT_BUFFER (64 << 20)   /* bytes unsent */

/* How much a config message matters, for the log level it is written
 * at. */
enum ha_config_severity {
    HA_CONFIG_NOTICE,           /* expected: a ProxySQL section or setting
                                 * heapadmin does not use */
    HA_CONFIG_WARNING,          /* likely a mistake: an unknown key or
                                 * section (a typo?) */
    HA_CONFIG_SEVERITY_MAX
};

/* Something a load noticed that did not stop it. */
struct ha_config_message {
    enum ha_config_severity severity;
    char *text;                 /* "file:line: ...", malloc'd */
};

struct ha_config {
    char *path;                 /* file it came from, or "<string>" */
    bool has_file_id;           /* file_dev/file_ino: the file read, */
    dev_t file_dev;             /* whatever the cwd later (a relative */
    ino_t file_ino;             /* -c and the daemon's chdir) */
    char *datadir;              /* as written (relative = to the cwd) */
    char *errorlog;             /* NULL: <datadir>/heapadmind.log */

    char *admin_credentials;    /* raw spec, passwords in clear */
    char *stats_credentials;
    char *profile_credentials;  /* the profile role's: NULL or "" none */
    struct ha_user *users;      /* admins first, then stats users, then
                                   profile users */
    size_t n_users;

    /* TLS and authentication (admin_variables) */
    int have_ssl;               /* offer TLS (CLIENT_SSL) on TCP */
    char ssl_cert[1024];        /* PEM path, relative to the datadir;
                                 * "" = generated in the datadir */
    char ssl_key[1024];
    int require_tls;            /* refuse plain-TCP logins */
    char default_auth_plugin[32]; /* named in HandshakeV10 */
    char unix_socket_mode[16];  /* octal permissions of unix sockets */

    char *mysql_ifaces;         /* raw spec */
    struct ha_iface *ifaces;
    size_t n_ifaces;

    /* HTTP (/metrics; http/http.h): TCP listeners, none by default */
    char *http_ifaces;          /* raw spec, NULL or "" = off */
    struct ha_iface *http;
    size_t n_http;
    int http_max_connections;   /* more are closed at once */
    int http_timeout;           /* s a connection may take to send a
                                 * request, or stay idle between two */
    int http_header_timeout;    /* s a started request may take to
                                   deliver its headers */
    int http_max_per_peer;      /* connections one address may hold;
                                   0: a quarter of http_max_connections */
    int http_tls;               /* serve HTTPS with the TLS certificate */

    /* Limits (admin_variables) */
    int max_connections;        /* more get ERR 1040 and are closed */
    int max_pending_logins;     /* MySQL connections not logged in yet,
                                   in all: past it the oldest of the
                                   address holding most is closed */
    int max_pending_logins_per_host; /* ... from one address (one uid on
                                   the unix socket) */
    int connect_timeout;        /* s from accept to the end of the login */
    int wait_timeout;           /* s a logged-in session may stay idle */
    int net_write_timeout;      /* s unsent replies may make no progress */
    int max_allowed_packet;     /* largest request payload, bytes */
    int max_output_buffer;      /* unsent reply bytes before a session
                                 * stops reading requests, bytes */
    int max_execution_time;     /* ms a statement may run (ERR 3024);
                                 * 0 = no limit */
    int disk_timeout_ms;        /* ms a login, statement or stop waits
                                 * for the datadir's disk before giving
                                 * up with an error (core/blockio.h);
                                 * 0 = for ever */
    int stats_system_memory;    /* s between stats_history.system_memory
                                 * samples; 0 = none */
#define HA_DEFAULT_STATS_SYSTEM_MEMORY 60 /* ProxySQL's default */
    long long sql_memory_limit; /* bytes all admin SQL may hold (SQLite's
                                 * hard heap limit); 0 = none */
#define HA_DEFAULT_SQL_MEMORY_LIMIT (256LL << 20)
    long long max_output_total; /* unsent reply bytes all sessions may
                                 * hold; a result set past what is left
                                 * gets ERR 1041; 0 = none */
#define HA_DEFAULT_MAX_OUTPUT_TOTAL (256LL << 20)

    /* The fleet (admin_variables; engine/pushcfg.h, engine/push.h) */
    char *service_names;        /* raw spec, NULL or "" = none */
    struct ha_service_name *services;
    size_t n_services;
    char *push_targets;         /* raw spec (a list in a file), passwords
                                   in clear; NULL or "" = none */
    struct ha_push_target *push;
    size_t n_push;
    long long push_outbox_max_bytes; /* bytes the outbox may hold */
#define HA_DEFAULT_PUSH_OUTBOX_MAX_BYTES (64LL << 20)
    int push_timeout_s;         /* one push's whole exchange */
#define HA_DEFAULT_PUSH_TIMEOUT_S 10
    int push_retry_max_s;       /* the longest wait between attempts */
#define HA_DEFAULT_PUSH_RETRY_MAX_S 300
    int push_live_interval_s;   /* a live profile every N s to the
                                   targets that take "live"; 0 = none */

    struct ha_jemalloc_config jemalloc;

    struct ha_config_message *messages; /* warnings and notices */
    size_t n_messages;
};

/* The groups heapadmin reads, as a file names them. */
#define HA_CONFIG_ADMIN "admin_variables"
#define HA_CONFIG_JEMALLOC "jemalloc_variables"

/* The key table (config_keys.c's config_keys[]): what loading
 * (config_read.c) checks a file against and ha_config_write
 * (config_write.c) writes back. */
enum ha_config_key_type {
    HA_KEY_STRING,  /* libconfig string */
    HA_KEY_INT,     /* libconfig int or int64 */
    HA_KEY_BOOL,    /* libconfig bool, 0/1, or "true"/"false"/"on"/"off" */
    HA_KEY_INT64,   /* libconfig int or int64, into a long long */
    HA_KEY_TYPE_MAX
};

struct ha_config_key {
    const char *group;      /* NULL for root-level keys */
    const char *name;
    enum ha_config_key_type type;
    long long min, max;     /* INT: value range; STRING: length range */
    int (*validate)(const char *val, char *why, size_t whylen);
                            /* STRING only: checks a value beyond its
                             * length, writing why it is wrong; NULL for
                             * none */
    size_t offset;          /* field in struct ha_config */
    size_t size;            /* STRING: 0 for a malloc'd char *, else the
                             * size of a char array */
    const char *doc;        /* what it does, for people: docs/reference/
                             * config.md and heapadmind(8)'s list are
                             * made from it (docs/gen/gendocs.c); plain
                             * text, `code` in backquotes. The default
                             * shown beside it is ha_config_init()'s */
};

/* The key table in file order (root keys, then each group's), *n keys. */
const struct ha_config_key *ha_config_keys(size_t *n);

/* The groups heapadmin reads (admin_variables, jemalloc_variables), in
 * the order a written file has them; *n groups. */
const char *const *ha_config_groups(size_t *n);

/* The admin-* rows of global_variables, rendered from cfg (a const
 * struct ha_config *): struct ha_vtab_ctx's admin_value, so vtab/ needs
 * nothing from admin/. Credentials are masked (user:****). Writes the
 * value of variable name into buf (len bytes); returns false for NULL
 * or a name it does not know. */
bool ha_config_admin_value(const void *cfg, const char *name, char *buf,
                           size_t len);

/* err = "file:line: <fmt>", or "file: <fmt>" when line is 0 (a default,
 * not from the file): how every load error says where it comes from. */
void ha_config_err_at(char *err, size_t errlen, const char *file,
                      unsigned line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Parses the raw credential and listener specs of cfg into users, ifaces
 * and http (replacing earlier ones), and the push targets and service
 * names (push_targets, service_names), and checks the rules that span
 * several settings. name and lines[] say where for err: the file, and the
 * line of admin_credentials, stats_credentials, mysql_ifaces,
 * lg_prof_sample, http_ifaces, profile_credentials, push_targets and
 * service_names in that order (0: a default). Returns 0, or -1 with err
 * as ha_config_err_at writes it. */
#define HA_CONFIG_LINES 8
int ha_config_derive(struct ha_config *cfg, const char *name,
                     const unsigned lines[HA_CONFIG_LINES], char *err,
                     size_t errlen);

/* Sets every field to its default (datadir "."). */
void ha_config_init(struct ha_config *cfg);
void ha_config_free(struct ha_config *cfg);

/* Parses text (name is used in messages as the file name) over the
 * defaults in cfg. Returns 0, or -1 with err as "name:line: what was
 * wrong and what is allowed". On error cfg is left fully freed-and-reset
 * to defaults, never half-configured.
 * cfg must come from ha_config_init() or an earlier load: its old contents
 * are freed. The result is always the built-in defaults plus text, never
 * layered over an earlier load. Warnings ("...: unknown key 'x' in
 * admin_variables, ignored; did you mean 'y'?") and notices ("...: section
 * 'mysql_servers' is not used by heapadmin; ignored") go to cfg->messages,
 * each with its severity (HA_CONFIG_WARNING, HA_CONFIG_NOTICE);
 * cfg->path is name ("<string>" for NULL). */
int ha_config_load_string(struct ha_config *cfg, const char *text,
                          const char *name, char *err, size_t errlen);
/* Reads path and calls ha_config_load_string(). */
int ha_config_load_file(struct ha_config *cfg, const char *path, char *err,
                        size_t errlen);

/* Writes the effective configuration (passwords masked) as one line per
 * setting to the log at info level. */
void ha_config_log(const struct ha_config *cfg, const char *log_elsewhere);

/* True when a default credential (admin:admin, stats:stats; struct
 * ha_user.is_default) is configured while a mysql_ifaces entry listens
 * beyond loopback (0.0.0.0, ::, any other address): why (len bytes) then
 * names the user and the interface, for a start-up warning. Such logins
 * are refused from remote peers (ha_credentials_allows_from). */
bool ha_config_default_exposed(const struct ha_config *cfg, char *why,
                               size_t len);

#endif /* HA_CONFIG_H */
