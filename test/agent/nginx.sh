#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The agent in Debian's nginx as Debian ships it: its default config
# ("user www-data;", here 2 workers) in a private copy, started as its
# unit does (/usr/sbin/nginx -g 'daemon on; master_process on;') by root,
# with the environment of the shipped drop-in (etc/heapadmin-agent-
# nginx.conf.in: the agent and libjemalloc preloaded, per-process,
# HEAPADMIN_USERS=www-data). Every worker, which runs as www-data after
# the master forked it, is served from its own directory; the datadir is
# root's and no directory in it is writable by more than one user; the
# root processes never follow what a worker plants there. dump_now in a
# worker writes a dump heap_top reads with nginx's functions. A reload
# moves the endpoints to the new workers, quit leaves no socket, and the
# workers carry none of the master agent's descriptors. Without
# HEAPADMIN_USERS (the default config, unadjusted) the master says in its
# log why its workers are not served.

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-300}
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
ha_require nginx nginx
ha_require curl curl
ha_require runuser util-linux
if [ "$(id -u)" != 0 ]; then
    echo "# SKIP nginx.sh: the master must run as root to drop its workers to www-data"
    echo "1..0 # SKIP needs root"
    exit 77
fi
id www-data >/dev/null 2>&1 || ha_bail "no www-data user (Debian's nginx package makes it)"

# The workers, as www-data, must reach their directory under $HA_TMP.
chmod 711 "$HA_TMP"
data=$HA_TMP/data
port=$(ha_free_port)
prefix=$HA_TMP/nginx
ag_nginx_prefix "$prefix" "$port"
conf=$prefix/conf/nginx.conf
ha_like "the private copy keeps Debian's user www-data" "^user www-data;" \
    "$(grep '^user' "$conf")"
cat >"$HA_TMP/agent.cnf" <<EOF
datadir = "$data"
admin_variables = { admin_credentials = "admin:admin"; }
EOF
chmod 600 "$HA_TMP/agent.cnf"
ag_dropin_env "$HA_SRCDIR/etc/heapadmin-agent-nginx.conf.in" "$HA_TMP/agent.cnf"
ha_like "the shipped drop-in preloads the agent, then libjemalloc" \
    "LD_PRELOAD=$HA_AGENT libjemalloc\.so\.2" "${AG_DROPIN[*]}"
# As shipped, but sampling from the start every 4 KiB: the dump must hold
# nginx's own allocations (its cycle, made before any request).
NGX_ENV=("${AG_DROPIN[@]}" MALLOC_CONF=prof:true,prof_active:true,lg_prof_sample:12
    HEAPADMIN_START_DELAY_MS=300 HEAPADMIN_LOG="$HA_TMP/agent.log")
ngx() {
    env "${NGX_ENV[@]}" /usr/sbin/nginx -c "$conf" \
        -g 'daemon on; master_process on;' "$@"
}

ngx
ha_is "nginx starts as its unit does (daemon on; master_process on)" 0 "$?"
for _ in $(seq 50); do [ -s "$prefix/logs/nginx.pid" ] && break; sleep 0.1; done
mpid=$(cat "$prefix/logs/nginx.pid" 2>/dev/null)
[ -n "$mpid" ] || ha_bail "nginx wrote no pid file"
HA_PIDS+=("$mpid")
ha_is "the master runs as root" root "$(ps -o user= -p "$mpid")"
workers=()
for _ in $(seq 50); do
    mapfile -t workers < <(ag_nginx_workers "$mpid")
    [ "${#workers[@]}" -eq 2 ] && break
    sleep 0.1
done
ha_is "two workers" 2 "${#workers[@]}"
ha_is "the workers run as www-data" "www-data www-data" \
    "$(ps -o user= -p "${workers[0]}" | tr -d ' ') $(ps -o user= -p "${workers[1]}" | tr -d ' ')"
ha_is "nginx serves" hello "$(curl -s --max-time 5 "http://127.0.0.1:$port/")"

if ag_wait_socket "$data/nginx.$mpid.sock" 15; then
    ha_pass "the master serves on $data/nginx.$mpid.sock"
else
    ha_file_tail "$HA_TMP/agent.log"
    ha_fail "the master serves on $data/nginx.$mpid.sock"
fi
for w in "${workers[@]}"; do
    sock=$data/www-data/nginx.$w.sock
    if ag_wait_socket "$sock" 15; then
        ha_pass "worker $w is served from www-data's directory"
    else
        ha_file_tail "$data/www-data/agent.log"
        ha_fail "worker $w is served from www-data's directory"
        continue
    fi
    ag_sql "$sock" "SELECT variable_value > 0 FROM stats_memory_jemalloc WHERE variable_name = 'allocated'"
    ha_is "... and its admin reads the worker's heap" "0:1" "$HA_RC:$HA_OUT"
done

# --- the datadir's layout ----------------------------------------------------

mode=$(stat -c %a "$data")
ha_is "the datadir is root's, writable by root alone" "root 0" \
    "$(stat -c %U "$data") $((8#$mode & 8#022))"
ha_is "www-data's directory is www-data's alone (0700)" "www-data 700" \
    "$(stat -c '%U %a' "$data/www-data")"
ha_is "no directory in the datadir is writable by its group or others" "" \
    "$(find "$data" -type d -perm /022)"
ha_is "nothing in www-data's directory is root's (root never writes there)" "" \
    "$(find "$data/www-data" -mindepth 1 ! -user www-data)"
ha_is "the worker's sockets are www-data's" "www-data" \
    "$(stat -c %U "$data/www-data/nginx.${workers[0]}.sock")"

# The workers hold none of the master agent's descriptors: one epoll of
# nginx's own and one of their agent's, none of the master agent's
# sockets, not its log.
# (Checked again after the reload, whose workers are forked by a master
# whose agent serves.)
ag_inodes=$(awk -v d="$data/nginx.$mpid." 'index($8, d) == 1 {print $7}' \
    /proc/net/unix | sort -u)
ha_like "the master's agent sockets are known" "[0-9]" "$ag_inodes"
check_fds() {
    local w=$1 links
    links=$(for f in /proc/"$w"/fd/*; do readlink "$f"; done)
    ha_is "worker $w: two epoll descriptors (nginx's, its agent's)" 2 \
        "$(grep -c 'anon_inode:\[eventpoll\]' <<<"$links")"
    ha_is "worker $w holds none of the master agent's sockets" "" \
        "$(comm -12 <(echo "$ag_inodes") \
            <(sed -n 's/^socket:\[\([0-9]*\)\]$/\1/p' <<<"$links" | sort -u))"
    ha_unlike "worker $w does not hold the master's log" "$HA_TMP/agent.log" "$links"
}
for w in "${workers[@]}"; do check_fds "$w"; done

# --- a dump in a worker, read with nginx's own names --------------------------

w=${workers[0]}
sock=$data/www-data/nginx.$w.sock
# elfutils is loaded at the first symbolizing (agent/lazydw.c): a served
# process that never symbolized has none of it mapped.
ha_unlike "worker $w has no elfutils library mapped before it symbolizes" \
    "libdw|libelf" "$(awk '{print $6}' "/proc/$w/maps")"
for i in $(seq 1 20); do curl -s -o /dev/null "http://127.0.0.1:$port/f$i.txt"; done
dump=$(ag_dump "$sock")
ha_like "dump_now in worker $w writes into www-data's directory" \
    "^$data/www-data/proxysql\.$w\.[0-9]+\.m[0-9]+\.heap$" "$dump"
ha_is "the dump is www-data's" www-data "$(stat -c %U "$dump" 2>/dev/null)"
ag_sql "$sock" "SELECT group_concat(function, ' ') FROM (SELECT function FROM heap_top('$(basename "$dump")') WHERE function LIKE 'ngx%' LIMIT 5)"
ha_like "heap_top reads it with nginx's functions" "^0:.*ngx_" "$HA_RC:$HA_OUT"
ha_like "worker $w loaded libdw to symbolize it" "libdw" \
    "$(awk '{print $6}' "/proc/$w/maps")"
ha_unlike "the master, which never symbolized, has no elfutils library mapped" \
    "libdw|libelf" "$(awk '{print $6}' "/proc/$mpid/maps")"

# --- what a worker plants is never followed by root --------------------------

# As www-data: a link at a registry name pointing at a root file, a FIFO
# at another, a link named like the directory's database. Then root's
# start-up cleaning (a second nginx in the same datadir) passes over them.
echo secret >"$HA_TMP/rootfile"
chmod 600 "$HA_TMP/rootfile"
runuser -u www-data -- ln -s "$HA_TMP/rootfile" "$data/www-data/nginx.999999.http"
runuser -u www-data -- mkfifo "$data/www-data/nginx.999998.sock"
runuser -u www-data -- ln -s "$HA_TMP/rootfile" "$data/www-data/redis-server.999997.http"

# --- reload: the endpoints move to the new workers ---------------------------

# An operator's session stays open on the master across the reload: it
# has the master's history attached, so the master holds SQLite files of
# root's at the fork. The new workers (www-data) must not inherit them:
# SQLite's per-file state would be stale there, and a root file's
# descriptor in a dropped-privilege process is a leak.
mkfifo "$HA_TMP/hold.in"
timeout 120 mariadb --no-defaults --unbuffered --protocol=SOCKET -S "$data/nginx.$mpid.sock" \
    -uadmin -padmin -N -B <"$HA_TMP/hold.in" >"$HA_TMP/hold.out" 2>&1 &
HA_PIDS+=("$!")
exec 7>"$HA_TMP/hold.in"
echo "SELECT count(*) >= 0 FROM stats_history.system_memory;" >&7
for _ in $(seq 50); do [ -s "$HA_TMP/hold.out" ] && break; sleep 0.1; done
ha_is "a session on the master reads its history" 1 "$(cat "$HA_TMP/hold.out")"
master_dbs() {
    for f in /proc/"$1"/fd/*; do readlink "$f"; done |
        grep -c "^$data/heapadmin[^/]*\.db"
}
ha_ok "... so the master holds its SQLite files ($(master_dbs "$mpid"))" \
    test "$(master_dbs "$mpid")" -ge 1

old=("${workers[@]}")
ngx -s reload
ha_is "nginx -s reload (the unit's ExecReload)" 0 "$?"
new=()
for _ in $(seq 100); do
    mapfile -t new < <(ag_nginx_workers "$mpid")
    if [ "${#new[@]}" -eq 2 ] && [ "${new[0]}" != "${old[0]}" ] &&
        [ "${new[0]}" != "${old[1]}" ] && [ "${new[1]}" != "${old[0]}" ] &&
        [ "${new[1]}" != "${old[1]}" ]; then
        break
    fi
    sleep 0.1
done
ha_is "two new workers after the reload" 2 "${#new[@]}"
for w in "${new[@]}"; do
    if ag_wait_socket "$data/www-data/nginx.$w.sock" 15; then
        ha_pass "new worker $w is served"
    else
        ha_fail "new worker $w is served"
    fi
done
for w in "${new[@]}"; do
    check_fds "$w"
    ha_is "worker $w holds none of the master's SQLite files" 0 "$(master_dbs "$w")"
done
ag_sql "$data/www-data/nginx.${new[0]}.sock" "SELECT count(*) >= 0 FROM stats_history.system_memory"
ha_is "... and reads its own history" "0:1" "$HA_RC:$HA_OUT"
exec 7>&-
ag_sql "$data/www-data/nginx.${new[0]}.sock" "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'"
ha_is "... with the master's profiler settings (active, inherited)" "0:true" "$HA_RC:$HA_OUT"
for w in "${old[@]}"; do
    ha_wait_gone "$w" 10
    ha_ok "old worker $w left no socket" test ! -e "$data/www-data/nginx.$w.sock" -a ! -e "$data/www-data/nginx.$w.http"
done
ha_unlike "the master reports no child it could not serve" "is not served" \
    "$(cat "$HA_TMP/agent.log")"

# --- quit: nothing left ---------------------------------------------------------

ngx -s quit
ha_ok "nginx -s quit stops the master" ha_wait_gone "$mpid" 15
# Each worker ends once its connections are done; beside stress-ng
# --cpu 8 one took over 5 s, and it folds its journals as it goes.
for w in "${new[@]}"; do
    ha_ok "... worker $w exits" ha_wait_gone "$w" 60
done
ha_is "nginx -s quit leaves no socket of the agent's" "" \
    "$(find "$data" -type s)"
# The master and four workers shared two directories: the last process
# of each folds SQLite's journals back, and the dumps' staging directory
# (a worker dumped) goes too.
ha_is "... nor a SQLite journal (-wal, -shm) or staging directory" "" \
    "$(find "$data" \( -name '*-wal' -o -name '*-shm' -o -name '*-journal' -o -name .heapadmin-staging \))"
ha_is "the planted link and FIFO are still there, as planted" "3" \
    "$(find "$data/www-data" \( -type l -o -type p \) | wc -l)"
ha_is "the root file they point at is untouched" "secret 600 root" \
    "$(cat "$HA_TMP/rootfile") $(stat -c '%a %U' "$HA_TMP/rootfile")"

# --- Debian's nginx without HEAPADMIN_USERS: the master says why -------------

data2=$HA_TMP/data2
cat >"$HA_TMP/agent2.cnf" <<EOF
datadir = "$data2"
admin_variables = { admin_credentials = "admin:admin"; }
EOF
chmod 600 "$HA_TMP/agent2.cnf"
NGX_ENV=(LD_PRELOAD="$HA_AGENT libjemalloc.so.2" MALLOC_CONF=prof:true,prof_active:false
    HEAPADMIN_CONF="$HA_TMP/agent2.cnf" HEAPADMIN_FORK=per-process
    HEAPADMIN_START_DELAY_MS=300 HEAPADMIN_LOG="$HA_TMP/agent2.log")
ngx
for _ in $(seq 50); do [ -s "$prefix/logs/nginx.pid" ] && break; sleep 0.1; done
mpid=$(cat "$prefix/logs/nginx.pid")
HA_PIDS+=("$mpid")
ag_wait_socket "$data2/nginx.$mpid.sock" 15
ha_is "without HEAPADMIN_USERS the master is served" 0 "$?"
mapfile -t workers < <(ag_nginx_workers "$mpid")
for _ in $(seq 100); do
    [ "$(grep -c 'is not served' "$HA_TMP/agent2.log" 2>/dev/null)" -ge 2 ] && break
    sleep 0.1
done
for w in "${workers[@]}"; do
    ha_file_like "... and says in its log why worker $w is not" "$HA_TMP/agent2.log" \
        "child $w \(nginx, user www-data\) is not served: it runs as www-data.*HEAPADMIN_USERS=www-data"
done
ha_is "it said so once per worker" 2 "$(grep -c 'is not served' "$HA_TMP/agent2.log")"
ngx -s quit
ha_wait_gone "$mpid" 15

ha_done
