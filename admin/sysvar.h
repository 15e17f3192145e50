/* SPDX-License-Identifier: MIT */
#ifndef HA_SYSVAR_H
#define HA_SYSVAR_H
#endif
