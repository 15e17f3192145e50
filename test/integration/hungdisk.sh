#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The datadir on a FUSE filesystem, and that filesystem hanging (issue
# 35): a passthrough written here, whose server is stopped (SIGSTOP) and
# let go (SIGCONT), so that every call blocks meanwhile, as on a
# hard-mounted NFS server that went away or under a FUSE server that is
# stuck. Checked:
#   - on FUSE, where SQLite's WAL index (a shared mapping of -shm) is not
#     safe, heapadmind starts (it died with SIGBUS) and uses a rollback
#     journal, a WAL file left there by another filesystem's run read and
#     converted first (its saved value applied), and says so at start;
#   - once the disk hangs, a session logged in before answers SELECT 1
#     as fast as it did before (a bound from this run's baseline, and 100
#     ms at least), while a new login waits disk_timeout_ms once and then
#     opens without the datadir's files, later logins do not wait,
#     dump_now and the history fail with a clear error, /metrics answers;
#   - SIGTERM ends the daemon within 5 s, the log saying what it could
#     not write; the next start on the same filesystem, answering again,
#     works;
#   - daemonized, its log and pid file in the hung datadir, it takes
#     logins and answers the session as before, works again as soon as
#     the disk answers, without a restart, and stops within 5 s.
# Needs /dev/fuse, root (to mount) and Debian's python3-fusepy and fuse3:
# without them it skips, saying which.

# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

PY=/usr/bin/python3
skip() {
    echo "# SKIP $HA_TEST_NAME: $1"
    echo "1..0 # SKIP $1"
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "mounting the FUSE filesystem needs root"
[ -c /dev/fuse ] || skip "no /dev/fuse"
"$PY" -c 'import fusepy' 2>/dev/null ||
    skip "python3-fusepy missing (./bootstrap installs it)"
"$PY" -c 'import pymysql' 2>/dev/null ||
    skip "python3-pymysql missing (./bootstrap installs it)"
command -v sqlite3 >/dev/null || skip "sqlite3 missing (./bootstrap installs it)"
ha_require curl curl

HA_TEST_TIMEOUT=${HA_TEST_TIMEOUT:-120}
back=$HA_TMP/back
mnt=$HA_TMP/mnt
mkdir -p "$back/data" "$mnt"

# A passthrough of $back. Stopped, it takes no call: the kernel holds
# them all (and a SIGKILL still ends a caller's wait, as a hard NFS
# mount's; a call a FUSE server has taken and never answers cannot be
# ended at all, not even by SIGKILL, until it does).
cat >"$HA_TMP/passfs.py" <<'EOF'
import errno, os, sys
import fusepy


class PassFS(fusepy.Operations):
    def __init__(self, root):
        self.root = os.path.realpath(root)

    def __call__(self, op, *args):
        try:
            return super().__call__(op, *args)
        except OSError as e:
            raise fusepy.FuseOSError(e.errno or errno.EIO)

    def _p(self, path):
        return self.root + path

    def access(self, path, mode):
        if not os.access(self._p(path), mode):
            raise fusepy.FuseOSError(errno.EACCES)

    def chmod(self, path, mode):
        os.chmod(self._p(path), mode)

    def chown(self, path, uid, gid):
        os.lchown(self._p(path), uid, gid)

    def getattr(self, path, fh=None):
        st = os.lstat(self._p(path))
        return {k: getattr(st, k) for k in (
            'st_atime', 'st_ctime', 'st_mtime', 'st_gid', 'st_mode',
            'st_nlink', 'st_size', 'st_uid', 'st_ino')}

    def readdir(self, path, fh):
        return ['.', '..'] + os.listdir(self._p(path))

    def readlink(self, path):
        return os.readlink(self._p(path))

    def mknod(self, path, mode, dev):
        os.mknod(self._p(path), mode, dev)

    def mkdir(self, path, mode):
        os.mkdir(self._p(path), mode)

    def rmdir(self, path):
        os.rmdir(self._p(path))

    def statfs(self, path):
        st = os.statvfs(self._p(path))
        return {k: getattr(st, k) for k in (
            'f_bavail', 'f_bfree', 'f_blocks', 'f_bsize', 'f_favail',
            'f_ffree', 'f_files', 'f_flag', 'f_frsize', 'f_namemax')}

    def unlink(self, path):
        os.unlink(self._p(path))

    def symlink(self, name, target):
        os.symlink(target, self._p(name))

    def rename(self, old, new):
        os.rename(self._p(old), self._p(new))

    def link(self, target, name):
        os.link(self._p(name), self._p(target))

    def utimens(self, path, times=None):
        os.utime(self._p(path), times)

    def open(self, path, flags):
        return os.open(self._p(path), flags)

    def create(self, path, mode, fi=None):
        return os.open(self._p(path), os.O_WRONLY | os.O_CREAT, mode)

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def write(self, path, data, offset, fh):
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._p(path), length)

    def release(self, path, fh):
        os.close(fh)

    def fsync(self, path, datasync, fh):
        (os.fdatasync if datasync else os.fsync)(fh)


fusepy.FUSE(PassFS(sys.argv[1]), sys.argv[2], foreground=True,
            nothreads=False)
EOF

hang() { kill -STOP "$fuse_pid"; }
answer() { kill -CONT "$fuse_pid" 2>/dev/null; }

unmount() {
    answer
    if mountpoint -q "$mnt" 2>/dev/null; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount -u "$mnt" 2>/dev/null ||
            umount -l "$mnt" 2>/dev/null
    fi
    [ -n "${fuse_pid:-}" ] && kill "$fuse_pid" 2>/dev/null
    wait "${fuse_pid:-}" 2>/dev/null
}
# Before lib.sh's cleanup: the filesystem answers again first (nothing
# waits any more), the daemons go, then the mount, then the temp dir.
trap 'answer; ha_cleanup_daemons; unmount; ha_cleanup' EXIT
ha_cleanup_daemons() {
    local pid
    for pid in "${HA_PIDS[@]}"; do
        kill -KILL "$pid" 2>/dev/null
    done
}

"$PY" "$HA_TMP/passfs.py" "$back" "$mnt" >"$HA_TMP/fuse.log" 2>&1 &
fuse_pid=$!
for _ in $(seq 50); do
    [ "$(stat -f -c %t "$mnt" 2>/dev/null)" = 65735546 ] && break
    sleep 0.1
done
[ "$(stat -f -c %t "$mnt" 2>/dev/null)" = 65735546 ] ||
    skip "the FUSE filesystem did not mount: $(tail -n 3 "$HA_TMP/fuse.log")"

# A heapadmin.db in WAL mode, as a run on another filesystem leaves it,
# with one saved value.
sqlite3 "$back/data/heapadmin.db" \
    "PRAGMA journal_mode = WAL; CREATE TABLE global_variables (variable_name VARCHAR NOT NULL PRIMARY KEY, variable_value VARCHAR NOT NULL); INSERT INTO global_variables VALUES ('jemalloc-log_max_bytes', '3145728');" \
    >/dev/null || ha_bail "cannot make a WAL-mode heapadmin.db"
ha_is "the datadir's heapadmin.db is in WAL mode before the start" wal \
    "$(sqlite3 "$back/data/heapadmin.db" 'PRAGMA journal_mode')"

hport=$(ha_free_port)
HA_HTTP_PORT=$hport
HA_DATADIR=$mnt/data
HA_ADMIN="disk_timeout_ms = 1500; stats_system_memory = 1;"
HA_JEMALLOC="prof_active = true;"
ha_start || ha_bail "heapadmind starts with its datadir on FUSE"

# --- FUSE, answering ------------------------------------------------------------
ha_file_like "heapadmin.db: a rollback journal on FUSE, said at start" "$HA_LOG" \
    "$mnt/data/heapadmin\.db: journal_mode = DELETE \(a rollback journal\): its directory is on fuse, where SQLite's WAL"
ha_file_like "... and the history's too" "$HA_LOG" \
    "$mnt/data/heapadmin_stats\.db: journal_mode = DELETE"
ha_is "the WAL file was converted" delete \
    "$(sqlite3 "$back/data/heapadmin.db" 'PRAGMA journal_mode')"
ha_is "... its saved value applied at start" 3145728 "$(ha_var jemalloc-log_max_bytes)"
ha_sql "SAVE JEMALLOC VARIABLES TO DISK"
ha_is "SAVE ... TO DISK works" 0 "$HA_RC"
ha_sql_is "disk.global_variables reads it back" \
    "SELECT variable_value FROM disk.global_variables WHERE variable_name = 'jemalloc-log_max_bytes'" 3145728
ha_sql_wait 1 "SELECT count(*) > 0 FROM stats_history.system_memory"
ha_is "the history is written and read" 1 "$HA_OUT"
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_is "dump_now works" 0 "$HA_RC"
ha_ok "... no WAL index on FUSE: no -shm file" \
    sh -c "! ls '$back/data' | grep -q -- '-shm\$'"
quick=$(ha_quick_ms "$(ha_baseline_ms)")

# --- FUSE, hung ----------------------------------------------------------------
# probe NAME: one session logged in before the hang, SELECT 1 every 20 ms,
# its worst for 3 s before the hang (the baseline) and while it lasts,
# in NAME.out; NAME.ready once the baseline is taken, ended by NAME.stop.
probe() {
    "$PY" - "$HA_PORT" "$HA_TMP" "$1" >"$HA_TMP/$1.out" 2>&1 <<'EOF' &
import os, sys, time
import pymysql

port, tmp, name = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = pymysql.connect(host="127.0.0.1", port=port, user="admin",
                    password="admin", connect_timeout=10, read_timeout=60)
cur = c.cursor()

def worst_until(stop):
    worst, n = 0.0, 0
    while not stop():
        t = time.monotonic()
        cur.execute("SELECT 1")
        cur.fetchall()
        worst = max(worst, (time.monotonic() - t) * 1000)
        n += 1
        time.sleep(0.02)
    return worst, n

end = time.monotonic() + 3
base, nb = worst_until(lambda: time.monotonic() > end)
print("baseline %.0f %d" % (base, nb), flush=True)
open(os.path.join(tmp, name + ".ready"), "w").close()
hung, nh = worst_until(lambda: os.path.exists(os.path.join(tmp, name + ".stop")))
print("hung %.0f %d" % (hung, nh), flush=True)
EOF
    prober=$!
    for _ in $(seq 100); do
        [ -e "$HA_TMP/$1.ready" ] && break
        sleep 0.1
    done
}

# probe_done NAME: its verdict.
probe_done() {
    local base hung nh bound
    : >"$HA_TMP/$1.stop"
    wait "$prober"
    ha_diag "$(cat "$HA_TMP/$1.out")"
    read -r _ base _ < <(grep '^baseline' "$HA_TMP/$1.out")
    read -r _ hung nh < <(grep '^hung' "$HA_TMP/$1.out")
    bound=$((100 + 3 * ${base:-1000}))
    ha_ok "a session logged in before answers SELECT 1 during the hang within $bound ms (100 + 3x its baseline worst of ${base:-?} ms): worst ${hung:-?} ms of ${nh:-?}" \
        test -n "${hung:-}" -a "${hung:-99999}" -lt "$bound"
}

probe probe
hang
sleep 0.3

t0=$(date +%s%N)
ha_sql "SELECT 1"
ms=$((($(date +%s%N) - t0) / 1000000))
ha_is "a new login during the hang logs in" "0:1" "$HA_RC:$HA_OUT"
ha_ok "... after disk_timeout_ms (1500) at most, not for as long as the disk hangs ($ms ms)" \
    test "$ms" -lt $((1500 + quick))
ha_file_like "... and the log says it opened without the datadir's files" "$HA_LOG" \
    "connection [0-9]+: $mnt/data/heapadmin\.db: the datadir's disk did not answer within disk_timeout_ms = 1500 \(attaching heapadmin\.db and heapadmin_stats\.db\); the session opens without them"
t0=$(date +%s%N)
ha_sql "SELECT 2"
ms=$((($(date +%s%N) - t0) / 1000000))
ha_is "the next login too" "0:2" "$HA_RC:$HA_OUT"
ha_ok "... at once: the disk is known not to answer ($ms ms, bound $quick)" test "$ms" -lt "$quick"
t0=$(date +%s%N)
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ms=$((($(date +%s%N) - t0) / 1000000))
ha_like "dump_now fails, saying the disk does not answer" \
    "ERROR 1105 .*jemalloc-dump_now: the datadir's disk has not answered for [0-9]+ s .*no dump was taken" "$HA_ERR"
ha_ok "... at once ($ms ms)" test "$ms" -lt "$quick"
ha_sql "SELECT count(*) FROM stats_history.system_memory"
ha_like "the history says why it cannot be read" \
    "stats_history is $mnt/data/heapadmin_stats\.db: the datadir's disk has not answered for [0-9]+ s" "$HA_ERR"
t0=$(date +%s%N)
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 20 -u stats:stats \
    "http://127.0.0.1:$hport/metrics")
ms=$((($(date +%s%N) - t0) / 1000000))
ha_is "/metrics answers" 200 "$code"
ha_ok "... at once ($ms ms)" test "$ms" -lt "$quick"
ha_sql_wait 1 "SELECT count(*) FROM stats_admin_sessions WHERE user = 'system user' AND state LIKE 'attaching heapadmin.db%'"
ha_is "SHOW PROCESSLIST shows the I/O thread waiting for the disk" 1 "$HA_OUT"
sleep 1
probe_done probe

# SIGTERM, still hung. The process has exited once its main thread has
# (ha_alive: a zombie is gone): its sockets are closed, nothing of it
# answers. A thread of it left in a call the filesystem does not answer
# ends when it does: the kernel waits for a FUSE close's flush even
# through SIGKILL, so the zombie is reaped once the server answers.
t0=$(date +%s%N)
kill -TERM "$HA_PID"
ha_wait_gone "$HA_PID" 10
gone=$?
ms=$((($(date +%s%N) - t0) / 1000000))
ha_is "SIGTERM ends the daemon while the disk hangs" 0 "$gone"
ha_ok "... within 5 s ($ms ms)" test "$ms" -lt 5000
ha_file_like "... and the log says what was not written" "$HA_LOG" \
    "stopping: .*not written: this run's end record|stopping: the disk worker has been .* left behind"
ha_ok "... its ports closed" sh -c "! ss -ltn | grep -q ':$HA_PORT '"
answer
wait "$HA_PID" 2>/dev/null
ha_forget "$HA_PID"

# --- FUSE, answering again: the daemon's own log there -------------------------
# Daemonized, its log and pid file in the datadir: with the disk hung,
# every line it logs (each login's) waits for the disk too, never the
# loop, and the stop does not wait for them either.
answer
ha_start -d || ha_bail "heapadmind starts again, daemonized, once the disk answers"
ha_sql_is "the saved value is still there" \
    "SELECT variable_value FROM disk.global_variables WHERE variable_name = 'jemalloc-log_max_bytes'" 3145728
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_is "dump_now works again" 0 "$HA_RC"
probe probe2
hang
sleep 0.3
for i in 1 2 3; do
    ha_sql "SELECT $i"
    ha_is "login $i during the hang, the log in the hung datadir" "0:$i" "$HA_RC:$HA_OUT"
done
probe_done probe2
# The disk answers again: so does everything, without a restart.
answer
ha_sql_wait 0 "SELECT count(*) FROM stats_admin_sessions WHERE user = 'system user'"
ha_is "the I/O thread is done once the disk answers" 0 "$HA_OUT"
ha_sql_is "a new login has the datadir's files again" \
    "SELECT variable_value FROM disk.global_variables WHERE variable_name = 'jemalloc-log_max_bytes'" 3145728
ha_sql "UPDATE global_variables SET variable_value = 'true' WHERE variable_name = 'jemalloc-dump_now'"
ha_is "... and dump_now works" 0 "$HA_RC"
hang
sleep 0.3
t0=$(date +%s%N)
kill -TERM "$HA_PID"
ha_wait_gone "$HA_PID" 10
gone=$?
ms=$((($(date +%s%N) - t0) / 1000000))
ha_is "SIGTERM ends it, the log in the hung datadir" 0 "$gone"
ha_ok "... within 5 s ($ms ms)" test "$ms" -lt 5000
answer
ha_forget "$HA_PID"
ha_done
