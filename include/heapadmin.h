/* SPDX-License-Identifier: MIT
 *
 * heapadmin: a ProxySQL-style SQL admin port for jemalloc's heap profiler,
 * embedded in your own service. Any MySQL client (mysql, mariadb, a
 * driver) connects to the port and reads the allocator and its profiler
 * through SQL:
 *
 *     SELECT * FROM stats_memory_jemalloc;
 *     UPDATE global_variables SET variable_value='true'
 *      WHERE variable_name='jemalloc-prof_active';
 *     UPDATE global_variables SET variable_value='true'
 *      WHERE variable_name='jemalloc-dump_now';
 *
 * Embedding, in four calls:
 *
 *     HEAPADMIN_DEFINE_MALLOC_CONF;        // once, in the executable
 *     struct heapadmin *ha;
 *     char err[256];
 *     struct heapadmin_options o = {.config_file = "/etc/myd/admin.cnf"};
 *     if (heapadmin_new(&o, &ha, err, sizeof(err)) != 0 ||
 *         heapadmin_start(ha, err, sizeof(err)) != 0)
 *         fprintf(stderr, "heap admin port disabled: %s\n", err);
 *     ...
 *     heapadmin_free(ha);                  // stops, joins, frees
 *
 * Link with `pkg-config --libs heapadmin` and with jemalloc as the
 * process's malloc (-ljemalloc, or LD_PRELOAD). The library finds jemalloc
 * at run time (mallctl, or je_mallctl for a prefixed build); without it,
 * or without profiling, the port still serves what it can and each
 * profiling request fails with a message that says why.
 *
 * What the library never does, so that it can live inside any host: no
 * signal handlers (its thread blocks every signal), no exit(), nothing on
 * stdout or stderr, no global setters of libraries the host may share
 * (sqlite3_config, event_set_*, evthread_*, OPENSSL_cleanup). Several
 * instances may run in one process. jemalloc's own settings (prof.active,
 * prof.prefix, sampling) are process-wide by nature: every instance in a
 * process sees and changes the same profiler.
 *
 * Conventions: functions return 0 on success and -1 on failure with a
 * NUL-terminated message in err (errlen bytes; err may be NULL). Sizes
 * are bytes, times milliseconds unless a name says otherwise.
 */
#ifndef HEAPADMIN_H
#define HEAPADMIN_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define HEAPADMIN_VERSION "0.1.0"

/* jemalloc reads malloc_conf once, while it initialises, and opt.prof can
 * never be switched on later. "prof:true,prof_active:false" compiles the
 * profiler in at no cost until an operator activates it over SQL.
 * "prof_time_resolution:high" stamps sampled allocations and frees with
 * CLOCK_REALTIME (ns) instead of CLOCK_MONOTONIC_COARSE (a 4 ms tick),
 * so lifetime windows can tell short lives apart; it costs one vDSO
 * clock_gettime per sampled event only (nstime_prof_update, jemalloc
 * 5.3.0), nothing while profiling is idle. jemalloc 5.2 does not know
 * the option (it prints "Invalid conf pair" once and goes on): define
 * HEAPADMIN_NO_PROF_TIME_RESOLUTION before including this header there.
 * Define the symbol in the host EXECUTABLE (a definition in a shared
 * library wins or loses by link order); MALLOC_CONF in the environment
 * still overrides it. */
#ifdef HEAPADMIN_NO_PROF_TIME_RESOLUTION
#define HEAPADMIN_MALLOC_CONF "prof:true,prof_active:false"
#else
#define HEAPADMIN_MALLOC_CONF                                               \
    "prof:true,prof_active:false,prof_time_resolution:high"
#endif
#define HEAPADMIN_DEFINE_MALLOC_CONF \
    const char *malloc_conf = HEAPADMIN_MALLOC_CONF

struct heapadmin;
struct event_base;

enum heapadmin_log_level {
    HEAPADMIN_LOG_ERROR,
    HEAPADMIN_LOG_WARN,
    HEAPADMIN_LOG_NOTICE,
    HEAPADMIN_LOG_INFO,
    HEAPADMIN_LOG_DEBUG
};

/* Receives one log line: "2026-11-24T10:00:00.123Z [info] text", without
 * a newline. Called on the thread that logs (the admin thread, or the
 * thread running the host's event_base); it must not call back into
 * heapadmin. */
typedef void heapadmin_log_fn(int level, const char *line, void *arg);

/* Zero-initialise, then set what you need. */
struct heapadmin_options {
    const char *config_file;  /* libconfig file, proxysql.cnf layout */
    const char *config_text;  /* ... or its text (config_file wins);
                                 neither: built-in defaults */
    const char *datadir;      /* overrides the config's datadir; dumps,
                                 the TLS key and the default log go here */
    heapadmin_log_fn *log;    /* NULL: append to the config's errorlog,
                                 default <datadir>/heapadmind.log */
    void *log_arg;
    const char *log_name;     /* with log: where the host writes those
                                 lines (a file name), named in the
                                 start-up log instead of the config's
                                 errorlog, which is then not used */
    int log_level;            /* most verbose level passed on;
                                 0 = HEAPADMIN_LOG_INFO */
    int no_log;               /* 1: log nowhere (log ignored) */
    const char *mysql_ifaces; /* overrides admin_variables.mysql_ifaces,
                                 e.g. "/run/myd/admin.sock" */
    /* jemalloc's mallctl, when the host knows it better than a run-time
     * lookup can: a static or prefixed jemalloc (je_mallctl) that the
     * executable does not export. NULL: mallctl or je_mallctl is looked
     * up in the process, and refused unless the same object serves
     * malloc(). */
    int (*mallctl)(const char *name, void *oldp, size_t *oldlenp,
                   void *newp, size_t newlen);
    /* Optional with mallctl: its MIB pair, so that hot statistics skip
     * jemalloc's name parsing. */
    int (*mallctlnametomib)(const char *name, size_t *mibp,
                            size_t *miblenp);
    int (*mallctlbymib)(const size_t *mib, size_t miblen, void *oldp,
                        size_t *oldlenp, void *newp, size_t newlen);
    unsigned listener_check_ms; /* every N ms, check that each listening
                                 descriptor is still our socket and bind
                                 a new one if the host closed it (hosts
                                 that close_range() at start-up); 0: never
                                 (no timer wakes the loop) */
    int initial;              /* 1: discard the jemalloc variables saved
                                 with SAVE ... TO DISK (heapadmind
                                 --initial); 0: apply them over the config
                                 at every start, each one logged */
    const char *config_name;  /* with config_text: the file the text was
                                 read from (a process that read its
                                 config before dropping privileges),
                                 named in messages */
    int inherit_profiler;     /* 1: this process inherited the profiler's
                                 settings from its parent (a fork child):
                                 jemalloc_variables and the saved values
                                 are not applied again, only the dump
                                 prefix (dumps go to this datadir) */
    const char *agent_socket; /* a unix socket path: the HTTP front-end
                                 also answers a host gateway there
                                 (heapadmind --gateway), trusting peers
                                 by SO_PEERCRED (root or this process's
                                 user), and the socket's name registers
                                 this process with the gateway; it must
                                 be <datadir or a directory in it>/
                                 <program>.<pid>.http */
    int refuse_http_ifaces;   /* 1: admin_variables.http_ifaces is not
                                 served here (a host of several processes,
                                 where one fixed address fits only one of
                                 them); the log points at the gateway */
    int gateway;              /* 1: a host gateway: /metrics also covers
                                 every agent of the datadir (pid and
                                 program labels), and
                                 /debug/pprof/heap?pid=N is process N's */
    void (*tick)(void *arg);  /* called on the admin thread every
                                 listener_check_ms, after the check;
                                 NULL: none */
    void *tick_arg;
};

/* Loads and validates the configuration and prepares the datadir (created
 * 0750 when missing). Nothing listens yet and no thread runs. On success
 * *out is the new instance. Errors name the file and line of a bad config
 * key, or the path and reason of a datadir problem. */
int heapadmin_new(const struct heapadmin_options *opt,
                  struct heapadmin **out, char *err, size_t errlen);

/* Binds every configured interface (admin_variables.mysql_ifaces) and
 * serves it on a thread of its own, named "heapadmin", with every signal
 * blocked and its own allocations left out of heap profiles. Returns once
 * the listeners are bound (so a client may connect at once) or with the
 * reason none could be. */
int heapadmin_start(struct heapadmin *h, char *err, size_t errlen);

/* The same, on the host's event_base (libevent 2.1, the same libevent
 * this library links) in the host's thread: no thread is created. The
 * host must keep SIGPIPE ignored (a client that goes away mid-reply would
 * otherwise kill the process); -1 when it is not. */
int heapadmin_start_on_base(struct heapadmin *h, struct event_base *base,
                            char *err, size_t errlen);

/* Closes every session and listener (unix socket files are removed) and,
 * in thread mode, joins the thread. Call it from any thread in thread
 * mode, from the base's thread otherwise. start again afterwards works.
 * Safe to call when not started. */
void heapadmin_stop(struct heapadmin *h);

/* Ends every statement running now on h's admin port at its next
 * progress check (about every 1000 SQLite VM steps; the client gets ERR
 * 1053, Server shutdown in progress), until h is started again. For a
 * host about to stop: async-signal-safe (one atomic store), so a SIGTERM
 * handler may call it and the loop is free to see the stop at once
 * instead of after max_execution_time. heapadmin_stop() does it too. */
void heapadmin_interrupt(struct heapadmin *h);

/* Stops if needed and frees everything. NULL is a no-op. */
void heapadmin_free(struct heapadmin *h);

/* For a fork() child, which inherited h but not its thread: forgets h
 * without touching its event loop (whose locks and epoll descriptor belong
 * to the parent), closes only the listening sockets it can prove are its
 * own (same inode as when bound) and leaks the rest. Unix socket files
 * stay (the parent still serves them). h must not be used afterwards;
 * create a new instance to serve from the child. */
void heapadmin_abandon(struct heapadmin *h);

/* Listeners of a started instance, in mysql_ifaces order: the count, the
 * TCP port of listener i (the one chosen for a configured port 0; 0 for a
 * unix socket), the socket path of listener i (NULL for TCP). */
size_t heapadmin_listener_count(const struct heapadmin *h);
int heapadmin_listener_port(const struct heapadmin *h, size_t i);
const char *heapadmin_listener_path(const struct heapadmin *h, size_t i);

/* Writes one line to h's log (where heapadmin_new sent its own lines),
 * at level (enum heapadmin_log_level), in heapadmin's format: for a host
 * that reports beside it (the agent tells of the children it cannot
 * serve). Any thread. */
void heapadmin_log(struct heapadmin *h, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Formats one line in heapadmin's log format ("2026-11-24T10:00:00.123Z
 * [info] " and fmt's text, no newline) into out (len bytes, always
 * NUL-terminated) for a host that writes its own log beside heapadmin's.
 * Takes no lock (no glibc time conversion), so it is safe on any thread
 * and in a fork child's atfork handler. Returns the length written. */
size_t heapadmin_log_format(char *out, size_t len, int level,
                            const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The name of user uid as /etc/passwd has it, into out (len bytes);
 * returns 0, or -1 when it lists no such user (out then holds the uid
 * in decimal). Never asks the name service (whose lock a host's fork may
 * leave held in a child): safe on any thread, in a fork child too. */
int heapadmin_user_name(long uid, char *out, size_t len);

/* The absolute datadir. */
const char *heapadmin_datadir(const struct heapadmin *h);

/* Leaves h's datadir as a stopped instance would, for a host's exit path
 * that never stops it (the agent's): the SQLite databases' -wal and -shm
 * files are folded back and removed by SQLite itself when no connection,
 * of this process or another, still has them open, and the dumps'
 * staging directory is removed when empty, so the last process of a
 * datadir to exit removes them. Nothing is lost either way. Any thread;
 * h may still run. heapadmin_free() does it too. Returns 0 when none is
 * left, -1 when another user keeps them (its exit removes them). */
int heapadmin_tidy_datadir(const struct heapadmin *h);

/* The log file used when heapadmin_options.log is NULL (absolute). */
const char *heapadmin_log_path(const struct heapadmin *h);

/* jemalloc_variables options that jemalloc honours only when it starts
 * (lg_prof_interval, prof_final, prof_leak, prof_accum): the MALLOC_CONF
 * pairs the configuration asks for that the running jemalloc lacks, e.g.
 * "lg_prof_interval:30,prof_final:true", written to out (outlen bytes);
 * "" when nothing is missing or profiling is unavailable. A daemon can
 * re-execute itself with them; a host can log them. -1 when out is too
 * small. */
int heapadmin_startup_malloc_conf(const struct heapadmin *h, char *out,
                                  size_t outlen);

/* The debuginfod servers the configuration names
 * (jemalloc_variables.debuginfod_urls, with debuginfod on), or NULL.
 * elfutils' client reads its servers only from DEBUGINFOD_URLS in the
 * environment, and the library never writes a host's environment: a
 * program that owns its process (heapadmind) may export this as
 * DEBUGINFOD_URLS before it starts threads; a host sets its own. */
const char *heapadmin_debuginfod_urls(const struct heapadmin *h);

/* Makes the calling thread allocate from heapadmin's own jemalloc arena
 * (one per process, created at the first call, shared by every instance
 * and kept by fork children), with no thread cache and left out of heap
 * profiles: for a thread of the host's that does heapadmin's work (the
 * agent's start-up). What heapadmin allocates there is reported apart
 * from the host's figures (stats_memory_jemalloc's heapadmin.* rows).
 * heapadmin's own threads do this themselves. Returns 0, or -1 without
 * jemalloc (or an arena). */
int heapadmin_adopt_thread(void);

/* Names the calling thread in heap profiles (jemalloc's
 * thread.prof.name), so heap_threads, heapadmin_thread_live_bytes and
 * pprof's thread_name label say which thread, or pool (threads of one
 * name are summed), holds the memory; a host whose threads the kernel
 * names can start jemalloc with prof_sys_thread_name:true instead (it
 * reads the thread's name at each sampled allocation). name: printable
 * ASCII and blanks; "" removes the name. Returns 0, or -1 with errno:
 * ENOSYS without jemalloc, ENOENT when profiling is off (opt.prof) or
 * prof_sys_thread_name is on (jemalloc then names threads itself),
 * EFAULT for a NULL name or another byte, EAGAIN out of memory. */
int heapadmin_set_thread_name(const char *name);

/* fork() while an instance runs on its own thread. A fork child keeps
 * only the thread that forked, so a lock another thread held at that
 * instant stays held in the child: SQLite's process-wide mutexes, which
 * heapadmin's threads take for microseconds at a time, would hang the
 * child's first SQLite call. A host whose children may use heapadmin
 * (or SQLite) registers these with pthread_atfork(3):
 *   heapadmin_fork_prepare  waits until none of heapadmin's threads is
 *                           inside a call that holds such a lock (each
 *                           a few system calls; none starts meanwhile),
 *                           at most 1 s (a call stuck in the kernel),
 *                           and takes them; 1 when it has them all (or
 *                           no instance exists), 0 when it gave up;
 *   heapadmin_fork_parent   gives them back;
 *   heapadmin_fork_child    gives them back, resets heapadmin's own
 *                           process-wide locks and closes the datadir's
 *                           SQLite files the parent had open (SQLite's
 *                           unix VFS keeps their lock state per process:
 *                           a connection the child opened on one would
 *                           join the parent's); 1 when the child may
 *                           start an instance, 0 when the fork happened
 *                           without the locks (the child must not).
 * Each fork's state is its thread's: two threads may fork at once. The
 * LD_PRELOAD agent registers them itself. */
int heapadmin_fork_prepare(void);
void heapadmin_fork_parent(void);
int heapadmin_fork_child(void);

/* The library's version string, e.g. "0.1.0". */
const char *heapadmin_version(void);

#ifdef __cplusplus
}
#endif

#endif /* HEAPADMIN_H */
