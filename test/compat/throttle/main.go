// SPDX-License-Identifier: MIT
//
// Logins in a loop with Go's database/sql and go-sql-driver/mysql, for
// test/compat/throttle.sh: each attempt opens a new connection (Ping on
// a fresh pool) with the right password while another process floods
// the server with wrong ones, and prints one line per attempt: "ok",
// "err <code>" for a MySQL error the driver read whole, or "other
// <text>" for anything else (a protocol error, a lost connection).
//
// Usage: throttle DSN ATTEMPTS
package main

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

func main() {
	n, _ := strconv.Atoi(os.Args[2])
	for i := 0; i < n; i++ {
		db, err := sql.Open("mysql", os.Args[1])
		if err == nil {
			err = db.Ping()
			db.Close()
		}
		var me *mysql.MySQLError
		switch {
		case err == nil:
			fmt.Println("ok")
		case errors.As(err, &me):
			fmt.Printf("err %d\n", me.Number)
		default:
			fmt.Printf("other %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		}
		
	}
}
