package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
	"github.com/navree/navree/schedule"
	"github.com/navree/navree/testing/apptest"
)

// scheduleSetup is setup with a scheduler of two entries, whose page the
// dashboard shows.
func scheduleSetup(t *testing.T, dbURL string, access dashboard.AccessFunc) (*fixture, *schedule.Scheduler) {
	t.Helper()
	d := dbtest.Open(t, dbURL)
	if _, err := db.NewMigrator(d, scheduleSets).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	clock := apptest.FixedClock(t0)
	q, err := queue.New(queue.Params{Config: queue.Config{Queues: []string{"default"}}, DB: d, Clock: clock})
	if err == nil {
		err = q.Handle(queue.HandlerOf[Reminder](queue.HandlerFunc[Reminder](func(_ context.Context, _ Reminder, _ queue.JobContext) error { return nil })))
	}
	if err != nil {
		t.Fatal(err)
	}
	s, err := schedule.New(schedule.Params{DB: d, Dispatcher: q, Clock: clock, Entries: []schedule.Entry{
		schedule.CronEntry("crm.reminders", "0 9 * * *", Reminder{N: 1}),
		schedule.EveryEntry("crm.sync", 30*time.Second, Reminder{N: 2}, schedule.Options(queue.Options{Queue: "sync"})),
	}})
	if err != nil {
		t.Fatal(err)
	}
	dash, err := dashboard.New(dashboard.Params{Inspector: q.Inspector(), Pages: []dashboard.Page{schedule.DashboardPage(s)}, AccessFunc: access, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(dash)
	t.Cleanup(srv.Close)
	return &fixture{q: q, clock: clock, srv: srv, url: srv.URL + "/navree/queue"}, s
}

// TestSchedulesPage: the page lists each entry with its schedule, next
// tick, last claimed tick (linked to its job) and job; an operator's
// "Run now" dispatches the entry's job and says which; a viewer has no
// button and is refused the action.
func TestSchedulesPage(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, scheduleSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f, s := scheduleSetup(t, dbURL, byHeader)
		body := f.get(t, "viewer", "/schedules", http.StatusOK)
		want := [][2]string{
			{"crm.reminders", "crm.reminders 0 9 * * * UTC 2026-03-03 09:00:00 UTC in 23h30m0s never crm.send_reminder on the default queue"},
			{"crm.sync", "crm.sync every 30s 2026-03-02 09:30:30 UTC in 30s never crm.send_reminder on sync"},
		}
		if got := rows(body, "data-entry"); !slices.Equal(got, want) {
			t.Errorf("rows:\n%q\nwant\n%q", got, want)
		}
		if strings.Contains(body, `id="run-`) || !strings.Contains(body, `aria-current="page">Schedules</a>`) {
			t.Errorf("a viewer's page: a Run now button, or no current Schedules link:\n%s", body)
		}

		// A tick claimed by a scheduler shows, linked to its job.
		f.clock.Advance(24 * time.Hour)
		done, err := s.RunDue(ctx)
		if err != nil || len(done) != 2 {
			t.Fatalf("RunDue = %+v, %v", done, err)
		}
		body = f.get(t, "operator", "/schedules", http.StatusOK)
		for _, d := range done {
			if !strings.Contains(body, `<a class="job-link" href="/navree/queue/jobs/`+d.JobID+`">job `+d.JobID+`</a>`) {
				t.Errorf("no link to the job %s of %s's last tick:\n%s", d.JobID, d.Entry, body)
			}
		}
		if got := rows(body, "data-entry")[0][1]; !strings.Contains(got, " 2026-03-03 09:00:00 UTC job ") || !strings.HasSuffix(got, "Run now") {
			t.Errorf("crm.reminders after its tick: %q", got)
		}

		// Run now.
		r := f.do(t, "operator", "POST", "/schedules/crm.reminders/run", url.Values{"back": {"/navree/queue/schedules"}})
		m := regexp.MustCompile(`^/navree/queue/schedules\?done=run&done_entry=crm\.reminders&done_job=([0-9a-f-]{36})&done_page=schedules&n=1$`).FindStringSubmatch(r.location)
		if r.status != http.StatusSeeOther || m == nil {
			t.Fatalf("POST run: %d to %q\n%s", r.status, r.location, r.body)
		}
		if job, err := f.q.Inspector().Job(ctx, m[1]); err != nil || job.Name != "crm.send_reminder" || job.Queue != "default" {
			t.Fatalf("the job run now: %+v, %v", job, err)
		}
		body = f.get(t, "operator", strings.TrimPrefix(r.location, "/navree/queue"), http.StatusOK)
		if !strings.Contains(body, `role="status">Dispatched the job of crm.reminders now: job `+m[1]+`.</p>`) {
			t.Errorf("the page after Run now does not say so:\n%s", body)
		}

		// A forged flash says nothing: the entry's name and the job's id are checked.
		for _, forged := range []string{"?done=run&done_page=schedules&done_entry=Pay+now+at+evil.example&done_job=" + m[1] + "&n=1",
			"?done=run&done_page=schedules&done_entry=crm.reminders&done_job=not-an-id&n=1"} {
			if body := f.get(t, "operator", "/schedules"+forged, http.StatusOK); strings.Contains(body, `id="flash"`) && !strings.Contains(body, "it gave no job") {
				t.Errorf("a forged flash %s is shown:\n%s", forged, body)
			}
		}
		if r := f.do(t, "viewer", "POST", "/schedules/crm.reminders/run", url.Values{}); r.status != http.StatusForbidden {
			t.Errorf("a viewer's Run now: %d", r.status)
		}
		if r := f.do(t, "operator", "POST", "/schedules/crm.nope/run", url.Values{}); r.status != http.StatusNotFound ||
			!strings.Contains(r.body, "The app schedules no entry &#34;crm.nope&#34;.") {
			t.Errorf("Run now of no entry: %d\n%s", r.status, r.body)
		}
	})
}

// TestNoSchedulesPageWithoutAScheduler: a dashboard without a scheduler
// has no schedules page and no link to one.
func TestNoSchedulesPageWithoutAScheduler(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	f.get(t, "operator", "/schedules", http.StatusNotFound)
	if body := f.get(t, "operator", "/", http.StatusOK); strings.Contains(body, "/schedules") {
		t.Errorf("a link to the schedules page:\n%s", body)
	}
}

// TestBrowserRunAScheduleEntryNow: in the browser, Run now dispatches the
// entry's job and the page says which, within the page's
// Content-Security-Policy.
func TestBrowserRunAScheduleEntryNow(t *testing.T) {
	ctx := tab(t)
	f, _ := scheduleSetup(t, dbtest.SQLiteURL(t), func(*http.Request) dashboard.Role { return dashboard.Operator })
	row := `tr[data-entry="crm.reminders"]`
	do(t, ctx, chromedp.Navigate(f.url+"/schedules"), chromedp.WaitVisible(chromedp.CSS(row)),
		chromedp.Click(chromedp.CSS(row+" button")), chromedp.WaitVisible(chromedp.ID("flash")))
	got := textOf(t, ctx, "#flash")
	m := regexp.MustCompile(`^Dispatched the job of crm\.reminders now: job ([0-9a-f-]{36})\.$`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("the flash says %q", got)
	}
	if job, err := f.q.Inspector().Job(ctx, m[1]); err != nil || job.Name != "crm.send_reminder" {
		t.Errorf("the job run now: %+v, %v", job, err)
	}
	noViolations(t, ctx)
}
