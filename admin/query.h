/* SPDX-License-Identifier: MIT */
#ifndef HA_QUERY_H
#define HA_QUERY_H
#endif
