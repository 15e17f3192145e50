/* SPDX-License-Identifier: MIT
 *
 * A minimal blocking MySQL client for the loopback suites (check_server,
 * check_conn, check_tls, check_instances, check_api): it speaks the
 * protocol byte by byte, so a test checks the server against the
 * protocol (MySQL protocol: Connection Phase, COM_QUERY Response, Text
 * Resultset) rather than against heapadmin's own decoder. Plain TCP to
 * 127.0.0.1 or TLS (OpenSSL as the client, no verification).
 *
 * The mc_* calls that return int never call ck_assert: 0 or -1, so
 * client threads may use them (check_instances runs clients on threads
 * of their own). The mc_must_* and mc_expect_* calls assert, for the
 * test's own thread. Every read has a 10 s timeout: a server that never
 * answers fails the test instead of hanging it.
 */
#ifndef HA_TEST_CLIENT_H
#define HA_TEST_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/ssl.h>

#include "core/buf.h"

/* What a test client says it can do: protocol 4.1 with plugin
 * authentication and a length-encoded auth response. */
#define MC_CLIENT_CAPS                                                       \
    (HA_CLIENT_LONG_PASSWORD | HA_CLIENT_PROTOCOL_41 |                       \
     HA_CLIENT_SECURE_CONNECTION | HA_CLIENT_PLUGIN_AUTH |                   \
     HA_CLIENT_PLUGIN_AUTH_LENENC_DATA | HA_CLIENT_TRANSACTIONS)

/* One physical packet as read. */
struct mc_pkt {
    uint8_t seq;
    size_t len;
    uint8_t *data;          /* payload, NUL after it: small[] or, for a
                               larger packet, malloc'd (mc_pkt_free) */
    uint8_t small[4096];
};

/* One connection and what its greeting (HandshakeV10) said. */
struct mc_conn {
    int fd;                 /* -1: none */
    SSL_CTX *ctx;           /* TLS client context, or NULL */
    SSL *ssl;               /* reads and writes go through it when set */

    uint8_t protocol;       /* 10 */
    char version[64];
    uint32_t id;            /* connection id */
    uint8_t scramble[20];
    uint32_t caps;          /* capabilities offered */
    uint8_t collation;
    uint16_t status;
    uint8_t auth_data_len;  /* 21: scramble and its NUL */
    char plugin[64];        /* default authentication plugin */
};

/* ---------------------------------------------------------------- */
/* Transport (no assertions)                                          */
/* ---------------------------------------------------------------- */

/* Connects to 127.0.0.1:port. Returns 0, or -1 (c->fd is -1). */
int mc_connect(struct mc_conn *c, int port);

/* Reads exactly n bytes (through TLS when it is up). Returns 0, or -1 on
 * EOF, error or timeout. */
int mc_read_full(struct mc_conn *c, void *buf, size_t n);

/* Reads one physical packet into p. Returns 0, or -1 (nothing to
 * free). */
int mc_read(struct mc_conn *c, struct mc_pkt *p);

/* Frees a large packet's payload; a no-op for a small one. */
void mc_pkt_free(struct mc_pkt *p);

/* Sends one physical packet (header and payload in one write: apart,
 * they would meet Nagle and delayed ACK). Returns 0 or -1. */
int mc_write(struct mc_conn *c, uint8_t seq, const void *payload,
             size_t len);

/* Sends a command: the byte cmd, then n bytes of arg, at sequence id 0. */
int mc_command(struct mc_conn *c, uint8_t cmd, const void *arg, size_t n);

/* COM_QUERY sql. */
int mc_query(struct mc_conn *c, const char *sql);

/* Writes v little-endian into p[0..n) (for building payloads). */
void mc_put_le(uint8_t *p, uint64_t v, int n);

/* Closes the connection (TLS too). Safe on a closed one. */
void mc_close(struct mc_conn *c);

/* ---------------------------------------------------------------- */
/* Connection phase (no assertions)                                   */
/* ---------------------------------------------------------------- */

/* Reads HandshakeV10 (sequence id 0) into c's greeting fields. Returns
 * 0, or -1 when it is missing or too short. */
int mc_greet(struct mc_conn *c);

/* Builds HandshakeResponse41 into b (cap bytes): caps, a 16 MiB maximum
 * packet, collation utf8mb4_general_ci, user, auth_len bytes of auth
 * (length-encoded) and plugin. Returns its length (0 when it does not
 * fit). */
size_t mc_response41(uint8_t *b, size_t cap, uint32_t caps,
                     const char *user, const uint8_t *auth, size_t auth_len,
                     const char *plugin);

/* The 32-byte SSLRequest payload for caps (HA_CLIENT_SSL added). */
void mc_ssl_request(uint8_t b[32], uint32_t caps);

/* A TLS client context and session for c, not yet on the socket. Returns
 * 0 or -1. */
int mc_ssl_new(struct mc_conn *c);

/* Sends the SSLRequest (seq 1) and runs the TLS handshake on the
 * socket. Returns 0 or -1. */
int mc_start_tls(struct mc_conn *c, uint32_t caps);

/* Connects, reads the greeting and logs in as user with password by
 * mysql_native_password, caps MC_CLIENT_CAPS | extra_caps. Returns 0 once
 * the OK (seq 2) arrived, else -1 (closed). */
int mc_login(struct mc_conn *c, int port, const char *user,
             const char *password, uint32_t extra_caps);

/* ---------------------------------------------------------------- */
/* Replies (no assertions)                                            */
/* ---------------------------------------------------------------- */

/* Reads one reply to a command (an OK, an ERR, or a text result set
 * through its terminator: EOF, or with HA_CLIENT_DEPRECATE_EOF in caps
 * the 0xFE OK) and appends its packets, framed as they came, to out.
 * *seq is the sequence id its first packet must carry, and is moved past
 * the last one (for the next result of a multi-statement reply). Returns
 * 0, or -1 on a read failure or a sequence id out of order. */
int mc_read_reply(struct mc_conn *c, uint32_t caps, uint8_t *seq,
                  struct ha_buf *out);

/* The ERR packet's error code, or -1 when p is no ERR. */
int mc_err_code(const struct mc_pkt *p);

/* A classic EOF packet (5 bytes, header 0xFE). */
bool mc_is_eof(const struct mc_pkt *p);

/* An EOF or the 0xFE OK that ends a result under DEPRECATE_EOF: header
 * 0xFE and under 9 bytes. */
bool mc_is_end(const struct mc_pkt *p);

/* ---------------------------------------------------------------- */
/* With assertions, for the test's thread                             */
/* ---------------------------------------------------------------- */

/* mc_connect and mc_greet, or the test fails. */
void mc_must_greet(struct mc_conn *c, int port);

/* mc_login, or the test fails naming user and port. */
void mc_must_login(struct mc_conn *c, int port, const char *user,
                   const char *password, uint32_t extra_caps);

/* mc_write, mc_command and mc_query, or the test fails. */
void mc_must_write(struct mc_conn *c, uint8_t seq, const void *payload,
                   size_t len);
void mc_must_command(struct mc_conn *c, uint8_t cmd, const void *arg,
                     size_t n);
void mc_must_query(struct mc_conn *c, const char *sql);

/* Reads a packet, which must come with sequence id seq. */
void mc_expect(struct mc_conn *c, struct mc_pkt *p, uint8_t seq);

/* Reads a packet at seq that must be an OK (header 0x00). */
void mc_expect_ok(struct mc_conn *c, uint8_t seq);

/* Reads a packet at seq that must be ERR code. */
void mc_expect_err(struct mc_conn *c, uint8_t seq, int code);

/* Asserts that the server closed the connection: the next read sees EOF.
 * what names the step, for the failure message. */
void mc_expect_closed(struct mc_conn *c, const char *what);

#endif /* HA_TEST_CLIENT_H */
