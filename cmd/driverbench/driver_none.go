//go:build !modernc && !mattn && !ncruces

package main

// Without a driver tag the binary only explains how to build it.

const (
	driverName   = ""
	driverModule = ""
)

func dsn(path, mode string) string { return "" }

func isBusy(error) bool { return false }
