/* SPDX-License-Identifier: MIT
 *
 * Session and user variables (see vars.h).
 */
#include "admin/vars.h"

#include <stdlib.h>
#include <string.h>

#include "core/util.h"

struct ha_session_var *
ha_vars_find(struct ha_session_var *vars, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (ha_str_ieq(vars[i].name, name))
            return &vars[i];
    return NULL;
}

int
ha_vars_set(struct ha_session_var **vars, size_t *n, const char *name,
            const struct ha_session_var *v)
{
    struct ha_session_var *slot = ha_vars_find(*vars, *n, name);
    char *sval = NULL;

    if (v->type == HA_SYSVAR_TEXT &&
        (sval = strdup(v->sval != NULL ? v->sval : "")) == NULL)
        return -1;
    if (slot == NULL) {
        struct ha_session_var *p = realloc(*vars, (*n + 1) * sizeof(*p));
        if (p == NULL) {
            free(sval);
            return -1;
        }
        *vars = p;
        slot = &p[(*n)++];
        memset(slot, 0, sizeof(*slot));
        ha_strlcpy(slot->name, name, sizeof(slot->name));
    }
    free(slot->sval);
    slot->type = v->type;
    slot->ival = v->ival;
    slot->sval = sval;
    return 0;
}

void
ha_vars_unset(struct ha_session_var *vars, size_t *n, const char *name)
{
    struct ha_session_var *slot = ha_vars_find(vars, *n, name);

    if (slot == NULL)
        return;
    free(slot->sval);
    *slot = vars[--*n];
}

void
ha_vars_free(struct ha_session_var *vars, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(vars[i].sval);
    free(vars);
}

void
ha_vars_clear(struct ha_session_var **vars, size_t *n)
{
    ha_vars_free(*vars, *n);
    *vars = NULL;
    *n = 0;
}
