/* SPDX-License-Identifier: MIT */
#ifndef HA_DIALECT_H
#define HA_DIALECT_H
#endif
