/* SPDX-License-Identifier: MIT */
#include "check_main.h"
static Suite *mallctl_suite(void) { Suite *s = suite_create("mallctl"); return s; }
HA_CHECK_MAIN(mallctl_suite)
