/* SPDX-License-Identifier: MIT
 *
 * The settings a configuration file may hold (see config.h): one table,
 * config_keys[], gives each key its group, type, range, validator and
 * field in struct ha_config, and drives loading (config_read.c) and
 * writing back (config_write.c) alike. Adding a setting is a row here, a
 * field and a default in config.h/config.c, and a line in the shipped
 * configs. Checks that span several keys live in config.c
 * (ha_config_derive()).
 */
#include "engine/config.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "core/util.h"
#include "engine/limitrule.h"
#include "prof/wrappers.h"

static int validate_dump_prefix(const char *val, char *why, size_t whylen);
static int validate_auth_plugin(const char *val, char *why, size_t whylen);
static int validate_socket_mode(const char *val, char *why, size_t whylen);
static int validate_debug_root(const char *val, char *why, size_t whylen);
static int validate_debuginfod_urls(const char *val, char *why,
                                    size_t whylen);
static int validate_fractions(const char *val, char *why, size_t whylen);
static int validate_wrappers(const char *val, char *why, size_t whylen);

#define ADMIN HA_CONFIG_ADMIN
#define JEMALLOC HA_CONFIG_JEMALLOC
#define OFF(field) offsetof(struct ha_config, field)

static const struct ha_config_key config_keys[] = {
    {NULL, "datadir", HA_KEY_STRING, 1, PATH_MAX - 1, NULL, OFF(datadir), 0,
     "Directory for the pid file, the log, the saved variables, the history "
     "and the heap dumps; created if missing. A relative path is relative to "
     "the directory heapadmind was started in; `-D DATADIR` overrides it. It "
     "must not be writable by its group or others. The default \".\" is the "
     "working directory."},
    {NULL, "errorlog", HA_KEY_STRING, 1, PATH_MAX - 1, NULL, OFF(errorlog), 0,
     "Log file used when heapadmind runs as a daemon (without `-f`; with "
     "`-f` it logs to stderr). Unset: `<datadir>/heapadmind.log`."},
    /* TLS and authentication: certificate paths are relative to the
     * datadir; empty means "generate one there on first start". */
    {ADMIN, "have_ssl", HA_KEY_BOOL, 0, 1, NULL, OFF(have_ssl), 0,
     "Offer TLS 1.2 or later on the TCP listeners (CLIENT_SSL); never on a "
     "Unix socket. Clients that ask for it get it; the others are "
     "unaffected."},
    {ADMIN, "ssl_cert", HA_KEY_STRING, 0, 1023, NULL, OFF(ssl_cert), 1024,
     "PEM certificate chain, relative to the datadir; set it with `ssl_key` "
     "or neither. Neither: a self-signed EC P-256 certificate is generated "
     "in the datadir on first start (`heapadmin-cert.pem`, "
     "`heapadmin-key.pem` mode 0600) and reused; its SHA-256 fingerprint is "
     "logged at every start."},
    {ADMIN, "ssl_key", HA_KEY_STRING, 0, 1023, NULL, OFF(ssl_key), 1024,
     "The private key of `ssl_cert` (PEM), relative to the datadir."},
    {ADMIN, "require_tls", HA_KEY_BOOL, 0, 1, NULL, OFF(require_tls), 0,
     "Refuse logins over plain TCP with ERR 3159; the Unix socket is exempt. "
     "Needs `have_ssl`."},
    {ADMIN, "default_authentication_plugin", HA_KEY_STRING, 1, 31,
     validate_auth_plugin, OFF(default_auth_plugin), 32,
     "The plugin named in the server greeting: `mysql_native_password` or "
     "`caching_sha2_password`. Both are accepted whichever is named; a "
     "client that answers for the other is verified with it (or switched "
     "once). caching_sha2_password's full authentication takes the password "
     "in clear over TLS or the Unix socket and RSA-encrypted over plain TCP, "
     "with a key pair generated in the datadir (`heapadmin-rsa-private.pem` "
     "mode 0600, `heapadmin-rsa-public.pem`)."},
    {ADMIN, "unix_socket_mode", HA_KEY_STRING, 1, 15, validate_socket_mode,
     OFF(unix_socket_mode), 16,
     "Octal permissions of the Unix socket files of `mysql_ifaces`: "
     "connecting needs write permission on the file, so this decides which "
     "local users reach the admin port (`0600`: the daemon's user only)."},
    /* Credentials and interfaces are stored raw here and parsed after
     * the table pass (ha_config_derive()), because duplicate user names
     * are checked across both credential lists. */
    {ADMIN, "admin_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(admin_credentials), 0,
     "Administrators: `user:password` pairs separated by `;`. A user name is "
     "1..128 characters of `[A-Za-z0-9_.@-]`; the password is everything "
     "after the first `:`; a `;` in it is escaped as `\\;` and a backslash "
     "before `;` or `\\` as `\\\\` (in the file, libconfig's own escaping "
     "doubles each backslash). A hash may stand for the password: `user:*<40 "
     "hex>` (mysql_native_password) or `user:sha2:<64 hex of "
     "SHA256(SHA256(password))>`. Each user name may appear once across both "
     "lists; at least one administrator is required. Default passwords log "
     "in only over loopback or the unix socket: change them."},
    {ADMIN, "stats_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(stats_credentials), 0,
     "Read-only users, in the same format: they may read the `stats_*` "
     "tables and change nothing. \"\" for none."},
    {ADMIN, "profile_credentials", HA_KEY_STRING, 0, 65535, NULL,
     OFF(profile_credentials), 0,
     "Users who read heap profiles over HTTP and nothing else, in the same "
     "format: the live profile and dumps as pprof, jeprof's protocol and "
     "the `/heap` page; every other path is 403 and a MySQL login is "
     "refused (ERR 1045). For scrapers (Grafana Alloy, Parca). Through a "
     "host gateway the role reaches every served process. \"\" for none."},
    /* The fleet: parsed after the table pass too (ha_config_derive());
     * push_targets may be a list of groups in a file, which the loader
     * writes as its text form (engine/pushcfg.h). Bytes from 64 KiB,
     * seconds. */
    {ADMIN, "service_names", HA_KEY_STRING, 0, 65535, NULL,
     OFF(service_names), 0,
     "The label contract's `service_name` of each program, as "
     "`program=service;program=service` (`redis-server=cache;nginx=web`); "
     "a program not listed is its own service. Scraped series, `/sd`'s "
     "targets and pushed profiles carry it; give the agents and the "
     "gateway the same map."},
    {ADMIN, "push_targets", HA_KEY_STRING, 0, 65535, NULL,
     OFF(push_targets), 0,
     "Where published dumps are pushed, at most 8 targets: a list of "
     "groups `( { type = \"pyroscope\"; url = \"http://10.0.0.5:4040\"; "
     "kinds = \"limit,manual\"; } )`, or the same as text, targets "
     "separated by `;`, each `key=value` fields separated by spaces. "
     "Fields: `type` (`pyroscope`: POST `<url>/ingest`; `parca`: POST "
     "`<url>/profiles/writeraw`), `url` (http:// or https://, a base URL "
     "whose path is kept), `kinds` (among `manual`, `automatic`, "
     "`interval`, `peak`, `limit`, `leak`, `final`, `live`; default "
     "`limit,peak,leak,final,manual`), `basic_auth` (`user:password`) or "
     "`bearer_token`, `tenant` (sent as `X-Scope-OrgID`). Each is sent as "
     "the gzipped pprof `/debug/pprof/allocs?dump=` serves, through the "
     "datadir's `push-outbox/`; secrets are shown as `****`."},
    {ADMIN, "push_outbox_max_bytes", HA_KEY_INT64, 64 << 10, 1LL << 40, NULL,
     OFF(push_outbox_max_bytes), 0,
     "The most the push outbox may hold, in bytes; past it the oldest "
     "profiles are dropped, each said in the log and counted in "
     "`stats_push.dropped`."},
    {ADMIN, "push_timeout_s", HA_KEY_INT, 1, 600, NULL, OFF(push_timeout_s),
     0,
     "The longest one push's whole exchange may take, in seconds; past it "
     "the push counts as failed and is retried."},
    {ADMIN, "push_retry_max_s", HA_KEY_INT, 1, 86400, NULL,
     OFF(push_retry_max_s), 0,
     "The longest wait between attempts, in seconds: after a failure "
     "(a 5xx, 408, 429 or no answer) a target waits 1, 2, 4, ... s up to "
     "this."},
    {ADMIN, "push_live_interval_s", HA_KEY_INT, 0, 86400, NULL,
     OFF(push_live_interval_s), 0,
     "Push the live profile every N seconds to the targets whose `kinds` "
     "take `live`; 0 pushes none."},
    {ADMIN, "mysql_ifaces", HA_KEY_STRING, 0, 65535, NULL, OFF(mysql_ifaces),
     0,
     "Listeners separated by `;`: `host:port`, `[ipv6]:port`, or an absolute "
     "Unix socket path (at most 107 bytes); ports 1..65535. `[::]:6032` "
     "takes IPv6 and IPv4 clients alike unless the list also has 0.0.0.0 on "
     "that port. Change the credentials before listening beyond loopback."},
    /* HTTP (Prometheus /metrics): off unless listed. */
    {ADMIN, "http_ifaces", HA_KEY_STRING, 0, 65535, NULL, OFF(http_ifaces), 0,
     "HTTP listeners (`/metrics`, pprof, the flame page), the same list form "
     "as `mysql_ifaces`; unset or \"\": no HTTP."},
    {ADMIN, "http_max_connections", HA_KEY_INT, 1, 100000, NULL,
     OFF(http_max_connections), 0,
     "HTTP connections at most; when full, a new one evicts the oldest that "
     "has not delivered a request (then the oldest idle one)."},
    {ADMIN, "http_timeout", HA_KEY_INT, 1, 3600, NULL, OFF(http_timeout), 0,
     "Seconds an idle keep-alive HTTP connection lives."},
    {ADMIN, "http_header_timeout", HA_KEY_INT, 1, 3600, NULL,
     OFF(http_header_timeout), 0,
     "Seconds a new connection, or one whose next request has started, has "
     "to deliver the request's headers."},
    {ADMIN, "http_max_per_peer", HA_KEY_INT, 0, 100000, NULL,
     OFF(http_max_per_peer), 0,
     "HTTP connections one address may hold; 0: a quarter of "
     "`http_max_connections`."},
    {ADMIN, "http_tls", HA_KEY_BOOL, 0, 1, NULL, OFF(http_tls), 0,
     "Serve HTTPS with the MySQL port's certificate; needs `have_ssl`."},
    /* Limits. Timeouts are seconds, up to a year; sizes are bytes:
     * max_allowed_packet 1 MiB..1 GiB as in MySQL, max_output_buffer
     * from 64 KiB. */
    {ADMIN, "max_connections", HA_KEY_INT, 1, 100000, NULL,
     OFF(max_connections), 0,
     "Logged-in sessions at most; more get ERR 1040 \"Too many connections\" "
     "and are closed (one more is kept for an admin). Connections not logged "
     "in yet take no slot."},
    /* Connections that have not logged in: what an outsider without a
     * password can hold. */
    {ADMIN, "max_pending_logins", HA_KEY_INT, 1, 100000, NULL,
     OFF(max_pending_logins), 0,
     "MySQL connections not logged in yet, in all; past it the oldest of the "
     "address holding the most is closed."},
    {ADMIN, "max_pending_logins_per_host", HA_KEY_INT, 1, 100000, NULL,
     OFF(max_pending_logins_per_host), 0,
     "... from one address (one uid on the unix socket): its own oldest is "
     "closed. Room for a client's pool that opens its connections at once."},
    {ADMIN, "connect_timeout", HA_KEY_INT, 1, 31536000, NULL,
     OFF(connect_timeout), 0,
     "Seconds from accept to the end of the login; then the connection is "
     "closed."},
    {ADMIN, "wait_timeout", HA_KEY_INT, 1, 31536000, NULL, OFF(wait_timeout),
     0,
     "Seconds a logged-in session may stay idle; then ERR 4031 and close."},
    {ADMIN, "net_write_timeout", HA_KEY_INT, 1, 31536000, NULL,
     OFF(net_write_timeout), 0,
     "Seconds unsent replies may make no progress before the client is "
     "dropped (an HTTP client too)."},
    {ADMIN, "max_allowed_packet", HA_KEY_INT, 1 << 20, 1 << 30, NULL,
     OFF(max_allowed_packet), 0,
     "Largest request payload in bytes; larger gets ERR 1153, then close."},
    {ADMIN, "max_output_buffer", HA_KEY_INT, 64 << 10, 1 << 30, NULL,
     OFF(max_output_buffer), 0,
     "Unsent reply bytes of one client beyond which no more of its requests "
     "are read until it drains them."},
    /* ms, up to a day; 0 = no limit (MySQL's name and unit). */
    {ADMIN, "max_execution_time", HA_KEY_INT, 0, 86400000, NULL,
     OFF(max_execution_time), 0,
     "ms a statement (any user's) may run before it is interrupted with ERR "
     "3024; `SET max_execution_time` lowers it for a session, never raises "
     "it; 0: no limit. An HTTP request past it gets 503."},
    /* ms, up to an hour; 0 = wait for the disk for ever. */
    {ADMIN, "disk_timeout_ms", HA_KEY_INT, 0, 3600000, NULL,
     OFF(disk_timeout_ms), 0,
     "ms a login, a dump or any statement waits for the datadir's disk "
     "before it fails with an error naming the disk (a hung NFS or FUSE "
     "mount, a dying disk); once the disk thread has been stuck that long, "
     "new calls fail at once. 0: wait for ever."},
    /* ProxySQL's admin-stats_system_memory: seconds, up to a day. */
    {ADMIN, "stats_system_memory", HA_KEY_INT, 0, 86400, NULL,
     OFF(stats_system_memory), 0,
     "Seconds between samples of jemalloc's figures into "
     "`stats_history.system_memory` (ProxySQL's admin-stats_system_memory); "
     "0: off. The leak watch reads these samples."},
    /* Bytes; 0 = none, else at least 1 MiB (SQLite needs some). */
    {ADMIN, "sql_memory_limit", HA_KEY_INT64, 0, 1LL << 40, NULL,
     OFF(sql_memory_limit), 0,
     "Bytes all admin SQL may hold at once (SQLite's hard heap limit, per "
     "process: a host linking the same libsqlite3 shares it; the agent has "
     "its own SQLite); a statement needing more gets ERR 1041 naming it; 0: "
     "none."},
    {ADMIN, "max_output_total", HA_KEY_INT64, 0, 1LL << 40, NULL,
     OFF(max_output_total), 0,
     "Bytes of unsent replies all clients may hold together, MySQL sessions "
     "and HTTP requests alike. Replies over 256 KiB stream (a client holds a "
     "256 KiB window of one), so only what is built whole counts; beyond "
     "what is left, ERR 1041 (HTTP: 503); 0: none."},
    /* Ranges are jemalloc's: lg_prof_sample below 64 bits, and
     * lg_prof_interval -1 meaning "no interval dumps". */
    {JEMALLOC, "prof_active", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_active), 0,
     "Sample from the first allocation (true) or stay armed but idle "
     "(false). Unset: jemalloc's own value (heapadmind's built-in "
     "`prof_active:false`, or MALLOC_CONF's)."},
    {JEMALLOC, "lg_prof_sample", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.lg_prof_sample), 0,
     "Mean bytes between samples as a power of two (19 = 512 KiB), not below "
     "`lg_prof_sample_min`. Unset: jemalloc's (19)."},
    {JEMALLOC, "lg_prof_interval", HA_KEY_INT, -1, 62, NULL,
     OFF(jemalloc.lg_prof_interval), 0,
     "An interval dump every 2^N bytes allocated while profiling is active "
     "(`.i<iseq>.heap`); -1: none. Read by jemalloc at start only "
     "(heapadmind re-executes itself with it). Unset: jemalloc's (-1)."},
    {JEMALLOC, "prof_gdump", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_gdump), 0,
     "Dump whenever the total virtual memory reaches a new high "
     "(`.u<useq>.heap`). Unset: jemalloc's (false)."},
    {JEMALLOC, "prof_final", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_final), 0,
     "Dump once more at exit (`<prefix>.<pid>.<seq>.f.heap`); start only. "
     "Unset: jemalloc's (false)."},
    {JEMALLOC, "prof_leak", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_leak), 0,
     "Report leaks at exit; start only. Unset: jemalloc's (false)."},
    {JEMALLOC, "prof_accum", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.prof_accum), 0,
     "Keep cumulative counts: every stack's allocations since profiling "
     "began, freed or not. They fill the `alloc_*` columns and Go's "
     "`alloc_space` on `/debug/pprof/allocs`; without them those are NULL. "
     "Costs memory: a stack that held memory once is kept for good. Start "
     "only. Unset: jemalloc's (false)."},
    {JEMALLOC, "lg_prof_sample_min", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.lg_prof_sample_min), 0,
     "The lowest `lg_prof_sample` accepted, here and over SQL: jemalloc "
     "promotes each sampled small allocation to a 16 KiB extent, so frequent "
     "sampling multiplies a host's resident memory (2.8x measured in redis "
     "at 10). Lower it on purpose only."},
    /* Up to an hour: figures older than that would mislead. */
    {JEMALLOC, "stats_max_age_ms", HA_KEY_INT, 0, 3600000, NULL,
     OFF(jemalloc.stats_max_age_ms), 0,
     "Scans of the statistics tables within this many ms of jemalloc's last "
     "refresh share it (the refresh locks every arena); 0: every scan "
     "refreshes. `jemalloc-stats_max_age_ms` at run time."},
    {JEMALLOC, "dump_symbolized", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.dump_symbolized), 0,
     "`dump_now` also writes `<dump>.sym`, a self-contained copy with its "
     "symbols (jeprof's symbolized profile) that `jeprof --text <dump>.sym` "
     "reads on a machine without the binaries. `jemalloc-dump_symbolized` at "
     "run time."},
    /* Names in heap profiles: another debug root beside /usr/lib/debug,
     * and debuginfod (off unless asked: it loads libcurl into the
     * process and talks to the network). The timeout bounds one query's
     * wait, 0.1 s .. 10 min. */
    {JEMALLOC, "debug_root", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->debug_root) - 1,
     validate_debug_root, OFF(jemalloc.debug_root),
     sizeof(((struct ha_jemalloc_config *)0)->debug_root),
     "A directory searched for debug files by GNU build-id "
     "(`<root>/.build-id/xx/yyyy.debug`) before `/usr/lib/debug`: absolute, "
     "without `:`; \"\": `/usr/lib/debug` only."},
    {JEMALLOC, "debuginfod", HA_KEY_BOOL, 0, 1, NULL, OFF(jemalloc.debuginfod),
     0,
     "Ask a debuginfod server, by build-id, for debug info no root has "
     "(elfutils' client; downloads cached in DEBUGINFOD_CACHE_PATH, default "
     "`~/.cache/debuginfod_client`). Off by default: it loads libcurl and "
     "talks to the network."},
    {JEMALLOC, "debuginfod_urls", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->debuginfod_urls) - 1,
     validate_debuginfod_urls, OFF(jemalloc.debuginfod_urls),
     sizeof(((struct ha_jemalloc_config *)0)->debuginfod_urls),
     "Its servers: http(s):// or file:// URLs separated by spaces. "
     "heapadmind exports them as DEBUGINFOD_URLS when it starts; \"\" uses "
     "its environment's. A library host or the agent asks only its own "
     "DEBUGINFOD_URLS: the library never writes a host's environment."},
    {JEMALLOC, "debuginfod_timeout_ms", HA_KEY_INT, 100, 600000, NULL,
     OFF(jemalloc.debuginfod_timeout_ms), 0,
     "The longest one query waits for debuginfod, all its modules together; "
     "a download still running goes on in the background for a later query."},
    /* Allocation sites: the operator's edits of the wrappers the site
     * rule looks past (jemalloc-alloc_wrappers at run time). */
    {JEMALLOC, "alloc_wrappers", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->alloc_wrappers) - 1,
     validate_wrappers, OFF(jemalloc.alloc_wrappers),
     sizeof(((struct ha_jemalloc_config *)0)->alloc_wrappers),
     "The operator's edits of the allocation wrappers every table looks "
     "past: `+name` or `name` adds one, `-name` removes one, `-*` drops the "
     "built-in list and detection (only the `+` names then); "
     "comma-separated. `jemalloc-alloc_wrappers` at run time."},
    /* Dump housekeeping: counts, bytes (libconfig's 64-bit ints: write
     * 1073741824L), seconds up to a week. */
    {JEMALLOC, "dump_retention_count", HA_KEY_INT64, 0, 1000000, NULL,
     OFF(jemalloc.dump_retention_count), 0,
     "Keep at most this many dumps of heapadmin's naming (with their "
     "sidecars) in the datadir: the oldest go first; the newest, each run's "
     "peak dump and the limit dumps of runs that are over always stay. 0: no "
     "limit. With the leak watch on, at least a series."},
    {JEMALLOC, "dump_retention_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.dump_retention_bytes), 0,
     "... and at most this many bytes of them, sidecars included; 0: no "
     "limit. libconfig wants an L on values past 2^31-1."},
    {JEMALLOC, "dump_min_free_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.dump_min_free_bytes), 0,
     "Automatic dumps (timed, resident-triggered, jemalloc's own interval "
     "dumps) are skipped, with a warning in the log, while the datadir's "
     "file system has less than this free; `dump_now` always tries. 0: no "
     "floor."},
    {JEMALLOC, "dump_interval_s", HA_KEY_INT64, 0, 604800, NULL,
     OFF(jemalloc.dump_interval_s), 0,
     "A dump every N seconds (leak evidence gathered unattended); 0: off."},
    {JEMALLOC, "dump_resident_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.dump_resident_bytes), 0,
     "A dump when `stats.resident` rises past N bytes (again once it fell "
     "10% below); 0: off."},
    /* Decay, applied to every arena at start: -1 (never) to a year in
     * ms; absent: jemalloc's own (opt.*_decay_ms, MALLOC_CONF). */
    {JEMALLOC, "dirty_decay_ms", HA_KEY_INT64, -1, 31536000000LL, NULL,
     OFF(jemalloc.dirty_decay_ms), 0,
     "How long freed pages stay resident before jemalloc returns them: -1 "
     "never, 0 at once, up to 31536000000 ms; applied at start to every "
     "arena and to those created later. Unset: jemalloc's own (10000, or "
     "MALLOC_CONF's). `jemalloc-dirty_decay_ms` at run time."},
    {JEMALLOC, "muzzy_decay_ms", HA_KEY_INT64, -1, 31536000000LL, NULL,
     OFF(jemalloc.muzzy_decay_ms), 0,
     "The same for pages given back lazily (MADV_FREE). Unset: jemalloc's "
     "own (0, or MALLOC_CONF's)."},
    /* The leak watch (engine/leakwatch.h): bytes (0 = off), seconds up
     * to a week, a series of 2 to 1000 dumps, a sampling rate. */
    {JEMALLOC, "leak_watch_growth_bytes", HA_KEY_INT64, 0, 1LL << 50, NULL,
     OFF(jemalloc.leak_watch_growth_bytes), 0,
     "The leak watch: when resident memory grows by more than this within "
     "`leak_watch_window_s` (read from the history's samples, so "
     "`stats_system_memory` must be on), switch sampling on, take a series "
     "of dumps for `heap_growth`, then put sampling back; 0: off."},
    {JEMALLOC, "leak_watch_window_s", HA_KEY_INT64, 1, 604800, NULL,
     OFF(jemalloc.leak_watch_window_s), 0,
     "The window the growth is measured over, seconds."},
    {JEMALLOC, "leak_watch_dump_interval_s", HA_KEY_INT64, 1, 86400, NULL,
     OFF(jemalloc.leak_watch_dump_interval_s), 0,
     "Seconds between the series' dumps."},
    {JEMALLOC, "leak_watch_dumps", HA_KEY_INT64, 2, 1000, NULL,
     OFF(jemalloc.leak_watch_dumps), 0,
     "Dumps in a series."},
    {JEMALLOC, "leak_watch_lg_prof_sample", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.leak_watch_lg_prof_sample), 0,
     "The sampling rate while a series runs, not below `lg_prof_sample_min`; "
     "unset: the current rate."},
    /* ... and how many of a series' top sites become metrics (at most
     * 10: the bound on their series per process). */
    {JEMALLOC, "leak_watch_sites", HA_KEY_INT64, 0, HA_LEAK_WATCH_SITES_MAX,
     NULL, OFF(jemalloc.leak_watch_sites), 0,
     "How many of a complete series' top sites become metrics "
     "(`heapadmin_leak_site_*`, replaced at the next series): 0 to 10, "
     "0 for none."},
    /* The limit watch (engine/limitwatch.h): shares of the memory limit,
     * a PSI percent (0 = off), events, seconds between its dumps, where
     * sampling goes on (percent of the limit, 0 = never) and its rate. */
    {JEMALLOC, "limit_dump_fractions", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->limit_dump_fractions) - 1,
     validate_fractions, OFF(jemalloc.limit_dump_fractions),
     sizeof(((struct ha_jemalloc_config *)0)->limit_dump_fractions),
     "The limit watch, wherever a memory cgroup limits the process: a heap "
     "dump as the working set (usage less inactive file cache) passes each "
     "of these shares of the limit, once per crossing (re-armed once the "
     "working set has stayed 5% of the limit below it for 10 s); \"\": no "
     "limit dumps at all (pressure and events included)."},
    {JEMALLOC, "limit_dump_psi_pct", HA_KEY_INT, 0, 100, NULL,
     OFF(jemalloc.limit_dump_psi_pct), 0,
     "A limit dump on memory pressure (PSI `some` of the process's own v2 "
     "group; none in the root group, whose file is the whole machine's) "
     "past this percent; 0: off."},
    {JEMALLOC, "limit_dump_events", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.limit_dump_events), 0,
     "A limit dump on new high, max or oom events of the cgroup."},
    {JEMALLOC, "limit_dump_min_interval_s", HA_KEY_INT64, 0, 86400, NULL,
     OFF(jemalloc.limit_dump_min_interval_s), 0,
     "At most one limit dump per this many seconds, but for a new, higher "
     "level."},
    {JEMALLOC, "limit_watch_sampling", HA_KEY_BOOL, 0, 1, NULL,
     OFF(jemalloc.limit_watch_sampling), 0,
     "While a memory limit binds the process, hold sampling on from the "
     "watch's first look, at `limit_watch_lg_prof_sample` or the rate "
     "jemalloc has, so the limit dumps hold the whole heap (cost: "
     "bench/RESULTS-sampling.md); false, or `prof_active = false`, leaves it "
     "off (the dumps then hold nothing sampled). `limit_watch_sample_pct`, "
     "an earlier version's, is read no more: a config that has it loads "
     "with a notice, its 0 taken as false."},
    {JEMALLOC, "limit_watch_lg_prof_sample", HA_KEY_INT, 0, 62, NULL,
     OFF(jemalloc.limit_watch_lg_prof_sample), 0,
     "The sampling rate the limit watch holds, not below "
     "`lg_prof_sample_min`; unset: the current rate."},
    {JEMALLOC, "dump_prefix", HA_KEY_STRING, 1,
     sizeof(((struct ha_jemalloc_config *)0)->dump_prefix) - 1,
     validate_dump_prefix, OFF(jemalloc.dump_prefix),
     sizeof(((struct ha_jemalloc_config *)0)->dump_prefix),
     "File name stem of the dumps written into the datadir: "
     "`[A-Za-z0-9_.-]`, no `/`. `proxysql` keeps ProxySQL's file names."},
    {JEMALLOC, "dump_group", HA_KEY_STRING, 0,
     sizeof(((struct ha_jemalloc_config *)0)->dump_group) - 1, NULL,
     OFF(jemalloc.dump_group),
     sizeof(((struct ha_jemalloc_config *)0)->dump_group),
     "Dumps and their sidecars are mode 0600; a group named here makes them "
     "0640 and owned by it (a monitoring user's reader). \"\": none."},
};

/* Groups heapadmin reads; their unknown members get a warning. */
static const char *const known_groups[] = {ADMIN, JEMALLOC};

const struct ha_config_key *
ha_config_keys(size_t *n)
{
    *n = HA_ARRAY_SIZE(config_keys);
    return config_keys;
}

const char *const *
ha_config_groups(size_t *n)
{
    *n = HA_ARRAY_SIZE(known_groups);
    return known_groups;
}

/* ------------------------------------------------------------------------
 * Validators of single values
 * --------------------------------------------------------------------- */

static int
validate_fractions(const char *val, char *why, size_t whylen)
{
    double f[HA_LIMITWATCH_FRACTIONS_MAX];
    size_t n;

    return ha_limitwatch_parse_fractions(val, f, HA_LIMITWATCH_FRACTIONS_MAX,
                                         &n, why, whylen);
}

static int
validate_auth_plugin(const char *val, char *why, size_t whylen)
{
    if (strcmp(val, "mysql_native_password") == 0 ||
        strcmp(val, "caching_sha2_password") == 0)
        return 0;
    ha_err_set(why, whylen,
               "'%s' is not an authentication plugin heapadmin offers; use "
               "mysql_native_password or caching_sha2_password",
               val);
    return -1;
}

/* An octal permission mode such as "0660": the socket file's mode decides
 * which local users may connect (connect(2) needs write permission). */
static int
validate_socket_mode(const char *val, char *why, size_t whylen)
{
    size_t n = strlen(val);

    if (n >= 3 && n <= 4 && strspn(val, "01234567") == n &&
        (n == 3 || val[0] == '0'))
        return 0;
    ha_err_set(why, whylen,
               "'%s' is not a permission mode; use 3 or 4 octal digits "
               "such as \"0660\" (owner and group may connect) or "
               "\"0600\" (owner only)",
               val);
    return -1;
}

static int
validate_dump_prefix(const char *val, char *why, size_t whylen)
{
    for (const char *p = val; *p != '\0'; p++) {
        char c = *p;

        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
            (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-')
            continue;
        /* '/' gets its own wording: it is the likely mistake, and the
         * reason is that dumps always go into the datadir. */
        if (c == '/')
            ha_err_set(why, whylen,
                       "'%s' contains '/'; dumps are written into the "
                       "datadir, so only a file name stem of "
                       "[A-Za-z0-9_.-] is allowed",
                       val);
        else
            ha_err_set(why, whylen,
                       "'%s' has a character outside [A-Za-z0-9_.-]", val);
        return -1;
    }
    return 0;
}

/* The syntax of jemalloc-alloc_wrappers (prof/wrappers.h). */
static int
validate_wrappers(const char *val, char *why, size_t whylen)
{
    struct ha_wrap_conf conf;

    if (ha_wrap_conf_parse(val, &conf, why, whylen) != 0)
        return -1;
    ha_wrap_conf_free(&conf);
    return 0;
}

/* A directory searched like /usr/lib/debug: absolute, and without ':',
 * which separates libdwfl's search path. */
static int
validate_debug_root(const char *val, char *why, size_t whylen)
{
    if (*val == '\0')
        return 0;
    if (val[0] != '/') {
        ha_err_set(why, whylen,
                   "'%s' is not an absolute path; give a directory such "
                   "as \"/srv/debug\" that holds .build-id/xx/yyyy.debug "
                   "files, or \"\" for none",
                   val);
        return -1;
    }
    for (const char *p = val; *p != '\0'; p++)
        if (*p == ':' || (unsigned char)*p < 0x20) {
            ha_err_set(why, whylen,
                       "'%s' has a %s; a directory path without ':' or "
                       "control characters is allowed",
                       val, *p == ':' ? "':'" : "control character");
            return -1;
        }
    return 0;
}

/* DEBUGINFOD_URLS' syntax: http://, https:// or file:// URLs separated
 * by spaces. */
static int
validate_debuginfod_urls(const char *val, char *why, size_t whylen)
{
    static const char *const schemes[] = {"http://", "https://", "file://"};
    const char *p = val;

    while (*p != '\0') {
        size_t n;
        bool ok = false;

        while (*p == ' ')
            p++;
        if (*p == '\0')
            break;
        n = strcspn(p, " ");
        for (size_t k = 0; k < HA_ARRAY_SIZE(schemes); k++)
            if (n > strlen(schemes[k]) &&
                strncmp(p, schemes[k], strlen(schemes[k])) == 0)
                ok = true;
        for (size_t k = 0; ok && k < n; k++)
            if ((unsigned char)p[k] < 0x20 || p[k] == 0x7f)
                ok = false;
        if (!ok) {
            ha_err_set(why, whylen,
                       "'%.*s' is not a debuginfod server URL; allowed: "
                       "http://, https:// or file:// URLs separated by "
                       "spaces, or \"\" for DEBUGINFOD_URLS of the "
                       "environment",
                       (int)(n > 200 ? 200 : n), p);
            return -1;
        }
        p += n;
    }
    return 0;
}
