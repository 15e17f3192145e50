# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Shared harness for the agent tests: real, unmodified Debian daemons
# (redis-server, varnishd, nghttpx) started with the built LD_PRELOAD
# agent, driven by the real mariadb client on the agent's unix socket and
# read back with jeprof. On top of test/integration/lib.sh (TAP output,
# watchdog, private temp dir, cleanup of every pid in HA_PIDS).
#
# Environment: HA_AGENT, the agent (default: the build tree's
# agent/.libs/heapadmin-agent.so).

# shellcheck source=../integration/lib.sh
. "$(cd "$(dirname "${BASH_SOURCE[0]}")/../integration" && pwd)/lib.sh"

HA_AGENT=${HA_AGENT:-$HA_BUILDDIR/agent/.libs/heapadmin-agent.so}
if [ ! -f "$HA_AGENT" ]; then
    echo "not ok 1 - no agent at $HA_AGENT (configure disabled it?)"
    echo "1..1"
    exit 1
fi

# ag_sql SOCK SQL: runs SQL on the agent's socket in batch mode; sets
# HA_OUT, HA_ERR and HA_RC like ha_sql.
ag_sql() {
    local sock=$1 sql=$2
    HA_OUT=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
        --protocol=SOCKET -S "$sock" -uadmin -padmin -N -B -e "$sql" \
        2>"$HA_TMP/.stderr")
    HA_RC=$?
    HA_ERR=$(cat "$HA_TMP/.stderr")
}

# ag_wait_socket PATH SECONDS: 0 once PATH is a socket something answers
# on, 1 after SECONDS.
ag_wait_socket() {
    local path=$1 i n
    n=$(awk -v s="$2" 'BEGIN { printf "%d", s * 10 }')
    for ((i = 0; i < n; i++)); do
        if [ -S "$path" ] &&
            timeout 2 mariadb --no-defaults --protocol=SOCKET -S "$path" \
                -uadmin -padmin -N -B -e 'SELECT 1' >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.1
    done
    return 1
}

# ag_set SOCK NAME VALUE: UPDATE global_variables on the agent.
ag_set() {
    ag_sql "$1" "UPDATE global_variables SET variable_value = '$3' WHERE variable_name = '$2'"
}

# ag_dump SOCK: dump_now; prints the file named in the OK message.
ag_dump() {
    local out
    out=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
        --protocol=SOCKET -S "$1" -uadmin -padmin -vvv -e \
        "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'" 2>&1)
    sed -n 's/.*heap profile written to \([^ ]*\) .*/\1/p' <<<"$out" | head -1
}

# ag_threads PID: the names of PID's threads, one per line.
ag_threads() {
    cat /proc/"$1"/task/*/comm 2>/dev/null
}

# ag_env: the environment every attached daemon gets (an array).
ag_env() {
    AG_ENV=(LD_PRELOAD="$HA_AGENT" MALLOC_CONF=prof:true,prof_active:false
        HEAPADMIN_START_DELAY_MS="${AG_DELAY_MS:-300}"
        HEAPADMIN_LOG="$HA_TMP/agent.log")
}

# ag_backend FILES BYTES: an HTTP backend for the proxies under test,
# serving FILES files f1.txt.. of about BYTES random bytes (base64) from
# $HA_TMP/www; sets AG_BACKEND_PORT. Killed on exit.
ag_backend() {
    local n=$1 bytes=$2 i
    mkdir -p "$HA_TMP/www"
    for i in $(seq 1 "$n"); do
        head -c "$bytes" /dev/urandom | base64 >"$HA_TMP/www/f$i.txt"
    done
    AG_BACKEND_PORT=$(ha_free_port)
    python3 -m http.server "$AG_BACKEND_PORT" --bind 127.0.0.1 \
        -d "$HA_TMP/www" >"$HA_TMP/backend.log" 2>&1 &
    HA_PIDS+=("$!")
}

# ag_dropin_env DROPIN [CONF]: the Environment= lines of a shipped systemd
# drop-in (etc/*.conf.in) as an array AG_DROPIN, the agent's path made the
# build tree's ($HA_AGENT) and HEAPADMIN_CONF made CONF (when given): the
# test runs what an operator installs.
ag_dropin_env() {
    local file=$1 conf=${2:-} line
    AG_DROPIN=()
    while IFS= read -r line; do
        case $line in
            Environment=*) ;;
            *) continue ;;
        esac
        line=${line#Environment=}
        line=${line#\"}
        line=${line%\"}
        line=${line//@libdir@\/heapadmin\/heapadmin-agent.so/$HA_AGENT}
        case $line in
            HEAPADMIN_CONF=*) [ -n "$conf" ] && line=HEAPADMIN_CONF=$conf ;;
        esac
        AG_DROPIN+=("$line")
    done <"$file"
}

# ag_nginx_prefix DIR PORT: a private copy of Debian's nginx config in
# DIR/conf, as the package ships it ("user www-data;" included) but for
# where it listens (127.0.0.1:PORT), where its pid file, logs and pages
# are, and worker_processes 2 (Debian's "auto" is one per CPU). Pages in
# DIR/www. Prints nothing; the config is DIR/conf/nginx.conf.
ag_nginx_prefix() {
    local dir=$1 port=$2 i
    mkdir -p "$dir/logs" "$dir/www"
    # -L: sites-enabled/default is an absolute link to the system's file,
    # which must never be written through.
    cp -rL /etc/nginx "$dir/conf"
    rm -f "$dir/conf/sites-enabled/default"
    cat >"$dir/conf/sites-enabled/default" <<NGX
server {
	listen 127.0.0.1:$port default_server;
	root $dir/www;
	index index.html;
	server_name _;
	location / { try_files \$uri \$uri/ =404; }
}
NGX
    sed -i -e "s#^pid .*#pid $dir/logs/nginx.pid;#" \
        -e "s#/etc/nginx/#$dir/conf/#g" \
        -e "s#error_log .*#error_log $dir/logs/error.log;#" \
        -e "s#access_log .*#access_log $dir/logs/access.log;#" \
        -e "s#^worker_processes .*#worker_processes 2;#" \
        "$dir/conf/nginx.conf"
    for i in $(seq 1 20); do
        head -c 20000 /dev/urandom | base64 >"$dir/www/f$i.txt"
    done
    echo hello >"$dir/www/index.html"
    chmod 755 "$dir" "$dir/www"
    chmod 644 "$dir"/www/*
}

# ag_nginx_workers MASTER: the pids of MASTER's workers, one per line.
ag_nginx_workers() {
    ps -o pid= --ppid "$1" | tr -d ' '
}

# ---------------------------------------------------------------------------
# Memory cgroups (oomkill.sh, redislimit.sh): groups made for a test, a
# limit on the parent, the host in a child; each removed at exit.
# ---------------------------------------------------------------------------

AG_CG_GROUPS=()  # to remove, innermost first

# ag_cg_cleanup: every process left in the test's groups killed and
# reaped (a zombie still counts in its group), the groups removed. For
# the script's EXIT trap, before ha_cleanup.
ag_cg_cleanup() {
    local g pid i
    for g in "${AG_CG_GROUPS[@]}"; do
        [ -d "$g" ] || continue
        for i in $(seq 50); do
            # cgroup files read as size 0: look at what they hold
            [ -n "$(cat "$g/cgroup.procs" 2>/dev/null)" ] || break
            while read -r pid; do
                kill -KILL "$pid" 2>/dev/null
            done <"$g/cgroup.procs"
            for pid in "${HA_PIDS[@]}"; do
                ha_alive "$pid" || { wait "$pid"; } 2>/dev/null
            done
            sleep 0.1
        done
        for i in $(seq 50); do
            rmdir "$g" 2>/dev/null && break
            sleep 0.1
        done
        [ -d "$g" ] && echo "# could not remove the cgroup $g (procs:" \
            "$(tr '\n' ' ' <"$g/cgroup.procs"))"
    done
}

# ag_cg_mount_of FSTYPE OPTION: the first mount point of FSTYPE whose
# super options hold OPTION ('' for any), from /proc/self/mountinfo (its
# optional fields end at " - ").
ag_cg_mount_of() {
    awk -v fs="$1" -v opt="$2" '{
        for (i = 7; i <= NF; i++) if ($i == "-") break
        if ($(i + 1) != fs) next
        if (opt != "" && ("," $(i + 3) ",") !~ ("," opt ",")) next
        print $5; exit
    }' /proc/self/mountinfo
}

# ag_cg_mount VERSION: prints the mount point of cgroup VERSION's memory
# hierarchy when this test can make groups there (root, mounted
# read-write, the memory controller on offer); else prints why not and
# returns 1.
ag_cg_mount() {
    local mp
    if [ "$(id -u)" != 0 ]; then
        echo "SKIP: not root"
        return 1
    fi
    if [ "$1" = 1 ]; then
        mp=$(ag_cg_mount_of cgroup memory)
        if [ -z "$mp" ]; then
            echo "SKIP: no cgroup v1 hierarchy with the memory controller"
            return 1
        fi
    else
        mp=$(ag_cg_mount_of cgroup2 '')
        if [ -z "$mp" ]; then
            echo "SKIP: no cgroup v2 hierarchy mounted"
            return 1
        fi
        if ! grep -qw memory "$mp/cgroup.controllers" 2>/dev/null; then
            echo "SKIP: the cgroup v2 hierarchy at $mp has no memory" \
                "controller (controllers: $(cat "$mp/cgroup.controllers" \
                2>/dev/null))"
            return 1
        fi
    fi
    if ! grep -Eq " $mp rw[, ]" /proc/self/mountinfo; then
        echo "SKIP: the cgroup hierarchy at $mp is read-only"
        return 1
    fi
    echo "$mp"
}

# ag_cg_make VERSION MOUNT NAME LIMIT: MOUNT/NAME limited to LIMIT bytes
# (no swap), with a child "run" of no limit of its own: AG_CG_PARENT,
# AG_CG_CHILD. Returns 1 with AG_CG_WHY when the machine refuses.
ag_cg_make() {
    local v=$1 parent=$2/$3 child=$2/$3/run limit=$4
    AG_CG_PARENT=$parent
    AG_CG_CHILD=$child
    AG_CG_GROUPS=("$child" "$parent" "${AG_CG_GROUPS[@]}")
    if ! mkdir "$parent" 2>/dev/null; then
        AG_CG_WHY="cannot create $parent"
        return 1
    fi
    if [ "$v" = 2 ]; then
        grep -qw memory "$parent/cgroup.subtree_control" 2>/dev/null ||
            echo +memory >"$parent/cgroup.subtree_control" 2>/dev/null
        mkdir "$child" 2>/dev/null
        if ! echo "$limit" >"$parent/memory.max" 2>/dev/null ||
            [ ! -e "$child/memory.max" ]; then
            AG_CG_WHY="the memory controller cannot be enabled for a group of ours (cgroup.subtree_control)"
            return 1
        fi
        echo 0 >"$parent/memory.swap.max" 2>/dev/null
    else
        mkdir "$child" 2>/dev/null
        if ! echo "$limit" >"$parent/memory.limit_in_bytes" 2>/dev/null; then
            AG_CG_WHY="cannot set $parent/memory.limit_in_bytes"
            return 1
        fi
        echo "$limit" >"$parent/memory.memsw.limit_in_bytes" 2>/dev/null
        echo 0 >"$child/memory.swappiness" 2>/dev/null
    fi
    return 0
}

# ag_cg_limited NAME LIMIT: the test's memory cgroup, NAME limited to
# LIMIT bytes (a whole number of MiB) with its child "run", made on
# cgroup v1 if the machine offers it, else v2 (ag_cg_mount, ag_cg_make);
# passes a test saying where. Sets AG_CG_VERSION, AG_CG_PARENT and
# AG_CG_CHILD. Where neither version lets the test make a group, the
# test is skipped with the reason (exit 77). The caller's EXIT trap runs
# ag_cg_cleanup.
ag_cg_limited() {
    local name=$1 limit=$2 try mp
    AG_CG_VERSION=
    for try in 1 2; do
        if mp=$(ag_cg_mount "$try"); then
            AG_CG_VERSION=$try
            break
        fi
        echo "# cgroup v$try: $mp"
    done
    if [ -z "$AG_CG_VERSION" ]; then
        echo "1..0 # SKIP this machine offers no memory cgroup to make groups in"
        exit 77
    fi
    if ! ag_cg_make "$AG_CG_VERSION" "$mp" "$name" "$limit"; then
        echo "1..0 # SKIP cgroup v$AG_CG_VERSION: $AG_CG_WHY"
        exit 77
    fi
    ha_pass "cgroup v$AG_CG_VERSION: $AG_CG_PARENT limited to $((limit >> 20)) MiB"
}

# ag_cg_oom_kills VERSION GROUP: the OOM kills the kernel counted in
# GROUP (v1 counts a kill in the victim's group, v2 there and above).
ag_cg_oom_kills() {
    if [ "$1" = 2 ]; then
        awk '$1 == "oom_kill" { print $2 }' "$2/memory.events"
    else
        awk '$1 == "oom_kill" { print $2 }' "$2/memory.oom_control"
    fi
}

# ag_in_cgroup GROUP CMD...: runs CMD in GROUP (the shell moves itself
# in, then execs), in the background; its pid is the command's.
ag_in_cgroup() {
    local g=$1
    shift
    sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$g" "$@" &
}

# ag_tsan_stuck HOST PID: 0 when HOST is TSan-built and a thread of PID
# waits on TSan's own allocator lock (gcc 12's libtsan does not take it
# around fork: such a child is TSan's loss, not the agent's).
ag_tsan_stuck() {
    grep -aq __tsan_init "$1" &&
        eu-stack -p "$2" 2>/dev/null | grep -q -e '__sanitizer::StaticSpinMutex::LockSlow' -e '__sanitizer::Semaphore::Wait'
}

# ag_gateway_start DATADIR WAIT_S [SETTINGS]: heapadmind --gateway for
# the agents of DATADIR, its MySQL port on $HA_TMP/gateway.sock and its
# HTTP port on loopback, SETTINGS (lines) added to its admin_variables;
# sets gport, gpid and url (the HTTP base), and waits up to WAIT_S
# seconds for the socket. Returns 1 if it did not appear.
ag_gateway_start() {
    gport=$(ha_free_port)
    cat >"$HA_TMP/gateway.cnf" <<CNF
datadir = "$1"
admin_variables =
{
    admin_credentials = "admin:admin"
    stats_credentials = "stats:stats"
    mysql_ifaces = "$HA_TMP/gateway.sock"
    http_ifaces = "127.0.0.1:$gport"
${3:-}
}
CNF
    "$HA_DAEMON" -f --gateway -c "$HA_TMP/gateway.cnf" \
        >"$HA_TMP/gateway.log" 2>&1 &
    gpid=$!
    HA_PIDS+=("$gpid")
    url=http://127.0.0.1:$gport
    ag_wait_socket "$HA_TMP/gateway.sock" "$2"
}

# gsql SQL [USER]: SQL on the gateway of ag_gateway_start as USER (admin
# by default; the password is the user's name); sets HA_OUT, HA_ERR and
# HA_RC like ha_sql.
gsql() {
    HA_OUT=$(timeout -k 2 "$HA_CLIENT_TIMEOUT" mariadb --no-defaults \
        --protocol=SOCKET -S "$HA_TMP/gateway.sock" -u"${2:-admin}" \
        -p"${2:-admin}" -N -B -e "$1" 2>"$HA_TMP/.stderr")
    HA_RC=$?
    HA_ERR=$(cat "$HA_TMP/.stderr")
}
