/* SPDX-License-Identifier: MIT
 *
 * Shared main() for the Check test binaries: each file defines
 * `Suite *<module>_suite(void)` and then `HA_CHECK_MAIN(<module>_suite)`.
 * CK_FORK=no runs in-process (for gdb); CK_RUN_SUITE / CK_RUN_CASE select
 * a subset (Check's own environment variables).
 */
#ifndef HA_CHECK_MAIN_H
#define HA_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

#define HA_CHECK_MAIN(suite_fn)                                 \
    int main(void)                                              \
    {                                                           \
        SRunner *sr = srunner_create(suite_fn());               \
        srunner_run_all(sr, CK_NORMAL);                         \
        int failed = srunner_ntests_failed(sr);                 \
        srunner_free(sr);                                       \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;       \
    }

#endif /* HA_CHECK_MAIN_H */
