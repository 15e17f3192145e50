/* SPDX-License-Identifier: MIT */
#ifndef HA_SERVER_H
#define HA_SERVER_H
#endif
