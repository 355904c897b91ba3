package term

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/navree/navree/app/term/termtest"
)

// TestIsTerminal: a terminal is one (a pseudo-terminal here), and a
// Writer around one; /dev/null (a character device), a pipe, a file and
// a buffer are not.
func TestIsTerminal(t *testing.T) {
	tty := termtest.Open(t).File
	if !IsTerminal(tty) || !IsTerminal(NewWriter(tty)) {
		t.Error("a pseudo-terminal is not taken for a terminal")
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	file, err := os.Create(t.TempDir() + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for name, out := range map[string]any{"/dev/null": null, "a pipe": w, "a file": file, "a buffer": &bytes.Buffer{}, "a Writer around a pipe": NewWriter(w)} {
		if IsTerminal(out.(interface{ Write([]byte) (int, error) })) {
			t.Errorf("%s is taken for a terminal", name)
		}
	}
}

// TestColorOnlyOnATerminalAndNeverWithNoColor: colour needs a terminal,
// NO_COLOR unset or empty and a TERM other than dumb.
func TestColorOnlyOnATerminalAndNeverWithNoColor(t *testing.T) {
	tty := termtest.Open(t).File
	tests := []struct {
		noColor, term string
		out           any
		want          bool
	}{
		{"", "xterm-256color", tty, true},
		{"1", "xterm-256color", tty, false},
		{"", "dumb", tty, false},
		{"", "xterm-256color", &bytes.Buffer{}, false},
	}
	for _, tt := range tests {
		t.Setenv("NO_COLOR", tt.noColor)
		t.Setenv("TERM", tt.term)
		w := tt.out.(interface{ Write([]byte) (int, error) })
		if got := Color(w); got != tt.want {
			t.Errorf("NO_COLOR=%q TERM=%q on %T: Color = %v, want %v", tt.noColor, tt.term, tt.out, got, tt.want)
		}
		want := "failed"
		if tt.want {
			want = "\x1b[31mfailed\x1b[0m"
		}
		if got := Paint(w, Red, "failed"); got != want {
			t.Errorf("NO_COLOR=%q TERM=%q on %T: Paint = %q, want %q", tt.noColor, tt.term, tt.out, got, want)
		}
	}
}

// onTerminal is a Writer that takes buf for a terminal, to read what it
// draws.
func onTerminal(buf *bytes.Buffer) *Writer { return &Writer{out: buf, terminal: true} }

// TestAStatusLineStaysBelowTheLog: lines written while a status line
// shows clear it, print, and draw it again; a line written in pieces is
// not cut by it; Done clears it.
func TestAStatusLineStaysBelowTheLog(t *testing.T) {
	var buf bytes.Buffer
	w := onTerminal(&buf)
	p := NewProgress(w, "Retrying failed jobs", 4000)
	p.Set(4000) // the last is always drawn
	w.Write([]byte("level=INFO msg=one\n"))
	w.Write([]byte("level=INFO "))
	w.Write([]byte("msg=two\n"))
	p.Done()
	w.Write([]byte("Put 4000 failed jobs back on their queues.\n"))
	status := "Retrying failed jobs: 4000/4000 (100%)"
	want := clearLine + status +
		clearLine + "level=INFO msg=one\n" + status +
		clearLine + "level=INFO msg=two\n" + status +
		clearLine +
		"Put 4000 failed jobs back on their queues.\n"
	if got := buf.String(); got != want {
		t.Errorf("drew\n%q\nwant\n%q", got, want)
	}
}

// TestProgressDrawsAtMostTenTimesASecond: updates in between are not
// drawn, but the last one is.
func TestProgressDrawsAtMostTenTimesASecond(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(onTerminal(&buf), "Dispatching", 1000)
	for i := 1; i <= 1000; i++ {
		p.Set(i)
	}
	if n := strings.Count(buf.String(), clearLine); n < 2 || n > 20 {
		t.Errorf("drew %d times for 1000 quick updates, want the first and the last only (and a few if the machine is slow):\n%q", n, buf.String())
	}
	if !strings.HasSuffix(buf.String(), "Dispatching: 1000/1000 (100%)") {
		t.Errorf("the last update is not drawn: %q", buf.String())
	}
}

// TestOffATerminalOnlyWhatIsWritten: no status line, no escape sequence.
func TestOffATerminalOnlyWhatIsWritten(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	p := NewProgress(w, "Migrating", 3)
	p.Set(1)
	p.Show("queue/0002_create_queue_clock")
	w.Write([]byte("line\n"))
	p.Done()
	if buf.String() != "line\n" {
		t.Errorf("wrote %q off a terminal, want only the line", buf.String())
	}
}
