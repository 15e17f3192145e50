#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Perl DBI with DBD::MariaDB (Debian's libdbd-mariadb-perl): parameters
# substituted client-side by default, and server-side prepared statements
# with mariadb_server_prepare=1. See compat.sh for the checks.

# shellcheck source-path=SCRIPTDIR source=compat.sh
. "$(dirname "$0")/compat.sh"
ha_needs_live_jemalloc

hc_require_cmd perl perl
perl -MDBD::MariaDB -e1 2>/dev/null ||
    hc_missing "the Perl module DBD::MariaDB" "apt-get install libdbd-mariadb-perl"

hc_start
hc_run perl 30 perl "$HC_SRCDIR/perl_client.pl"
hc_check_common "Perl DBD::MariaDB"
hc_check_ps "Perl DBD::MariaDB (mariadb_server_prepare=1)"
hc_done
