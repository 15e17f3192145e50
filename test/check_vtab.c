/* SPDX-License-Identifier: MIT */
#include "check_main.h"
static Suite *vtab_suite(void) { Suite *s = suite_create("vtab"); return s; }
HA_CHECK_MAIN(vtab_suite)
