// Package termtest gives tests a real terminal, to check what a command
// draws on one: its status line, its colours.
//
//	tty := termtest.Open(t)
//	a := app.New(mymodule.Module)
//	a.Stderr = tty
//	if err := a.Run(ctx, []string{"contacts:import", "contacts.csv"}); err != nil {
//		t.Fatal(err)
//	}
//	tty.WaitFor(t, "Imported 3 contacts.")
//	got := tty.Output() // as written, escape sequences and all
package termtest

import (
	"bytes"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// TTY is the terminal side of a pseudo-terminal: a command writes to it
// as it would to a person's terminal, and the test reads what it wrote.
type TTY struct {
	*os.File
	mu      sync.Mutex
	out     bytes.Buffer
	written chan struct{} // signalled when output arrives
}

// Open opens a pseudo-terminal for the test, closed when it ends; it
// skips the test where there is none (see openPTY).
func Open(t testing.TB) *TTY {
	t.Helper()
	master, tty, err := openPTY()
	if err != nil {
		t.Skipf("termtest: no pseudo-terminal here: %v", err)
	}
	tt := &TTY{File: tty, written: make(chan struct{}, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			tt.mu.Lock()
			tt.out.Write(buf[:n])
			tt.mu.Unlock()
			select {
			case tt.written <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		tty.Close()
		master.Close()
		<-done
	})
	return tt
}

// Output is what was written so far, as written: the terminal's own
// "\r\n" for each line end turned back into "\n".
func (tt *TTY) Output() string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	return strings.ReplaceAll(tt.out.String(), "\r\n", "\n")
}

// WaitFor waits until the output holds want, and fails the test if it
// does not within five seconds: what is written to the terminal reaches
// the test a moment later.
func (tt *TTY) WaitFor(t testing.TB, want string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for !strings.Contains(tt.Output(), want) {
		select {
		case <-tt.written:
		case <-deadline:
			t.Fatalf("termtest: the terminal never showed %q; it showed:\n%q", want, tt.Output())
		}
	}
}
