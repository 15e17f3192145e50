/* SPDX-License-Identifier: MIT */
#include "check_main.h"
static Suite *proto_suite(void) { Suite *s = suite_create("proto"); return s; }
HA_CHECK_MAIN(proto_suite)
