// Package term writes for a person at a terminal: whether output goes to
// one, colour where it may, and a status line that says how far a long
// command has come.
//
// Output that is not a terminal (a pipe, a file, a CI log) gets plain
// lines only: no colour, no redrawn line, no escape sequence. Colour is
// also off when NO_COLOR is set to anything but "" (https://no-color.org)
// and when TERM is "dumb".
//
//	progress := term.NewProgress(c.App.ErrWriter, "Retrying failed jobs", total)
//	defer progress.Done()
//	for ... {
//		progress.Set(done)
//	}
//
// An app's error output is a [Writer]: log lines written while a status
// line shows are printed above it, and the line is drawn again below
// them.
package term
