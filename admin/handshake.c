/* SPDX-License-Identifier: MIT
 *
 * The connection phase of a MySQL connection (see handshake.h): the greeting,
 * the client's answer, the switch to another authentication plugin,
 * caching_sha2_password's full authentication, the login throttle's
 * wait, and the accepted login, which opens (or, for COM_CHANGE_USER,
 * resets) the session. Replies go out through wire.h; conn.c reads the
 * packets, starts TLS when asked and moves the replies to the socket.
 */
#include "admin/handshake.h"

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "admin/auth.h"
#include "admin/schemas.h"
#include "admin/sysvar.h"
#include "core/log.h"
#include "core/util.h"
#include "engine/accounts.h"
#include "engine/login.h"
#include "vtab/vtab.h"

static void accept_login(struct ha_conn *c, const struct ha_user *u);
static void send_more_data(struct ha_conn *c, const void *data,
                           size_t len);

/* ------------------------------------------------------------------ */
/* Greeting and authentication                                          */
/* ------------------------------------------------------------------ */

int
ha_handshake_greet(struct ha_conn *c)
{
    struct ha_buf p = HA_BUF_INIT;
    struct ha_handshake h;

    if (ha_auth_scramble(c->scramble, sizeof(c->scramble)) != 0) {
        ha_log_error("connection %u (%s): the CSPRNG failed; refusing the "
                     "connection",
                     c->id, c->peer.name);
        return -1;
    }
    h.server_version = HA_SERVER_VERSION;
    h.connection_id = c->id;
    memcpy(h.scramble, c->scramble, sizeof(h.scramble));
    /* TLS is offered on TCP only: a unix socket is already private. */
    c->server_caps = HA_SERVER_CAPABILITIES;
    if (c->env->ssl_ctx != NULL && !(c->peer.family == HA_PEER_UNIX))
        c->server_caps |= HA_CLIENT_SSL;
    c->auth_plugin = c->env->auth_plugin != NULL ? c->env->auth_plugin
                                                 : HA_AUTH_NATIVE_PLUGIN;
    h.capabilities = c->server_caps;
    h.collation = HA_COLLATION_UTF8MB4_0900 & 0xff;
    h.status = HA_STATUS_AUTOCOMMIT;
    h.auth_plugin = c->auth_plugin;
    c->seq = 0;
    ha_proto_encode_handshake(&p, &h);
    ha_wire_send(c, &p);
    ha_buf_free(&p);
    return 0;
}

/* Sends ERR 1045 for c->user and closes; the log says why (the client
 * gets the same answer whatever it was: an unknown user, a wrong
 * password, default credentials from afar). */
static void
deny_login(struct ha_conn *c, enum ha_login_result r, bool with_password,
           bool say)
{
    char err[512];

    if (say)
        ha_log_warn("%s %s: user '%s' from %s (connection %u): %s",
                c->changing_user ? "change of user" : "login",
                r == HA_LOGIN_NOT_FROM_HERE ? "refused" : "failed", c->user,
                c->peer.name, c->id, ha_login_result_text(r));
    c->changing_user = false;
    snprintf(err, sizeof(err),
             "Access denied for user '%s'@'%s' (using password: %s)",
             c->user, c->peer.host, with_password ? "YES" : "NO");
    ha_wire_fail(c, 1045, "28000", err);
}

/* How the client proves the password, for engine/login.h's check. */
enum proof_kind {
    PROOF_NATIVE,   /* mysql_native_password's scramble */
    PROOF_SHA2,     /* caching_sha2_password's fast-path scramble */
    PROOF_CLEAR,    /* the password in clear (TLS, unix socket, or RSA
                       decrypted) */
    PROOF_NONE      /* nothing usable: fails */
};

struct proof {
    const struct ha_conn *c;
    enum proof_kind kind;
    const uint8_t *p;
    size_t len;
};

static bool
prove(const struct ha_user *u, void *arg)
{
    const struct proof *pr = arg;

    switch (pr->kind) {
    case PROOF_NATIVE:
        return u != NULL &&
               ha_auth_native_check(u, pr->c->scramble, pr->p, pr->len);
    case PROOF_SHA2:
        return ha_auth_sha2_check(u, pr->c->scramble, pr->p, pr->len);
    case PROOF_CLEAR:
        return ha_accounts_check_clear(u, pr->p, pr->len);
    default:
        return false;
    }
}

/* The engine's login with the client's proof: accepted (the session
 * opens) or ERR 1045 and close. fast_ok: send caching_sha2_password's
 * fast_auth_success before the OK. */
static void
login_with(struct ha_conn *c, enum proof_kind kind, const uint8_t *p,
           size_t len, bool with_password, bool fast_ok)
{
    struct proof pr = {c, kind, p, len};
    const struct ha_user *u;
    bool say;
    enum ha_login_result r = ha_login_check(c->env->accounts, &c->peer,
                                            c->user, prove, &pr, &u, &say);

    if (r != HA_LOGIN_OK) {
        deny_login(c, r, with_password, say);
        return;
    }
    if (u->role == HA_ROLE_PROFILE) {
        char err[512];

        /* The password was right: nothing for the throttle, a line for
         * the log, and the client told what the account is for. */
        ha_log_warn("login refused: user '%s' from %s (connection %u): a "
                    "profile_credentials account reads heap profiles over "
                    "HTTP only",
                    c->user, c->peer.name, c->id);
        c->changing_user = false;
        snprintf(err, sizeof(err),
                 "Access denied for user '%s'@'%s': a profile_credentials "
                 "account reads heap profiles over HTTP only; SQL needs an "
                 "admin_credentials or stats_credentials account",
                 c->user, c->peer.host);
        ha_wire_fail(c, 1045, "28000", err);
        return;
    }
    if (fast_ok) {
        uint8_t ok = HA_AUTH_SHA2_FAST_OK;
        send_more_data(c, &ok, 1);
    }
    accept_login(c, u);
}

/* Sends one AuthMoreData packet: 0x01 then data. */
static void
send_more_data(struct ha_conn *c, const void *data, size_t len)
{
    struct ha_buf b = HA_BUF_INIT;

    ha_buf_append_u8(&b, 0x01);
    ha_buf_append(&b, data, len);
    ha_wire_send(c, &b);
    ha_buf_free(&b);
}

/* Verifies resp with c->auth_plugin against the account and either
 * accepts the login (accept_login) or sends ERR 1045 and closes.
 * caching_sha2_password answers a good proof with fast_auth_success
 * before the OK; a wrong one starts full authentication, as MySQL does
 * on a cache miss (the client then proves the password in clear over
 * TLS or the unix socket, or RSA-encrypted). */
static void
finish_auth(struct ha_conn *c, const uint8_t *resp, size_t resp_len)
{
    const struct ha_user *u = ha_accounts_find(c->env->accounts, c->user);
    bool with_password = resp_len > 0 && !(resp_len == 1 && resp[0] == 0);
    bool sha2 = strcmp(c->auth_plugin, HA_AUTH_SHA2_PLUGIN) == 0;

    if (sha2 && ha_auth_sha2_check(u, c->scramble, resp, resp_len)) {
        login_with(c, PROOF_SHA2, resp, resp_len, with_password,
                   with_password);
        return;
    }
    /* Unknown users too: the reply must not tell which users exist. */
    if (sha2 && resp_len == HA_SHA256_LEN) {
        uint8_t full = HA_AUTH_SHA2_FULL;
        send_more_data(c, &full, 1);
        ha_wire_set_state(c, HA_CONN_AUTH_FULL);
        return;
    }
    login_with(c, sha2 ? PROOF_NONE : PROOF_NATIVE, resp, resp_len,
               with_password, false);
}

/* caching_sha2_password full authentication: p is a public-key request
 * (0x02), the password + NUL in clear (TLS or unix socket), or the
 * password + NUL XOR the scramble, RSA-encrypted with our key. */
static void
on_full_auth(struct ha_conn *c, const uint8_t *p, size_t len)
{
    bool secure = c->tls || c->peer.family == HA_PEER_UNIX;
    uint8_t pw[512];
    size_t pw_len = 0;

    if (!secure && len == 1 && p[0] == HA_AUTH_SHA2_KEY_REQUEST) {
        if (c->env->rsa_public_pem == NULL) {
            ha_log_warn("connection %u (%s): public key requested, but "
                        "no RSA key is loaded",
                        c->id, c->peer.name);
            login_with(c, PROOF_NONE, NULL, 0, true, false);
            return;
        }
        send_more_data(c, c->env->rsa_public_pem, c->env->rsa_public_len);
        return;
    }
    if (secure)
        login_with(c, PROOF_CLEAR, p, len, true, false);
    else if (ha_auth_sha2_decrypt(c->env->rsa_key, c->scramble, p, len, pw,
                                  sizeof(pw), &pw_len) == 0)
        login_with(c, PROOF_CLEAR, pw, pw_len, true, false);
    else
        login_with(c, PROOF_NONE, NULL, 0, true, false);
    OPENSSL_cleanse(pw, sizeof(pw));
}

/* Opens the session (or, for COM_CHANGE_USER, resets it for the new
 * user) and sends OK. */
static void
accept_login(struct ha_conn *c, const struct ha_user *u)
{
    bool change = c->changing_user;
    char err[512];
    SSL *ssl;

    c->changing_user = false;
    if (!change && c->env->admit != NULL &&
        !c->env->admit(c->env->arg, u->role)) {
        /* The extra connection max_connections allows is an admin's. */
        ha_log_warn("login refused: user '%s' from %s (connection %u): "
                    "max_connections reached; the one connection kept "
                    "beyond it is for admin users",
                    u->name, c->peer.name, c->id);
        ha_wire_fail(c, 1040, "08004", "Too many connections");
        return;
    }
    if (c->db[0] != '\0' && !ha_schemas_exists(c->db)) {
        ha_log_warn("%s failed: user '%s' from %s (connection %u): "
                    "unknown database '%s'",
                    change ? "change of user" : "login", c->user, c->peer.name,
                    c->id, c->db);
        snprintf(err, sizeof(err), "Unknown database '%s'", c->db);
        ha_wire_fail(c, 1049, "42000", err);
        return;
    }
    if (change) {
        /* COM_CHANGE_USER starts a fresh session on the same connection:
         * statements dropped, transaction rolled back, variables reset. */
        ha_stmt_table_clear(&c->stmts);
        ha_session_reset(&c->session);
    } else {
        int rc;

        c->opening = true;
        rc = ha_session_open(&c->session, c->env->shared, c->id, err,
                             sizeof(err));
        c->opening = false;
        if (rc != 0) {
            ha_log_error("connection %u (%s): %s", c->id, c->peer.name, err);
            ha_wire_fail(c, 1105, "HY000", err);
            return;
        }
        c->session_open = true;
        c->session.client.ops = c->client_ops;
        {
            struct bufferevent *raw = c->tls
                                          ? bufferevent_get_underlying(c->bev)
                                          : c->bev;

            c->session.client_fd =
                raw != NULL ? (int)bufferevent_getfd(raw) : -1;
        }
    }
    ha_strlcpy(c->session.user, u->name, sizeof(c->session.user));
    ha_strlcpy(c->session.host, c->peer.host, sizeof(c->session.host));
    ha_session_set_role(&c->session, u->role);
    /* PROCESSLIST shows "address:port" for TCP clients and "localhost"
     * for the unix socket, as MySQL does. */
    ha_strlcpy(c->session.peer, (c->peer.family == HA_PEER_UNIX) ? "localhost" : c->peer.name,
               sizeof(c->session.peer));
    {
        char who[192];

        snprintf(who, sizeof(who), "%.100s@%.64s (connection %u)", u->name,
                 c->peer.name, c->id);
        ha_vtab_set_who(c->session.vtab, who);
    }
    c->session.schema[0] = '\0';
    if (c->db[0] != '\0')
        ha_session_use(&c->session, c->db);
    ha_session_set_multi_statements(
        &c->session, (c->caps & HA_CLIENT_MULTI_STATEMENTS) != 0);
    ssl = c->tls ? bufferevent_openssl_get_ssl(c->bev) : NULL;
    ha_strlcpy(c->session.ssl_version, ssl != NULL ? SSL_get_version(ssl) : "",
               sizeof(c->session.ssl_version));
    ha_strlcpy(c->session.ssl_cipher,
               ssl != NULL ? SSL_get_cipher_name(ssl) : "",
               sizeof(c->session.ssl_cipher));
    ha_log_info("%s: user '%s' from %s (connection %u, %s, %s%s%s%s%s)",
                change ? "change of user" : "login", u->name, c->peer.name, c->id,
                ha_credentials_role_name(u->role), c->auth_plugin,
                ssl != NULL ? ", " : "", ssl != NULL ? SSL_get_version(ssl) : "",
                ssl != NULL ? " " : "",
                ssl != NULL ? SSL_get_cipher_name(ssl) : "");
    ha_wire_ok(c, ha_session_status(&c->session), NULL);
    ha_wire_set_state(c, HA_CONN_COMMAND);
}

/* Finishes a HandshakeResponse41 or COM_CHANGE_USER whose fields are in
 * hr: a client that answered for another plugin (libmysqlclient <= 8.0.25
 * always names caching_sha2_password) or sent a proof of the wrong size
 * is asked to switch, once (MySQL protocol: Protocol::AuthSwitchRequest);
 * a fresh scramble is sent when fresh is true (COM_CHANGE_USER). */
static void
auth_or_switch(struct ha_conn *c, const struct ha_handshake_response *hr,
               bool fresh)
{
    const char *plugin = (hr->has_plugin && hr->plugin[0] != '\0')
                             ? hr->plugin
                             : HA_AUTH_NATIVE_PLUGIN;
    const struct ha_user *u = ha_accounts_find(c->env->accounts, c->user);
    const char *want = c->env->auth_plugin != NULL ? c->env->auth_plugin
                                                   : HA_AUTH_NATIVE_PLUGIN;
    bool sha2 = strcmp(plugin, HA_AUTH_SHA2_PLUGIN) == 0;
    bool advertised = strcmp(plugin, want) == 0;
    bool usable;

    /* The client's answer is used as it is when it is for a plugin the
     * account has a digest for and has that plugin's size (or is empty:
     * no password); otherwise the client is asked to switch, once, to
     * the server's default plugin if the account has it, else to the
     * other one. An empty answer for
     * a plugin the server did not name means "switch me" (libmariadb),
     * not "no password". */
    if (sha2)
        usable = (u == NULL || u->has_sha2) &&
                 (hr->auth_len == HA_SHA256_LEN ||
                  (hr->auth_len <= 1 && advertised));
    else
        usable = strcmp(plugin, HA_AUTH_NATIVE_PLUGIN) == 0 &&
                 (u == NULL || u->has_native) &&
                 (hr->auth_len == HA_SHA1_LEN ||
                  (hr->auth_len <= 1 && advertised));
    /* An unsolicited answer (libmysqlclient <= 8.0.25 always answers for
     * caching_sha2_password) is taken only if it proves the password;
     * otherwise the client gets the switch to the server's plugin, so a
     * junk answer costs no full authentication. An unknown user is
     * switched too, like a known one with a wrong answer. */
    if (usable && !advertised && (c->caps & HA_CLIENT_PLUGIN_AUTH))
        usable = sha2 ? ha_auth_sha2_check(u, c->scramble, hr->auth,
                                           hr->auth_len)
                      : ha_auth_native_check(u, c->scramble, hr->auth,
                                             hr->auth_len);
    if (strcmp(want, HA_AUTH_SHA2_PLUGIN) == 0 && u != NULL && !u->has_sha2)
        want = HA_AUTH_NATIVE_PLUGIN;
    else if (strcmp(want, HA_AUTH_NATIVE_PLUGIN) == 0 && u != NULL &&
             !u->has_native)
        want = HA_AUTH_SHA2_PLUGIN;
    if (usable || !(c->caps & HA_CLIENT_PLUGIN_AUTH)) {
        c->auth_plugin = usable && sha2 ? HA_AUTH_SHA2_PLUGIN
                                        : HA_AUTH_NATIVE_PLUGIN;
        finish_auth(c, hr->auth, hr->auth_len);
        return;
    }
    {
        struct ha_buf b = HA_BUF_INIT;
        if (fresh &&
            ha_auth_scramble(c->scramble, sizeof(c->scramble)) != 0) {
            ha_log_error("connection %u (%s): the CSPRNG failed", c->id,
                         c->peer.name);
            ha_wire_fail(c, 1105, "HY000", "Cannot generate a scramble");
            return;
        }
        c->auth_plugin = want;
        ha_proto_encode_auth_switch(&b, want, c->scramble);
        ha_wire_send(c, &b);
        ha_buf_free(&b);
        ha_wire_set_state(c, HA_CONN_AUTH_SWITCH);
    }
}

/* HandshakeResponse41 (or an SSLRequest). Returns 1 when the caller
 * must start TLS, else 0. */
static int
on_handshake_response(struct ha_conn *c, const uint8_t *p, size_t len)
{
    struct ha_handshake_response hr;
    char err[256];

    if (ha_proto_decode_handshake_response(p, len, &hr, err, sizeof(err)) !=
        0) {
        ha_log_warn("connection %u (%s): bad HandshakeResponse41: %s", c->id,
                    c->peer.name, err);
        ha_wire_fail(c, 1043, "08S01", "Bad handshake");
        return 0;
    }
    c->caps = hr.capabilities & c->server_caps;
    if (hr.is_ssl_request && !c->tls && (c->server_caps & HA_CLIENT_SSL)) {
        return 1;
    }
    if (hr.is_ssl_request) {
        ha_log_warn("connection %u (%s): client asked for TLS, which this "
                    "server did not offer",
                    c->id, c->peer.name);
        ha_wire_fail(c, 1043, "08S01",
                     "TLS was requested but this server does not offer it "
                     "(connect without TLS, e.g. mariadb --skip-ssl)");
        return 0;
    }
    if (c->env->require_tls && !c->tls && !(c->peer.family == HA_PEER_UNIX)) {
        ha_log_warn("connection %u (%s): login of user '%.128s' without "
                    "TLS refused (require_tls)",
                    c->id, c->peer.name, hr.user);
        ha_wire_fail(c, 3159, "HY000",
                     "Connections using insecure transport are "
                     "prohibited while require_tls is true.");
        return 0;
    }
    ha_strlcpy(c->user, hr.user, sizeof(c->user));
    if ((c->caps & HA_CLIENT_CONNECT_WITH_DB) && hr.has_db)
        ha_strlcpy(c->db, hr.db, sizeof(c->db));
    auth_or_switch(c, &hr, false);
    return 0;
}

/* ------------------------------------------------------------------ */
/* Entry points                                                         */
/* ------------------------------------------------------------------ */

int
ha_handshake_packet(struct ha_conn *c, const uint8_t *p, size_t len)
{
    switch (c->state) {
    case HA_CONN_HANDSHAKE:
        return on_handshake_response(c, p, len);
    case HA_CONN_AUTH_SWITCH:
        finish_auth(c, p, len);
        break;
    case HA_CONN_AUTH_FULL:
        on_full_auth(c, p, len);
        break;
    default:
        break;
    }
    return 0;
}

void
ha_handshake_change_user(struct ha_conn *c, const uint8_t *p, size_t len)
{
    struct ha_handshake_response hr;
    char err[256];

    if (ha_proto_decode_change_user(p, len, c->caps, &hr, err,
                                    sizeof(err)) != 0) {
        ha_log_warn("connection %u (%s): bad COM_CHANGE_USER: %s", c->id,
                    c->peer.name, err);
        ha_wire_fail(c, 1043, "08S01", "Bad handshake");
        return;
    }
    /* A new credential: the throttle has its word again. */
    c->login_admitted = false;
    if (ha_handshake_refused(c))
        return;
    ha_strlcpy(c->user, hr.user, sizeof(c->user));
    ha_strlcpy(c->db, hr.has_db ? hr.db : "", sizeof(c->db));
    c->changing_user = true;
    auth_or_switch(c, &hr, true);
}

bool
ha_handshake_refused(struct ha_conn *c)
{
    int64_t wait;
    char err[256];

    if (c->login_admitted || c->env->accounts == NULL)
        return false;
    c->login_admitted = true;
    wait = ha_login_admit(c->env->accounts, &c->peer);
    if (wait <= 0)
        return false;
    /* Answered at once, never held: a guesser's connections cost
     * nothing while they wait (MySQL's ER_HOST_IS_BLOCKED). */
    snprintf(err, sizeof(err),
             "Host '%s' is blocked because of failed logins; try again in "
             "%lld s",
             c->peer.host, (long long)ha_login_retry_s(wait));
    ha_wire_fail(c, 1129, "HY000", err);
    return true;
}
