#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# dump_now when the filesystem under the datadir fails at runtime: a full
# disk (a 256 KiB tmpfs filled to the last block) and a datadir made
# read-only. Each time: ERR naming the path and the actual reason, no
# partial file left under a dump name, the daemon keeps serving, and
# dumps work again once the fault is gone. Needs a live jemalloc, and
# root to mount the tmpfs.

# shellcheck disable=SC2119 # ha_start's arguments are optional
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "$0")/lib.sh"
ha_needs_live_jemalloc

if [ "$(id -u)" -ne 0 ]; then
    # Mounting a tmpfs is the only faithful way to fill a disk or make a
    # directory read-only for root; as another user it cannot be done.
    echo "# SKIP $HA_TEST_NAME: needs root to mount a tmpfs as the datadir"
    echo "1..0 # SKIP needs root"
    exit 77
fi

set_var() { # NAME VALUE: sets HA_OUT/HA_ERR/HA_RC
    ha_sql "UPDATE global_variables SET variable_value = '$2' WHERE variable_name = '$1'"
}
heap_files() {
    find "$mnt" -maxdepth 1 -name '*.heap' -printf '%f ' 2>/dev/null
}

# Outside HA_TMP, so lib.sh's cleanup never recurses into the mount.
mnt=$(mktemp -d "${TMPDIR:-/tmp}/ha-dumpfault.XXXXXX")
ro_src=$(mktemp -d "${TMPDIR:-/tmp}/ha-dumpfault-ro.XXXXXX")
# Stop the daemon (lib.sh's cleanup) before unmounting what it writes to.
# shellcheck disable=SC2317 # called through the EXIT trap
cleanup() {
    ha_cleanup
    while mountpoint -q "$mnt"; do
        umount "$mnt" 2>/dev/null || umount -l "$mnt" || break
    done
    rmdir "$mnt" "$ro_src" 2>/dev/null
}
trap cleanup EXIT
if ! mount -t tmpfs -o size=256k,mode=0755 heapadmin-test "$mnt"; then
    ha_bail "cannot mount a 256 KiB tmpfs at $mnt for the datadir"
fi

HA_DATADIR=$mnt
HA_JEMALLOC='prof_active = true; lg_prof_sample = 10; lg_prof_sample_min = 10;'
ha_start || ha_bail "the daemon did not start on the tmpfs datadir"
ha_sql "CREATE TABLE w (x TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 2000)
    INSERT INTO w SELECT printf('%0200d', i) FROM n"

# A full disk: fill every free block, then ask for a dump.
dd if=/dev/zero of="$mnt/filler" bs=4k 2>/dev/null
set_var jemalloc-dump_now true
ha_is "dump on a full disk: refused" 1 "$HA_RC"
ha_like "dump on a full disk: the message names the datadir" \
    "^ERROR [0-9]+ .*$mnt" "$HA_ERR"
ha_like "dump on a full disk: the message says the disk is full" \
    "^ERROR [0-9]+ .*([Nn]o space|full)" "$HA_ERR"
ha_is "dump on a full disk: no partial .heap file remains" "" "$(heap_files)"
ha_sql_is "the daemon still serves after the full-disk dump" "SELECT 1+1" 2

rm -f "$mnt/filler"
set_var jemalloc-dump_now true
ha_is "with space again, dump_now succeeds" 0 "$HA_RC"
ha_like "with space again, a .m dump file is written" \
    "proxysql\.[0-9]+\.[0-9]+\.m[0-9]+\.heap" "$(heap_files)"
rm -f "$mnt"/*.heap

# The datadir made read-only under the running daemon. Remounting the
# tmpfs itself is refused (EBUSY: the daemon holds its locked pid file
# open for writing), so a read-only bind mount is laid over the datadir's
# path: every new open() under it fails with EROFS, as on a filesystem
# remounted read-only after an error.
if mount --bind "$ro_src" "$mnt" && mount -o remount,bind,ro "$mnt"; then
    set_var jemalloc-dump_now true
    ha_is "dump into a read-only datadir: refused" 1 "$HA_RC"
    ha_like "dump into a read-only datadir: the message names the path" \
        "^ERROR [0-9]+ .*$mnt" "$HA_ERR"
    ha_like "dump into a read-only datadir: the message gives the reason" \
        "^ERROR [0-9]+ .*([Rr]ead-only|not writable)" "$HA_ERR"
    ha_is "dump into a read-only datadir: no .heap file appeared" "" \
        "$(heap_files)"
    ha_sql_is "the daemon still serves after the read-only dump" \
        "SELECT 1+1" 2
    umount "$mnt"
    set_var jemalloc-dump_now true
    ha_is "writable again, dump_now succeeds" 0 "$HA_RC"
else
    ha_fail "lay a read-only bind mount over the datadir" "mount failed"
fi

ha_done
