/* SPDX-License-Identifier: MIT */
/* placeholder: implementation in progress */
