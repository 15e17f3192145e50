/* SPDX-License-Identifier: MIT */
#ifndef HA_CONN_H
#define HA_CONN_H
#endif
