/* SPDX-License-Identifier: MIT */
#include "check_main.h"
static Suite *auth_suite(void) { Suite *s = suite_create("auth"); return s; }
HA_CHECK_MAIN(auth_suite)
