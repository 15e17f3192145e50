/* SPDX-License-Identifier: MIT
 *
 * Key material for the admin port: the TLS context (CLIENT_SSL, MySQL
 * protocol: Protocol::SSLRequest) and the RSA key pair
 * caching_sha2_password uses for full authentication over plain TCP.
 *
 * Certificate and key come from admin_variables.ssl_cert/ssl_key (paths
 * relative to the datadir), or are generated in the datadir on first
 * start (heapadmin-cert.pem, heapadmin-key.pem: a self-signed EC P-256
 * certificate) and reused afterwards; likewise heapadmin-rsa-private.pem
 * and heapadmin-rsa-public.pem (RSA-2048). Private keys are written with
 * mode 0600, through a temporary file renamed into place.
 */
#ifndef HA_TLS_H
#define HA_TLS_H

#include <stdbool.h>
#include <stddef.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "engine/config.h"

#define HA_TLS_CERT_FILE "heapadmin-cert.pem"
#define HA_TLS_KEY_FILE "heapadmin-key.pem"
#define HA_TLS_RSA_PRIVATE_FILE "heapadmin-rsa-private.pem"
#define HA_TLS_RSA_PUBLIC_FILE "heapadmin-rsa-public.pem"

struct ha_tls {
    SSL_CTX *ctx;                 /* NULL: TLS not offered */
    char fingerprint[96];         /* SHA-256 of the certificate, "AB:CD.." */

    EVP_PKEY *rsa;                /* caching_sha2 key pair */
    char *rsa_public_pem;         /* the public half, PEM text */
    size_t rsa_public_len;
};

/* Loads or creates the key material for cfg in datadir (absolute path):
 * the TLS context only if cfg->have_ssl, the RSA pair always. Returns 0,
 * or -1 with err naming the file and the reason; t is then empty. */
int ha_tls_init(struct ha_tls *t, const struct ha_config *cfg,
                const char *datadir, char *err, size_t errlen);

void ha_tls_free(struct ha_tls *t);

/* Whether the private key at path may be used: not accessible by others
 * (a group may read it) and owned by this process's user or root.
 * Returns 0, or -1 with err naming the file, its mode or owner, and the
 * fix. */
int ha_tls_key_private(const char *path, char *err, size_t errlen);

#endif /* HA_TLS_H */
