/* SPDX-License-Identifier: MIT */
#include "check_main.h"
static Suite *config_suite(void) { Suite *s = suite_create("config"); return s; }
HA_CHECK_MAIN(config_suite)
