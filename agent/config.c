/* SPDX-License-Identifier: MIT
 *
 * HEAPADMIN_CONF, read once, as the first process sees it: the file may
 * be root's and 0600, and the host may drop privileges or close every
 * descriptor later, so its text is read at load into memory of the
 * agent's own (never the host's heap), which fork children keep. Only
 * the keys the start-up needs are looked at here; heapadmin_new reads
 * the rest.
 */
#include "agent/agent_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libconfig.h>

#include "agent/attachreq.h"
#include "agent/log.h"

#define CONFIG_MAX (1u << 20)  /* bytes of config text kept */

/* Reads HEAPADMIN_CONF into mmap'd memory: no heap of the host's holds
 * it, and fork children keep it. */
void
ha_agent_read_config(void)
{
    struct stat st;
    char *text;
    ssize_t n;
    int fd;

    if (ha_agent_settings.conf[0] == '\0')
        return;
    if (ha_agent_attach_req != NULL &&
        ha_agent_attachreq_body(ha_agent_attach_req) != NULL) {
        /* heapadmin-attach read the file (as root, in its namespace). */
        const char *body = ha_agent_attachreq_body(ha_agent_attach_req);

        n = (ssize_t)strlen(body);
        text = n < (ssize_t)CONFIG_MAX
                   ? mmap(NULL, (size_t)n + 1, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                   : MAP_FAILED;
        if (text != MAP_FAILED) {
            memcpy(text, body, (size_t)n + 1);
            ha_agent_settings.conf_text = text;
        }
        return;
    }
    fd = open(ha_agent_settings.conf, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) != 0) {
        ha_agent_fmt(ha_agent_settings.conf_err,
                     sizeof(ha_agent_settings.conf_err), "%s: cannot read: %s",
                     ha_agent_settings.conf, strerror(errno));
        if (fd >= 0)
            close(fd);
        return;
    }
    if (st.st_size >= (off_t)CONFIG_MAX) {
        ha_agent_fmt(
            ha_agent_settings.conf_err, sizeof(ha_agent_settings.conf_err),
            "%s: larger than %u bytes", ha_agent_settings.conf, CONFIG_MAX);
        close(fd);
        return;
    }
    text = mmap(NULL, (size_t)st.st_size + 1, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (text == MAP_FAILED) {
        close(fd);
        return;
    }
    n = read(fd, text, (size_t)st.st_size);
    close(fd);
    if (n < 0) {
        ha_agent_fmt(ha_agent_settings.conf_err,
                     sizeof(ha_agent_settings.conf_err), "%s: cannot read: %s",
                     ha_agent_settings.conf, strerror(errno));
        munmap(text, (size_t)st.st_size + 1);
        return;
    }
    text[n] = '\0';
    ha_agent_settings.conf_text = text;
}

/* The config's datadir and mysql_ifaces (the rest is for
 * heapadmin_new). */
void
ha_agent_config_keys(char *datadir, size_t dlen)
{
    config_t c;
    const char *v = NULL;

    datadir[0] = '\0';
    if (ha_agent_settings.conf_text == NULL)
        return;
    config_init(&c);
    if (config_read_string(&c, ha_agent_settings.conf_text) == CONFIG_TRUE) {
        if (config_lookup_string(&c, "datadir", &v) == CONFIG_TRUE &&
            v != NULL)
            snprintf(datadir, dlen, "%s", v);
        v = NULL;
        if (config_lookup_string(&c, "admin_variables.mysql_ifaces", &v) ==
                CONFIG_TRUE &&
            v != NULL && strlen(v) < sizeof(ha_agent_settings.cfg_ifaces))
            memcpy(ha_agent_settings.cfg_ifaces, v, strlen(v) + 1);
    }
    config_destroy(&c);
}
