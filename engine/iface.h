/* SPDX-License-Identifier: MIT
 *
 * Listeners as the config names them (admin_variables.mysql_ifaces and
 * http_ifaces): a ';'-separated list of host:port (IPv4 address or host
 * name), [ipv6]:port and absolute unix socket paths, such as
 * "127.0.0.1:6032;[::1]:6032;/tmp/proxysql_admin.sock" (ProxySQL's
 * syntax). Pure: no sockets are opened here, and every error names the
 * item and what is allowed.
 */
#ifndef HA_IFACE_H
#define HA_IFACE_H

#include <stdbool.h>
#include <stddef.h>

#define HA_DEFAULT_MYSQL_IFACES "127.0.0.1:6032"

enum ha_iface_kind { HA_IFACE_TCP, HA_IFACE_UNIX, HA_IFACE_KIND_MAX };

struct ha_iface {
    enum ha_iface_kind kind;
    char host[256];     /* TCP: address without brackets ("::1") */
    int port;           /* TCP: 1..65535, or 0 for "any free port" */
    char path[108];     /* UNIX: socket path (sun_path limit) */
};

/* Parses one spec ("127.0.0.1:6032;[::1]:6032;/tmp/a.sock") into
 * *ifaces (malloc'd, *n_ifaces entries). Returns 0, or -1 with err naming
 * the item. Ports must be 1..65535 here (0 is for programmatic use
 * only); an empty list, a duplicate or a relative socket path is an
 * error. On error *ifaces and *n_ifaces are unchanged. */
int ha_iface_parse(const char *spec, struct ha_iface **ifaces,
                   size_t *n_ifaces, char *err, size_t errlen);

/* True for a unix socket and for a TCP listener on loopback only
 * (127.0.0.0/8, ::1, ::ffff:127.x, "localhost"); false for 0.0.0.0, ::
 * and any other address or name. */
bool ha_iface_is_local(const struct ha_iface *f);

/* Whether entry i of list (n entries) should take IPv4 clients too: a
 * TCP listener on "::" does (as MySQL's bind_address='::'), unless the
 * list also has 0.0.0.0 on the same port, which takes them itself. */
bool ha_iface_dual_stack(const struct ha_iface *list, size_t n, size_t i);

#endif /* HA_IFACE_H */
