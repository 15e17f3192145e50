#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# Memory history on the real daemon: stats_history.system_memory (ProxySQL's
# table and columns) fills every admin-stats_system_memory seconds with
# jemalloc's figures, the _hour and _day rollups follow, stats users read
# them and may not write, SHOW DATABASES/TABLES list them, and the history
# survives kill -9 and a restart. Needs a live jemalloc.

# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc

cat >"$HA_TMP/h.tmpl" <<CNF
datadir = "@DATADIR@";
admin_variables =
{
    admin_credentials = "admin:admin";
    stats_credentials = "stats:stats";
    mysql_ifaces = "127.0.0.1:@PORT@;@SOCK@";
    stats_system_memory = 1;
};
CNF
HA_DATADIR=$HA_TMP/data
ha_start || ha_bail "heapadmind starts with stats_system_memory = 1"
ha_sql_is "admin-stats_system_memory shows the interval" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'admin-stats_system_memory'" 60
ha_stop
ha_start -C "$HA_TMP/h.tmpl" || ha_bail "heapadmind starts sampling every second"
ha_sql_is "... and now 1" \
    "SELECT variable_value FROM global_variables WHERE variable_name = 'admin-stats_system_memory'" 1
# Three samples, however loaded the machine: polled, not slept for.
for _ in $(seq 60); do
    ha_sql "SELECT count(*) >= 3 FROM stats_history.system_memory"
    [ "$HA_OUT" = 1 ] && break
    sleep 0.25
done
ha_sql "SELECT count(*) >= 3, min(resident) > 0, min(allocated) > 0, min(mapped) >= min(resident), max(timestamp) - min(timestamp) <= 2 * (count(*) - 1) + 2 FROM stats_history.system_memory"
ha_is "a sample a second with jemalloc's figures" "0:1	1	1	1	1" "$HA_RC:$HA_OUT"
ha_sql_is "ProxySQL's columns, in its order, then the pid and the cgroup's usage and limit" \
    "SELECT group_concat(name, ',') FROM pragma_table_info('system_memory', 'stats_history')" \
    "timestamp,allocated,resident,active,mapped,metadata,retained,pid,cgroup_usage,cgroup_limit"
# The daemon's memory cgroup, as the kernel has it: v1's memory line, or
# a v2 group with memory.current; a limit only where one is set.
if grep -q ':memory:' /proc/self/cgroup ||
    [ -e "/sys/fs/cgroup$(sed -n 's/^0:://p' /proc/self/cgroup)/memory.current" ]; then
    ha_sql_is "the cgroup's usage is kept beside RSS" \
        "SELECT count(*) > 0 FROM stats_history.system_memory WHERE cgroup_usage > 0" 1
else
    echo "# SKIP usage check: this machine puts the daemon in no memory cgroup"
fi
ha_sql_is "its limit is NULL or positive, never 0" \
    "SELECT count(*) FROM stats_history.system_memory WHERE cgroup_limit <= 0" 0
ha_sql_is "the hour and day rollups follow" \
    "SELECT (SELECT count(*) FROM stats_history.system_memory_hour) >= 1, (SELECT count(*) FROM stats_history.system_memory_day) = 1" \
    "1	1"
ha_sql_is "SHOW DATABASES lists stats_history" "SHOW DATABASES LIKE 'stats_history'" stats_history
ha_sql_is "SHOW TABLES FROM stats_history lists the three" \
    "SHOW TABLES FROM stats_history" "system_memory
system_memory_day
system_memory_hour"
HA_USER=stats HA_PASS=stats
ha_sql_is "stats users read the history" \
    "SELECT count(*) > 0 FROM stats_history.system_memory_hour" 1
ha_sql_err "... and may not change it" "DELETE FROM stats_history.system_memory" \
    "ERROR 1142"
HA_USER=admin HA_PASS=admin
ha_sql_err "nobody writes it over SQL (it is attached read-only)" \
    "DELETE FROM stats_history.system_memory" "readonly|read-only"
ha_ok "the file is 0600 in the datadir" \
    test "$(stat -c %a "$HA_DATADIR/heapadmin_stats.db")" = 600

ha_sql "SELECT count(*) FROM stats_history.system_memory"
before=$HA_OUT
kill -9 "$HA_PID"
ha_wait_gone "$HA_PID" 5
ha_forget "$HA_PID"
ha_start -C "$HA_TMP/h.tmpl" || ha_bail "heapadmind starts after kill -9"
ha_sql "SELECT count(*) >= $before FROM stats_history.system_memory"
ha_is "kill -9 and a restart lose no stored sample ($before before)" "0:1" "$HA_RC:$HA_OUT"
ha_stop
ha_done
