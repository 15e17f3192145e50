/* SPDX-License-Identifier: MIT
 *
 * /proc's text formats, parsed without trusting them (see procparse.h).
 */
#include "attach/procparse.h"

#include <ctype.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#define CAP_SYS_PTRACE_BIT 19

/* The value after "key:" at the start of a line of text, or NULL. */
static const char *
status_field(const char *text, const char *key)
{
    size_t k = strlen(key);

    for (const char *p = text; p != NULL && *p != '\0';) {
        if (strncmp(p, key, k) == 0 && p[k] == ':') {
            p += k + 1;
            while (*p == ' ' || *p == '\t')
                p++;
            return p;
        }
        p = strchr(p, '\n');
        if (p != NULL)
            p++;
    }
    return NULL;
}

/* Up to n decimal numbers separated by blanks from p into out (-1 for
 * each one absent). Returns how many were read. */
static int
numbers(const char *p, long *out, int n)
{
    int got = 0;

    for (int i = 0; i < n; i++)
        out[i] = -1;
    while (p != NULL && got < n) {
        char *end;
        long v;

        while (*p == ' ' || *p == '\t')
            p++;
        if (!isdigit((unsigned char)*p))
            break;
        v = strtol(p, &end, 10);
        if (v < 0)
            break;
        out[got++] = v;
        p = end;
    }
    return got;
}

int
ha_procparse_status(const char *text, struct ha_procstatus *out)
{
    const char *v;
    long one;

    memset(out, 0, sizeof(*out));
    out->tracer = -1;
    out->seccomp = -1;
    v = status_field(text, "State");
    if (v == NULL || !isalpha((unsigned char)*v))
        return -1;
    out->state = *v;
    if (numbers(status_field(text, "TracerPid"), &out->tracer, 1) != 1 ||
        numbers(status_field(text, "Uid"), out->uid, 4) != 4)
        return -1;
    (void)numbers(status_field(text, "Gid"), out->gid, 4);
    if (numbers(status_field(text, "Seccomp"), &one, 1) == 1 && one <= 2)
        out->seccomp = (int)one;
    v = status_field(text, "CapEff");
    if (v != NULL) {
        char *end;
        unsigned long long caps = strtoull(v, &end, 16);

        out->cap_sys_ptrace =
            end != v && (caps >> CAP_SYS_PTRACE_BIT & 1) != 0;
    }
    return 0;
}

/* A hexadecimal number at *p, up to a byte not a hex digit; advances
 * *p. False when there is none or it has over 16 digits. */
static bool
hex(const char **p, const char *end, uint64_t *out)
{
    uint64_t v = 0;
    int n = 0;

    while (*p < end && isxdigit((unsigned char)**p)) {
        int c = tolower((unsigned char)**p);

        v = v << 4 | (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
        (*p)++;
        if (++n > 16)
            return false;
    }
    *out = v;
    return n > 0;
}

static bool
skip(const char **p, const char *end, char c)
{
    if (*p >= end || **p != c)
        return false;
    (*p)++;
    return true;
}

int
ha_procparse_map(const char *line, size_t len, struct ha_procmap *out)
{
    const char *p = line, *end = line + len;
    uint64_t dev;

    memset(out, 0, sizeof(*out));
    out->path = "";
    if (!hex(&p, end, &out->start) || !skip(&p, end, '-') ||
        !hex(&p, end, &out->end) || !skip(&p, end, ' ') ||
        end - p < 5 || out->end < out->start)
        return -1;
    memcpy(out->perms, p, 4);
    p += 4;
    if (!skip(&p, end, ' ') || !hex(&p, end, &out->offset) ||
        !skip(&p, end, ' ') || !hex(&p, end, &dev) ||
        !skip(&p, end, ':') || !hex(&p, end, &dev) || !skip(&p, end, ' '))
        return -1;
    {
        uint64_t ino = 0;
        int n = 0;

        while (p < end && isdigit((unsigned char)*p) && n++ < 20)
            ino = ino * 10 + (uint64_t)(*p++ - '0');
        if (n == 0)
            return -1;
        out->inode = ino;
    }
    while (p < end && *p == ' ')
        p++;
    out->path = p;
    out->path_len = (size_t)(end - p);
    return 0;
}

bool
ha_procparse_auxv(const uint8_t *buf, size_t len, uint64_t type,
                  uint64_t *value)
{
    for (size_t off = 0; off + 16 <= len; off += 16) {
        uint64_t t, v;

        memcpy(&t, buf + off, 8);
        memcpy(&v, buf + off + 8, 8);
        if (t == AT_NULL)
            break;
        if (t == type) {
            *value = v;
            return true;
        }
    }
    return false;
}

long
ha_procparse_syscall(const char *text)
{
    char *end;
    long nr;

    if (strncmp(text, "running", 7) == 0)
        return -2;
    nr = strtol(text, &end, 10);
    if (end == text || (*end != ' ' && *end != '\n' && *end != '\0') ||
        nr < -1 || nr > 4096)
        return -2;
    return nr;
}

int
ha_procparse_scope(const char *text)
{
    char *end;
    long v = strtol(text, &end, 10);

    if (end == text || (*end != '\n' && *end != '\0') || v < 0 || v > 3)
        return -1;
    return (int)v;
}
