package queue_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/metrics"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// Block runs until the worker process's standard input closes.
type Block struct{}

func (Block) JobName() string { return "test.block" }

// Cancellable runs until its context ends, and prints why.
type Cancellable struct{}

func (Cancellable) JobName() string { return "test.cancellable" }

// Zombie prints when it starts and, when its context ends, why; then it
// waits for its worker's standard input to close, and succeeds.
type Zombie struct{}

func (Zombie) JobName() string { return "test.zombie" }

// Record writes each attempt into the table runs.
type Record struct{}

func (Record) JobName() string { return "test.record" }

type recordHandler struct{ d *db.DB }

func (h *recordHandler) Handle(ctx context.Context, _ Record, jc queue.JobContext) error {
	_, err := h.d.NewRaw("INSERT INTO runs (job_id, attempt, pid) VALUES (?, ?, ?)", jc.JobID, jc.Attempt, os.Getpid()).Exec(ctx)
	return err
}

const workerEnv = "NAVREE_QUEUE_TEST_WORKER_URL"

// Chaos records each attempt in chaos_runs: when it started and, if the
// process lived, when it finished.
type Chaos struct{}

func (Chaos) JobName() string { return "test.chaos" }
func (Chaos) JobOptions() queue.Options {
	// Its timeout is far past the rescue time: the rescue of a killed
	// worker's job does not wait for it.
	return queue.Options{Timeout: 30 * time.Second, MaxAttempts: 100}
}

type chaosHandler struct{ d *db.DB }

func (h *chaosHandler) Handle(ctx context.Context, _ Chaos, jc queue.JobContext) error {
	if _, err := h.d.NewRaw("INSERT INTO chaos_runs (job_id, attempt, pid, started_ns) VALUES (?, ?, ?, ?)",
		jc.JobID, jc.Attempt, os.Getpid(), time.Now().UnixNano()).Exec(ctx); err != nil {
		return err
	}
	time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond) // some work, so kills land mid-job
	_, err := h.d.NewRaw("UPDATE chaos_runs SET finished_ns = ? WHERE job_id = ? AND attempt = ?",
		time.Now().UnixNano(), jc.JobID, jc.Attempt).Exec(ctx)
	return err
}

// Controlled records each attempt in ctl_runs; with Snoozes it snoozes
// (for no time) until it has snoozed that many times.
type Controlled struct {
	Name     string `json:"name"`
	Priority int    `json:"priority,omitempty"`
	Snoozes  int    `json:"snoozes,omitempty"`
	Debounce bool   `json:"debounce,omitempty"`
}

func (Controlled) JobName() string { return "test.controlled" }
func (c Controlled) JobOptions() queue.Options {
	o := queue.Options{Priority: c.Priority}
	if c.Debounce {
		o.Debounce = queue.Debounce{For: time.Millisecond, MaxWait: time.Hour}
	}
	return o
}

type controlledHandler struct{ d *db.DB }

func (h *controlledHandler) Handle(ctx context.Context, c Controlled, jc queue.JobContext) error {
	if _, err := h.d.NewRaw("INSERT INTO ctl_runs (job_id, name, attempt, snoozes, pid, started_ns) VALUES (?, ?, ?, ?, ?, ?)",
		jc.JobID, c.Name, jc.Attempt, jc.Snoozes, os.Getpid(), time.Now().UnixNano()).Exec(ctx); err != nil {
		return err
	}
	if jc.Snoozes < c.Snoozes {
		return queue.Snooze(0)
	}
	return nil
}

// AccountCall is limited to two at once per account; its handler counts
// itself running in lim_running (the most at once in peak), across
// processes.
type AccountCall struct {
	Account int `json:"account"`
}

func (AccountCall) JobName() string           { return "test.account_call" }
func (AccountCall) JobOptions() queue.Options { return queue.Options{ConcurrencyLimit: 2} }
func (a AccountCall) JobKeys() queue.Keys {
	return queue.Keys{Concurrency: fmt.Sprint("account:", a.Account)}
}

type accountCallHandler struct{ d *db.DB }

func (h *accountCallHandler) Handle(ctx context.Context, a AccountCall, jc queue.JobContext) error {
	first := 0
	if jc.Attempt == 1 {
		first = 1
	}
	if _, err := h.d.NewRaw("UPDATE lim_running SET n = n + 1, peak = CASE WHEN n + 1 > peak THEN n + 1 ELSE peak END, runs = runs + 1, "+
		"first_attempts = first_attempts + ? WHERE account = ?", first, a.Account).Exec(ctx); err != nil {
		return err
	}
	_, err := h.d.NewRaw("UPDATE lim_running SET n = n - 1 WHERE account = ?", a.Account).Exec(ctx)
	return err
}

// PartnerCall is limited to four starts a second, whichever its
// account; its handler records in rate_starts when it started, and the
// time its reservation was stamped with (the time the limit counted it
// at, from the clock read as the reservation began).
type PartnerCall struct {
	N int `json:"n"`
}

func (PartnerCall) JobName() string { return "test.partner_call" }
func (PartnerCall) JobOptions() queue.Options {
	return queue.Options{RateLimit: queue.Rate{Max: 4, Per: time.Second}}
}
func (PartnerCall) JobKeys() queue.Keys { return queue.Keys{Rate: "partner-api"} }

type partnerCallHandler struct{ d *db.DB }

func (h *partnerCallHandler) Handle(ctx context.Context, p PartnerCall, jc queue.JobContext) error {
	at := time.Now().UnixMilli()
	_, err := h.d.NewRaw("INSERT INTO rate_starts (n, attempt, reserved_ms, at_ms) SELECT ?, ?, reserved_at, ? FROM jobs WHERE id = ?",
		p.N, jc.Attempt, at, jc.JobID).Exec(ctx)
	return err
}

// TenantTask takes turns by tenant; its handler records when it started
// in fair_starts.
type TenantTask struct {
	Tenant string `json:"tenant"`
	N      int    `json:"n"`
}

func (TenantTask) JobName() string           { return "test.tenant_task" }
func (TenantTask) JobOptions() queue.Options { return queue.Options{Fair: true} }
func (t TenantTask) JobKeys() queue.Keys     { return queue.Keys{Fairness: "tenant:" + t.Tenant} }

type tenantTaskHandler struct{ d *db.DB }

func (h *tenantTaskHandler) Handle(ctx context.Context, t TenantTask, jc queue.JobContext) error {
	_, err := h.d.NewRaw("INSERT INTO fair_starts (tenant, n, attempt, at_ns) VALUES (?, ?, ?, ?)", t.Tenant, t.N, jc.Attempt, time.Now().UnixNano()).Exec(ctx)
	return err
}

// Deploy works for 20 to 59 ms, and records each attempt in deploy_runs:
// when it started and ended, and whether it was done or interrupted
// (its context ended); it prints "ran" as it starts.
type Deploy struct {
	N int `json:"n"`
}

func (Deploy) JobName() string { return "test.deploy" }

type deployHandler struct {
	d   *db.DB
	out *sync.Mutex
}

func (h *deployHandler) Handle(ctx context.Context, j Deploy, jc queue.JobContext) error {
	started := time.Now().UnixNano()
	h.out.Lock()
	fmt.Println("ran")
	h.out.Unlock()
	outcome, err := "done", error(nil)
	select {
	case <-time.After(time.Duration(20+j.N%40) * time.Millisecond):
	case <-ctx.Done():
		outcome, err = "interrupted", ctx.Err()
	}
	// Not ctx: the run is recorded even when it is interrupted.
	if _, e := h.d.NewRaw("INSERT INTO deploy_runs (job_id, attempt, pid, started_ns, ended_ns, outcome) VALUES (?, ?, ?, ?, ?, ?)",
		jc.JobID, jc.Attempt, os.Getpid(), started, time.Now().UnixNano(), outcome).Exec(context.WithoutCancel(ctx)); e != nil {
		return e
	}
	return err
}

// OldExport is Export3 as an older build has it: version 1 of its
// payload, and OldRenamed under the name Export3 has as an alias. A
// worker child process with NAVREE_TEST_BUILD=old has them instead of
// Export3; each build's handler records what it decoded in ver_runs.
type OldExport struct {
	Company string `json:"company"`
}

func (OldExport) JobName() string { return "test.export_versions" }

type OldRenamed struct {
	Company string `json:"company"`
}

func (OldRenamed) JobName() string { return "test.export_old" }

// versionedJobs are the job types of Export3 in the build the
// environment names.
func versionedJobs() fx.Option {
	record := func(ctx context.Context, d *db.DB, jc queue.JobContext, build, company, format string) error {
		_, err := d.NewRaw("INSERT INTO ver_runs (job_id, name, build, company, format) VALUES (?, ?, ?, ?, ?)", jc.JobID, jc.Name, build, company, format).Exec(ctx)
		return err
	}
	if os.Getenv("NAVREE_TEST_BUILD") == "old" {
		return fx.Options(
			queue.Register[OldExport](func(d *db.DB) queue.HandlerFunc[OldExport] {
				return func(ctx context.Context, j OldExport, jc queue.JobContext) error {
					return record(ctx, d, jc, "old", j.Company, "")
				}
			}),
			queue.Register[OldRenamed](func(d *db.DB) queue.HandlerFunc[OldRenamed] {
				return func(ctx context.Context, j OldRenamed, jc queue.JobContext) error {
					return record(ctx, d, jc, "old", j.Company, "")
				}
			}))
	}
	return fx.Options(
		queue.Register[Export3](func(d *db.DB) queue.HandlerFunc[Export3] {
			return func(ctx context.Context, j Export3, jc queue.JobContext) error {
				return record(ctx, d, jc, "new", j.CompanyID, j.Format)
			}
		}),
		queue.Register[Fresh](func(d *db.DB) queue.HandlerFunc[Fresh] {
			return func(ctx context.Context, j Fresh, jc queue.JobContext) error {
				return record(ctx, d, jc, "new", j.CompanyID, "")
			}
		}))
}

// Fresh is a job type only the new build has.
type Fresh struct {
	CompanyID string `json:"company_id"`
}

func (Fresh) JobName() string { return "test.fresh" }

// workerJobs are the jobs a worker child process runs.
func workerJobs() fx.Option {
	released := make(chan struct{})
	go func() {
		io.Copy(io.Discard, os.Stdin)
		close(released)
	}()
	var out sync.Mutex
	return fx.Options(
		queue.HandleFunc(func(ctx context.Context, _ Block, jc queue.JobContext) error {
			out.Lock()
			fmt.Printf("started %s %d\n", jc.JobID, jc.Attempt)
			out.Unlock()
			<-released
			return nil
		}),
		queue.HandleFunc(func(ctx context.Context, _ Zombie, jc queue.JobContext) error {
			out.Lock()
			fmt.Printf("started %s %d\n", jc.JobID, jc.Attempt)
			out.Unlock()
			select {
			case <-released:
			case <-ctx.Done():
				out.Lock()
				fmt.Printf("stopped %d: %v\n", jc.Attempt, context.Cause(ctx))
				out.Unlock()
				<-released
			}
			return nil
		}),
		queue.Register[Chaos](func(d *db.DB) *chaosHandler { return &chaosHandler{d} }),
		queue.HandleFunc(func(ctx context.Context, _ Cancellable, jc queue.JobContext) error {
			out.Lock()
			fmt.Printf("started %s %d\n", jc.JobID, jc.Attempt)
			out.Unlock()
			<-ctx.Done()
			out.Lock()
			fmt.Printf("stopped: %v\n", context.Cause(ctx))
			out.Unlock()
			return ctx.Err()
		}),
		app.Commands(app.Command{
			Name:  "test:dispatch-and-work",
			Usage: "Dispatch N Record jobs one at a time while working, then work until nothing is left",
			Flags: []cli.Flag{&cli.IntFlag{Name: "jobs"}},
			Action: app.Uses(func(c *cli.Context, q *queue.Queue) error {
				working := make(chan error, 1)
				workCtx, stop := context.WithCancel(c.Context)
				defer stop()
				go func() { _, err := q.Work(workCtx, queue.WorkOptions{Workers: 2}); working <- err }()
				for range c.Int("jobs") {
					if _, err := q.Dispatch(c.Context, Record{}); err != nil {
						return err
					}
				}
				stop()
				if err := <-working; err != nil {
					return err
				}
				_, err := q.Work(c.Context, queue.WorkOptions{Workers: 2, StopWhenEmpty: true})
				return err
			}),
		}),
		queue.Register[Record](func(d *db.DB) *recordHandler { return &recordHandler{d} }),
		queue.Register[Controlled](func(d *db.DB) *controlledHandler { return &controlledHandler{d} }),
		queue.Register[AccountCall](func(d *db.DB) *accountCallHandler { return &accountCallHandler{d} }),
		queue.Register[PartnerCall](func(d *db.DB) *partnerCallHandler { return &partnerCallHandler{d} }),
		queue.Register[TenantTask](func(d *db.DB) *tenantTaskHandler { return &tenantTaskHandler{d} }),
		queue.Register[Deploy](func(d *db.DB) *deployHandler { return &deployHandler{d, &out} }),
		versionedJobs(),
		queue.HandleFunc(func(ctx context.Context, _ ExportContacts, _ queue.JobContext) error { return nil }),
	)
}

// scrapeToken is the token a worker child's metrics.Access asks for.
const scrapeToken = "scrape-token-4f1c2a"

// workerChild runs the worker app's command line on the database at url.
func workerChild(url string, args []string) int {
	// The environment sets APP_QUEUE__RESCUE_AFTER.
	opts := []fx.Option{config.Module(config.Sources{Environ: os.Environ(), Overrides: map[string]any{"database.url": url, "queue.poll_interval_ms": 20}}),
		db.Module(), queue.Module(), workerJobs(),
		// Off unless APP_METRICS__ENABLED=true; then only for this token.
		metrics.Module(), metrics.Access(func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+scrapeToken })}
	a := app.New(opts...)
	a.Name = "crm"
	os.Args = append([]string{"crm"}, args...)
	a.Main() // with its signal handling; exits 1 on an error
	return 0
}

// startsProcesses skips t in a -short run: tests of worker processes
// take seconds each, and run in the full suite.
func startsProcesses(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts worker processes: not in a -short run")
	}
}

// manyRows skips t in a -short run: it stores thousands of rows one at a
// time (a batch's edge), which takes seconds, and runs in the full suite.
func manyRows(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("stores thousands of rows: not in a -short run")
	}
}

// worker starts `crm ARGS` as a child process on the database at url.
func worker(t *testing.T, url string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *syncBuffer) {
	t.Helper()
	return workerIn(t, url, nil, args...)
}

// workerChildren starts n worker children (`crm ARGS`) on the database at url,
// and returns them and what waits until they exit, failing the test for
// one that exits with an error or logs one.
func workerChildren(t *testing.T, url string, n int, args ...string) ([]*exec.Cmd, func()) {
	t.Helper()
	var cmds []*exec.Cmd
	var wg sync.WaitGroup
	for range n {
		cmd, _, stdout, stderr := worker(t, url, args...)
		cmds = append(cmds, cmd)
		wg.Go(func() {
			out, _ := io.ReadAll(stdout)
			if err := cmd.Wait(); err != nil || strings.Contains(stderr.String(), "level=ERROR") {
				t.Errorf("a worker exited with %v\n%s\n%s", err, out, stderr)
			}
		})
	}
	return cmds, wg.Wait
}

// workerIn is worker with the variables env added to its environment.
// A -short run skips the test there (see startsProcesses).
func workerIn(t *testing.T, url string, env []string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *syncBuffer) {
	t.Helper()
	startsProcesses(t)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), workerEnv+"="+url), env...)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, stdin, bufio.NewReader(stdout), stderr
}

// syncBuffer is a child's standard error, read while the child writes.
type syncBuffer struct {
	mu    sync.Mutex
	buf   strings.Builder
	watch string
	seen  chan struct{}
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	if b.watch != "" && strings.Contains(b.buf.String(), b.watch) {
		close(b.seen)
		b.watch = ""
	}
	return n, err
}

// when returns a channel closed once the child has written s (at once if
// it has).
func (b *syncBuffer) when(s string) <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.watch, b.seen = s, make(chan struct{})
	if strings.Contains(b.buf.String(), s) {
		close(b.seen)
		b.watch = ""
	}
	return b.seen
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// recordJobs opens the database at url, makes the table runs that Record
// jobs write to and stores n of them in one transaction, with the queue
// it returns (in the test process).
func recordJobs(t *testing.T, url string, n int) (*db.DB, *queue.Queue) {
	t.Helper()
	d := dbtest.Open(t, url)
	if _, err := d.ExecContext(ctx, "CREATE TABLE runs (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	q := localQueue(t, url, &clock{t: time.Now()}, noop[Record]())
	err := d.Transaction(ctx, func(ctx context.Context) error {
		for range n {
			if _, err := q.Dispatch(ctx, Record{}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return d, q
}

// localQueue is a queue in the test process on the database at url.
func localQueue(t *testing.T, url string, c *clock, regs ...queue.Registration) *queue.Queue {
	t.Helper()
	d := dbtest.Open(t, url)
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Database, PollIntervalMs: 20}, DB: d, Clock: c,
		Logger: slogDiscard()})
	if err == nil {
		err = q.Handle(regs...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// eachMigrated runs f as the subtests "sqlite" and "postgres", each with
// the URL of a database with the queue's tables (as migrate makes them).
func eachMigrated(t *testing.T, f func(t *testing.T, url string)) {
	t.Helper()
	dbtest.EachMigrated(t, queueSets, f)
}

func migrate(t *testing.T, url string) {
	t.Helper()
	if _, err := runApp(t, map[string]any{"database.url": url}, []string{"migrate"}, db.Module(), queue.Module()); err != nil {
		t.Fatal(err)
	}
}

func TestFailedJobCommands(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		overrides := map[string]any{"database.url": url}
		jobs := fx.Options(
			queue.HandleFunc(func(ctx context.Context, _ ExportContacts, _ queue.JobContext) error { return nil }),
			queue.HandleFunc(func(ctx context.Context, _ Panicky, _ queue.JobContext) error {
				return fmt.Errorf("smtp refused the message\nsecond line")
			}),
			queue.HandleFunc(func(ctx context.Context, _ Prioritised, _ queue.JobContext) error { return nil }),
		)
		run := func(args ...string) (string, error) {
			return runApp(t, overrides, args, db.Module(), queue.Module(), jobs)
		}
		mustRun := func(args ...string) string {
			t.Helper()
			out, err := run(args...)
			if err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
			return out
		}
		q := localQueue(t, url, &clock{t: time.Now()}, noop[ExportContacts](), noop[Panicky](), noop[Prioritised]())
		q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		failing, _ := q.Dispatch(ctx, Panicky{})

		if out := mustRun("queue:failed"); out != "No failed jobs.\n" {
			t.Fatalf("queue:failed printed %q", out)
		}
		if out := mustRun("queue:work", "--stop-when-empty"); !strings.HasSuffix(out, "Processed 2 job attempt(s): 1 succeeded, 0 released for retry, 1 failed.\n") {
			t.Fatalf("queue:work printed %q", out)
		}
		line := regexp.MustCompile(`^ID                                    QUEUE    TYPE          ATTEMPTS  FAILED \(UTC\)         ERROR\n` +
			failing + `  default  test.panicky  1         \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  smtp refused the message\n$`)
		if out := mustRun("queue:failed"); !line.MatchString(out) {
			t.Fatalf("queue:failed printed %q", out)
		}
		for _, bad := range []string{"nope", "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23"} {
			if _, err := run("queue:retry", bad); err == nil || err.Error() != "there is no failed job with id "+bad {
				t.Fatalf("queue:retry %s: %v", bad, err)
			}
		}
		if out := mustRun("queue:retry", failing); out != "Put 1 failed job back on its queue: it runs when a worker takes it (start queue:work if none is running).\n" {
			t.Fatalf("queue:retry printed %q", out)
		}
		if out := mustRun("queue:failed"); out != "No failed jobs.\n" {
			t.Fatalf("after a retry queue:failed printed %q", out)
		}
		if out := mustRun("queue:work", "--queue=default", "--once"); !strings.HasSuffix(out, "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 1 failed.\n") {
			t.Fatalf("queue:work --once printed %q", out)
		}
		if out := mustRun("queue:retry", "all"); out != "Put 1 failed job back on its queue: it runs when a worker takes it (start queue:work if none is running).\n" {
			t.Fatalf("queue:retry all printed %q", out)
		}
		mustRun("queue:work", "--max-jobs=1")
		if out := mustRun("queue:flush"); out != "Deleted 1 failed job(s).\n" {
			t.Fatalf("queue:flush printed %q", out)
		}
		if out := mustRun("queue:retry", "all"); out != "There are no failed jobs to retry.\n" {
			t.Fatalf("queue:retry all with none printed %q", out)
		}

		// --queue is repeatable and takes commas; other queues wait.
		for _, name := range []string{"a", "b", "c", "d"} {
			q.Dispatch(ctx, Prioritised{Queue: name})
		}
		if out := mustRun("queue:work", "--queue", "a", "--queue=b,c", "--workers=2", "--stop-when-empty"); !strings.HasSuffix(out, "Processed 3 job attempt(s): 3 succeeded, 0 released for retry, 0 failed.\n") {
			t.Fatalf("queue:work --queue printed %q", out)
		}
		if n, _ := q.Inspector().PendingCount(ctx, "d"); n != 1 {
			t.Fatal("a queue that was not asked for was worked")
		}
		for _, bad := range [][]string{{"queue:work", "--workers", "0"}, {"queue:work", "--max-jobs=-1"}, {"queue:work", "--max-time", "soon"}, {"queue:retry"}} {
			if _, err := run(bad...); err == nil {
				t.Errorf("%v succeeded", bad)
			}
		}
	})
}

// zombieStarted dispatches a Zombie job on the migrated database at url,
// and starts a worker process with a rescue time of 3 s that runs it as
// attempt 1.
func zombieStarted(t *testing.T, url string) (*queue.Queue, string, *exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	q := localQueue(t, url, &clock{t: time.Now()}, noop[Zombie]())
	id, _ := q.Dispatch(ctx, Zombie{})
	cmd, stdin, stdout, stderr := workerIn(t, url, []string{"APP_QUEUE__RESCUE_AFTER=3s"}, "queue:work", "--workers", "1")
	if line, err := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 1\n", id) {
		t.Fatalf("the worker printed %q (%v)\n%s", line, err, stderr)
	}
	return q, id, cmd, stdin, stdout
}

// TestAKilledWorkersJobIsRescued kills a worker process with SIGKILL in
// the middle of a job; another worker process, both on the system clock
// with a rescue time of 3 s, runs it as attempt 2 once the killed one's
// heartbeat is 3 s old: not sooner than 2 s after the kill (the last beat
// came at most a second before it), and whatever the job's timeout.
func TestAKilledWorkersJobIsRescued(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		q, id, cmd, _, _ := zombieStarted(t, url)
		rescue := []string{"APP_QUEUE__RESCUE_AFTER=3s"}
		killed := time.Now()
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		other, stdin, stdout, stderr := workerIn(t, url, rescue, "queue:work", "--workers", "1")
		if line, err := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 2\n", id) {
			t.Fatalf("the other worker printed %q (%v)\n%s", line, err, stderr)
		}
		after := time.Since(killed)
		t.Logf("rescued %s after the kill", after.Round(10*time.Millisecond))
		if after < 2*time.Second {
			t.Errorf("rescued %s after the kill: before the killed worker's heartbeat could be 3 s old", after)
		}
		stdin.Close()
		other.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(stdout)
		if err := other.Wait(); err != nil || string(rest) != "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n" {
			t.Fatalf("the other worker exited with %v, printing %q\n%s", err, rest, stderr)
		}
		if n, _ := q.Inspector().PendingCount(ctx, "default"); n != 0 {
			t.Fatal("the job is still pending after its rescue succeeded")
		}
	})
}

// TestAPausedWorkersJobIsRescuedAndFencedOut stops a worker process with
// SIGSTOP while it runs a job (a zombie: alive, but silent); another
// worker takes the job over once the paused one's heartbeat is 3 s old.
// Resumed with SIGCONT, the first worker learns at its next heartbeat
// that it lost the job, cancels its attempt's context with a cause that
// says so, and cannot complete it: its outcome is not kept, the other
// attempt's is, and the job ran to success once.
func TestAPausedWorkersJobIsRescuedAndFencedOut(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		q, id, zombie, zombieIn, zombieOut := zombieStarted(t, url)
		zombieErr := zombie.Stderr.(*syncBuffer)
		rescue := []string{"APP_QUEUE__RESCUE_AFTER=3s"}
		zombie.Process.Signal(syscall.SIGSTOP)
		t.Cleanup(func() { zombie.Process.Signal(syscall.SIGCONT) }) // so that the cleanup's kill ends it

		other, otherIn, otherOut, otherErr := workerIn(t, url, rescue, "queue:work", "--workers", "1")
		if line, err := otherOut.ReadString('\n'); line != fmt.Sprintf("started %s 2\n", id) {
			t.Fatalf("the other worker printed %q (%v)\n%s", line, err, otherErr)
		}

		lost := zombieErr.when("job taken over by another worker while this one ran it")
		zombie.Process.Signal(syscall.SIGCONT)
		<-lost
		if line, err := zombieOut.ReadString('\n'); line != "stopped 1: "+queue.ErrReservationLost.Error()+"\n" {
			t.Fatalf("the resumed worker's attempt printed %q (%v)\n%s", line, err, zombieErr)
		}
		zombieIn.Close()
		zombie.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(zombieOut)
		if err := zombie.Wait(); err != nil ||
			string(rest) != "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 0 failed, 1 lost its reservation.\n" {
			t.Fatalf("the resumed worker exited with %v, printing %q\n%s", err, rest, zombieErr)
		}
		if n, _ := q.Inspector().PendingCount(ctx, "default"); n != 1 {
			t.Fatalf("%d jobs pending: the resumed worker's attempt completed a job it had lost", n)
		}

		otherIn.Close()
		other.Process.Signal(syscall.SIGTERM)
		rest, _ = io.ReadAll(otherOut)
		if err := other.Wait(); err != nil || string(rest) != "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n" {
			t.Fatalf("the other worker exited with %v, printing %q\n%s", err, rest, otherErr)
		}
		if n, _ := q.Inspector().PendingCount(ctx, "default"); n != 0 {
			t.Fatal("the job is still pending after the other worker's attempt succeeded")
		}
		if failed, _, _ := q.Inspector().Failed(ctx, queue.FailedQuery{}); len(failed) != 0 {
			t.Fatalf("failed jobs: %+v", failed)
		}
	})
}

// TestSIGTERMFinishesTheRunningJob stops a real queue:work process while
// a job runs: it takes no new job, the running one finishes, and it prints
// its summary and exits 0.
func TestSIGTERMFinishesTheRunningJob(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Block](), noop[ExportContacts]())
		id, _ := q.Dispatch(ctx, Block{})
		cmd, stdin, stdout, stderr := worker(t, url, "queue:work", "--workers=2")
		if line, _ := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 1\n", id) {
			t.Fatalf("the worker printed %q\n%s", line, stderr)
		}
		stopping := stderr.when("Stopping (signalled): taking no new jobs")
		cmd.Process.Signal(syscall.SIGTERM)
		<-stopping
		q.Dispatch(ctx, ExportContacts{CompanyID: "after the signal"})
		stdin.Close()
		rest, _ := io.ReadAll(stdout)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
		if string(rest) != "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n" {
			t.Fatalf("the worker printed %q\n%s", rest, stderr)
		}
		if n, _ := q.Inspector().PendingCount(ctx, "default"); n != 1 {
			t.Fatalf("pending %d: the job dispatched after the signal should wait", n)
		}
	})
}

// TestSeveralWorkerProcessesRunEachJobOnce: 3 processes of 4 loops work
// 2,000 jobs on one database; each job runs exactly once and no process
// fails.
func TestSeveralWorkerProcessesRunEachJobOnce(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		const jobs = 2000
		d, _ := recordJobs(t, url, jobs)
		var wg sync.WaitGroup
		for range 3 {
			cmd, _, stdout, stderr := worker(t, url, "queue:work", "--workers", "4", "--stop-when-empty")
			wg.Go(func() {
				out, _ := io.ReadAll(stdout)
				if err := cmd.Wait(); err != nil {
					t.Errorf("a worker exited with %v\n%s", err, stderr)
				}
				if strings.Contains(stderr.String(), "level=ERROR") || !strings.Contains(string(out), " 0 released for retry, 0 failed.") {
					t.Errorf("a worker printed %s\n%s", out, stderr)
				}
			})
		}
		wg.Wait()
		var runs, distinct, processes, pending int
		d.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT job_id), count(DISTINCT pid) FROM runs").Scan(&runs, &distinct, &processes)
		d.QueryRowContext(ctx, "SELECT count(*) FROM jobs").Scan(&pending)
		if runs != jobs || distinct != jobs || pending != 0 {
			t.Fatalf("%d runs of %d distinct jobs, %d left; want each of %d jobs run once", runs, distinct, pending, jobs)
		}
		t.Logf("%d jobs by %d processes", jobs, processes)
	})
}

// TestFlowControlAcrossTwoWorkerProcesses: two worker processes take the
// jobs with a priority first, run each snoozing job's one attempt until it
// stops snoozing, and run a burst of debounced dispatches once, with the
// last payload. The order is the reservations', as the database recorded
// them: each worker takes the jobs by priority (on SQLite, the two
// together), whenever their handlers happen to start.
func TestFlowControlAcrossTwoWorkerProcesses(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE ctl_runs (job_id TEXT NOT NULL, name TEXT NOT NULL, attempt INTEGER NOT NULL, "+
			"snoozes INTEGER NOT NULL, pid INTEGER NOT NULL, started_ns BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		reservations := recordReservations(t, d, url)
		c := &clock{t: time.Now()}
		q := localQueue(t, url, c, noop[Controlled]())
		const plain, urgent, snoozing = 200, 40, 10
		for i := range plain {
			if _, err := q.Dispatch(ctx, Controlled{Name: fmt.Sprintf("plain %d", i)}); err != nil {
				t.Fatal(err)
			}
			if i%5 == 0 && i/5 < urgent {
				if _, err := q.Dispatch(ctx, Controlled{Name: fmt.Sprintf("urgent %d", i/5), Priority: 5}); err != nil {
					t.Fatal(err)
				}
			}
			if i%20 == 0 && i/20 < snoozing {
				if _, err := q.Dispatch(ctx, Controlled{Name: fmt.Sprintf("snoozing %d", i/20), Snoozes: 2, Priority: -1}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var debounced string
		for i := range 30 {
			id, err := q.Dispatch(ctx, Controlled{Name: fmt.Sprintf("debounced %d", i), Debounce: true, Priority: -2})
			if err != nil || debounced != "" && id != debounced {
				t.Fatalf("debounced dispatch %d: %s, %v; want the first's id %s", i, id, err, debounced)
			}
			debounced = id
		}
		c.Advance(time.Second) // the debounced job is due; the workers read the system clock
		var wg sync.WaitGroup
		snoozed := 0
		var mu sync.Mutex
		for range 2 {
			cmd, _, stdout, stderr := worker(t, url, "queue:work", "--workers", "1", "--stop-when-empty")
			wg.Go(func() {
				out, _ := io.ReadAll(stdout)
				if err := cmd.Wait(); err != nil {
					t.Errorf("a worker exited with %v\n%s", err, stderr)
				}
				var n int
				if i := strings.Index(string(out), " failed, "); i >= 0 {
					fmt.Sscanf(string(out)[i+len(" failed, "):], "%d snoozed", &n)
				}
				mu.Lock()
				snoozed += n
				mu.Unlock()
				if strings.Contains(stderr.String(), "level=ERROR") || !strings.Contains(string(out), " 0 released for retry, 0 failed") {
					t.Errorf("a worker printed %s\n%s", out, stderr)
				}
			})
		}
		wg.Wait()
		rows, err := d.QueryContext(ctx, "SELECT name, attempt, snoozes, pid FROM ctl_runs ORDER BY started_ns")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var names []string
		pids := map[int]bool{}
		for rows.Next() {
			var name string
			var attempt, snoozes, pid int
			if err := rows.Scan(&name, &attempt, &snoozes, &pid); err != nil {
				t.Fatal(err)
			}
			if attempt != 1 {
				t.Errorf("%s ran attempt %d; want every run the first attempt", name, attempt)
			}
			names = append(names, name)
			pids[pid] = true
		}
		// The urgent jobs first, the plain ones next, then the snoozing
		// (-1) and the debounced (-2): each job's first reservation in the
		// order of priorities (a snoozed job is taken again later, by its
		// priority among those waiting then).
		all := reservations()
		first := map[string]int64{}
		for _, r := range all {
			if _, ok := first[r.job]; !ok {
				first[r.job] = r.seq
			}
		}
		firstOfItsJob := func(r reservation) bool { return first[r.job] == r.seq }
		byPriority := func(a, b reservation) bool { return a.priority > b.priority }
		describe := func(r reservation) string {
			var c Controlled
			json.Unmarshal([]byte(r.payload), &c)
			return fmt.Sprintf("%q (priority %d)", c.Name, r.priority)
		}
		inOrderByWorker(t, all, firstOfItsJob, byPriority, describe)
		inOrderOnSQLite(t, url, all, firstOfItsJob, byPriority, describe)
		counts := map[string]int{}
		for _, name := range names {
			counts[strings.Fields(name)[0]]++
		}
		if counts["urgent"] != urgent || counts["plain"] != plain || counts["snoozing"] != 3*snoozing || counts["debounced"] != 1 ||
			!slices.Contains(names, "debounced 29") {
			t.Fatalf("runs by kind %v; want each urgent and plain job once, each snoozing one 3 times, the debounced one once with the last payload", counts)
		}
		if snoozed != 2*snoozing {
			t.Errorf("the workers counted %d snoozes; want %d", snoozed, 2*snoozing)
		}
		var pending, failed int
		d.QueryRowContext(ctx, "SELECT count(*) FROM jobs").Scan(&pending)
		d.QueryRowContext(ctx, "SELECT count(*) FROM failed_jobs").Scan(&failed)
		if pending+failed != 0 {
			t.Fatalf("%d jobs left, %d failed; want none", pending, failed)
		}
		t.Logf("%d runs by %d processes", len(names), len(pids))
	})
}

// TestAConcurrencyLimitHoldsAcrossTwoWorkerProcesses: two processes of
// four handlers each run 40 jobs of each of three accounts limited to two
// at once: never more than two of an account run at once (counted in the
// database by the handlers themselves), every job runs once, on its first
// attempt, and the workers stop when nothing is left, held jobs included.
func TestAConcurrencyLimitHoldsAcrossTwoWorkerProcesses(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE lim_running (account INTEGER PRIMARY KEY, n INTEGER NOT NULL, peak INTEGER NOT NULL, "+
			"runs INTEGER NOT NULL, first_attempts INTEGER NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		const accounts, each = 3, 40
		q := localQueue(t, url, &clock{t: time.Now()}, noop[AccountCall]())
		for a := range accounts {
			if _, err := d.NewRaw("INSERT INTO lim_running VALUES (?, 0, 0, 0, 0)", a).Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for range each {
			for a := range accounts {
				if _, err := q.Dispatch(ctx, AccountCall{Account: a}); err != nil {
					t.Fatal(err)
				}
			}
		}
		var wg sync.WaitGroup
		for range 2 {
			cmd, _, stdout, stderr := worker(t, url, "queue:work", "--workers", "4", "--stop-when-empty")
			wg.Go(func() {
				out, _ := io.ReadAll(stdout)
				if err := cmd.Wait(); err != nil || strings.Contains(stderr.String(), "level=ERROR") {
					t.Errorf("a worker exited with %v\n%s\n%s", err, out, stderr)
				}
			})
		}
		wg.Wait()
		rows, err := d.QueryContext(ctx, "SELECT account, n, peak, runs, first_attempts FROM lim_running ORDER BY account")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var account, n, peak, runs, first int
			if err := rows.Scan(&account, &n, &peak, &runs, &first); err != nil {
				t.Fatal(err)
			}
			if peak > 2 || peak < 1 || n != 0 || runs != each || first != each {
				t.Errorf("account %d: %d at most at once, %d runs, %d first attempts, %d left running; want at most 2, %d runs, each a first attempt",
					account, peak, runs, first, n, each)
			}
		}
		if n, err := q.Inspector().PendingCount(ctx, "default"); err != nil || n != 0 {
			t.Fatalf("%d jobs left pending (%v)", n, err)
		}
	})
}

// TestARateLimitHoldsAcrossTwoWorkerProcesses: two processes of four
// handlers each run 16 jobs limited to four starts a second: each runs
// once, on its first attempt, and of any five the last started at least
// a second after the first's reservation was stamped, across both
// processes. That bound holds whatever the machine's speed: a worker held
// up between reading its clock and storing its reservation, or between
// the reservation and its handler's start, only moves the starts later.
func TestARateLimitHoldsAcrossTwoWorkerProcesses(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE rate_starts (n INTEGER NOT NULL, attempt INTEGER NOT NULL, reserved_ms BIGINT NOT NULL, at_ms BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		const jobs = 16
		q := localQueue(t, url, &clock{t: time.Now()}, noop[PartnerCall]())
		for n := range jobs {
			if _, err := q.Dispatch(ctx, PartnerCall{N: n}); err != nil {
				t.Fatal(err)
			}
		}
		children, wait := workerChildren(t, url, 2, "queue:work", "--workers", "4")
		// --stop-when-empty would stop while jobs wait for the limit: the
		// test waits for the jobs' rows, then stops the workers.
		type start struct{ reserved, at int64 }
		var starts []start
		for deadline := time.Now().Add(2 * time.Minute); ; {
			starts = starts[:0]
			rows, err := d.QueryContext(ctx, "SELECT reserved_ms, at_ms FROM rate_starts ORDER BY reserved_ms")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
				var s start
				if err := rows.Scan(&s.reserved, &s.at); err != nil {
					t.Fatal(err)
				}
				starts = append(starts, s)
			}
			rows.Close()
			if len(starts) >= jobs || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		for _, cmd := range children {
			cmd.Process.Signal(syscall.SIGTERM)
		}
		wait()
		var runs, distinct, firsts int
		if err := d.QueryRowContext(ctx, "SELECT count(*), count(DISTINCT n), sum(CASE WHEN attempt = 1 THEN 1 ELSE 0 END) FROM rate_starts").Scan(&runs, &distinct, &firsts); err != nil {
			t.Fatal(err)
		}
		if runs != jobs || distinct != jobs || firsts != jobs {
			t.Fatalf("%d runs of %d jobs, %d first attempts; want each of %d once, on its first attempt", runs, distinct, firsts, jobs)
		}
		// Of the jobs stamped at or after each one's stamp, at most four
		// started within a second of it.
		for i, s := range starts {
			var early []int64
			for _, o := range starts[i:] {
				if o.at < s.reserved+1000 {
					early = append(early, o.at)
				}
			}
			if len(early) > 4 {
				t.Fatalf("%d jobs stamped at or after %d started within a second of it, at %v; want at most 4 (all: %v)", len(early), s.reserved, early, starts)
			}
		}
	})
}
