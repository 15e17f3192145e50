/* SPDX-License-Identifier: MIT */
#ifndef HA_SESSION_H
#define HA_SESSION_H
#endif
