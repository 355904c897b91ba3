package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
	"github.com/navree/navree/testing/apptest"
)

// TestMain says, on a terminal, how many PostgreSQL tests skipped, and
// stops the browser of the browser tests.
func TestMain(m *testing.M) {
	code := dbtest.Main(m)
	stopBrowser()
	os.Exit(code)
}

var ctx = context.Background()

// Export fails every time: its error is the payload's Reason.
type Export struct {
	CompanyID string          `json:"company_id"`
	Reason    string          `json:"reason"`
	Password  string          `json:"password,omitempty"`
	Settings  *ExportSettings `json:"settings,omitempty"`
}

type ExportSettings struct {
	Format string `json:"format"`
	Token  string `json:"Token"` // masked in any letter case
}

func (Export) JobName() string           { return "contacts.export" }
func (Export) JobOptions() queue.Options { return queue.Options{Queue: "exports", MaxAttempts: 1} }

// Reminder runs to success.
type Reminder struct {
	N int `json:"n"`
}

func (Reminder) JobName() string { return "crm.send_reminder" }

// Slow runs until its fixture lets it finish.
type Slow struct{}

func (Slow) JobName() string           { return "reports.build" }
func (Slow) JobOptions() queue.Options { return queue.Options{Queue: "slow"} }

var t0 = time.Date(2026, 3, 2, 9, 30, 0, 0, time.UTC)

type fixture struct {
	q     *queue.Queue
	clock *apptest.Clock
	srv   *httptest.Server
	url   string // the dashboard's URL: the server's, with the prefix

	started chan struct{} // a Slow job started
	finish  chan struct{} // closed: the Slow jobs finish
}

// roleHeader is how the tests' access function is told the role.
const roleHeader = "X-Test-Role"

// byHeader is the tests' access function: the role named by a header.
func byHeader(r *http.Request) dashboard.Role {
	switch r.Header.Get(roleHeader) {
	case "viewer":
		return dashboard.Viewer
	case "operator":
		return dashboard.Operator
	}
	return dashboard.NoAccess
}

// setup builds a queue on the database at dbURL and a dashboard of it
// (on p, its Queue and Clock filled in) served by a test server.
func setup(t *testing.T, dbURL string, p dashboard.Params) *fixture {
	t.Helper()
	return setupWith(t, dbURL, queue.Config{}, p)
}

// queueSets are the migration sets of the queue's tables, and
// scheduleSets those and the schedule's.
var (
	queueSets    = []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}
	scheduleSets = []db.MigrationSet{{Name: "queue", FS: migrations.Queue}, {Name: "schedule", FS: migrations.Schedule}}
)

// setupWith is setup with the queue configured by cfg (its queues set).
func setupWith(t *testing.T, dbURL string, cfg queue.Config, p dashboard.Params) *fixture {
	t.Helper()
	d := dbtest.Open(t, dbURL)
	if _, err := db.NewMigrator(d, queueSets).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	clock := apptest.FixedClock(t0)
	f := &fixture{clock: clock, started: make(chan struct{}, 10), finish: make(chan struct{})}
	q, err := queue.New(queue.Params{
		Config: func() queue.Config { cfg.Queues = []string{"default", "exports"}; return cfg }(),
		DB:     d,
		Clock:  clock})
	if err == nil {
		err = q.Handle(queue.HandlerOf[Export](queue.HandlerFunc[Export](func(_ context.Context, j Export, _ queue.JobContext) error {
			if j.Reason == "snooze" {
				return queue.Snooze(time.Hour)
			}
			return errors.New(j.Reason)
		})),
			queue.HandlerOf[Reminder](queue.HandlerFunc[Reminder](func(context.Context, Reminder, queue.JobContext) error { return nil })),
			queue.HandlerOf[Slow](queue.HandlerFunc[Slow](func(ctx context.Context, _ Slow, _ queue.JobContext) error {
				f.started <- struct{}{}
				select {
				case <-f.finish:
					return nil
				case <-ctx.Done(): // cancelled
					return context.Cause(ctx)
				}
			})))
	}
	if err != nil {
		t.Fatal(err)
	}
	p.Inspector, p.Clock = q.Inspector(), clock
	dash, err := dashboard.New(p)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash)
	t.Cleanup(srv.Close)
	prefix := p.Config.Prefix
	if prefix == "" {
		prefix = "/navree/queue"
	}
	f.q, f.srv, f.url = q, srv, srv.URL+prefix
	return f
}

// running dispatches a Slow job and starts a worker on it, which runs
// until the test ends or the job is cancelled; it returns once the job
// runs, with the job's id and a channel closed when the worker is done.
func (f *fixture) running(t *testing.T) (string, <-chan struct{}) {
	t.Helper()
	id, err := f.q.Dispatch(ctx, Slow{})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = f.q.Work(ctx, queue.WorkOptions{Queues: []string{"slow"}, Once: true})
	}()
	t.Cleanup(func() {
		close(f.finish)
		<-done
	})
	select {
	case <-f.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the Slow job did not start")
	}
	return id, done
}

// failedIn is failed, the jobs on the queue name.
func (f *fixture) failedIn(t *testing.T, name string, reasons ...string) []string {
	t.Helper()
	var ids []string
	for i, reason := range reasons {
		e, err := queue.EnvelopeOf(Export{CompanyID: fmt.Sprint("c", i+1), Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		e.Options.Queue = name
		id, err := f.q.Push(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{name}, Once: true}); err != nil || s.Failed != 1 {
			t.Fatalf("Work = %+v, %v; want one failed", s, err)
		}
		f.clock.Advance(time.Second)
	}
	return ids
}

// operatorSetup is setup with the tests' access function, on SQLite.
func operatorSetup(t *testing.T) *fixture {
	return setup(t, dbtest.MigratedSQLiteURL(t, queueSets...), dashboard.Params{AccessFunc: byHeader})
}

// failed dispatches an Export per reason and runs it, so that each is a
// failed job, a second after the one before, and returns their ids.
func (f *fixture) failed(t *testing.T, reasons ...string) []string {
	t.Helper()
	var ids []string
	for i, reason := range reasons {
		id, err := f.q.Dispatch(ctx, Export{CompanyID: fmt.Sprint("c", i+1), Reason: reason, Password: "hunter2",
			Settings: &ExportSettings{Format: "csv", Token: "tok-secret"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
		if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"exports"}, Once: true}); err != nil || s.Failed != 1 {
			t.Fatalf("Work = %+v, %v; want one failed", s, err)
		}
		f.clock.Advance(time.Second) // each fails a second after the one before
	}
	return ids
}

// reminders dispatches n Reminder jobs and returns their ids.
func (f *fixture) reminders(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id, err := f.q.Dispatch(ctx, Reminder{N: i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// response is an answer of the dashboard, read.
type response struct {
	status   int
	header   http.Header
	body     string
	location string
}

// do sends a request as role ("" for none) and reads the answer without
// following redirects. A POST's form is sent from the dashboard's own
// origin, as a browser sends it.
func (f *fixture) do(t *testing.T, role, method, path string, form url.Values) response {
	t.Helper()
	target := path
	if !strings.HasPrefix(path, "http") {
		target = f.url + path
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", f.srv.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	if role != "" {
		req.Header.Set(roleHeader, role)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: string(b), location: resp.Header.Get("Location")}
}

// get GETs path as role and fails the test unless the status is want.
func (f *fixture) get(t *testing.T, role, path string, want int) string {
	t.Helper()
	r := f.do(t, role, "GET", path, nil)
	if r.status != want {
		t.Fatalf("GET %s as %q: %d, want %d\n%s", path, role, r.status, want, r.body)
	}
	return r.body
}

var (
	blockTags = regexp.MustCompile(`</?(td|th|tr|dt|dd|p|li|div|h\d|pre|table|tbody|thead|br)\b[^>]*>`)
	tags      = regexp.MustCompile(`<[^>]*>`)
	spaces    = regexp.MustCompile(`\s+`)
)

// text is the text of a piece of HTML, as a browser shows it: the tags
// left out (a cell's or a block's as a space), the entities decoded, the
// spaces collapsed.
func text(s string) string {
	s = tags.ReplaceAllString(blockTags.ReplaceAllString(s, " "), "")
	return strings.TrimSpace(spaces.ReplaceAllString(html.UnescapeString(s), " "))
}

// rows are the texts of the table rows of html that have the attribute
// attr (data-queue, data-job), by its value, in order.
func rows(html, attr string) [][2]string {
	re := regexp.MustCompile(`(?s)<tr ` + attr + `="([^"]*)">(.*?)</tr>`)
	var out [][2]string
	for _, m := range re.FindAllStringSubmatch(html, -1) {
		out = append(out, [2]string{m[1], text(m[2])})
	}
	return out
}

// jobIDs are the ids of the job rows of html.
func jobIDs(html string) []string {
	var ids []string
	for _, r := range rows(html, "data-job") {
		ids = append(ids, r[0])
	}
	return ids
}

// ids lists the ids of every job of the queue in state.
func (f *fixture) ids(t *testing.T, state queue.JobState) []string {
	t.Helper()
	var out []string
	page := queue.JobsQuery{State: state, Limit: queue.MaxJobsPage}
	for {
		jobs, next, err := f.q.Inspector().Jobs(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, j := range jobs {
			out = append(out, j.ID)
		}
		if next == "" {
			slices.Sort(out)
			return out
		}
		page.After = next
	}
}

// sorted returns a sorted copy of ids.
func sorted(ids ...string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}
