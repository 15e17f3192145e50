/* SPDX-License-Identifier: MIT
 *
 * TLS context and caching_sha2_password RSA keys (see tls.h). Generated
 * material is created once and reused, so a client that pinned the
 * certificate's fingerprint keeps trusting the daemon across restarts.
 */
#include "engine/tls.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "core/log.h"
#include "core/util.h"

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */

/* The last OpenSSL error of this thread as text in buf (len bytes), for
 * messages; returns buf (or a constant when there is none). The caller's
 * buffer, not a static one: two servers may start TLS on two threads. */
static const char *
ssl_reason(char *buf, size_t len)
{
    unsigned long e = ERR_peek_last_error();

    if (e == 0)
        return "unknown OpenSSL error";
    ERR_error_string_n(e, buf, len);
    ERR_clear_error();
    return buf;
}

/* ssl_reason into a buffer that lives to the end of the enclosing block,
 * i.e. through the ha_err_set call whose argument it is. */
#define SSL_REASON() ssl_reason((char[256]){0}, 256)

/* name relative to datadir (absolute names are kept). */
static void
in_datadir(char *out, size_t outlen, const char *datadir, const char *name)
{
    if (name[0] == '/')
        snprintf(out, outlen, "%s", name);
    else
        snprintf(out, outlen, "%s/%s", datadir, name);
}

static bool
exists(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0;
}

/* Writes a PEM object through path.tmp (mode) renamed to path. */
static int
write_pem(const char *path, mode_t mode, EVP_PKEY *key, X509 *cert,
          bool public_only, char *err, size_t errlen)
{
    char tmp[PATH_MAX + 32];
    FILE *f = NULL;
    int fd, ok;

    /* The pid keeps two processes that share a datadir (an agent in a
     * host's master and worker) off each other's temporary file. */
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
    unlink(tmp);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
    if (fd < 0 || (f = fdopen(fd, "w")) == NULL) {
        ha_err_set(err, errlen, "%s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (cert != NULL)
        ok = PEM_write_X509(f, cert);
    else if (public_only)
        ok = PEM_write_PUBKEY(f, key);
    else
        ok = PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
    errno = 0;
    if (fflush(f) != 0 || fsync(fileno(f)) != 0)
        ok = 0;
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        ha_err_set(err, errlen, "%s: cannot write: %s", path,
                   errno != 0 ? strerror(errno) : SSL_REASON());
        unlink(tmp);
        return -1;
    }
    return 0;
}

int
ha_tls_key_private(const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    /* A FIFO would hold the open for ever. */
    if (!S_ISREG(st.st_mode)) {
        ha_err_set(err, errlen, "%s: not a regular file", path);
        return -1;
    }
    /* As sshd's StrictModes treats keys: one any local user can read is
     * no longer private, and one another user owns can be swapped. A
     * group may read it (Debian's 0640 root:ssl-cert). */
    if ((st.st_mode & 007) != 0) {
        ha_err_set(err, errlen,
                   "%s: private key is accessible by others (mode %04o): "
                   "refusing it; run chmod o-rwx %s",
                   path, (unsigned)(st.st_mode & 07777), path);
        return -1;
    }
    if (st.st_uid != geteuid() && st.st_uid != 0) {
        ha_err_set(err, errlen,
                   "%s: private key is owned by uid %u, not by this "
                   "process's user (uid %u) or root: refusing it",
                   path, (unsigned)st.st_uid, (unsigned)geteuid());
        return -1;
    }
    return 0;
}

static EVP_PKEY *
read_private_key(const char *path, char *err, size_t errlen)
{
    FILE *f;
    EVP_PKEY *key;

    if (ha_tls_key_private(path, err, errlen) != 0)
        return NULL;
    if ((f = fopen(path, "r")) == NULL) {
        ha_err_set(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    key = PEM_read_PrivateKey(f, NULL, NULL, NULL);
    fclose(f);
    if (key == NULL)
        ha_err_set(err, errlen, "%s: not a PEM private key: %s", path,
                   SSL_REASON());
    return key;
}

/* ------------------------------------------------------------------ */
/* Generation                                                           */
/* ------------------------------------------------------------------ */

static EVP_PKEY *
generate_key(int type)
{
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_id(type, NULL);
    EVP_PKEY *key = NULL;

    if (ctx == NULL || EVP_PKEY_keygen_init(ctx) <= 0)
        goto done;
    if (type == EVP_PKEY_RSA &&
        EVP_PKEY_CTX_set_rsa_keygen_bits(ctx, 2048) <= 0)
        goto done;
    if (type == EVP_PKEY_EC &&
        EVP_PKEY_CTX_set_ec_paramgen_curve_nid(ctx, NID_X9_62_prime256v1) <=
            0)
        goto done;
    if (EVP_PKEY_keygen(ctx, &key) <= 0)
        key = NULL;
done:
    EVP_PKEY_CTX_free(ctx);
    return key;
}

/* A self-signed certificate for key, valid for ten years. */
static X509 *
self_signed(EVP_PKEY *key)
{
    X509 *x = X509_new();
    X509_NAME *name;
    unsigned char serial[16];
    BIGNUM *bn = NULL;

    if (x == NULL || RAND_bytes(serial, sizeof(serial)) != 1)
        goto fail;
    serial[0] &= 0x7F; /* a positive serial number */
    if ((bn = BN_bin2bn(serial, sizeof(serial), NULL)) == NULL ||
        BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) == NULL ||
        X509_set_version(x, 2) != 1 ||
        X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
        X509_gmtime_adj(X509_getm_notAfter(x), 3650L * 24 * 3600) == NULL ||
        X509_set_pubkey(x, key) != 1)
        goto fail;
    name = X509_get_subject_name(x);
    if (X509_NAME_add_entry_by_txt(
            name, "CN", MBSTRING_ASC,
            (const unsigned char *)"heapadmin auto-generated certificate",
            -1, -1, 0) != 1 ||
        X509_set_issuer_name(x, name) != 1 ||
        X509_sign(x, key, EVP_sha256()) == 0)
        goto fail;
    BN_free(bn);
    return x;
fail:
    BN_free(bn);
    X509_free(x);
    return NULL;
}

/* Creates cert_path and key_path. */
static int
generate_cert(const char *cert_path, const char *key_path, char *err,
              size_t errlen)
{
    EVP_PKEY *key = generate_key(EVP_PKEY_EC);
    X509 *x = key != NULL ? self_signed(key) : NULL;
    int ret = -1;

    if (x == NULL) {
        ha_err_set(err, errlen, "cannot generate a certificate: %s",
                   SSL_REASON());
        goto done;
    }
    if (write_pem(key_path, 0600, key, NULL, false, err, errlen) != 0)
        goto done;
    if (write_pem(cert_path, 0644, NULL, x, false, err, errlen) != 0) {
        unlink(key_path);
        goto done;
    }
    ha_log_info("generated a self-signed TLS certificate: %s, key %s",
                cert_path, key_path);
    ret = 0;
done:
    X509_free(x);
    EVP_PKEY_free(key);
    return ret;
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */
/* ------------------------------------------------------------------ */

static int
init_ctx(struct ha_tls *t, const struct ha_config *cfg, const char *datadir,
         char *err, size_t errlen)
{
    char cert[PATH_MAX], key[PATH_MAX];
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int md_len = 0;
    X509 *x;

    if ((cfg->ssl_cert[0] == '\0') != (cfg->ssl_key[0] == '\0')) {
        ha_err_set(err, errlen,
                   "admin_variables.ssl_cert and ssl_key go together: set "
                   "both, or neither to use a generated certificate");
        return -1;
    }
    in_datadir(cert, sizeof(cert), datadir,
               cfg->ssl_cert[0] != '\0' ? cfg->ssl_cert : HA_TLS_CERT_FILE);
    in_datadir(key, sizeof(key), datadir,
               cfg->ssl_key[0] != '\0' ? cfg->ssl_key : HA_TLS_KEY_FILE);
    if (cfg->ssl_cert[0] == '\0' && !exists(cert) && !exists(key) &&
        generate_cert(cert, key, err, errlen) != 0)
        return -1;

    t->ctx = SSL_CTX_new(TLS_server_method());
    if (t->ctx == NULL ||
        SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION) != 1) {
        ha_err_set(err, errlen, "cannot create a TLS context: %s",
                   SSL_REASON());
        return -1;
    }
    SSL_CTX_set_options(t->ctx, SSL_OP_NO_RENEGOTIATION |
                                    SSL_OP_CIPHER_SERVER_PREFERENCE);
    /* Idle sessions should not hold 2 x 16 KiB of TLS buffers each. */
    SSL_CTX_set_mode(t->ctx, SSL_MODE_RELEASE_BUFFERS);
    {
        struct stat cst;

        /* OpenSSL's fopen would wait for ever on a FIFO. */
        if (stat(cert, &cst) == 0 && !S_ISREG(cst.st_mode)) {
            ha_err_set(err, errlen,
                       "%s: cannot load the certificate: not a regular "
                       "file",
                       cert);
            return -1;
        }
    }
    if (SSL_CTX_use_certificate_chain_file(t->ctx, cert) != 1) {
        ha_err_set(err, errlen, "%s: cannot load the certificate: %s", cert,
                   SSL_REASON());
        return -1;
    }
    if (ha_tls_key_private(key, err, errlen) != 0)
        return -1;
    if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(t->ctx) != 1) {
        ha_err_set(err, errlen, "%s: cannot load the key for %s: %s", key,
                   cert, SSL_REASON());
        return -1;
    }
    x = SSL_CTX_get0_certificate(t->ctx);
    if (x != NULL && X509_digest(x, EVP_sha256(), md, &md_len) == 1) {
        for (unsigned i = 0; i < md_len && 3 * i + 3 <= sizeof(t->fingerprint);
             i++)
            snprintf(t->fingerprint + 3 * i, 4, i + 1 < md_len ? "%02X:" :
                     "%02X", md[i]);
    }
    ha_log_info("TLS: certificate %s, SHA-256 fingerprint %s", cert,
                t->fingerprint);
    return 0;
}

static int
init_rsa(struct ha_tls *t, const char *datadir, char *err, size_t errlen)
{
    char priv[PATH_MAX], pub[PATH_MAX];
    BIO *mem = NULL;
    char *data;
    long n;

    in_datadir(priv, sizeof(priv), datadir, HA_TLS_RSA_PRIVATE_FILE);
    in_datadir(pub, sizeof(pub), datadir, HA_TLS_RSA_PUBLIC_FILE);
    if (exists(priv)) {
        if ((t->rsa = read_private_key(priv, err, errlen)) == NULL)
            return -1;
        if (EVP_PKEY_base_id(t->rsa) != EVP_PKEY_RSA) {
            ha_err_set(err, errlen, "%s: not an RSA key", priv);
            return -1;
        }
    } else {
        if ((t->rsa = generate_key(EVP_PKEY_RSA)) == NULL) {
            ha_err_set(err, errlen, "cannot generate an RSA key: %s",
                       SSL_REASON());
            return -1;
        }
        if (write_pem(priv, 0600, t->rsa, NULL, false, err, errlen) != 0)
            return -1;
        ha_log_info("generated the caching_sha2_password RSA key pair %s",
                    priv);
    }
    /* The public half is derived from the private key each start, so the
     * file on disk can never disagree with what clients are sent. */
    if (write_pem(pub, 0644, t->rsa, NULL, true, err, errlen) != 0)
        return -1;
    if ((mem = BIO_new(BIO_s_mem())) == NULL ||
        PEM_write_bio_PUBKEY(mem, t->rsa) != 1 ||
        (n = BIO_get_mem_data(mem, &data)) <= 0 ||
        (t->rsa_public_pem = malloc((size_t)n + 1)) == NULL) {
        ha_err_set(err, errlen, "cannot encode the RSA public key: %s",
                   SSL_REASON());
        BIO_free(mem);
        return -1;
    }
    memcpy(t->rsa_public_pem, data, (size_t)n);
    t->rsa_public_pem[n] = '\0';
    t->rsa_public_len = (size_t)n;
    BIO_free(mem);
    return 0;
}

int
ha_tls_init(struct ha_tls *t, const struct ha_config *cfg,
            const char *datadir, char *err, size_t errlen)
{
    char lock[PATH_MAX];
    int lfd, ret = 0;

    memset(t, 0, sizeof(*t));
    if (cfg->require_tls && !cfg->have_ssl) {
        ha_err_set(err, errlen,
                   "admin_variables.require_tls needs have_ssl: without TLS "
                   "no one could log in over TCP");
        return -1;
    }
    /* Processes that share a datadir (a host's master and workers, each
     * with an agent) must not generate the key material at once: one
     * would read another's half-written pair. The lock is held for the
     * generation only (about 0.1 s, once per datadir). */
    in_datadir(lock, sizeof(lock), datadir, ".heapadmin-keys.lock");
    /* The holder removes the file before it lets go, so none is left
     * behind; a process that locked a file removed meanwhile (its
     * inode no longer at the name) tries again on the new one. */
    for (int tries = 0; tries < 100; tries++) {
        struct stat a, b;

        lfd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (lfd < 0)
            break;
        while (flock(lfd, LOCK_EX) != 0 && errno == EINTR) {
        }
        if (fstat(lfd, &a) == 0 && stat(lock, &b) == 0 &&
            a.st_dev == b.st_dev && a.st_ino == b.st_ino)
            break;
        close(lfd);
        lfd = -1;
    }
    if ((cfg->have_ssl && init_ctx(t, cfg, datadir, err, errlen) != 0) ||
        init_rsa(t, datadir, err, errlen) != 0) {
        ha_tls_free(t);
        ret = -1;
    }
    if (lfd >= 0) {
        unlink(lock);
        close(lfd);
    }
    return ret;
}

void
ha_tls_free(struct ha_tls *t)
{
    if (t == NULL)
        return;
    SSL_CTX_free(t->ctx);
    EVP_PKEY_free(t->rsa);
    free(t->rsa_public_pem);
    memset(t, 0, sizeof(*t));
}
