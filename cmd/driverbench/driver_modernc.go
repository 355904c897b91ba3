//go:build modernc

package main

import (
	"errors"

	"modernc.org/sqlite"
)

const (
	driverName   = "sqlite"
	driverModule = "modernc.org/sqlite"
)

// dsn sets every pragma on each new connection (busy_timeout first) and makes
// database/sql's Begin issue BEGIN IMMEDIATE.
func dsn(path, mode string) string {
	return "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(" + mode + ")&_pragma=foreign_keys(1)&_txlock=immediate"
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED (any extended code).
func isBusy(err error) bool {
	var e *sqlite.Error
	return errors.As(err, &e) && (e.Code()&0xff == 5 || e.Code()&0xff == 6)
}
