package queue_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term/termtest"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// TestQueueWorkOnATerminal: on a terminal, queue:work draws a status
// line of its attempts so far, clears it when it stops, and colours the
// failures of its summary red, unless NO_COLOR is set; off a terminal the
// summary is plain (TestDemo and the process tests read it so).
func TestQueueWorkOnATerminal(t *testing.T) {
	url := dbtest.SQLiteURL(t)
	migrate(t, url)
	failing := queue.HandleFunc(func(ctx context.Context, _ ExportContacts, _ queue.JobContext) error {
		return queue.Permanent(errors.New("smtp refused the message"))
	})
	for _, tt := range []struct {
		noColor string
		summary string
	}{
		{"", "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, \x1b[31m1 failed\x1b[0m.\n"},
		{"1", "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 1 failed.\n"},
	} {
		t.Setenv("NO_COLOR", tt.noColor)
		t.Setenv("TERM", "xterm-256color")
		tty := termtest.Open(t)
		a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": url}}), db.Module(), queue.Module(), failing)
		a.Name, a.Stdout, a.Stderr = "crm", tty, tty
		if err := a.Run(context.Background(), []string{"queue:dispatch", "contacts.export", "{}"}); err != nil {
			t.Fatal(err)
		}
		if err := a.Run(context.Background(), []string{"queue:work", "--stop-when-empty"}); err != nil {
			t.Fatal(err)
		}
		tty.WaitFor(t, tt.summary)
		out := tty.Output()
		status := "\r\x1b[KWorking: 1 attempt(s): 0 succeeded, 0 released for retry, 1 failed"
		if !strings.Contains(out, status) || !strings.Contains(out, "\r\x1b[K"+tt.summary) {
			t.Errorf("NO_COLOR=%q: the terminal showed\n%q\nwant the status line %q, cleared before the summary %q", tt.noColor, out, status, tt.summary)
		}
	}
}
