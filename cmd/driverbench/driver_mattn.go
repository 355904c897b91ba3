//go:build mattn

package main

import (
	"errors"

	"github.com/mattn/go-sqlite3"
)

const (
	driverName   = "sqlite3"
	driverModule = "github.com/mattn/go-sqlite3"
)

// dsn sets every pragma on each new connection and makes database/sql's Begin
// issue BEGIN IMMEDIATE. mattn has no generic _pragma key; these are its
// per-pragma keys (it always applies busy_timeout first).
func dsn(path, mode string) string {
	return "file:" + path + "?_busy_timeout=5000&_journal_mode=WAL" +
		"&_synchronous=" + mode + "&_foreign_keys=1&_txlock=immediate"
}

// isBusy reports whether err is SQLITE_BUSY or SQLITE_LOCKED.
func isBusy(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && (e.Code == sqlite3.ErrBusy || e.Code == sqlite3.ErrLocked)
}
