package term

import (
	"io"
	"os"

	"github.com/mattn/go-isatty"
)

// terminal is what a writer that is, or wraps, a terminal reports.
type terminal interface{ Terminal() bool }

// IsTerminal reports whether w writes to a terminal: a file on one (an
// *os.File, or what has its Fd method), or a [Writer] around one.
// /dev/null and pipes are not terminals.
func IsTerminal(w io.Writer) bool {
	switch w := w.(type) {
	case terminal:
		return w.Terminal()
	case interface{ Fd() uintptr }:
		return isatty.IsTerminal(w.Fd())
	}
	return false
}

// Color reports whether what is written to w may be coloured: w is a
// terminal, NO_COLOR is unset or empty, and TERM is not "dumb".
func Color(w io.Writer) bool {
	return IsTerminal(w) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// A Style is how Paint colours text.
type Style string

// The styles, as ANSI SGR codes.
const (
	Red     Style = "31"
	Green   Style = "32"
	Yellow  Style = "33"
	Blue    Style = "34"
	Magenta Style = "35"
	Cyan    Style = "36"
	Bold    Style = "1"
)

// Paint returns s in style for w: coloured when [Color] says w may be,
// else s itself.
func Paint(w io.Writer, style Style, s string) string {
	if s == "" || !Color(w) {
		return s
	}
	return "\x1b[" + string(style) + "m" + s + "\x1b[0m"
}
