/* SPDX-License-Identifier: MIT */
#include "check_main.h"
static Suite *dialect_suite(void) { Suite *s = suite_create("dialect"); return s; }
HA_CHECK_MAIN(dialect_suite)
