#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# PyMySQL (Debian's python3-pymysql, run by /usr/bin/python3: the python3
# first on PATH may be another installation without Debian's modules):
# SET NAMES and SET AUTOCOMMIT = 0 at connect, COMMIT after the writes,
# client-side escaped parameters. See compat.sh for the checks.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

HC_PYTHON=/usr/bin/python3
hc_require_file "$HC_PYTHON" python3
"$HC_PYTHON" -c 'import pymysql' 2>/dev/null ||
    hc_missing "the pymysql module for $HC_PYTHON" "apt-get install python3-pymysql"

hc_start
hc_run pymysql 30 "$HC_PYTHON" "$HC_SRCDIR/pymysql_client.py"
hc_check_common PyMySQL
hc_done
