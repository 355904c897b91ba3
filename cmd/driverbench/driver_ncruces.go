//go:build ncruces

package main

import (
	"errors"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver"
)

// Since v0.37 the SQLite build is translated to Go (wasm2go) and linked by the
// driver package itself; importing github.com/ncruces/go-sqlite3/embed is
// deprecated and only prints a warning.

const (
	driverName   = "sqlite3"
	driverModule = "github.com/ncruces/go-sqlite3"
)

// dsn sets every pragma on each new connection and makes database/sql's Begin
// issue BEGIN IMMEDIATE (already ncruces' default; set for clarity). The
// driver docs require busy_timeout to be the first pragma.
func dsn(path, mode string) string {
	return "file:" + path + "?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)" +
		"&_pragma=synchronous(" + mode + ")&_pragma=foreign_keys(1)&_txlock=immediate"
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	return errors.Is(err, sqlite3.BUSY) || errors.Is(err, sqlite3.LOCKED)
}
