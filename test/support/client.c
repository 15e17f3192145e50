/* SPDX-License-Identifier: MIT
 *
 * A minimal blocking MySQL client for the loopback suites (see
 * client.h).
 */
#include "test/support/client.h"

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "admin/auth.h"
#include "admin/proto.h"

/* ------------------------------------------------------------------ */
/* Transport                                                            */
/* ------------------------------------------------------------------ */

int
mc_connect(struct mc_conn *c, int port)
{
    struct sockaddr_in sin;
    /* A guard against a hang, not a deadline: ThreadSanitizer's build
     * checks each byte the server touches, and a 16 MiB query on a
     * loaded machine takes longer than 10 s there (make check-tsan
     * multiplies the cases' timeouts by 4: CK_TIMEOUT_MULTIPLIER). */
#if defined(__SANITIZE_THREAD__)
    struct timeval tv = {150, 0};
#else
    struct timeval tv = {10, 0};
#endif

    memset(c, 0, sizeof(*c));
    c->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (c->fd < 0)
        return -1;
    memset(&sin, 0, sizeof(sin));
    sin.sin_family = AF_INET;
    sin.sin_port = htons((uint16_t)port);
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) != 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

int
mc_read_full(struct mc_conn *c, void *buf, size_t n)
{
    uint8_t *p = buf;

    while (n > 0) {
        ssize_t r = c->ssl != NULL
                        ? (ssize_t)SSL_read(c->ssl, p,
                                            n > 0x40000000 ? 0x40000000
                                                           : (int)n)
                        : recv(c->fd, p, n, 0);
        if (r <= 0)
            return -1;
        p += r;
        n -= (size_t)r;
    }
    return 0;
}

int
mc_read(struct mc_conn *c, struct mc_pkt *p)
{
    uint8_t h[4];

    p->data = p->small;
    p->len = 0;
    if (mc_read_full(c, h, 4) != 0)
        return -1;
    p->len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16;
    p->seq = h[3];
    if (p->len >= sizeof(p->small) &&
        (p->data = malloc(p->len + 1)) == NULL) {
        p->data = p->small;
        return -1;
    }
    if (mc_read_full(c, p->data, p->len) != 0) {
        mc_pkt_free(p);
        return -1;
    }
    p->data[p->len] = '\0';
    return 0;
}

void
mc_pkt_free(struct mc_pkt *p)
{
    if (p->data != NULL && p->data != p->small)
        free(p->data);
    p->data = p->small;
}

int
mc_write(struct mc_conn *c, uint8_t seq, const void *payload, size_t len)
{
    uint8_t *b = malloc(4 + len);
    int ok;

    if (b == NULL)
        return -1;
    b[0] = (uint8_t)len;
    b[1] = (uint8_t)(len >> 8);
    b[2] = (uint8_t)(len >> 16);
    b[3] = seq;
    if (len > 0)
        memcpy(b + 4, payload, len);
    if (c->ssl != NULL)
        ok = SSL_write(c->ssl, b, (int)(4 + len)) == (int)(4 + len);
    else
        ok = send(c->fd, b, 4 + len, MSG_NOSIGNAL) == (ssize_t)(4 + len);
    free(b);
    return ok ? 0 : -1;
}

int
mc_command(struct mc_conn *c, uint8_t cmd, const void *arg, size_t n)
{
    uint8_t *b = malloc(n + 1);
    int rc;

    if (b == NULL)
        return -1;
    b[0] = cmd;
    if (n > 0)
        memcpy(b + 1, arg, n);
    rc = mc_write(c, 0, b, n + 1);
    free(b);
    return rc;
}

int
mc_query(struct mc_conn *c, const char *sql)
{
    return mc_command(c, HA_COM_QUERY, sql, strlen(sql));
}

void
mc_put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void
mc_close(struct mc_conn *c)
{
    if (c->ssl != NULL)
        SSL_free(c->ssl);
    c->ssl = NULL;
    SSL_CTX_free(c->ctx);
    c->ctx = NULL;
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
}

/* ------------------------------------------------------------------ */
/* Connection phase                                                     */
/* ------------------------------------------------------------------ */

int
mc_greet(struct mc_conn *c)
{
    struct mc_pkt p;
    size_t vlen, off;
    int rc = -1;

    if (mc_read(c, &p) != 0)
        return -1;
    /* Protocol::HandshakeV10: version, NUL, connection id, 8 bytes of
     * scramble, filler, capabilities (low), collation, status,
     * capabilities (high), auth data length, 10 reserved, 12 more bytes
     * of scramble, NUL, plugin name. */
    if (p.seq != 0 || p.len < 2)
        goto out;
    vlen = strnlen((char *)p.data + 1, p.len - 1);
    off = 1 + vlen + 1;
    if (p.len < off + 4 + 40)
        goto out;
    c->protocol = p.data[0];
    snprintf(c->version, sizeof(c->version), "%.*s", (int)vlen,
             (char *)p.data + 1);
    c->id = (uint32_t)p.data[off] | (uint32_t)p.data[off + 1] << 8 |
            (uint32_t)p.data[off + 2] << 16 | (uint32_t)p.data[off + 3] << 24;
    off += 4;
    memcpy(c->scramble, p.data + off, 8);
    c->caps = (uint32_t)p.data[off + 9] | (uint32_t)p.data[off + 10] << 8 |
              (uint32_t)p.data[off + 14] << 16 |
              (uint32_t)p.data[off + 15] << 24;
    c->collation = p.data[off + 11];
    c->status = (uint16_t)(p.data[off + 12] | p.data[off + 13] << 8);
    c->auth_data_len = p.data[off + 16];
    memcpy(c->scramble + 8, p.data + off + 27, 12);
    snprintf(c->plugin, sizeof(c->plugin), "%s", (char *)p.data + off + 40);
    rc = 0;
out:
    mc_pkt_free(&p);
    return rc;
}

size_t
mc_response41(uint8_t *b, size_t cap, uint32_t caps, const char *user,
              const uint8_t *auth, size_t auth_len, const char *plugin)
{
    size_t n = 32;

    if (auth_len > 250 || cap < 32 + strlen(user) + 1 + 1 + auth_len +
                                   strlen(plugin) + 1)
        return 0;
    mc_put_le(b, caps, 4);
    mc_put_le(b + 4, 16u << 20, 4);
    b[8] = 45;
    memset(b + 9, 0, 23);
    strcpy((char *)b + n, user);
    n += strlen(user) + 1;
    b[n++] = (uint8_t)auth_len;
    if (auth_len > 0)
        memcpy(b + n, auth, auth_len);
    n += auth_len;
    strcpy((char *)b + n, plugin);
    n += strlen(plugin) + 1;
    return n;
}

void
mc_ssl_request(uint8_t b[32], uint32_t caps)
{
    mc_put_le(b, caps | HA_CLIENT_SSL, 4);
    mc_put_le(b + 4, 16u << 20, 4);
    b[8] = 45;
    memset(b + 9, 0, 23);
}

int
mc_ssl_new(struct mc_conn *c)
{
    c->ctx = SSL_CTX_new(TLS_client_method());
    if (c->ctx == NULL)
        return -1;
    SSL_CTX_set_verify(c->ctx, SSL_VERIFY_NONE, NULL);
    c->ssl = SSL_new(c->ctx);
    return c->ssl != NULL ? 0 : -1;
}

int
mc_start_tls(struct mc_conn *c, uint32_t caps)
{
    uint8_t b[32];
    SSL *ssl;

    mc_ssl_request(b, caps);
    if (mc_write(c, 1, b, sizeof(b)) != 0 || mc_ssl_new(c) != 0)
        return -1;
    ssl = c->ssl;
    c->ssl = NULL; /* not up yet: mc_close frees it */
    SSL_set_fd(ssl, c->fd);
    if (SSL_connect(ssl) != 1) {
        SSL_free(ssl);
        return -1;
    }
    c->ssl = ssl;
    return 0;
}

int
mc_login(struct mc_conn *c, int port, const char *user,
         const char *password, uint32_t extra_caps)
{
    uint8_t b[512], proof[20];
    struct mc_pkt p;
    size_t n;
    int ok;

    if (mc_connect(c, port) != 0)
        return -1;
    if (mc_greet(c) != 0)
        goto fail;
    ha_auth_native_proof(password, strlen(password), c->scramble, proof);
    n = mc_response41(b, sizeof(b), MC_CLIENT_CAPS | extra_caps, user, proof,
                      sizeof(proof), HA_AUTH_NATIVE_PLUGIN);
    if (n == 0 || mc_write(c, 1, b, n) != 0 || mc_read(c, &p) != 0)
        goto fail;
    ok = p.seq == 2 && p.len > 0 && p.data[0] == 0x00;
    mc_pkt_free(&p);
    if (ok)
        return 0;
fail:
    mc_close(c);
    return -1;
}

/* ------------------------------------------------------------------ */
/* Replies                                                              */
/* ------------------------------------------------------------------ */

/* Reads one packet at *seq and appends it, framed, to out. */
static int
take(struct mc_conn *c, uint8_t *seq, struct ha_buf *out, struct mc_pkt *p)
{
    if (mc_read(c, p) != 0)
        return -1;
    if (p->seq != *seq) {
        mc_pkt_free(p);
        return -1;
    }
    ha_buf_append_le(out, p->len, 3);
    ha_buf_append_u8(out, p->seq);
    ha_buf_append(out, p->data, p->len);
    *seq = (uint8_t)(*seq + 1);
    return 0;
}

int
mc_read_reply(struct mc_conn *c, uint32_t caps, uint8_t *seq,
              struct ha_buf *out)
{
    struct mc_pkt p;
    struct ha_reader r;
    uint64_t ncol;

    if (take(c, seq, out, &p) != 0)
        return -1;
    if (p.len == 0 || p.data[0] == 0x00 || p.data[0] == 0xFF) {
        mc_pkt_free(&p);
        return 0; /* OK or ERR */
    }
    ha_reader_init(&r, p.data, p.len);
    if (ha_proto_get_lenenc(&r, &ncol) != 0) {
        mc_pkt_free(&p);
        return -1;
    }
    mc_pkt_free(&p);
    /* The column definitions, then EOF unless DEPRECATE_EOF. */
    for (uint64_t i = 0; i < ncol + !(caps & HA_CLIENT_DEPRECATE_EOF); i++) {
        if (take(c, seq, out, &p) != 0)
            return -1;
        mc_pkt_free(&p);
    }
    /* Rows up to the terminator. */
    for (;;) {
        bool end;

        if (take(c, seq, out, &p) != 0)
            return -1;
        end = mc_is_end(&p);
        mc_pkt_free(&p);
        if (end)
            return ha_buf_failed(out) ? -1 : 0;
    }
}

int
mc_err_code(const struct mc_pkt *p)
{
    if (p->len < 3 || p->data[0] != 0xFF)
        return -1;
    return p->data[1] | p->data[2] << 8;
}

bool
mc_is_eof(const struct mc_pkt *p)
{
    return p->len == 5 && p->data[0] == 0xFE;
}

bool
mc_is_end(const struct mc_pkt *p)
{
    return p->len > 0 && p->len < 9 && p->data[0] == 0xFE;
}

/* ------------------------------------------------------------------ */
/* With assertions                                                      */
/* ------------------------------------------------------------------ */

void
mc_must_greet(struct mc_conn *c, int port)
{
    ck_assert_msg(mc_connect(c, port) == 0, "cannot connect to port %d",
                  port);
    ck_assert_msg(mc_greet(c) == 0, "no HandshakeV10 from port %d", port);
}

void
mc_must_login(struct mc_conn *c, int port, const char *user,
              const char *password, uint32_t extra_caps)
{
    ck_assert_msg(mc_login(c, port, user, password, extra_caps) == 0,
                  "login as %s on port %d failed", user, port);
}

void
mc_must_write(struct mc_conn *c, uint8_t seq, const void *payload,
              size_t len)
{
    ck_assert_msg(mc_write(c, seq, payload, len) == 0,
                  "cannot send a %zu-byte packet", len);
}

void
mc_must_command(struct mc_conn *c, uint8_t cmd, const void *arg, size_t n)
{
    ck_assert_msg(mc_command(c, cmd, arg, n) == 0,
                  "cannot send command 0x%02x", cmd);
}

void
mc_must_query(struct mc_conn *c, const char *sql)
{
    ck_assert_msg(mc_query(c, sql) == 0, "cannot send %s", sql);
}

void
mc_expect(struct mc_conn *c, struct mc_pkt *p, uint8_t seq)
{
    ck_assert_msg(mc_read(c, p) == 0, "no packet (expected seq %u)", seq);
    ck_assert_msg(p->seq == seq, "sequence id %u, expected %u", p->seq, seq);
}

void
mc_expect_ok(struct mc_conn *c, uint8_t seq)
{
    struct mc_pkt p;

    mc_expect(c, &p, seq);
    ck_assert_msg(p.data[0] == 0x00, "expected OK, got 0x%02x (%.*s)",
                  p.data[0], (int)p.len, (char *)p.data);
    mc_pkt_free(&p);
}

void
mc_expect_err(struct mc_conn *c, uint8_t seq, int code)
{
    struct mc_pkt p;

    mc_expect(c, &p, seq);
    ck_assert_msg(p.data[0] == 0xFF, "expected ERR, got 0x%02x", p.data[0]);
    ck_assert_int_eq(mc_err_code(&p), code);
    mc_pkt_free(&p);
}

void
mc_expect_closed(struct mc_conn *c, const char *what)
{
    struct mc_pkt p;
    int rc = mc_read(c, &p);

    if (rc == 0)
        mc_pkt_free(&p);
    ck_assert_msg(rc == -1, "%s", what);
}
