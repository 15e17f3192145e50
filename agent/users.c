/* SPDX-License-Identifier: MIT
 *
 * User names learnt in the constructor (see users.h).
 */
#include "agent/users.h"

#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include "include/heapadmin.h"

#define KNOWN_USERS_MAX 16
static struct {
    uid_t uid;
    char name[64];
} known_users[KNOWN_USERS_MAX];
static int n_known_users;

static void
learn_user(uid_t uid, const char *name)
{
    for (int i = 0; i < n_known_users; i++)
        if (known_users[i].uid == uid)
            return;
    if (n_known_users == KNOWN_USERS_MAX ||
        strlen(name) >= sizeof(known_users[0].name))
        return;
    known_users[n_known_users].uid = uid;
    memcpy(known_users[n_known_users].name, name, strlen(name) + 1);
    n_known_users++;
}

void
ha_agent_users_learn(const char *users)
{
    char list[1024], *save = NULL, *u;
    struct passwd pw, *found = NULL;
    char buf[1024];
    uid_t ids[2] = {getuid(), geteuid()};

    for (int i = 0; i < 2; i++)
        if (getpwuid_r(ids[i], &pw, buf, sizeof(buf), &found) == 0 &&
            found != NULL)
            learn_user(pw.pw_uid, pw.pw_name);
    snprintf(list, sizeof(list), "%s", users);
    for (u = strtok_r(list, ", ", &save); u != NULL;
         u = strtok_r(NULL, ", ", &save))
        if (getpwnam_r(u, &pw, buf, sizeof(buf), &found) == 0 &&
            found != NULL)
            learn_user(pw.pw_uid, pw.pw_name);
}

bool
ha_agent_user_name(long uid, char *out, size_t len)
{
    for (int i = 0; i < n_known_users; i++)
        if ((long)known_users[i].uid == uid) {
            snprintf(out, len, "%s", known_users[i].name);
            return true;
        }
    /* Another user (a worker's, without HEAPADMIN_USERS): from
     * /etc/passwd itself, never the name service. */
    return heapadmin_user_name(uid, out, len) == 0;
}
