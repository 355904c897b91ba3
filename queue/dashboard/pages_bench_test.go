package dashboard_test

import (
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
	"github.com/navree/navree/queue/internal/benchdata"
	"github.com/navree/navree/testing/apptest"
)

// BenchmarkPages measures each page of the dashboard, through its
// http.Handler, on a million jobs and 100,000 failed ones:
//
//	go test ./queue/dashboard -run '^$' -bench Pages -benchtime 10x
//
// (docs/benchmarks.md, "The dashboard on a million jobs").
func BenchmarkPages(b *testing.B) {
	for _, name := range []string{"sqlite", "postgres"} {
		b.Run(name, func(b *testing.B) {
			url := dbtest.SQLiteURL(b)
			if name == "postgres" {
				url = dbtest.PostgresURL(b)
			}
			benchmarkPages(b, name, url)
		})
	}
}

func benchmarkPages(b *testing.B, name, url string) {
	d := dbtest.Open(b, url)
	if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}).Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	for _, stmt := range benchdata.MillionJobs[name] {
		if _, err := d.DB.DB.ExecContext(ctx, stmt); err != nil {
			b.Fatalf("%s: %v", stmt, err)
		}
	}
	// A job far in: the due job 500,001, some 450,000 into default's
	// waiting jobs; and the failed job 50,001, half way down their list.
	var deepID, failedID string
	if err := d.DB.DB.QueryRowContext(ctx, "SELECT id FROM jobs WHERE queue = 'default' AND reserved_at IS NULL AND available_at = 500001").
		Scan(&deepID); err != nil {
		b.Fatal(err)
	}
	if err := d.DB.DB.QueryRowContext(ctx, "SELECT id FROM failed_jobs WHERE failed_at = 50001").Scan(&failedID); err != nil {
		b.Fatal(err)
	}

	clock := apptest.FixedClock(time.UnixMilli(10_000_000))
	q, err := queue.New(queue.Params{DB: d, Clock: clock})
	if err != nil {
		b.Fatal(err)
	}
	dash, err := dashboard.New(dashboard.Params{Inspector: q.Inspector(), Clock: clock,
		AccessFunc: func(*http.Request) dashboard.Role { return dashboard.Operator }})
	if err != nil {
		b.Fatal(err)
	}
	const p = "/navree/queue"
	get := func(b *testing.B, path string) string {
		rec := httptest.NewRecorder()
		dash.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p+path, nil))
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d, want 200\n%s", path, rec.Code, rec.Body)
		}
		return rec.Body.String()
	}
	nextPage := regexp.MustCompile(`<a href="` + p + `(/jobs\?[^"]*)" id="next-page">`)
	next := func(b *testing.B, body string) string {
		m := nextPage.FindStringSubmatch(body)
		if m == nil {
			b.Fatalf("a page has no next page:\n%s", body)
		}
		return html.UnescapeString(m[1])
	}
	// The page deep in the backlog: from the cursor of the job far in,
	// followed three pages on by the pages' own links.
	deep := "/jobs?state=waiting&after=waiting_500001_" + deepID
	for range 3 {
		deep = next(b, get(b, deep))
	}

	pages := []struct {
		name, path string
		want       string // in the page: it shows what it should
	}{
		{"queues", "/", "100000+"},
		{"queues-partial", "/partials/queues", "data-queue=\"default\""},
		{"jobs-waiting", "/jobs?state=waiting", "data-job="},
		{"jobs-waiting-deep", deep, "data-job="},
		{"jobs-waiting-default", "/jobs?state=waiting&queue=default", "data-job="},
		{"jobs-delayed", "/jobs?state=delayed", "data-job="},
		{"jobs-running", "/jobs?state=running", "data-job="},
		{"job", "/jobs/" + deepID, deepID},
		{"job-failed", "/jobs/" + failedID, failedID},
		{"failed", "/failed", "data-job="},
		{"failed-default", "/failed?queue=default", "data-job="},
		// The bulk confirmations count what matches: from Stats by queue
		// (capped, 100000+), by listing up to 1,000 jobs with a type.
		{"bulk-cancel-queue", "/bulk?action=cancel&state=waiting&queue=default", "100000+"},
		{"bulk-cancel-type", "/bulk?action=cancel&state=waiting&queue=default&type=contacts.export", "1000+"},
		{"bulk-retry-type", "/bulk?action=retry&type=mail.send", "1000+"},
	}
	for _, page := range pages {
		b.Run(page.name, func(b *testing.B) {
			if body := get(b, page.path); !strings.Contains(html.UnescapeString(body), page.want) {
				b.Fatalf("GET %s has no %q:\n%s", page.path, page.want, body)
			}
			for b.Loop() {
				get(b, page.path)
			}
		})
	}
}
