package dashboard_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
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
	if testing.Short() {
		t.Skip("drives a browser: not in a -short run")
	}
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
	f := setup(t, dbtest.MigratedSQLiteURL(t, queueSets...), dashboard.Params{Development: true, Config: dashboard.Config{RefreshMs: 1000}})
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
	f := setupWith(t, dbtest.MigratedSQLiteURL(t, queueSets...), queue.Config{KeepSucceeded: 24 * time.Hour},
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
	f := setup(t, dbtest.MigratedSQLiteURL(t, queueSets...), dashboard.Params{AccessFunc: byHeader}) // the browser sends no role
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

// watchErrors records, in the tab, the page's uncaught errors, the
// resources it failed to load and what its scripts log as errors, which
// [noErrors] checks.
func watchErrors(t *testing.T, ctx context.Context) {
	t.Helper()
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: `window.__errors = [];
addEventListener("error", e => window.__errors.push(e.message || "failed to load " + (e.target.src || e.target.href)), true);
const logError = console.error;
console.error = (...args) => { window.__errors.push(args.join(" ")); logError(...args); };`,
	}); err != nil {
		t.Fatal(err)
	}
}

// noErrors fails the test if the page had an error [watchErrors] saw.
func noErrors(t *testing.T, ctx context.Context) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.__errors`))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) > 0 {
		t.Errorf("the page had errors: %q", got)
	}
}

// The batches page draws each flow's progress bar with CSS alone, and a
// workflow's page its graph as SVG, whose nodes open their jobs.
func TestBrowserFlowsShowProgressAndGraph(t *testing.T) {
	f, ctx := browserSetup(t)
	f.handleSteps(t)
	watchErrors(t, ctx)
	batch := f.dispatch(t, queue.Batch(Step{Name: "a"}, Step{Name: "b", Fail: "boom"}, Step{Name: "c"}).AllowFailures().Named("import"))
	wf := f.dispatch(t, queue.Workflow("onboard").Step("fetch", Step{}).
		Step("resize", Step{}, queue.After("fetch")).
		Step("scan", Step{Fail: "virus found"}, queue.After("fetch")).
		Step("notify", Step{}, queue.After("resize", "scan")).
		Finally(Step{}))
	f.drain(t)

	row := `tr[data-flow="` + batch + `"]`
	do(t, ctx, chromedp.Navigate(f.url+"/flows"), chromedp.WaitVisible(chromedp.CSS(row+" .progress .bar")))
	if got := textOf(t, ctx, row+" .progress-n"); got != "3 of 3 ended: 2 succeeded, 1 failed, 0 pending" {
		t.Errorf("the batch's progress reads %q", got)
	}
	// The segments' widths, as shares of the bar: the stylesheet's classes
	// size them, the page's policy allowing no style attribute.
	widths, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`(() => {
		const bar = document.querySelector('`+row+` .bar'), w = bar.getBoundingClientRect().width;
		return ["seg-ok", "seg-bad", "seg-rest"].map(c => Math.round(100 * bar.querySelector("." + c).getBoundingClientRect().width / w));
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(widths, []float64{67, 33, 0}) {
		t.Errorf("the bar's segments are %v%% of it, want 67, 33 and 0", widths)
	}

	do(t, ctx, chromedp.Click(chromedp.CSS(`tr[data-flow="`+wf+`"] a`)), chromedp.WaitVisible(chromedp.ID("flow-graph")))
	counts, err := chromedp.Run(ctx, chromedp.Evaluate[[]int](`[document.querySelectorAll("#flow-graph a.node").length,
		document.querySelectorAll("#flow-graph path.edge").length, Math.round(document.getElementById("flow-graph").getBoundingClientRect().width)]`))
	if err != nil {
		t.Fatal(err)
	}
	if counts[0] != 5 || counts[1] != 4 || counts[2] == 0 {
		t.Errorf("the graph: %d nodes, %d edges, %d px wide; want 5 nodes, 4 edges", counts[0], counts[1], counts[2])
	}
	fill, err := chromedp.Run(ctx, chromedp.Evaluate[string](`getComputedStyle(document.querySelector('#flow-graph a.node[data-step="scan"] rect')).fill`))
	if err != nil || fill != "rgb(254, 243, 242)" {
		t.Errorf("the failed step's box is filled %q (%v), want the failed colour", fill, err)
	}
	if got := textOf(t, ctx, "#flow-state"); got != "failed" {
		t.Errorf("the workflow's state reads %q", got)
	}
	noViolations(t, ctx)
	noErrors(t, ctx)

	// A node opens its step's job: the failed scan's.
	do(t, ctx, chromedp.Click(chromedp.CSS(`#flow-graph a.node[data-step="scan"]`)), chromedp.WaitVisible(chromedp.ID("job-state")))
	if got := textOf(t, ctx, "#job-state"); got != "failed" {
		t.Errorf("the scan step's job is %q, want failed", got)
	}
	if got := textOf(t, ctx, "#job-error"); got != "virus found" {
		t.Errorf("the scan step's job's error: %q", got)
	}
	noErrors(t, ctx)
}

// TestScreenshots writes the screenshots of docs/dashboard.md:
//
//	go test ./queue/dashboard -run TestScreenshots -screenshots
func TestScreenshots(t *testing.T) {
	if !*screenshots {
		t.Skip("writes docs/dashboard/*.png only with -screenshots")
	}
	ctx := tab(t)
	f := setup(t, dbtest.MigratedSQLiteURL(t, queueSets...), dashboard.Params{AccessFunc: func(*http.Request) dashboard.Role { return dashboard.Operator }})
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

	// Flows: a workflow that failed, a chain that succeeded, a batch
	// halfway, one cancelled and one just dispatched.
	f.handleSteps(t)
	wf := f.dispatch(t, queue.Workflow("onboard customer").
		Step("fetch profile", Step{Result: json.RawMessage(`{"customer":"c-1042","plan":"team"}`)}).
		Step("create workspace", Step{Result: json.RawMessage(`{"workspace":"w-77"}`)}, queue.After("fetch profile")).
		Step("import contacts", Step{Fail: "contacts.csv: line 17: wrong number of fields"}, queue.After("fetch profile")).
		Step("invite team", Step{}, queue.After("create workspace")).
		Step("send welcome", Step{}, queue.After("invite team", "import contacts")).
		Step("notify sales", Step{}, queue.After("import contacts"), queue.RunIfFailed()).
		Catch(Step{}).Finally(Step{}))
	f.clock.Advance(3 * time.Minute)
	f.dispatch(t, queue.Chain(Step{}, Step{}, Step{}, Step{}).Named("nightly report"))
	f.drain(t)
	f.clock.Advance(4 * time.Minute)
	jobs := make([]queue.Job, 40)
	for i := range jobs {
		jobs[i] = Step{Name: fmt.Sprint("row ", i)}
		if i%13 == 5 {
			jobs[i] = Step{Fail: "geocoder: 429 Too Many Requests"}
		}
	}
	f.dispatch(t, queue.Batch(jobs...).AllowFailures().Named("import contacts").Finally(Step{}))
	if _, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"default"}, MaxJobs: 25}); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	cancelled := f.dispatch(t, queue.Chain(Step{}, Step{}).Named("sync calendars"))
	if _, err := f.q.Inspector().CancelFlow(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(30 * time.Second)
	f.dispatch(t, queue.Batch(Step{}, Step{}, Step{}, Step{}, Step{}, Step{}).Named("resize images"))
	do(t, ctx, chromedp.EmulateViewport(1200, 560), chromedp.Navigate(f.url+"/flows"), chromedp.WaitVisible(chromedp.ID("flow-rows")))
	shoot(t, ctx, "flows")
	do(t, ctx, chromedp.EmulateViewport(1200, 900), chromedp.Navigate(f.url+"/flows/"+wf), chromedp.WaitVisible(chromedp.ID("flow-graph")))
	shoot(t, ctx, "flow")
}
