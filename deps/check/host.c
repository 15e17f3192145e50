/* SPDX-License-Identifier: MIT */
/*
 * deps/check-private.sh's host: an executable, linked with -rdynamic, that
 * exports its own event_base_new, sqlite3_libversion and config_init (as
 * redis-server exports its own crc64 or nghttpx's libev exports libevent
 * names), then dlopens the private shared object and calls its probe. The
 * fakes count their calls: the object must use its own copies, and must
 * not take over the host's names either.
 *
 * usage: host OBJECT; prints key=value lines, exits 0 when the probe ran.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int host_fake_calls;

/* Same names as the libraries', deliberately different behaviour. */
void *event_base_new(void);
const char *sqlite3_libversion(void);
void config_init(void *cfg);

void *
event_base_new(void)
{
    host_fake_calls++;
    return NULL;
}

const char *
sqlite3_libversion(void)
{
    host_fake_calls++;
    return "0.0.0-host";
}

void
config_init(void *cfg)
{
    (void)cfg;
    host_fake_calls++;
    abort();
}

int
main(int argc, char **argv)
{
    int (*probe)(char *, size_t);
    const char *(*libversion)(void);
    char buf[512] = "";
    void *h;
    int rc;

    if (argc != 2) {
        fprintf(stderr, "usage: %s OBJECT\n", argv[0]);
        return 2;
    }
    h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 1;
    }
    *(void **)&probe = dlsym(h, "ha_private_probe");
    if (probe == NULL) {
        fprintf(stderr, "dlsym: %s\n", dlerror());
        return 1;
    }
    rc = probe(buf, sizeof buf);
    printf("probe=%d\n%s", rc, buf);
    printf("fake_calls_during_probe=%d\n", host_fake_calls);
    /* The process-wide name still means the host's function, and the
     * object offers no sqlite3_libversion of its own. */
    *(void **)&libversion = dlsym(RTLD_DEFAULT, "sqlite3_libversion");
    printf("host_sqlite3_libversion=%s\n",
           libversion ? libversion() : "(none)");
    printf("object_has_sqlite3_libversion=%s\n",
           dlsym(h, "sqlite3_libversion") ? "yes" : "no");
    dlclose(h);
    return rc == 0 ? 0 : 1;
}
