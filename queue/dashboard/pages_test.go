package dashboard_test

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

func TestQueuesPageCountsEachQueue(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		if got := rows(f.get(t, "viewer", "/", http.StatusOK), "data-queue"); len(got) != 0 {
			t.Fatalf("with no jobs the queues page has rows %q", got)
		}
		f.failed(t, "boom", "bang")
		f.reminders(t, 3)
		if _, err := f.q.Later(ctx, Reminder{N: 99}, 10*time.Minute); err != nil {
			t.Fatal(err)
		}
		f.running(t)
		f.clock.Advance(90 * time.Second)

		body := f.get(t, "viewer", "/", http.StatusOK)
		// 4 jobs in default, 2 failed in exports (finished in the last 5
		// minutes: 0.4 a minute), 1 running in slow, whose reservation is
		// stale after its 60 s timeout and 30 s more.
		want := [][2]string{
			{"default", "default 3 1 0 0 1m30s 0/min"},
			{"exports", "exports 0 0 0 2 — 0.4/min 0.4/min failed"},
			{"slow", "slow 0 0 1 (1 stale) 0 — 0/min"},
		}
		if got := rows(body, "data-queue"); !slices.Equal(got, want) {
			t.Errorf("rows of the queues page:\n%q\nwant\n%q", got, want)
		}
		if total := text(regexp.MustCompile(`(?s)<tr class="total">.*?</tr>`).FindString(body)); total != "all 3 1 1 2 1m30s" {
			t.Errorf("total row %q, want %q", total, "all 3 1 1 2 1m30s")
		}
		// The counts link to the lists they count.
		for _, link := range []string{`href="/navree/queue/jobs?queue=default&amp;state=waiting"`, `href="/navree/queue/failed?queue=exports"`} {
			if !strings.Contains(body, link) {
				t.Errorf("the queues page has no link %s", link)
			}
		}
		// The table polls its own partial.
		if !strings.Contains(body, `<tbody id="queue-rows" hx-get="/navree/queue/partials/queues" hx-trigger="every 5000ms" hx-swap="outerHTML">`) {
			t.Errorf("the queues table does not poll:\n%s", body)
		}
		partial := f.get(t, "viewer", "/partials/queues", http.StatusOK)
		if got := rows(partial, "data-queue"); !slices.Equal(got, want) || strings.Contains(partial, "<html") {
			t.Errorf("the partial's rows %q, or it is a whole page:\n%s", got, partial)
		}
	})
}

// TestQueuesPageMarksAQueueNoWorkerTakes: a queue with jobs waiting,
// none running, that queue.queues leaves out is marked "no worker",
// with what to do.
func TestQueuesPageMarksAQueueNoWorkerTakes(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader}) // queue.queues: default, exports
		f.reminders(t, 1)
		e, err := queue.EnvelopeOf(Reminder{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		e.Options.Queue, e.Options.Priority = "reports", 3
		if _, err := f.q.Push(ctx, e); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute)
		body := f.get(t, "viewer", "/", http.StatusOK)
		want := [][2]string{{"default", "default 1 0 0 0 1m0s 0/min"}, {"reports", "reports no worker by priority 1 0 0 0 1m0s 0/min"}}
		if got := rows(body, "data-queue"); !slices.Equal(got, want) {
			t.Errorf("rows of the queues page:\n%q\nwant\n%q", got, want)
		}
		if mark := `<span class="paused" title="reports is not in queue.queues, so queue:work leaves it alone: run queue:work --queue reports, or add reports to queue.queues.">no worker</span>`; !strings.Contains(body, mark) {
			t.Errorf("the queues page lacks %s:\n%s", mark, body)
		}
		if mark := `<span class="mark" title="Jobs with a priority wait on reports: workers take them first, highest first.">by priority</span>`; !strings.Contains(body, mark) {
			t.Errorf("the queues page lacks %s:\n%s", mark, body)
		}
	})
}

// TestDoneComesFromTheWorkers: the queues page shows what the workers
// finished a minute over the last five minutes (Inspector.Throughput), and
// of it what failed for good.
func TestDoneComesFromTheWorkers(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	done := func() map[string]string {
		out := map[string]string{}
		for _, r := range rows(f.get(t, "viewer", "/partials/queues", http.StatusOK), "data-queue") {
			fields := strings.Fields(r[1])
			out[r[0]] = strings.Join(fields[6:], " ")
		}
		return out
	}
	f.reminders(t, 30)
	if got := done()["default"]; got != "0/min" {
		t.Errorf("done before any worker ran: %q, want 0/min", got)
	}
	if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"default"}, MaxJobs: 16}); err != nil || s.Succeeded != 16 {
		t.Fatalf("Work = %+v, %v", s, err)
	}
	f.failed(t, "boom", "bang", "crash")
	if got := done(); got["default"] != "3.2/min" || got["exports"] != "0.6/min 0.6/min failed" {
		t.Errorf("done after 16 jobs and 3 failures: %q, want default 3.2/min and exports 0.6/min 0.6/min failed", got)
	}
	f.clock.Advance(6 * time.Minute) // out of the window
	if got := done()["default"]; got != "0/min" {
		t.Errorf("done six minutes on: %q, want 0/min", got)
	}
}

// link is the href of the element of body with the id, unescaped; ""
// when there is none.
func link(t *testing.T, body, id string) string {
	t.Helper()
	tag := regexp.MustCompile(`<a [^>]*\bid="` + id + `"[^>]*>`).FindString(body)
	m := regexp.MustCompile(`\bhref="([^"]*)"`).FindStringSubmatch(tag)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

func TestJobsPagesByCursor(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	ids := f.reminders(t, 120)
	f.failed(t, "boom")

	var seen []string
	next := "/jobs?state=waiting"
	for page := 0; next != ""; page++ {
		body := f.get(t, "viewer", strings.TrimPrefix(next, "/navree/queue"), http.StatusOK)
		got := jobIDs(body)
		if want := []int{50, 50, 20}[page]; len(got) != want {
			t.Fatalf("page %d has %d jobs, want %d", page+1, len(got), want)
		}
		if first := link(t, body, "first-page"); (page > 0) != (first == "/navree/queue/jobs?state=waiting") {
			t.Errorf("page %d: first-page link %q", page+1, first)
		}
		seen = append(seen, got...)
		next = link(t, body, "next-page")
	}
	if !slices.Equal(seen, ids) {
		t.Errorf("the pages list %d jobs, not the 120 in the order they run", len(seen))
	}

	// The row of a job: its id, type, queue, attempts, due time.
	body := f.get(t, "viewer", "/jobs?state=waiting", http.StatusOK)
	if got, want := rows(body, "data-job")[0], [2]string{ids[0], ids[0][len(ids[0])-12:] + " crm.send_reminder default 0/3 2026-03-02 09:30:00Z"}; got != want {
		t.Errorf("first row %q, want %q", got, want)
	}
	if tab := text(regexp.MustCompile(`(?s)<a [^>]*id="tab-waiting">.*?</a>`).FindString(body)); tab != "waiting 120" {
		t.Errorf("the waiting tab says %q, want %q", tab, "waiting 120")
	}

	tests := []struct {
		path string
		want int // jobs listed
	}{
		{"/jobs?state=waiting&type=crm.send_reminder&queue=default", 50},
		{"/jobs?state=waiting&type=contacts.export", 0},
		{"/jobs?state=waiting&queue=exports", 0},
		{"/jobs?state=failed&queue=exports", 1},
		{"/failed?type=contacts.export", 1},
		{"/failed?queue=default", 0},
	}
	for _, tt := range tests {
		if got := jobIDs(f.get(t, "viewer", tt.path, http.StatusOK)); len(got) != tt.want {
			t.Errorf("GET %s lists %d jobs, want %d", tt.path, len(got), tt.want)
		}
	}
	// What the queue refuses is a bad request, and says why.
	for _, path := range []string{"/jobs?state=done", "/jobs?state=waiting&after=yesterday", "/jobs?queue=no+spaces", "/failed?after=waiting_1_x"} {
		if body := f.get(t, "viewer", path, http.StatusBadRequest); !strings.Contains(body, "invalid jobs query") {
			t.Errorf("GET %s does not say what is wrong:\n%s", path, body)
		}
	}
}

func TestEverythingShownIsEscaped(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	ids := f.failed(t, `<script>alert("boom")</script>`)
	for _, path := range []string{"/failed", "/jobs/" + ids[0] + "?state=failed", "/jobs?state=failed&type=%3Cb%3Ex"} {
		body := f.get(t, "viewer", path, http.StatusOK)
		if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>x") {
			t.Errorf("GET %s shows markup unescaped:\n%s", path, body)
		}
	}
	if body := f.get(t, "viewer", "/failed", http.StatusOK); !strings.Contains(body, `&lt;script&gt;alert(&#34;boom&#34;)&lt;/script&gt;`) {
		t.Errorf("the error is not shown, escaped:\n%s", body)
	}
}

// facts is the text of a job page's facts.
func facts(body string) string {
	return text(regexp.MustCompile(`(?s)<dl class="job" id="job">.*?</dl>`).FindString(body))
}

// buttons are the ids of the action buttons of a job's page.
func buttons(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<button type="submit"[^>]*\bid="([^"]*)"`).FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// backs are the back fields of a page's forms.
func backs(body string) []string {
	var out []string
	for _, m := range regexp.MustCompile(`<input type="hidden" name="back" value="([^"]*)">`).FindAllStringSubmatch(body, -1) {
		out = append(out, html.UnescapeString(m[1]))
	}
	return out
}

func TestJobPageShowsAttemptsAndError(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	ids := f.failed(t, "the export server said no")
	reminder := f.reminders(t, 1)[0]

	failedList := f.get(t, "viewer", "/failed", http.StatusOK)
	href := html.UnescapeString(regexp.MustCompile(`<a href="(/navree/queue/jobs/` + ids[0] + `[^"]*)"`).FindStringSubmatch(failedList)[1])
	if href != "/navree/queue/jobs/"+ids[0]+"?state=failed" {
		t.Errorf("the list links to %s", href)
	}
	body := f.get(t, "operator", strings.TrimPrefix(href, "/navree/queue"), http.StatusOK)
	want := "Type contacts.export State failed Queue exports Attempts 1 of 1 Backoff exponential, 1s doubling up to 5m Timeout 1m " +
		"Unique no: a failed job holds no unique key Dispatched 2026-03-02 09:30:00Z Failed 2026-03-02 09:30:00Z Payload 126 bytes"
	if got := facts(body); got != want {
		t.Errorf("the job's facts:\n%s\nwant\n%s", got, want)
	}
	if !strings.Contains(body, `<pre class="err" id="job-error">the export server said no</pre>`) {
		t.Errorf("the job's page does not show its error:\n%s", body)
	}
	if strings.Contains(body, "company_id") || strings.Contains(body, "hunter2") {
		t.Errorf("the payload is shown before it is asked for:\n%s", body)
	}
	if got := buttons(body); !slices.Equal(got, []string{"retry", "delete"}) {
		t.Errorf("a failed job's buttons: %v, want retry and delete", got)
	}
	if got := link(t, body, "back"); got != "/navree/queue/jobs?state=failed" {
		t.Errorf("the back link goes to %s", got)
	}

	// Without the list's query, the page is the same, and goes back to
	// the list of the job's state.
	body = f.get(t, "operator", "/jobs/"+reminder, http.StatusOK)
	want = "Type crm.send_reminder State waiting Queue default Attempts 0 of 3 Backoff exponential, 1s doubling up to 5m Timeout 1m " +
		"Unique no Dispatched 2026-03-02 09:30:01Z Due 2026-03-02 09:30:01Z Payload 7 bytes"
	if got := facts(body); got != want {
		t.Errorf("a waiting job's facts:\n%s\nwant\n%s", got, want)
	}
	if got := buttons(body); !slices.Equal(got, []string{"cancel"}) {
		t.Errorf("a waiting job's buttons: %v, want cancel", got)
	}
	if got := link(t, body, "back"); got != "/navree/queue/jobs?state=waiting" {
		t.Errorf("the back link goes to %s", got)
	}
	if got := link(t, body, "show-payload"); got != "/navree/queue/jobs/"+reminder+"?payload=show&state=waiting" {
		t.Errorf("a waiting job's Show payload links to %q", got)
	}
	if body := f.get(t, "viewer", "/jobs/"+reminder, http.StatusOK); len(buttons(body)) != 0 {
		t.Errorf("a viewer is shown buttons on a job's page:\n%s", body)
	}
}

// An attempt interrupted by its worker's stop is in the job's timeline,
// its number given back to the next.
func TestJobPageShowsAnInterruptedAttempt(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	id, err := f.q.Dispatch(ctx, Slow{})
	if err != nil {
		t.Fatal(err)
	}
	now := make(chan struct{})
	done := make(chan queue.WorkStats)
	go func() { s, _ := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"slow"}, StopNow: now}); done <- s }()
	<-f.started
	close(now)
	if s := <-done; s.Interrupted != 1 {
		t.Fatalf("Work = %+v; want the job interrupted", s)
	}
	body := f.get(t, "operator", "/jobs/"+id, http.StatusOK)
	step := regexp.MustCompile(`<li class="step interrupted" data-attempt="1"><span class="n">1</span> <span class="what">([^<]*)</span> <span class="t">[^<]*</span>`).FindStringSubmatch(body)
	if step == nil || step[1] != "interrupted: its worker stopped; the attempt not spent" {
		t.Errorf("the timeline shows no interrupted attempt:\n%s", body)
	}
}

// A job that snoozed says how many times.
func TestJobPageShowsSnoozes(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	id, err := f.q.Dispatch(ctx, Export{Reason: "snooze"})
	if err != nil {
		t.Fatal(err)
	}
	if s, err := f.q.RunPending(ctx); err != nil || s.Snoozed != 1 {
		t.Fatalf("RunPending: %+v, %v; want a snooze", s, err)
	}
	body := f.get(t, "operator", "/jobs/"+id, http.StatusOK)
	if got := facts(body); !strings.Contains(got, " Attempts 0 of 1 Snoozed 1 time(s), its attempts not spent Backoff ") {
		t.Errorf("the snoozed job's facts: %s", got)
	}
}

// A debounced job says so, and not that it is unique.
func TestJobPageShowsDebounce(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	e, err := queue.EnvelopeOf(Reminder{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Options.Debounce, e.Keys.Debounce = queue.Debounce{For: time.Minute}, "reminder:1"
	id, err := f.q.Push(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	body := f.get(t, "operator", "/jobs/"+id, http.StatusOK)
	if got := facts(body); !strings.Contains(got, " Debounced yes: a dispatch of its key replaces it while it waits Backoff ") ||
		!strings.Contains(got, " Unique no ") {
		t.Errorf("the debounced job's facts: %s", got)
	}
}

// A job held by its concurrency limit says so, and its queue is marked
// with the jobs held.
func TestJobPageShowsAHeldJob(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	var ids []string
	for n := range 3 {
		e, err := queue.EnvelopeOf(Reminder{N: n})
		if err != nil {
			t.Fatal(err)
		}
		e.Options.ConcurrencyLimit, e.Keys.Concurrency = 1, "account:42"
		id, err := f.q.Push(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	body := f.get(t, "operator", "/jobs/"+ids[2], http.StatusOK)
	if got := facts(body); !strings.Contains(got, "State held ") ||
		!strings.Contains(got, " Limit 1 at once of account:42: held until a job of its key ends Backoff ") {
		t.Errorf("the held job's facts: %s", got)
	}
	if got := facts(f.get(t, "operator", "/jobs/"+ids[0], http.StatusOK)); !strings.Contains(got, " Limit 1 at once of account:42 Backoff ") {
		t.Errorf("the waiting limited job's facts: %s", got)
	}
	queues := f.get(t, "viewer", "/", http.StatusOK)
	if mark := `<span class="mark" title="Jobs of default held by their concurrency limits: each goes in once a job of its key ends.">2 held by limits</span>`; !strings.Contains(queues, mark) {
		t.Errorf("the queues page lacks %s:\n%s", mark, queues)
	}
}

// A queue whose jobs wait for a full rate limit is marked throttled, with
// the key, its rate and when it reopens; a job's page shows its limit.
func TestAThrottledQueueIsMarked(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	e, err := queue.EnvelopeOf(Reminder{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Options.RateLimit, e.Keys.Rate = queue.Rate{Max: 1, Per: time.Hour}, "api:7"
	id, err := f.q.Push(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	queues := f.get(t, "viewer", "/", http.StatusOK)
	if strings.Contains(queues, "throttled") {
		t.Fatalf("a queue is marked throttled before any window is full:\n%s", queues)
	}
	if wait, err := f.q.Meter(ctx, "api:7", queue.Rate{Max: 1, Per: time.Hour}); err != nil || wait != 0 {
		t.Fatalf("Meter = %s, %v; want the window's one call taken", wait, err)
	}
	queues = f.get(t, "viewer", "/", http.StatusOK)
	mark := regexp.MustCompile(`<span class="mark" title="Its jobs wait, spending no attempt, for rate limits whose window is full: api:7 \(1/1h0m0s\) reopens (\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ);">throttled until (\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ)</span>`)
	if m := mark.FindStringSubmatch(queues); m == nil || m[1] != m[2] {
		t.Errorf("the queues page lacks the throttled mark:\n%s", queues)
	}
	if got := facts(f.get(t, "operator", "/jobs/"+id, http.StatusOK)); !strings.Contains(got, " Rate limit 1 per 1h0m0s of api:7 ") {
		t.Errorf("the rate-limited job's facts: %s", got)
	}
}

// A job's page shows the group a Fair job takes its turns by.
func TestAFairJobsPageShowsItsGroup(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	e, err := queue.EnvelopeOf(Reminder{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Options.Fair, e.Keys.Fairness = true, "account:<42>"
	id, err := f.q.Push(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	page := f.get(t, "viewer", "/jobs/"+id, http.StatusOK)
	if got := facts(page); !strings.Contains(got, " Fairness in turns with the other groups, as account:<42> ") {
		t.Errorf("the fair job's facts: %s", got)
	}
	if !strings.Contains(page, "<code>account:&lt;42&gt;</code>") {
		t.Errorf("the group is not escaped on the page:\n%s", page)
	}
}

// A job's page shows the options the job was dispatched with.
func TestJobPageShowsItsOptions(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	e, err := queue.EnvelopeOf(Reminder{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.Options = queue.Options{MaxAttempts: 5, Backoff: queue.Fixed(30 * time.Second), Timeout: queue.NoTimeout, UniqueFor: time.Hour, Priority: 7}
	e.Delay, e.Meta = 90*time.Minute, []byte(`{"trace_id":"t-1"}`)
	id, err := f.q.Push(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	body := f.get(t, "operator", "/jobs/"+id+"?state=delayed&queue=default", http.StatusOK)
	want := "Type crm.send_reminder State delayed Queue default Attempts 0 of 5 Priority 7: before the jobs of priority 0 due on its queue " +
		"Backoff fixed 30s Timeout no limit " +
		"Unique yes: it holds its unique key (no job of the same key is stored beside it) " +
		"Dispatched 2026-03-02 09:30:00Z Due 2026-03-02 11:00:00Z Payload 7 bytes, with meta"
	if got := facts(body); got != want {
		t.Errorf("the job's facts:\n%s\nwant\n%s", got, want)
	}
	if got := buttons(body); !slices.Equal(got, []string{"cancel"}) {
		t.Errorf("a delayed job's buttons: %v, want cancel", got)
	}
	if got := backs(body); !slices.Equal(got, []string{"/navree/queue/jobs?queue=default&state=delayed"}) {
		t.Errorf("Cancel goes back to %v", got)
	}
}

// The page looks the job up by its id, wherever it is now: one that
// failed after the list showed it opens as failed, with a failed job's
// buttons, and its back link still goes to the list it was opened from.
func TestJobThatFailedAfterItsListOpensAsFailed(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		id, err := f.q.Dispatch(ctx, Export{CompanyID: "c1", Reason: "the export server said no"})
		if err != nil {
			t.Fatal(err)
		}
		list := f.get(t, "operator", "/jobs?state=waiting&queue=exports", http.StatusOK)
		m := regexp.MustCompile(`<a href="/navree/queue(/jobs/` + id + `[^"]*)"`).FindStringSubmatch(list)
		if m == nil {
			t.Fatalf("the waiting list links to no job %s:\n%s", id, list)
		}
		page := html.UnescapeString(m[1])
		if want := "/jobs/" + id + "?queue=exports&state=waiting"; page != want {
			t.Errorf("the list links to %s, want %s", page, want)
		}
		if body := f.get(t, "operator", page, http.StatusOK); !strings.Contains(facts(body), "State waiting") ||
			!slices.Equal(buttons(body), []string{"cancel"}) {
			t.Errorf("the waiting job's page:\n%s", body)
		}

		if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"exports"}, Once: true}); err != nil || s.Failed != 1 {
			t.Fatalf("Work = %+v, %v; want one failed", s, err)
		}
		body := f.get(t, "operator", page, http.StatusOK)
		if got := facts(body); !strings.Contains(got, "State failed Queue exports Attempts 1 of 1") || !strings.Contains(got, "Failed 2026-03-02 09:30:00Z") {
			t.Errorf("the job's page after it failed:\n%s", got)
		}
		if !strings.Contains(body, `<pre class="err" id="job-error">the export server said no</pre>`) {
			t.Errorf("the failed job's page shows no error:\n%s", body)
		}
		if got := buttons(body); !slices.Equal(got, []string{"retry", "delete"}) {
			t.Errorf("the failed job's buttons: %v, want retry and delete", got)
		}
		if !strings.Contains(body, `href="/navree/queue/failed" aria-current="page"`) {
			t.Errorf("the failed job's page is not under Failed in the navigation:\n%s", body)
		}
		if got := link(t, body, "back"); got != "/navree/queue/jobs?queue=exports&state=waiting" {
			t.Errorf("the back link goes to %s, want the list the job was opened from", got)
		}

		if _, err := f.q.Inspector().Retry(ctx, id); err != nil {
			t.Fatal(err)
		}
		if body := f.get(t, "operator", page, http.StatusOK); !strings.Contains(facts(body), "State waiting") ||
			!slices.Equal(buttons(body), []string{"cancel"}) {
			t.Errorf("the retried job's page:\n%s", facts(body))
		}
	})
}

// A job stored nowhere (it succeeded, was deleted, or never was) is 404,
// saying so, whatever list the URL names.
func TestJobPageOfNoJobIsNotFound(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	succeeded := f.reminders(t, 1)[0]
	if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"default"}, Once: true}); err != nil || s.Succeeded != 1 {
		t.Fatalf("Work = %+v, %v; want one succeeded", s, err)
	}
	deleted := f.failed(t, "boom")[0]
	if err := f.q.Inspector().DeleteFailed(ctx, deleted); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{succeeded, deleted, "0190c0de-0000-7000-8000-000000000000", "not-an-id"} {
		for _, path := range []string{"/jobs/" + id, "/jobs/" + id + "?state=failed&payload=show", "/jobs/" + id + "/payload"} {
			body := f.get(t, "viewer", path, http.StatusNotFound)
			want := "There is no job " + id + ": it succeeded and is not kept (queue.keep_succeeded), was deleted, or never was."
			if got := text(regexp.MustCompile(`(?s)<p class="error" id="error">.*?</p>`).FindString(body)); got != want {
				t.Errorf("GET %s says %q, want %q", path, got, want)
			}
		}
	}
}

// payloadOf is the payload a page or partial shows, and its meta.
func payloadOf(body string) (payload, meta string) {
	if m := regexp.MustCompile(`(?s)<pre class="json" id="payload-json">(.*?)</pre>`).FindStringSubmatch(body); m != nil {
		payload = html.UnescapeString(m[1])
	}
	if m := regexp.MustCompile(`(?s)<pre class="json" id="meta-json">(.*?)</pre>`).FindStringSubmatch(body); m != nil {
		meta = html.UnescapeString(m[1])
	}
	return payload, meta
}

func TestPayloadIsShownWhenAskedWithKeysMasked(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		mask []string
		want string
	}{
		{"by default", nil, `{
  "company_id": "c1",
  "reason": "boom",
  "password": "[masked]",
  "settings": {
    "format": "csv",
    "Token": "[masked]"
  }
}`},
		{"configured", []string{"COMPANY_ID", "format"}, `{
  "company_id": "[masked]",
  "reason": "boom",
  "password": "hunter2",
  "settings": {
    "format": "[masked]",
    "Token": "tok-secret"
  }
}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := setup(t, dbtest.MigratedSQLiteURL(t, queueSets...), dashboard.Params{AccessFunc: byHeader, Config: dashboard.Config{MaskKeys: tt.mask}})
			ids := f.failed(t, "boom")
			page := f.get(t, "viewer", "/jobs/"+ids[0]+"?state=failed", http.StatusOK)
			if got := link(t, page, "show-payload"); got != "/navree/queue/jobs/"+ids[0]+"?payload=show&state=failed" {
				t.Errorf("Show payload links to %q", got)
			}
			if !strings.Contains(page, `hx-get="/navree/queue/jobs/`+ids[0]+`/payload"`) {
				t.Errorf("Show payload fetches no partial:\n%s", page)
			}
			for _, path := range []string{"/jobs/" + ids[0] + "/payload", "/jobs/" + ids[0] + "?state=failed&payload=show", "/jobs/" + ids[0] + "?payload=show"} {
				if got, _ := payloadOf(f.get(t, "viewer", path, http.StatusOK)); got != tt.want {
					t.Errorf("GET %s: payload\n%s\nwant\n%s", path, got, tt.want)
				}
			}
		})
	}
}

// The payload and meta of a job that has not failed are shown too, when
// asked for, masked: a waiting, a delayed and a running job.
func TestPayloadOfAWaitingJobIsShownMasked(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	e, err := queue.EnvelopeOf(Export{CompanyID: "c1", Reason: "boom", Password: "hunter2", Settings: &ExportSettings{Format: "csv", Token: "tok-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	e.Meta = []byte(`{"trace_id":"t-1","token":"meta-secret"}`)
	waiting, err := f.q.Push(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	e.Delay = time.Hour
	delayed, err := f.q.Push(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	wantPayload := `{
  "company_id": "c1",
  "reason": "boom",
  "password": "[masked]",
  "settings": {
    "format": "csv",
    "Token": "[masked]"
  }
}`
	wantMeta := `{
  "trace_id": "t-1",
  "token": "[masked]"
}`
	for _, id := range []string{waiting, delayed} {
		page := f.get(t, "viewer", "/jobs/"+id, http.StatusOK)
		if strings.Contains(page, "hunter2") || strings.Contains(page, "company_id") || strings.Contains(page, "trace_id") {
			t.Errorf("the payload is shown before it is asked for:\n%s", page)
		}
		if got := link(t, page, "show-payload"); !strings.HasPrefix(got, "/navree/queue/jobs/"+id+"?payload=show&state=") {
			t.Errorf("Show payload links to %q", got)
		}
		for _, path := range []string{"/jobs/" + id + "/payload", "/jobs/" + id + "?payload=show", "/jobs/" + id + "?state=waiting&payload=show"} {
			body := f.get(t, "viewer", path, http.StatusOK)
			if got, meta := payloadOf(body); got != wantPayload || meta != wantMeta {
				t.Errorf("GET %s: payload\n%s\nmeta\n%s\nwant\n%s\n%s", path, got, meta, wantPayload, wantMeta)
			}
			if strings.Contains(body, "hunter2") || strings.Contains(body, "tok-secret") || strings.Contains(body, "meta-secret") {
				t.Errorf("GET %s shows a masked value:\n%s", path, body)
			}
		}
	}

	running, _ := f.running(t)
	if body := f.get(t, "viewer", "/jobs/"+running+"?payload=show", http.StatusOK); !strings.Contains(facts(body), "State running") {
		t.Errorf("a running job's page:\n%s", body)
	} else if got, _ := payloadOf(body); got != "{}" {
		t.Errorf("a running job's payload: %q, want {}", got)
	}
}

// Failed jobs that failed in the same millisecond (a worker failing a
// batch) each show their own payload.
func TestPayloadOfJobsThatFailedTogether(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	var ids []string
	for _, c := range []string{"a", "b", "c"} {
		id, err := f.q.Dispatch(ctx, Export{CompanyID: c, Reason: "boom"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"exports"}, StopWhenEmpty: true}); err != nil || s.Failed != 3 {
		t.Fatalf("Work = %+v, %v", s, err)
	}
	for i, id := range ids {
		body := text(f.get(t, "viewer", "/jobs/"+id+"/payload", http.StatusOK))
		if want := `"company_id": "` + []string{"a", "b", "c"}[i] + `"`; !strings.Contains(body, want) {
			t.Errorf("payload of job %d:\n%s\nwant %s", i, body, want)
		}
	}
}

func TestRetryPutsTheJobBackOnItsQueue(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		ids := f.failed(t, "boom", "bang")

		r := f.do(t, "operator", "POST", "/failed/"+ids[0]+"/retry", url.Values{"back": {"/navree/queue/failed?queue=exports"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/failed?done=retried&n=1&queue=exports" {
			t.Fatalf("POST retry: %d to %q\n%s", r.status, r.location, r.body)
		}
		if got := f.ids(t, queue.StateFailed); !slices.Equal(got, ids[1:]) {
			t.Errorf("failed jobs after the retry: %v, want %v", got, ids[1:])
		}
		if got := f.ids(t, queue.StateWaiting); !slices.Equal(got, ids[:1]) {
			t.Errorf("waiting jobs after the retry: %v, want %v", got, ids[:1])
		}
		body := f.get(t, "operator", strings.TrimPrefix(r.location, "/navree/queue"), http.StatusOK)
		if !strings.Contains(body, `<p class="flash" id="flash" role="status">Retried 1 job: back on its queue.</p>`) {
			t.Errorf("the page after the retry does not say so:\n%s", body)
		}
		if got := jobIDs(body); !slices.Equal(got, ids[1:]) {
			t.Errorf("the failed page lists %v, want %v", got, ids[1:])
		}
		waiting := f.get(t, "operator", "/jobs?state=waiting&queue=exports", http.StatusOK)
		if got := rows(waiting, "data-job"); len(got) != 1 || got[0][0] != ids[0] || !strings.Contains(got[0][1], "contacts.export exports 0/1") {
			t.Errorf("the waiting page lists %q, want the retried job, its attempts started over", got)
		}

		// Again: it is not failed any more.
		if r := f.do(t, "operator", "POST", "/failed/"+ids[0]+"/retry", url.Values{}); r.status != http.StatusNotFound ||
			!strings.Contains(r.body, "There is no failed job "+ids[0]) {
			t.Errorf("POST retry of a job that is not failed: %d\n%s", r.status, r.body)
		}
		if r := f.do(t, "operator", "POST", "/failed/not-an-id/retry", url.Values{}); r.status != http.StatusNotFound {
			t.Errorf("POST retry of a bad id: %d, want 404", r.status)
		}
	})
}

// The page an action sends the browser back to is one of the
// dashboard's, whatever the form says: a back that leaves the prefix,
// once its dot segments are resolved (encoded or not) as the browser
// resolves them, or that names another host, goes to the queues page.
func TestActionsGoBackToTheDashboardOnly(t *testing.T) {
	t.Parallel()
	f := operatorSetup(t)
	const home = "/navree/queue/?done=retried&n=1"
	tests := []struct{ give, want string }{
		{"https://evil.example/navree/queue/", home},
		{"//evil.example/navree/queue/", home},
		{"///evil.example/navree/queue/", home},
		{"/elsewhere", home},
		{"/navree/queuex/", home},
		{"/navree/queue", home},
		{"/navree/queue/../../evil", home},
		{"/navree/queue/..", home},
		{"/navree/queue/failed/../../../evil", home},
		{"/navree/queue/%2e%2e/%2e%2e/evil", home},
		{"/navree/queue/%2E%2E/%2E%2E/evil", home},
		{"/navree/queue/failed/..%2f..%2f..%2fevil", home},
		{"/navree/queue/..//x", home},
		{"/navree/queue/./failed", home},
		{"/navree/queue/%2f%2fevil.example", home},
		{`/navree/queue/\evil`, home},
		{`/\evil.example`, home},
		{`\\evil.example/navree/queue/`, home},
		{`/navree/queue/..\..\evil`, home},
		{"/navree/queue/%5c%5cevil.example", home},
		{"javascript:alert(1)", home},
		{"mailto:ops@evil.example", home},
		{"https:/navree/queue/", home},
		{"/navree/queue/failed?done=deleted&n=9&payload=show", "/navree/queue/failed?done=retried&n=1"},
		{"/navree/queue/jobs?state=failed&queue=exports", "/navree/queue/jobs?done=retried&n=1&queue=exports&state=failed"},
	}
	reasons := make([]string, len(tests))
	for i := range reasons {
		reasons[i] = fmt.Sprint("reason ", i)
	}
	ids := f.failed(t, reasons...)
	for i, tt := range tests {
		r := f.do(t, "operator", "POST", "/failed/"+ids[i]+"/retry", url.Values{"back": {tt.give}})
		if r.status != http.StatusSeeOther || r.location != tt.want {
			t.Errorf("back %q: %d to %q, want 303 to %q", tt.give, r.status, r.location, tt.want)
		}
		// Wherever it goes, as the browser resolves it, it is a page of
		// the dashboard on the dashboard's host.
		to, err := url.Parse(f.url + "/failed/" + ids[i] + "/retry")
		if err != nil {
			t.Fatal(err)
		}
		loc, err := url.Parse(r.location)
		if err != nil {
			t.Fatalf("back %q: Location %q: %v", tt.give, r.location, err)
		}
		if to = to.ResolveReference(loc); to.Host != strings.TrimPrefix(f.srv.URL, "http://") || !strings.HasPrefix(to.Path, "/navree/queue/") {
			t.Errorf("back %q: the browser goes to %s, out of the dashboard", tt.give, to)
		}
	}
	// The bulk confirmation page carries the back it will go to.
	for _, tt := range tests[:len(tests)-2] {
		body := f.get(t, "operator", "/bulk?"+url.Values{"action": {"retry"}, "back": {tt.give}}.Encode(), http.StatusOK)
		if got := backs(body); !slices.Equal(got, []string{"/navree/queue/"}) {
			t.Errorf("bulk confirmation with back %q goes back to %v, want [/navree/queue/]", tt.give, got)
		}
	}
}

func TestBulkRetryAsksForConfirmation(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		exports := f.failed(t, "a", "b", "c")
		imports := f.failedIn(t, "imports", "d", "e")

		confirm := func(query string) string {
			body := f.get(t, "operator", "/bulk?"+query, http.StatusOK)
			return text(regexp.MustCompile(`(?s)<p id="confirm-what">.*?</p>`).FindString(body))
		}
		if got, want := confirm("action=retry&queue=exports"), "This puts back on their queues 3 failed job(s) of queue exports: "+
			"every one that has failed by the time you confirm."; got != want {
			t.Errorf("confirmation:\n%s\nwant\n%s", got, want)
		}
		if got := confirm("action=retry&type=contacts.export"); !strings.Contains(got, " 5 failed job(s) of type contacts.export") {
			t.Errorf("confirmation by type: %s", got)
		}
		if got := confirm("action=retry"); !strings.Contains(got, " 5 failed job(s):") {
			t.Errorf("confirmation of all: %s", got)
		}
		f.get(t, "operator", "/bulk?action=explode", http.StatusBadRequest)
		f.get(t, "operator", "/bulk?action=retry&queue=no+spaces", http.StatusBadRequest)
		f.get(t, "operator", "/bulk?action=retry&type=%01", http.StatusBadRequest)
		for _, bad := range []url.Values{{"queue": {"no spaces"}}, {"type": {"\x01"}}, {"action": {"explode"}}} {
			form := url.Values{"action": {"retry"}, "confirm": {"yes"}}
			for k, v := range bad {
				form[k] = v
			}
			if r := f.do(t, "operator", "POST", "/bulk", form); r.status != http.StatusBadRequest {
				t.Errorf("POST /bulk %v: %d, want 400\n%s", form, r.status, r.body)
			}
		}

		// Without the confirmation nothing happens.
		if r := f.do(t, "operator", "POST", "/bulk", url.Values{"action": {"retry"}, "queue": {"exports"}}); r.status != http.StatusBadRequest {
			t.Errorf("POST /bulk without confirm: %d, want 400", r.status)
		}
		if got := f.ids(t, queue.StateFailed); len(got) != 5 {
			t.Fatalf("an unconfirmed bulk retry changed the failed jobs: %v", got)
		}

		r := f.do(t, "operator", "POST", "/bulk", url.Values{"action": {"retry"}, "queue": {"exports"}, "confirm": {"yes"},
			"back": {"/navree/queue/failed?queue=exports"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/failed?done=retried&n=3&queue=exports" {
			t.Fatalf("POST /bulk retry of queue exports: %d to %q\n%s", r.status, r.location, r.body)
		}
		if got := f.ids(t, queue.StateFailed); !slices.Equal(got, sorted(imports...)) {
			t.Errorf("failed jobs after retrying the exports queue: %v, want the imports %v", got, imports)
		}
		if got := f.ids(t, queue.StateWaiting); !slices.Equal(got, sorted(exports...)) {
			t.Errorf("waiting jobs: %v, want the exports %v", got, exports)
		}

		r = f.do(t, "operator", "POST", "/bulk", url.Values{"action": {"retry"}, "confirm": {"yes"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/?done=retried&n=2" {
			t.Fatalf("POST /bulk retry of everything: %d to %q\n%s", r.status, r.location, r.body)
		}
		if got := f.ids(t, queue.StateFailed); len(got) != 0 {
			t.Errorf("failed jobs after retrying all: %v", got)
		}
		if got := f.ids(t, queue.StateWaiting); !slices.Equal(got, sorted(append(exports, imports...)...)) {
			t.Errorf("waiting jobs after retrying all: %v", got)
		}
	})
}
