/* SPDX-License-Identifier: MIT */
#ifndef HA_VALUE_H
#define HA_VALUE_H
#endif
