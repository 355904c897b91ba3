package queue_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/app"
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

// Record writes each attempt into the table runs.
type Record struct{}

func (Record) JobName() string { return "test.record" }

type recordHandler struct{ d *db.DB }

func (h *recordHandler) Handle(ctx context.Context, _ Record, jc queue.JobContext) error {
	_, err := h.d.NewRaw("INSERT INTO runs (job_id, attempt, pid) VALUES (?, ?, ?)", jc.JobID, jc.Attempt, os.Getpid()).Exec(ctx)
	return err
}

const (
	workerEnv = "NAVREE_QUEUE_TEST_WORKER_URL"
	clockEnv  = "NAVREE_QUEUE_TEST_FAST_CLOCK" // Unix ns the fast clock starts at
)

// clockSpeed is how much faster than real time the chaos test's clock
// runs: a Chaos job's takeover delay (its 30 s timeout plus 30 s) passes
// in 6 s. A worker that stalls longer (starved of the CPU or the disk on
// a loaded machine) has its job taken over as documented, which the test
// would count as a second run with no kill: at 20 times and a 1 s
// timeout (1.5 s), that happened once in CI.
const clockSpeed = 10

// fastClock runs clockSpeed times faster than real time from start; every
// process of a test that shares start shares the time.
type fastClock struct{ start time.Time }

func (c fastClock) Now() time.Time { return c.start.Add(time.Since(c.start) * clockSpeed) }

// Chaos records each attempt in chaos_runs: when it started and, if the
// process lived, when it finished.
type Chaos struct{}

func (Chaos) JobName() string { return "test.chaos" }
func (Chaos) JobOptions() queue.Options {
	// The timeout runs on the real clock, the takeover on the fast one: a
	// handler must not time out (and be retried) before its job could be
	// taken over.
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
		queue.HandleFunc(func(ctx context.Context, _ ExportContacts, _ queue.JobContext) error { return nil }),
	)
}

// workerChild runs the worker app's command line on the database at url.
func workerChild(url string, args []string) int {
	opts := []fx.Option{config.Module(config.Sources{Overrides: map[string]any{"database.url": url, "queue.poll_interval_ms": 20}}),
		db.Module(), queue.Module(), workerJobs()}
	if start, err := strconv.ParseInt(os.Getenv(clockEnv), 10, 64); err == nil {
		opts = append(opts, app.WithClock(fastClock{start: time.Unix(0, start)}))
	}
	a := app.New(opts...)
	a.Name = "crm"
	os.Args = append([]string{"crm"}, args...)
	a.Main() // with its signal handling; exits 1 on an error
	return 0
}

// worker starts `crm ARGS` as a child process on the database at url.
func worker(t *testing.T, url string, args ...string) (*exec.Cmd, io.WriteCloser, *bufio.Reader, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), workerEnv+"="+url)
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

func migrate(t *testing.T, url string) {
	t.Helper()
	if _, err := runApp(t, map[string]any{"database.url": url}, []string{"migrate"}, db.Module(), queue.Module()); err != nil {
		t.Fatal(err)
	}
}

func TestFailedJobCommands(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		migrate(t, url)
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
		line := regexp.MustCompile(`^` + failing + `  default  test.panicky  attempts=1  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d  smtp refused the message\n$`)
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

// TestAKilledWorkersJobIsTakenOver kills a worker process with SIGKILL in
// the middle of a job; another worker, its clock past the job's timeout
// plus 30 s, runs it as attempt 2.
func TestAKilledWorkersJobIsTakenOver(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		migrate(t, url)
		start := time.Now()
		q := localQueue(t, url, &clock{t: start}, noop[Block]())
		id, _ := q.Dispatch(ctx, Block{})

		cmd, _, stdout, stderr := worker(t, url, "queue:work", "--workers", "1")
		if line, err := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 1\n", id) {
			t.Fatalf("the worker printed %q (%v)\n%s", line, err, stderr)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()

		// The worker stamped its reservation (by the database's clock)
		// before it printed its line: at most some seconds before now,
		// however loaded the machine, and not after.
		attempts := make(chan int, 1)
		later := &clock{t: time.Now()}
		takeover := localQueue(t, url, later, queue.HandlerOf[Block](queue.HandlerFunc[Block](func(ctx context.Context, _ Block, jc queue.JobContext) error {
			attempts <- jc.Attempt
			return nil
		})))
		later.Advance(time.Minute + 20*time.Second)
		if stats, err := takeover.RunPending(ctx); stats.Processed != 0 || err != nil {
			t.Fatalf("taken over before the job's timeout plus 30 s: %+v, %v", stats, err)
		}
		later.Advance(11 * time.Second) // 91 s after the reservation at least
		if stats, err := takeover.RunPending(ctx); stats.Succeeded != 1 || err != nil {
			t.Fatalf("not taken over after the job's timeout plus 30 s: %+v, %v", stats, err)
		}
		if got := <-attempts; got != 2 {
			t.Fatalf("the takeover ran attempt %d, want 2", got)
		}
		if n, _ := takeover.Inspector().PendingCount(ctx, "default"); n != 0 {
			t.Fatal("the job is still pending after its takeover succeeded")
		}
	})
}

// TestSIGTERMFinishesTheRunningJob stops a real queue:work process while
// a job runs: it takes no new job, the running one finishes, and it prints
// its summary and exits 0.
func TestSIGTERMFinishesTheRunningJob(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		migrate(t, url)
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Block](), noop[ExportContacts]())
		id, _ := q.Dispatch(ctx, Block{})
		cmd, stdin, stdout, stderr := worker(t, url, "queue:work", "--workers=2")
		if line, _ := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 1\n", id) {
			t.Fatalf("the worker printed %q\n%s", line, stderr)
		}
		stopping := stderr.when("Stopping: taking no new jobs")
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
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		migrate(t, url)
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE runs (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Record]())
		const jobs = 2000
		err := d.Transaction(ctx, func(ctx context.Context) error {
			for range jobs {
				if _, err := q.Dispatch(ctx, Record{}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
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
