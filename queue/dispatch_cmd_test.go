package queue_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// TestDispatchAndStatusCommands: queue:dispatch queues a registered type
// from JSON, refusing what does not fit its type and queueing nothing;
// queue:status counts the jobs of each queue.
func TestDispatchAndStatusCommands(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		migrate(t, url)
		overrides := map[string]any{"database.url": url}
		jobs := fx.Options(
			queue.HandleFunc(func(ctx context.Context, _ ExportContacts, _ queue.JobContext) error { return nil }),
			queue.HandleFunc(func(ctx context.Context, _ SyncCalendar, _ queue.JobContext) error { return nil }),
		)
		run := func(args ...string) (string, error) {
			return runApp(t, overrides, args, db.Module(), queue.Module(), jobs)
		}
		if out, err := run("queue:status"); err != nil || out != "No jobs: every queue is empty.\n" {
			t.Fatalf("queue:status on empty queues: %q %v", out, err)
		}
		out, err := run("queue:dispatch", "contacts.export", `{"company_id": "c1", "requested_by": "ada@example.com"}`)
		id := regexp.MustCompile(`[0-9a-f-]{36}`)
		if err != nil || id.ReplaceAllString(out, "ID") != "Queued contacts.export on default: job ID\n" {
			t.Fatalf("queue:dispatch: %q %v", out, err)
		}
		if out, err := run("queue:dispatch", "activities.sync_calendar", `{"user_id": "u1"}`, "--delay", "10m"); err != nil ||
			id.ReplaceAllString(out, "ID") != "Queued activities.sync_calendar on sync, due in 10m0s: job ID\n" {
			t.Fatalf("queue:dispatch --delay: %q %v", out, err)
		}
		if out, err := run("queue:dispatch", "contacts.export", "--queue", "high"); err != nil || !strings.HasPrefix(out, "Queued contacts.export on high: job ") {
			t.Fatalf("queue:dispatch --queue: %q %v", out, err)
		}
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"contacts.export", `{"compny_id": "c1"}`}, `queue: the payload does not decode into contacts.export (queue_test.ExportContacts): json: unknown field "compny_id"`},
			{[]string{"contacts.export", `{"company_id": 7}`}, `queue: the payload does not decode into contacts.export (queue_test.ExportContacts): json: cannot unmarshal number into Go struct field ExportContacts.company_id of type string`},
			{[]string{"contacts.export", `{`}, `queue: the payload does not decode into contacts.export (queue_test.ExportContacts): unexpected EOF`},
			{[]string{"contacts.exprt"}, `queue: unknown job "contacts.exprt": no module registered a handler for it (queue.Register or queue.HandleFunc); did you mean contacts.export? the registered job types are activities.sync_calendar, contacts.export, queue.prune_failed`},
			{[]string{"contacts.export", "--queue", "a,b"}, `queue: invalid queue name "a,b": use 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
			{[]string{}, `queue:dispatch takes a job type and its JSON payload, such as: queue:dispatch contacts.export '{"company_id": "c1"}'; the registered job types are activities.sync_calendar, contacts.export, queue.prune_failed`},
		} {
			if out, err := run(append([]string{"queue:dispatch"}, tt.args...)...); err == nil || err.Error() != tt.want {
				t.Errorf("queue:dispatch %v: %q, %v\nwant: %s", tt.args, out, err, tt.want)
			}
		}
		out, err = run("queue:status")
		want := `QUEUE    WAITING  DELAYED  RUNNING  STALE  FAILED  OLDEST WAITING
default  1        0        0        0      0       0s
high     1        0        0        0      0       0s
sync     0        1        0        0      0       -
`
		if err != nil || regexp.MustCompile(`\d+s\n`).ReplaceAllString(out, "0s\n") != want {
			t.Fatalf("queue:status printed:\n%s(%v)\nwant:\n%s", out, err, want)
		}
		out, err = run("queue:status", "--json")
		var rows []map[string]any
		if err != nil || json.Unmarshal([]byte(out), &rows) != nil || len(rows) != 3 || rows[2]["queue"] != "sync" || rows[2]["delayed"] != 1.0 {
			t.Fatalf("queue:status --json: %q %v", out, err)
		}
		if _, err := run("queue:status", "--watch", "1ms"); err == nil || err.Error() != "queue:status: --watch must be 100ms or more, not 1ms" {
			t.Fatalf("queue:status --watch 1ms: %v", err)
		}
		// A bad --queue fails before any work, printing no summary.
		if out, err := run("queue:work", "--queue", " ", "--stop-when-empty"); err == nil ||
			err.Error() != `queue:work: --queue: queue: invalid queue name "": use 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'` || strings.Contains(out, "Processed") {
			t.Fatalf("queue:work --queue ' ': %q, %v", out, err)
		}
	})
}
