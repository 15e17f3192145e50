/* SPDX-License-Identifier: MIT
 *
 * jeprof's symbolized-profile writer (see symfile.h).
 */
#include "prof/symfile.h"

#include <inttypes.h>
#include <string.h>

/* A name, made safe for one "--"-joined line. */
static void
put_name(struct ha_buf *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n' || *s == '\r')
            ha_buf_append_u8(out, ' ');
        else if (s[0] == '-' && s[1] == '-') {
            ha_buf_append_str(out, "-~");
            s++;
        } else
            ha_buf_append_u8(out, (uint8_t)*s);
    }
}

int
ha_symfile_symbols(const struct ha_syms *syms, struct ha_buf *out)
{
    for (size_t i = 0; i < syms->n_addrs; i++) {
        const struct ha_syms_addr *a = &syms->addrs[i];
        bool named = false;

        if (a->flags & HA_SYMS_NO_MODULE)
            continue;
        for (uint32_t q = 0; q < a->n; q++)
            if (*ha_syms_str(syms, syms->frames[a->first + q].func))
                named = true;
        if ((!named || (a->flags & HA_SYMS_UNNAMED)) &&
            (a->flags & HA_SYMS_ALLOCATOR)) {
            /* Inside the allocator with no symbol (Debian's libjemalloc
             * is stripped): jeprof must still cut it (see symfile.h). */
            ha_buf_printf(out, "0x%" PRIx64 " malloc\n", a->pc);
            continue;
        }
        if (!named)
            continue;
        ha_buf_printf(out, "0x%" PRIx64, a->pc);
        /* Outermost first: frames are stored innermost first. */
        for (uint32_t q = a->n; q-- > 0;) {
            const char *name =
                ha_syms_str(syms, syms->frames[a->first + q].func);

            ha_buf_append_str(out, q + 1 == a->n ? " " : "--");
            if (*name != '\0')
                put_name(out, name);
            else
                ha_buf_printf(out, "0x%016" PRIx64, a->pc);
        }
        ha_buf_append_u8(out, '\n');
    }
    return ha_buf_failed(out) ? -1 : 0;
}

int
ha_symfile_write(const struct ha_syms *syms, const char *text, size_t len,
                 const char *binary, struct ha_buf *out)
{
    ha_buf_append_str(out, "--- symbol\n");
    if (binary != NULL && strchr(binary, '\n') == NULL)
        ha_buf_printf(out, "binary=%s\n", binary);
    ha_symfile_symbols(syms, out);
    ha_buf_append_str(out, "---\n--- heap\n");
    ha_buf_append(out, text, len);
    if (len > 0 && text[len - 1] != '\n')
        ha_buf_append_u8(out, '\n');
    return ha_buf_failed(out) ? -1 : 0;
}
