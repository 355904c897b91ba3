package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// Reindex is a job type without fields.
type Reindex struct{}

func (Reindex) JobName() string { return "search.reindex" }

// TestDispatchAndStatusCommands: queue:dispatch queues a registered type
// from JSON, refusing what does not fit its type (and no JSON for a type
// with fields) and queueing nothing; queue:status counts the jobs of each
// queue.
func TestDispatchAndStatusCommands(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		overrides := map[string]any{"database.url": url}
		jobs := fx.Options(
			queue.HandleFunc(func(ctx context.Context, _ ExportContacts, _ queue.JobContext) error { return nil }),
			queue.HandleFunc(func(ctx context.Context, _ SyncCalendar, _ queue.JobContext) error { return nil }),
			queue.HandleFunc(func(ctx context.Context, _ Reindex, _ queue.JobContext) error { return nil }),
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
			id.ReplaceAllString(out, "ID") != "Queued activities.sync_calendar on sync, due in 10m0s: job ID\n"+
				"Warning: sync is not in queue.queues (high, default), so queue:work leaves it alone: run queue:work --queue sync, or add sync to queue.queues.\n" {
			t.Fatalf("queue:dispatch --delay: %q %v", out, err)
		}
		if out, err := run("queue:dispatch", "contacts.export", `{"company_id": "c2"}`, "--queue", "high"); err != nil || !strings.HasPrefix(out, "Queued contacts.export on high: job ") {
			t.Fatalf("queue:dispatch --queue: %q %v", out, err)
		}
		// A type without fields needs no payload.
		if out, err := run("queue:dispatch", "search.reindex"); err != nil || id.ReplaceAllString(out, "ID") != "Queued search.reindex on default: job ID\n" {
			t.Fatalf("queue:dispatch of a type without fields: %q %v", out, err)
		}
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"contacts.export", `{"compny_id": "c1"}`}, `queue: the payload does not decode into contacts.export (queue_test.ExportContacts): json: unknown field "compny_id"`},
			{[]string{"contacts.export", `{"company_id": 7}`}, `queue: the payload does not decode into contacts.export (queue_test.ExportContacts): json: cannot unmarshal number into Go struct field ExportContacts.company_id of type string`},
			{[]string{"contacts.export", `{`}, `queue: the payload does not decode into contacts.export (queue_test.ExportContacts): unexpected EOF`},
			{[]string{"contacts.exprt"}, `queue: unknown job "contacts.exprt": no module registered a handler for it (queue.Register or queue.HandleFunc; without fx, Queue.Handle); did you mean contacts.export? the registered job types are activities.sync_calendar, contacts.export, queue.prune_failed, search.reindex`},
			{[]string{"contacts.export"}, `queue:dispatch: contacts.export takes a payload: give it as JSON, such as: crm queue:dispatch contacts.export '{"company_id": "", "requested_by": ""}'`},
			{[]string{"contacts.export", " ", "--delay", "1m"}, `queue:dispatch: contacts.export takes a payload: give it as JSON, such as: crm queue:dispatch contacts.export '{"company_id": "", "requested_by": ""}'`},
			{[]string{"contacts.export", "{}", "--queue", "a,b"}, `queue: invalid queue name "a,b": use 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
			{[]string{}, `queue:dispatch takes a job type and its JSON payload, such as: queue:dispatch contacts.export '{"company_id": "c1"}'; the registered job types are activities.sync_calendar, contacts.export, queue.prune_failed, search.reindex`},
		} {
			if out, err := run(append([]string{"queue:dispatch"}, tt.args...)...); err == nil || err.Error() != tt.want {
				t.Errorf("queue:dispatch %v: %q, %v\nwant: %s", tt.args, out, err, tt.want)
			}
		}
		out, err = run("queue:status")
		want := `QUEUE    WAITING  DELAYED  RUNNING  STALE  FAILED  OLDEST WAITING
default  2        0        0        0      0       0s
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

// TestQueueWorkSaysWhatItWorks: queue:work starts with a line naming its
// queues, its workers, its driver and its database, the password of the
// database's URL masked.
func TestQueueWorkSaysWhatItWorks(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		shown := url
		if strings.HasPrefix(url, "postgres://") { // trust authentication accepts any password
			user, _, _ := strings.Cut(strings.TrimPrefix(url, "postgres://"), "@")
			url = strings.Replace(url, user+"@", user+":hunter2@", 1)
			shown = strings.Replace(url, ":hunter2@", ":xxxxx@", 1)
		}
		summary := "Processed 0 job attempt(s): 0 succeeded, 0 released for retry, 0 failed.\n"
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"--stop-when-empty"}, "Working queues high, default with 4 workers (database driver, " + shown + ").\n"},
			{[]string{"--queue", "exports", "--workers", "1", "--stop-when-empty"}, "Working queues exports with 1 worker (database driver, " + shown + ").\n"},
			{[]string{"--queue", "mail,default", "--once"}, "Working queues mail, default with 1 worker (database driver, " + shown + ").\n"},
		} {
			out, err := runApp(t, map[string]any{"database.url": url}, append([]string{"queue:work"}, tt.args...), db.Module(), queue.Module())
			if err != nil || out != tt.want+summary || strings.Contains(out, "hunter2") {
				t.Errorf("queue:work %v printed:\n%s(%v)\nwant:\n%s%s", tt.args, out, err, tt.want, summary)
			}
		}
	})
	out, err := runApp(t, map[string]any{"queue.driver": "memory", "queue.workers": 10}, []string{"queue:work", "--stop-when-empty"}, queue.Module())
	if want := "Working queues high, default with 10 workers (memory driver).\n"; err != nil || !strings.HasPrefix(out, want) {
		t.Errorf("queue:work on the memory driver printed:\n%s(%v)\nwant it to start with %q", out, err, want)
	}
}

// TestAQueueNoWorkerTakesIsFlagged: a job queued on a queue that
// queue.queues leaves out waits for a worker started with --queue:
// queue:dispatch warns of it, queue:status marks the queue while jobs
// wait on it and none runs, and queue:retry says so of the jobs it puts
// back there.
func TestAQueueNoWorkerTakesIsFlagged(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		failing := queue.HandleFunc(func(ctx context.Context, _ ExportContacts, _ queue.JobContext) error {
			return queue.Permanent(errors.New("no such company"))
		})
		run := func(overrides map[string]any, args ...string) string {
			t.Helper()
			overrides["database.url"] = url
			out, err := runApp(t, overrides, args, db.Module(), queue.Module(), failing)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			return regexp.MustCompile(`[0-9a-f-]{36}`).ReplaceAllString(out, "ID")
		}
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"contacts.export", "{}"}, "Queued contacts.export on default: job ID\n"},
			{[]string{"contacts.export", "{}", "--queue", "exports"}, "Queued contacts.export on exports: job ID\n" +
				"Warning: exports is not in queue.queues (high, default), so queue:work leaves it alone: run queue:work --queue exports, or add exports to queue.queues.\n"},
			{[]string{"contacts.export", "{}", "--queue", "reports"}, "Queued contacts.export on reports: job ID\n" +
				"Warning: reports is not in queue.queues (high, default), so queue:work leaves it alone: run queue:work --queue reports, or add reports to queue.queues.\n"},
			{[]string{"contacts.export", "{}", "--queue", "later", "--delay", "1h"}, "Queued contacts.export on later, due in 1h0m0s: job ID\n" +
				"Warning: later is not in queue.queues (high, default), so queue:work leaves it alone: run queue:work --queue later, or add later to queue.queues.\n"},
		} {
			if out := run(map[string]any{}, append([]string{"queue:dispatch"}, tt.args...)...); out != tt.want {
				t.Errorf("queue:dispatch %v printed:\n%s\nwant:\n%s", tt.args, out, tt.want)
			}
		}
		// A queue with jobs waiting is marked; one whose jobs are all
		// delayed is not yet.
		status := `QUEUE                WAITING  DELAYED  RUNNING  STALE  FAILED  OLDEST WAITING
default              1        0        0        0      0       0s
exports (no worker)  1        0        0        0      0       0s
later                0        1        0        0      0       -
reports (no worker)  1        0        0        0      0       0s
exports and reports are not in queue.queues (high, default), so queue:work leaves them alone: run queue:work --queue exports,reports, or add them to queue.queues.
`
		if out := run(map[string]any{}, "queue:status"); regexp.MustCompile(`\d+s\n`).ReplaceAllString(out, "0s\n") != status {
			t.Fatalf("queue:status printed:\n%s\nwant:\n%s", out, status)
		}
		var rows []struct {
			Queue    string `json:"queue"`
			Unworked bool   `json:"unworked"`
		}
		if err := json.Unmarshal([]byte(run(map[string]any{}, "queue:status", "--json")), &rows); err != nil ||
			fmt.Sprint(rows) != "[{default false} {exports true} {later false} {reports true}]" {
			t.Fatalf("queue:status --json: %v, %v", rows, err)
		}
		// Listed in queue.queues, the queue is worked: no warning, no mark.
		with := map[string]any{"queue.queues": []string{"high", "default", "exports"}}
		if out := run(with, "queue:dispatch", "contacts.export", "{}", "--queue", "exports"); out != "Queued contacts.export on exports: job ID\n" {
			t.Errorf("queue:dispatch to a worker queue printed:\n%s", out)
		}
		if out := run(with, "queue:status"); !regexp.MustCompile(`\nexports +2 `).MatchString(out) || !strings.Contains(out, "\nreports (no worker)  1 ") ||
			!strings.HasSuffix(out, "\nreports is not in queue.queues (high, default, exports), so queue:work leaves it alone: run queue:work --queue reports, or add reports to queue.queues.\n") {
			t.Errorf("queue:status with exports in queue.queues printed:\n%s", out)
		}
		// Worked with --queue, its jobs fail; put back, they wait again.
		run(map[string]any{}, "queue:work", "--queue", "exports,reports", "--stop-when-empty")
		if out := run(map[string]any{}, "queue:retry", "all"); out != "Put 3 failed jobs back on their queues: they run when a worker takes them (start queue:work if none is running).\n"+
			"exports and reports are not in queue.queues (high, default), so queue:work leaves them alone: run queue:work --queue exports,reports, or add them to queue.queues.\n" {
			t.Errorf("queue:retry all printed:\n%s", out)
		}
		run(map[string]any{}, "queue:work", "--queue", "reports", "--stop-when-empty")
		failed, err := runApp(t, map[string]any{"database.url": url}, []string{"queue:failed"}, db.Module(), queue.Module(), failing)
		_, row, _ := strings.Cut(failed, "\n") // below the header
		if err != nil || len(strings.Fields(row)) == 0 {
			t.Fatalf("queue:failed: %q, %v", failed, err)
		}
		if out := run(map[string]any{}, "queue:retry", strings.Fields(row)[0]); out != "Put 1 failed job back on its queue: it runs when a worker takes it (start queue:work if none is running).\n"+
			"reports is not in queue.queues (high, default), so queue:work leaves it alone: run queue:work --queue reports, or add reports to queue.queues.\n" {
			t.Errorf("queue:retry ID printed:\n%s", out)
		}
	})
}
