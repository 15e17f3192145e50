/* SPDX-License-Identifier: MIT
 *
 * The wire bodies of a push (engine/push.h): what Grafana Pyroscope's
 * and Parca's receivers take, built around a gzipped profile.proto (the
 * bytes /debug/pprof/allocs?dump= serves). Pure: bytes in, bytes out;
 * unit-tested in test/check_push.c. Sources of the formats:
 *
 *   Pyroscope, HTTP ingest API ("Pyroscope server HTTP API", POST
 *   /ingest): query parameters name=<app>{k=v,...} (the application
 *   name is its service_name), from and until (Unix seconds),
 *   format=pprof; the body multipart/form-data whose field "profile"
 *   holds the pprof bytes.
 *
 *   Parca, ProfileStoreService.WriteRaw over its HTTP binding (POST
 *   /profiles/writeraw, the grpc-gateway's JSON for
 *   parca.profilestore.v1alpha1.WriteRawRequest):
 *     {"series":[{"labels":{"labels":[{"name":..,"value":..},..]},
 *                 "samples":[{"rawProfile":"<base64>"}]}],
 *      "normalized":false}
 *
 * Labels: the label contract (engine/labels.h) and kind, reason. A label
 * value in Pyroscope's name cannot hold its own delimiters ('{', '}',
 * ',', '='): those, spaces and control bytes become '_'
 * (ha_pushwire_label_value).
 */
#ifndef HA_PUSHWIRE_H
#define HA_PUSHWIRE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"

/* A label: name, value. */
struct ha_pushwire_label {
    const char *name;
    const char *value;
};

/* value cleaned for a label (at most outlen - 1 bytes, cut at a UTF-8
 * character's start): control bytes, spaces and "{},=" as '_'. */
void ha_pushwire_label_value(const char *value, char *out, size_t outlen);

/* The Pyroscope ingest URL: base + "/ingest?name=<app>{labels}&from=
 * &until=&format=pprof&spyName=heapadmin", every parameter
 * percent-encoded. app is the service_name. */
void ha_pushwire_pyroscope_url(const char *base, const char *app,
                               const struct ha_pushwire_label *labels,
                               size_t n, int64_t from, int64_t until,
                               struct ha_buf *out);

/* A multipart/form-data body with one file field "profile"
 * (filename "profile.pprof", application/octet-stream) holding
 * body[0 .. len), delimited by boundary (which must not occur in body:
 * ha_pushwire_boundary picks one). */
void ha_pushwire_multipart(const char *boundary, const void *body,
                           size_t len, struct ha_buf *out);

/* A boundary for body: "heapadmin-" and 32 hex digits of seed, made
 * longer while it occurs in the body. Into out (outlen >= 80). */
void ha_pushwire_boundary(const void *body, size_t len, uint64_t seed,
                          char *out, size_t outlen);

/* Parca's WriteRawRequest JSON for one profile with labels. */
void ha_pushwire_parca_json(const struct ha_pushwire_label *labels, size_t n,
                            const void *body, size_t len,
                            struct ha_buf *out);

/* RFC 4648 base64 of in[0 .. len) appended to out. */
void ha_pushwire_base64(const void *in, size_t len, struct ha_buf *out);

/* A JSON string's contents for s (quotes and backslashes escaped,
 * control bytes as \u00XX) appended to out. */
void ha_pushwire_json_str(const char *s, struct ha_buf *out);

#endif /* HA_PUSHWIRE_H */
