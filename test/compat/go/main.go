// SPDX-License-Identifier: MIT
//
// Go database/sql with go-sql-driver/mysql, for test/compat/go.sh. The
// driver's defaults: queries with arguments are server-side prepared
// statements (PREPARE, EXECUTE, CLOSE), so param_* exercise them as an
// application does, and ps_* use explicit db.Prepare with re-execution.
// One connection, so every step shares a session. Prints the
// "key<TAB>value" lines described in test/compat/compat.sh.
package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

func out(key string, value interface{}) {
	fmt.Printf("%s\t%v\n", key, value)
}

func describe(err error) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		// This driver version does not expose the SQLSTATE.
		return fmt.Sprintf("%d\t-\t%s", me.Number, me.Message)
	}
	return err.Error()
}

func step(key string, fn func() (interface{}, error)) {
	v, err := fn()
	if err != nil {
		out(key, "ERROR "+describe(err))
		return
	}
	out(key, v)
}

func failure(err error) (interface{}, error) {
	if err == nil {
		return "no error", nil
	}
	return describe(err), nil
}

func render(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32)
	default:
		return fmt.Sprint(x)
	}
}

// isCount: the driver's value is a non-negative integer (int64 from the
// binary protocol, decimal text from the text protocol).
func isCount(v interface{}) bool {
	switch x := v.(type) {
	case int64:
		return x >= 0
	case uint64:
		return true
	case []byte:
		_, err := strconv.ParseUint(string(x), 10, 64)
		return err == nil
	}
	return false
}

// row scans a one-row result into generic values.
func row(rows *sql.Rows, err error) ([]interface{}, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return nil, err
		}
		return nil, errors.New("no row")
	}
	vals := make([]interface{}, len(cols))
	ptrs := make([]interface{}, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return nil, err
	}
	return vals, rows.Err()
}

func joined(vals []interface{}) string {
	s := make([]string, len(vals))
	for i, v := range vals {
		s[i] = render(v)
	}
	return strings.Join(s, "|")
}

const (
	prof  = "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'"
	point = "SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = ?"
	echo  = "SELECT ?, ?, ?, ?"
)

var echoArgs = []interface{}{42, 2.5, "it's \\ ü", nil}

func main() {
	env := os.Getenv
	dsn := fmt.Sprintf("%s:%s@tcp(%s:%s)/%s?timeout=10s&readTimeout=20s&writeTimeout=20s",
		env("HC_USER"), env("HC_PASS"), env("HC_HOST"), env("HC_PORT"), env("HC_DB"))
	db, err := sql.Open("mysql", dsn)
	if err == nil {
		db.SetMaxOpenConns(1)
		db.SetConnMaxLifetime(time.Minute)
		err = db.Ping()
	}
	if err != nil {
		out("connect", "ERROR "+describe(err))
		out("done", "ok")
		return
	}
	out("connect", "ok")

	step("stats_allocated", func() (interface{}, error) {
		rows, err := db.Query("SELECT * FROM stats_memory_jemalloc")
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		cols, err := rows.Columns()
		if err != nil {
			return nil, err
		}
		out("stats_columns", strings.Join(cols, ","))
		n, bad := 0, 0
		var allocated interface{} = "(no row)"
		for rows.Next() {
			var name string
			var value interface{}
			if err := rows.Scan(&name, &value); err != nil {
				return nil, err
			}
			n++
			if !isCount(value) {
				bad++
			}
			if name == "allocated" {
				allocated = render(value)
			}
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
		out("stats_rows", n)
		out("stats_nonnumeric", bad)
		return allocated, nil
	})

	for _, value := range []string{"true", "false"} {
		step("update_"+value, func() (interface{}, error) {
			res, err := db.Exec("UPDATE global_variables SET variable_value = '" +
				value + "' WHERE variable_name = 'jemalloc-prof_active'")
			if err != nil {
				return nil, err
			}
			return res.RowsAffected()
		})
		step("prof_active_"+value, func() (interface{}, error) {
			vals, err := row(db.Query(prof))
			if err != nil {
				return nil, err
			}
			return render(vals[0]), nil
		})
	}

	step("error", func() (interface{}, error) {
		_, err := row(db.Query("SELECT * FROM no_such_table"))
		return failure(err)
	})
	step("after_error", func() (interface{}, error) {
		vals, err := row(db.Query("SELECT 1"))
		if err != nil {
			return nil, err
		}
		return render(vals[0]), nil
	})

	// With arguments, db.Query prepares, executes and closes a statement.
	step("param_echo", func() (interface{}, error) {
		vals, err := row(db.Query(echo, echoArgs...))
		if err != nil {
			return nil, err
		}
		return joined(vals), nil
	})
	step("param_point", func() (interface{}, error) {
		var s []string
		for _, name := range []string{"allocated", "narenas"} {
			vals, err := row(db.Query(point, name))
			if err != nil {
				return nil, err
			}
			s = append(s, render(vals[0]))
		}
		return strings.Join(s, "|"), nil
	})

	// Explicitly prepared statements, executed more than once.
	step("ps_echo", func() (interface{}, error) {
		stmt, err := db.Prepare(echo)
		if err != nil {
			return nil, err
		}
		defer stmt.Close()
		vals, err := row(stmt.Query(echoArgs...))
		if err != nil {
			return nil, err
		}
		return joined(vals), nil
	})
	step("ps_point", func() (interface{}, error) {
		stmt, err := db.Prepare(point)
		if err != nil {
			return nil, err
		}
		defer stmt.Close()
		var s []string
		for _, name := range []string{"allocated", "narenas"} {
			vals, err := row(stmt.Query(name))
			if err != nil {
				return nil, err
			}
			s = append(s, render(vals[0]))
		}
		return strings.Join(s, "|"), nil
	})
	step("ps_update", func() (interface{}, error) {
		upd, err := db.Prepare("UPDATE global_variables SET variable_value = ? WHERE variable_name = ?")
		if err != nil {
			return nil, err
		}
		defer upd.Close()
		sel, err := db.Prepare("SELECT variable_value FROM global_variables WHERE variable_name = ?")
		if err != nil {
			return nil, err
		}
		defer sel.Close()
		var s []string
		for _, value := range []string{"true", "false"} {
			res, err := upd.Exec(value, "jemalloc-prof_active")
			if err != nil {
				return nil, err
			}
			n, err := res.RowsAffected()
			if err != nil {
				return nil, err
			}
			vals, err := row(sel.Query("jemalloc-prof_active"))
			if err != nil {
				return nil, err
			}
			s = append(s, strconv.FormatInt(n, 10), render(vals[0]))
		}
		return strings.Join(s, "|"), nil
	})
	step("ps_error", func() (interface{}, error) {
		stmt, err := db.Prepare("SELECT * FROM no_such_table")
		if err == nil {
			stmt.Close()
		}
		return failure(err)
	})

	db.Close()
	out("done", "ok")
}
