/* SPDX-License-Identifier: MIT */
#ifndef HA_DAEMON_H
#define HA_DAEMON_H
#endif
