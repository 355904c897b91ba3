package dashboard_test

import (
	"context"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

// The browser tests drive the dashboard in headless Chromium through the
// DevTools protocol (chromedp). They skip when no chromium binary is
// found; CI installs Debian's.

var screenshots = flag.Bool("screenshots", false, "write the screenshots of docs/dashboard.md to docs/dashboard/")

// browserState is the one browser the tests of this binary share, each in
// a tab of its own.
var browserState struct {
	once   sync.Once
	ctx    context.Context
	err    error
	cancel []context.CancelFunc
	dir    string
}

func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// stopBrowser stops the shared browser, if a test started it.
func stopBrowser() {
	for _, cancel := range slices.Backward(browserState.cancel) {
		cancel()
	}
	if browserState.dir != "" {
		os.RemoveAll(browserState.dir)
	}
}

// tab opens a tab in the shared browser, closed when the test ends; its
// actions time out after 30 s in all. It records the page's violations
// of the Content-Security-Policy, which [noViolations] checks.
func tab(t *testing.T) context.Context {
	t.Helper()
	path := chromium()
	if path == "" {
		t.Skip("no chromium binary on PATH: install it (Debian: apt-get install -y --no-install-recommends chromium) to run the browser tests")
	}
	b := &browserState
	b.once.Do(func() {
		if b.dir, b.err = os.MkdirTemp("", "navree-chromium-"); b.err != nil {
			return
		}
		// The machine's network may be closed: the flags keep Chromium
		// from calling home.
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(path),
			chromedp.NoSandbox, // tests may run as root
			chromedp.Headless,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.Flag("disable-quic", true),
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.UserDataDir(b.dir),
			chromedp.WindowSize(1200, 800),
		)
		alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		browser, cancelBrowser := chromedp.NewContext(alloc)
		b.cancel = append(b.cancel, cancelAlloc, cancelBrowser)
		b.err = chromedp.Do(browser) // starts the browser; its context must not end before the tabs'
		b.ctx = browser
	})
	if b.err != nil {
		t.Fatalf("start %s: %v", path, b.err)
	}
	timeout, cancelTimeout := context.WithTimeout(b.ctx, 30*time.Second)
	ctx, cancelTab := chromedp.NewContext(timeout)
	t.Cleanup(func() {
		cancelTab()
		cancelTimeout()
	})
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.__violations = []; document.addEventListener("securitypolicyviolation", e => window.__violations.push(e.violatedDirective + " " + e.blockedURI));`,
	}); err != nil {
		t.Fatal(err)
	}
	return ctx
}

// do runs steps in the tab, failing the test on an error.
func do(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatal(err)
	}
}

// textOf is the text of the element sel selects.
func textOf(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// noViolations fails the test if the page broke its
// Content-Security-Policy: htmx must work with script-src 'self'.
func noViolations(t *testing.T, ctx context.Context) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__violations`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("the page broke its Content-Security-Policy: %q", got)
	}
}

// shoot writes a screenshot of the page to docs/dashboard/name.png when
// the tests run with -screenshots.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if !*screenshots {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", "dashboard", name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// browserSetup is a dashboard open to this machine, as in development,
// polling every second.
func browserSetup(t *testing.T) (*fixture, context.Context) {
	ctx := tab(t)
	f := setup(t, dbtest.SQLiteURL(t), dashboard.Params{Development: true, Config: dashboard.Config{RefreshMs: 1000}})
	return f, ctx
}

func TestBrowserQueuesPageUpdatesItself(t *testing.T) {
	f, ctx := browserSetup(t)
	f.reminders(t, 3)
	waiting := `tr[data-queue="default"] td:nth-of-type(1)`
	do(t, ctx, chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="default"]`)))
	if got := textOf(t, ctx, waiting); got != "3" {
		t.Fatalf("default waiting: %q, want 3", got)
	}
	f.reminders(t, 2)
	// The table polls every second: the count changes without a reload.
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelector('`+waiting+`').textContent.trim() === "5"`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the waiting count did not become 5: %v (it reads %q)", err, textOf(t, ctx, waiting))
	}
	noViolations(t, ctx)
}

func TestBrowserRetryAFailedJob(t *testing.T) {
	f, ctx := browserSetup(t)
	ids := f.failed(t, "boom", "bang")
	row := `tr[data-job="` + ids[0] + `"]`
	do(t, ctx, chromedp.Navigate(f.url+"/failed"), chromedp.WaitVisible(chromedp.CSS(row)))
	do(t, ctx, chromedp.Click(chromedp.CSS(row+" button.retry")), chromedp.WaitVisible(chromedp.ID("flash")))
	if got := textOf(t, ctx, "#flash"); got != "Retried 1 job: back on its queue." {
		t.Errorf("flash: %q", got)
	}
	do(t, ctx, chromedp.WaitNotPresent(chromedp.CSS(row)), chromedp.WaitVisible(chromedp.CSS(`tr[data-job="`+ids[1]+`"]`)))
	if got := f.ids(t, queue.StateWaiting); !slices.Equal(got, ids[:1]) {
		t.Errorf("waiting jobs after the retry: %v, want %v", got, ids[:1])
	}
	noViolations(t, ctx)
}

// TestBrowserASucceededJobsTimeline: with keep_succeeded, the succeeded
// tab lists a job that succeeded, and its page shows its attempts as a
// timeline, the worker that ran it, and no action.
func TestBrowserASucceededJobsTimeline(t *testing.T) {
	ctx := tab(t)
	f := setupWith(t, dbtest.SQLiteURL(t), queue.Config{KeepSucceeded: 24 * time.Hour},
		dashboard.Params{Development: true, Config: dashboard.Config{RefreshMs: 1000}})
	ids := f.reminders(t, 1)
	if stats, err := f.q.RunPending(context.Background()); err != nil || stats.Succeeded != 1 {
		t.Fatalf("RunPending: %v, %v", stats, err)
	}
	row := `tr[data-job="` + ids[0] + `"]`
	do(t, ctx, chromedp.Navigate(f.url+"/jobs?state=succeeded"), chromedp.WaitVisible(chromedp.CSS(row)))
	if got := textOf(t, ctx, "#tab-succeeded"); got != "succeeded" {
		t.Errorf("the succeeded tab reads %q", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(row+" a")), chromedp.WaitVisible(chromedp.ID("timeline")))
	if got := textOf(t, ctx, "#job-state"); got != "succeeded" {
		t.Errorf("state: %q", got)
	}
	if got := textOf(t, ctx, "#timeline li.succeeded .n"); got != "1" {
		t.Errorf("the timeline's succeeded attempt: %q", got)
	}
	if got := textOf(t, ctx, "#job-worker"); len(got) != 36 {
		t.Errorf("worker: %q; want a worker's id", got)
	}
	actions, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('.actions form').length`))
	if err != nil || actions != 0 {
		t.Errorf("a succeeded job's page offers %d actions (%v)", actions, err)
	}
	noViolations(t, ctx)
}

func TestBrowserBulkRetryAfterConfirming(t *testing.T) {
	f, ctx := browserSetup(t)
	ids := f.failed(t, "boom", "bang", "crash")
	do(t, ctx, chromedp.Navigate(f.url+"/failed"), chromedp.Click(chromedp.ID("retry-all")), chromedp.WaitVisible(chromedp.ID("confirm")))
	if got := textOf(t, ctx, "#confirm-count"); got != "3" {
		t.Errorf("the confirmation counts %q jobs, want 3", got)
	}
	if got := f.ids(t, queue.StateFailed); len(got) != 3 {
		t.Fatalf("asking for the confirmation retried jobs: failed %v", got)
	}
	do(t, ctx, chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("flash")))
	if got := textOf(t, ctx, "#flash"); got != "Retried 3 jobs: back on their queue." {
		t.Errorf("flash: %q", got)
	}
	if got := f.ids(t, queue.StateWaiting); !slices.Equal(got, sorted(ids...)) {
		t.Errorf("waiting jobs after the bulk retry: %v, want %v", got, ids)
	}
	noViolations(t, ctx)
}

// A job's page, opened by its id alone, shows the payload when asked,
// masked, in whichever state the job is: a failed one and a waiting one.
func TestBrowserShowsThePayloadWhenAsked(t *testing.T) {
	f, ctx := browserSetup(t)
	failed := f.failed(t, "boom")[0]
	waiting, err := f.q.Dispatch(ctx, Export{CompanyID: "c2", Reason: "later", Password: "hunter2", Settings: &ExportSettings{Format: "csv", Token: "tok-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []struct{ id, state string }{{failed, "failed"}, {waiting, "waiting"}} {
		at := f.url + "/jobs/" + j.id
		do(t, ctx, chromedp.Navigate(at), chromedp.WaitVisible(chromedp.ID("show-payload")))
		if got := textOf(t, ctx, "#job-state"); got != j.state {
			t.Errorf("job %s shows as %q, want %s", j.id, got, j.state)
		}
		do(t, ctx, chromedp.Click(chromedp.ID("show-payload")), chromedp.WaitVisible(chromedp.ID("payload-json")))
		got := textOf(t, ctx, "#payload-json")
		if !strings.Contains(got, `"password": "[masked]"`) || !strings.Contains(got, `"Token": "[masked]"`) || strings.Contains(got, "hunter2") {
			t.Errorf("%s job's payload shown:\n%s", j.state, got)
		}
		if loc, _ := chromedp.Run(ctx, chromedp.Location()); loc != at {
			t.Errorf("showing the payload went to %s: htmx should have fetched it into the page", loc)
		}
		noViolations(t, ctx)
	}
}

func TestBrowserRefusedWithoutAccess(t *testing.T) {
	ctx := tab(t)
	f := setup(t, dbtest.SQLiteURL(t), dashboard.Params{AccessFunc: byHeader}) // the browser sends no role
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(f.url+"/"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Status != 403 {
		t.Errorf("status %d, want 403", resp.Status)
	}
	if got := textOf(t, ctx, "#error"); got != "You have no access to the queue dashboard." {
		t.Errorf("the page says %q", got)
	}
}

func TestBrowserPauseAQueue(t *testing.T) {
	f, ctx := browserSetup(t)
	f.reminders(t, 2)
	row := `tr[data-queue="default"]`
	do(t, ctx, chromedp.Navigate(f.url+"/"), chromedp.Click(chromedp.CSS(row+" button.pause")),
		chromedp.WaitVisible(chromedp.ID("flash")), chromedp.WaitVisible(chromedp.CSS(row+" .paused")))
	if got := textOf(t, ctx, row+" button"); got != "Resume" {
		t.Errorf("the paused queue's button says %q, want Resume", got)
	}
	if got := f.paused(t); !slices.Equal(got, []string{"default"}) {
		t.Errorf("paused queues: %v, want default", got)
	}
	do(t, ctx, chromedp.Click(chromedp.CSS(row+" button.resume")), chromedp.WaitVisible(chromedp.ID("flash")),
		chromedp.WaitNotPresent(chromedp.CSS(row+" .paused")))
	if got := f.paused(t); len(got) != 0 {
		t.Errorf("paused queues after Resume: %v", got)
	}
	noViolations(t, ctx)
}

// TestScreenshots writes the screenshots of docs/dashboard.md:
//
//	go test ./queue/dashboard -run TestScreenshots -screenshots
func TestScreenshots(t *testing.T) {
	if !*screenshots {
		t.Skip("writes docs/dashboard/*.png only with -screenshots")
	}
	ctx := tab(t)
	f := setup(t, dbtest.SQLiteURL(t), dashboard.Params{AccessFunc: func(*http.Request) dashboard.Role { return dashboard.Operator }})
	do(t, ctx, chromedp.EmulateViewport(1200, 560), chromedp.Navigate(f.url+"/")) // the trend's first sample
	f.reminders(t, 12)
	for range 3 {
		if _, err := f.q.Later(ctx, Reminder{N: 7}, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	ids := f.failed(t, "export server: 503 Service Unavailable", "export server: 503 Service Unavailable", `company c3: no such company`)
	f.failedIn(t, "imports", "parse contacts.csv: line 17: wrong number of fields")
	if err := f.q.Inspector().Pause(ctx, "imports"); err != nil {
		t.Fatal(err)
	}
	f.running(t)
	f.clock.Advance(2 * time.Minute)

	do(t, ctx, chromedp.Navigate(f.url+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-queue="default"]`)))
	shoot(t, ctx, "queues")
	do(t, ctx, chromedp.Navigate(f.url+"/jobs?state=waiting"), chromedp.WaitVisible(chromedp.ID("job-rows")))
	shoot(t, ctx, "jobs")
	do(t, ctx, chromedp.Navigate(f.url+"/failed"), chromedp.WaitVisible(chromedp.ID("job-rows")))
	shoot(t, ctx, "failed")
	do(t, ctx, chromedp.Navigate(f.url+"/jobs/"+ids[0]), chromedp.Click(chromedp.ID("show-payload")),
		chromedp.WaitVisible(chromedp.ID("payload-json")))
	shoot(t, ctx, "job")
	do(t, ctx, chromedp.Navigate(f.url+"/failed?queue=exports"), chromedp.Click(chromedp.ID("retry-all")), chromedp.WaitVisible(chromedp.ID("confirm")))
	shoot(t, ctx, "confirm")
	// An hour of work: each minute some reminders, waiting longer as the
	// hour goes on.
	for m := range 60 {
		f.reminders(t, 5+m%7*3)
		f.clock.Advance(time.Duration(200+m*40) * time.Millisecond)
		if _, err := f.q.RunPending(ctx); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute - time.Duration(200+m*40)*time.Millisecond)
	}
	do(t, ctx, chromedp.EmulateViewport(1200, 1100), chromedp.Navigate(f.url+"/charts"), chromedp.WaitVisible(chromedp.ID("chart-run")))
	shoot(t, ctx, "charts")
}
