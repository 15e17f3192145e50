# SPDX-License-Identifier: MIT
"""PyMySQL client for test/compat/pymysql.sh.

Connects to $HC_HOST:$HC_PORT as $HC_USER/$HC_PASS (database $HC_DB) with
PyMySQL's defaults (autocommit off, so writes are committed as an
application would) and prints the "key<TAB>value" lines described in
test/compat/compat.sh. PyMySQL has no server-side prepared statements: its
parameters are escaped into the text (MySQL backslash escapes).
"""

import os
import sys

import pymysql


def out(key, value):
    print(f"{key}\t{value}", flush=True)


def describe(exc):
    if isinstance(exc, pymysql.err.MySQLError) and len(exc.args) >= 2:
        # PyMySQL does not expose the SQLSTATE.
        return f"{exc.args[0]}\t-\t{exc.args[1]}"
    return f"{type(exc).__name__}: {exc}"


def step(key, fn):
    try:
        out(key, fn())
    except Exception as exc:  # noqa: BLE001 -- report and go on
        out(key, "ERROR " + describe(exc))


def render(value):
    return "NULL" if value is None else str(value)


def is_count(value):
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def main():
    try:
        conn = pymysql.connect(host=os.environ["HC_HOST"],
                               port=int(os.environ["HC_PORT"]),
                               user=os.environ["HC_USER"],
                               password=os.environ["HC_PASS"],
                               database=os.environ["HC_DB"],
                               connect_timeout=10, read_timeout=20,
                               write_timeout=20)
    except Exception as exc:  # noqa: BLE001
        out("connect", "ERROR " + describe(exc))
        out("done", "ok")
        return
    out("connect", "ok")
    cur = conn.cursor()

    def stats():
        cur.execute("SELECT * FROM stats_memory_jemalloc")
        rows = cur.fetchall()
        out("stats_columns", ",".join(d[0] for d in cur.description))
        out("stats_rows", len(rows))
        out("stats_nonnumeric", sum(1 for r in rows if not is_count(r[1])))
        return next((r[1] for r in rows if r[0] == "allocated"), "(no row)")
    step("stats_allocated", stats)

    def update(value):
        n = cur.execute("UPDATE global_variables SET variable_value = '%s' "
                        "WHERE variable_name = 'jemalloc-prof_active'" % value)
        conn.commit()
        return n

    def prof_active():
        cur.execute("SELECT variable_value FROM global_variables "
                    "WHERE variable_name = 'jemalloc-prof_active'")
        return cur.fetchone()[0]

    for value in ("true", "false"):
        step("update_" + value, lambda v=value: update(v))
        step("prof_active_" + value, prof_active)

    def error():
        try:
            cur.execute("SELECT * FROM no_such_table")
        except pymysql.err.MySQLError as exc:
            return describe(exc)
        return "no error"
    step("error", error)

    def one():
        cur.execute("SELECT 1")
        return cur.fetchone()[0]
    step("after_error", one)

    def echo():
        cur.execute("SELECT %s, %s, %s, %s", (42, 2.5, "it's \\ ü", None))
        return "|".join(render(v) for v in cur.fetchone())
    step("param_echo", echo)

    def point():
        values = []
        for name in ("allocated", "narenas"):
            cur.execute("SELECT variable_value FROM stats_memory_jemalloc "
                        "WHERE variable_name = %s", (name,))
            values.append(render(cur.fetchone()[0]))
        return "|".join(values)
    step("param_point", point)

    conn.close()
    out("done", "ok")


if __name__ == "__main__":
    sys.exit(main())
