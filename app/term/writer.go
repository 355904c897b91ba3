package term

import (
	"bytes"
	"io"
	"sync"
)

// clearLine moves to the start of the line and clears it.
const clearLine = "\r\x1b[K"

// Writer is an app's error output: it writes what it is given, and on a
// terminal keeps a status line (see [Progress]) below it: the line is
// cleared before each write and drawn again after a write that ends a
// line. Writes are serialised, so lines from several goroutines (the log)
// do not interleave. Off a terminal it writes only what it is given.
type Writer struct {
	mu       sync.Mutex
	out      io.Writer
	terminal bool
	status   string // the status line, "" for none
	midLine  bool   // the last write did not end its line
}

// NewWriter returns a Writer writing to out.
func NewWriter(out io.Writer) *Writer {
	return &Writer{out: out, terminal: IsTerminal(out)}
}

// Terminal reports whether the Writer writes to a terminal.
func (w *Writer) Terminal() bool { return w.terminal }

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.terminal || w.status == "" {
		w.midLine = len(p) > 0 && p[len(p)-1] != '\n' || len(p) == 0 && w.midLine
		return w.out.Write(p)
	}
	var b bytes.Buffer
	if !w.midLine {
		b.WriteString(clearLine)
	}
	b.Write(p)
	w.midLine = len(p) > 0 && p[len(p)-1] != '\n' || len(p) == 0 && w.midLine
	if !w.midLine {
		b.WriteString(w.status)
	}
	if _, err := w.out.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// setStatus shows line as the status line ("" clears it). Off a
// terminal it does nothing.
func (w *Writer) setStatus(line string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.terminal || line == w.status {
		return
	}
	w.status = line
	if w.midLine { // drawn once the line in progress ends
		return
	}
	_, _ = io.WriteString(w.out, clearLine+line)
}
