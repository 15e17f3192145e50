/* SPDX-License-Identifier: MIT
 *
 * heapadmind: argv, signals and wiring. Everything it wires lives in
 * libheapadmin (config, server, vtab, daemon), so tests never need this
 * file.
 */
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin/config.h"
#include "daemon/daemon.h"
#include "core/log.h"
#include "vtab/mallctl.h"
#include "vtab/profconf.h"
#include "admin/server.h"
#include "admin/sysvar.h"
#include "core/util.h"

/* jemalloc reads this at initialisation: profiling is compiled in and
 * switched off, so an operator can turn it on over SQL at no cost until
 * then. MALLOC_CONF in the environment still overrides it (jemalloc
 * applies the environment after this symbol). */
const char *malloc_conf = "prof:true,prof_active:false";

#ifndef HA_SYSCONFDIR
#define HA_SYSCONFDIR "/etc"
#endif
#define DEFAULT_CONFIG HA_SYSCONFDIR "/heapadmin.cnf"

struct options {
    bool foreground;
    const char *config;
    bool config_given;
    const char *datadir;
};

static void
usage(FILE *f)
{
    fprintf(f,
            "usage: heapadmind [-f] [-c FILE] [-D DATADIR] [-V] [-h]\n"
            "  -f          stay in the foreground and log to stderr\n"
            "  -c FILE     configuration file (default %s)\n"
            "  -D DATADIR  data directory: pid file, log, heap dumps\n"
            "              (overrides the config's datadir)\n"
            "  -V          print the version and exit\n"
            "  -h          print this help and exit\n",
            DEFAULT_CONFIG);
}

static int
parse_args(int argc, char **argv, struct options *o)
{
    int ch;

    memset(o, 0, sizeof(*o));
    o->config = DEFAULT_CONFIG;
    while ((ch = getopt(argc, argv, "fc:D:Vh")) != -1) {
        switch (ch) {
        case 'f':
            o->foreground = true;
            break;
        case 'c':
            o->config = optarg;
            o->config_given = true;
            break;
        case 'D':
            o->datadir = optarg;
            break;
        case 'V':
            printf("heapadmind %s (MySQL protocol version %s, SQLite %s)\n",
                   PACKAGE_VERSION, HA_SERVER_VERSION, sqlite3_libversion());
            exit(0);
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "heapadmind: unexpected argument '%s'\n",
                argv[optind]);
        usage(stderr);
        return -1;
    }
    return 0;
}

struct runtime {
    struct event_base *base;
    struct ha_server *server;
    const char *log_path;   /* NULL when logging to stderr */
};

static void
on_stop_signal(evutil_socket_t sig, short what, void *arg)
{
    struct runtime *rt = arg;

    (void)what;
    ha_log_notice("received %s; shutting down",
                  sig == SIGTERM ? "SIGTERM" : "SIGINT");
    ha_server_stop(rt->server);
    event_base_loopexit(rt->base, NULL);
}

static void
on_hup_signal(evutil_socket_t sig, short what, void *arg)
{
    struct runtime *rt = arg;

    (void)sig;
    (void)what;
    /* logrotate: reopen the log under its name. */
    if (rt->log_path != NULL) {
        if (ha_log_open_file(rt->log_path) == 0) {
            ha_log_notice("SIGHUP: reopened %s", rt->log_path);
            int fd = open(rt->log_path, O_WRONLY | O_APPEND | O_CLOEXEC);
            if (fd >= 0) {
                dup2(fd, STDERR_FILENO);
                close(fd);
            }
        } else {
            ha_log_error("SIGHUP: cannot reopen %s: %s", rt->log_path,
                         strerror(errno));
        }
    }
}

int
main(int argc, char **argv)
{
    struct options opt;
    struct ha_config cfg;
    struct runtime rt = {NULL, NULL, NULL};
    struct event *ev_term = NULL, *ev_int = NULL, *ev_hup = NULL;
    char err[PATH_MAX + 512], datadir[PATH_MAX], pidpath[PATH_MAX + 32];
    char logpath[PATH_MAX + 32];
    int pidfd = -1, ready_fd = -1, status = 1;

    if (parse_args(argc, argv, &opt) != 0)
        return 2;
    signal(SIGPIPE, SIG_IGN);

    ha_config_init(&cfg);
    if (opt.config_given || access(opt.config, F_OK) == 0) {
        if (ha_config_load_file(&cfg, opt.config, err, sizeof(err)) != 0) {
            fprintf(stderr, "heapadmind: %s\n", err);
            return 1;
        }
    }
    if (opt.datadir != NULL) {
        free(cfg.datadir);
        cfg.datadir = strdup(opt.datadir);
    }

    /* Options jemalloc reads only at its own start need a fresh process;
     * do it before anything else is set up (same pid, at most once). */
    if (ha_profconf_reexec_if_needed(&ha_mallctl_jemalloc, &cfg.jemalloc,
                                     argv, err, sizeof(err)) != 0)
        fprintf(stderr, "heapadmind: warning: %s\n", err);

    if (ha_daemon_prepare_datadir(cfg.datadir, datadir, sizeof(datadir), err,
                                  sizeof(err)) != 0) {
        fprintf(stderr, "heapadmind: %s\n", err);
        goto out;
    }
    snprintf(pidpath, sizeof(pidpath), "%s/heapadmind.pid", datadir);
    pidfd = ha_daemon_lock_pidfile(pidpath, err, sizeof(err));
    if (pidfd < 0) {
        fprintf(stderr, "heapadmind: %s\n", err);
        goto out;
    }

    if (!opt.foreground) {
        ready_fd = ha_daemon_start(err, sizeof(err));
        if (ready_fd < 0) {
            fprintf(stderr, "heapadmind: %s\n", err);
            goto out;
        }
        if (cfg.errorlog != NULL && *cfg.errorlog != '\0')
            ha_strlcpy(logpath, cfg.errorlog, sizeof(logpath));
        else
            snprintf(logpath, sizeof(logpath), "%s/heapadmind.log", datadir);
        if (ha_log_open_file(logpath) != 0) {
            snprintf(err, sizeof(err), "cannot open log %s: %s", logpath,
                     strerror(errno));
            ha_daemon_ready(ready_fd, err);
            goto out;
        }
        rt.log_path = logpath;
        /* jemalloc and libraries report on stderr: keep that in the log. */
        int lfd = open(logpath, O_WRONLY | O_APPEND | O_CLOEXEC);
        if (lfd >= 0) {
            dup2(lfd, STDERR_FILENO);
            close(lfd);
        }
        /* Relative paths (and a relative prof prefix) resolve in the
         * datadir, as ProxySQL does. */
        if (chdir(datadir) != 0)
            ha_log_warn("cannot chdir to %s: %s", datadir, strerror(errno));
    }
    if (ha_daemon_write_pid(pidfd, getpid()) != 0)
        ha_log_warn("cannot write %s: %s", pidpath, strerror(errno));

    ha_log_notice("heapadmind %s starting (pid %ld, config %s)",
                  PACKAGE_VERSION, (long)getpid(),
                  opt.config_given || access(opt.config, F_OK) == 0
                      ? opt.config
                      : "built-in defaults");
    for (size_t i = 0; i < cfg.n_messages; i++) {
        /* Unknown keys are likely typos (warn); ProxySQL sections we do
         * not use are expected (notice). */
        if (strstr(cfg.messages[i], "unknown") != NULL)
            ha_log_warn("%s", cfg.messages[i]);
        else
            ha_log_notice("%s", cfg.messages[i]);
    }
    ha_config_log(&cfg);
    if (ha_config_default_exposed(&cfg, err, sizeof(err)))
        ha_log_warn("%s", err);
    ha_log_info("datadir %s", datadir);

    if (ha_profconf_apply(&ha_mallctl_jemalloc, &cfg.jemalloc, datadir, err,
                          sizeof(err)) != 0)
        ha_log_warn("jemalloc_variables: %s", err);
    ha_profconf_log_effective(&ha_mallctl_jemalloc);

    rt.base = event_base_new();
    if (rt.base == NULL) {
        snprintf(err, sizeof(err), "cannot create the event loop");
        goto fail;
    }
    rt.server = ha_server_new(rt.base, &cfg, datadir, &ha_mallctl_jemalloc,
                              err, sizeof(err));
    if (rt.server == NULL ||
        ha_server_enable_tls(rt.server, err, sizeof(err)) != 0 ||
        ha_server_listen(rt.server, err, sizeof(err)))
        goto fail;
    ev_term = evsignal_new(rt.base, SIGTERM, on_stop_signal, &rt);
    ev_int = evsignal_new(rt.base, SIGINT, on_stop_signal, &rt);
    ev_hup = evsignal_new(rt.base, SIGHUP, on_hup_signal, &rt);
    if (ev_term == NULL || ev_int == NULL || ev_hup == NULL ||
        evsignal_add(ev_term, NULL) || evsignal_add(ev_int, NULL) ||
        evsignal_add(ev_hup, NULL)) {
        snprintf(err, sizeof(err), "cannot install signal handlers");
        goto fail;
    }

    ha_log_notice("ready for connections");
    ha_daemon_ready(ready_fd, NULL);
    ready_fd = -1;
    event_base_dispatch(rt.base);
    status = 0;
    ha_log_notice("heapadmind stopped");
    goto out;

fail:
    ha_log_error("%s", err);
    ha_daemon_ready(ready_fd, err);
    ready_fd = -1;
out:
    if (ev_term)
        event_free(ev_term);
    if (ev_int)
        event_free(ev_int);
    if (ev_hup)
        event_free(ev_hup);
    ha_server_free(rt.server);
    if (rt.base)
        event_base_free(rt.base);
    if (pidfd >= 0) {
        unlink(pidpath);
        close(pidfd);
    }
    ha_config_free(&cfg);
    ha_log_close();
    return status;
}
