package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
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

// exportHandler is a handler built by fx with a dependency.
type exportHandler struct{ d *db.DB }

func (h *exportHandler) Handle(ctx context.Context, job ExportContacts, jc queue.JobContext) error {
	return nil
}

// contactsModule registers the test jobs as an app module would.
var contactsModule = fx.Module("contacts",
	queue.Register[ExportContacts](func(d *db.DB) *exportHandler { return &exportHandler{d} }),
	queue.HandleFunc(func(ctx context.Context, job SyncCalendar, jc queue.JobContext) error { return nil }),
)

// runApp runs args on an app of opts configured by overrides, and returns
// what it printed.
func runApp(t *testing.T, overrides map[string]any, args []string, opts ...fx.Option) (string, error) {
	t.Helper()
	var out bytes.Buffer
	a := app.New(append([]fx.Option{config.Module(config.Sources{Overrides: overrides})}, opts...)...)
	a.Name, a.Stdout, a.Stderr = "crm", &out, &out
	err := a.Run(context.Background(), args)
	return out.String(), err
}

// use is a command that takes the app's queue services.
func use(f func(q *queue.Queue, d queue.Dispatcher) error) fx.Option {
	type services struct {
		fx.In
		Queue      *queue.Queue
		Dispatcher queue.Dispatcher
	}
	return app.Commands(app.Command{Name: "use", Action: app.Uses(func(c *cli.Context, s services) error { return f(s.Queue, s.Dispatcher) })})
}

func TestModuleMigratesAndDispatches(t *testing.T) {
	t.Parallel()
	url := dbtest.SQLiteURL(t)
	overrides := map[string]any{"database.url": url}
	out, err := runApp(t, overrides, []string{"migrate"}, db.Module(), queue.Module(), contactsModule)
	if err != nil || out != "Migrated queue/0001_create_jobs\nMigrated queue/0002_create_queue_clock\nMigrated queue/0003_add_meta\nMigrated queue/0004_index_failed_queue\nMigrated queue/0005_create_queue_pauses\nMigrated queue/0006_create_queue_cancels\nMigrated queue/0007_create_queue_throughput\nMigrated queue/0008_create_queue_workers\nMigrated queue/0009_add_reserved_by\nMigrated queue/0010_create_succeeded_jobs\nMigrated queue/0011_create_queue_timings\nMigrated queue/0012_create_flows\nMigrated queue/0013_add_priority_and_snoozes\nMigrated queue/0014_add_concurrency_limits\nMigrated queue/0015_add_rate_limits\nMigrated queue/0016_add_fairness\nMigrated queue/0017_add_worker_restarts\nMigrated queue/0018_record_queue_features\nMigrated queue/0019_keep_snoozes\nMigrated queue/0020_combine_limits\nMigrated queue/0021_moves_in_the_driver\nMigrated queue/0022_index_keyed_jobs_apart\nMigrated queue/0023_controls\nMigrated queue/0024_controls_alone\n" {
		t.Fatalf("migrate: %v, printed %q", err, out)
	}
	_, err = runApp(t, overrides, []string{"use"}, db.Module(), queue.Module(), contactsModule, use(func(q *queue.Queue, d queue.Dispatcher) error {
		if queue.Dispatcher(q) != d {
			return errors.New("the Dispatcher is not the app's queue")
		}
		if _, err := d.Dispatch(context.Background(), ExportContacts{CompanyID: "c"}); err != nil {
			return err
		}
		if _, err := q.Dispatch(context.Background(), SyncCalendar{UserID: "u"}); err != nil {
			return err
		}
		n, err := q.Inspector().PendingCount(context.Background(), "default")
		if n != 1 {
			return fmt.Errorf("pending %d, %v", n, err)
		}
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	// The jobs are in the database for the next process.
	d := dbtest.Open(t, url)
	var n int
	if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM jobs").Scan(&n); err != nil || n != 2 {
		t.Fatalf("jobs table has %d rows (%v), want 2", n, err)
	}
}

func TestModuleWithMemoryNeedsNoDatabase(t *testing.T) {
	t.Parallel()
	_, err := runApp(t, nil, []string{"use"}, queue.ModuleWith(queue.Config{Driver: queue.Memory}),
		queue.HandleFunc(func(ctx context.Context, job ExportContacts, jc queue.JobContext) error { return nil }),
		use(func(q *queue.Queue, _ queue.Dispatcher) error {
			_, err := q.Dispatch(context.Background(), ExportContacts{})
			return err
		}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = runApp(t, nil, []string{"use"}, queue.Module(), use(func(*queue.Queue, queue.Dispatcher) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), "the database driver needs db.Module()") {
		t.Fatalf("database driver without a database: %v", err)
	}
}

func TestInvalidQueueConfigFailsTheBoot(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key   string
		value any
		want  string
	}{
		{"queue.driver", "redis", `config: invalid value for queue.driver: "redis" (from overrides); allowed: one of database, memory`},
		{"queue.workers", 0, `config: invalid value for queue.workers: "0" (from overrides); allowed: at least 1, at most 10000`},
		{"queue.poll_interval_ms", "soon", `config: invalid value for queue.poll_interval_ms: "soon" (from overrides); allowed: a whole number`},
		{"queue.default_queue", "", `config: invalid value for queue.default_queue: "" (from overrides); allowed: a non-empty value, at most 100`},
		{"queue.queues", "high," + strings.Repeat("x", 101), `config: invalid value for queue.queues: "` + strings.Repeat("x", 101) + `" (from overrides); allowed: queue names of 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
		{"queue.queues", []any{"high", "mail sms"}, `config: invalid value for queue.queues: "mail sms" (from overrides); allowed: queue names of 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
		{"queue.default_queue", "jobs!", `config: invalid value for queue.default_queue: "jobs!" (from overrides); allowed: a queue name of 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
		{"queue.rescue_after", "2s", `config: invalid value for queue.rescue_after: "2s" (from overrides); allowed: a duration from 3s to 1h, such as "15s"`},
		{"queue.rescue_after", "2h", `config: invalid value for queue.rescue_after: "2h0m0s" (from overrides); allowed: a duration from 3s to 1h, such as "15s"`},
		{"queue.stop_timeout", "-1s", `config: invalid value for queue.stop_timeout: "-1s" (from overrides); allowed: a duration from 0s (no deadline) to 24h, such as "25s"`},
		{"queue.stop_timeout", "25h", `config: invalid value for queue.stop_timeout: "25h0m0s" (from overrides); allowed: a duration from 0s (no deadline) to 24h, such as "25s"`},
		{"queue.only_known_types", "sometimes", `config: invalid value for queue.only_known_types: "sometimes" (from overrides); allowed: true or false`},
		{"queue.wokers", 8, `config: unknown key queue.wokers = "8" (from overrides): did you mean workers?`},
	}
	for _, tt := range tests {
		_, err := runApp(t, map[string]any{tt.key: tt.value}, []string{"use"}, queue.Module(), use(func(*queue.Queue, queue.Dispatcher) error { return nil }))
		if !errors.Is(err, config.ErrInvalid) || err.Error() != tt.want {
			t.Errorf("%s=%v: error\n %v\nwant\n %s", tt.key, tt.value, err, tt.want)
		}
	}
}

func TestConfigDefaultsAndEnvLists(t *testing.T) {
	t.Parallel()
	c, err := config.New(config.Sources{Environ: []string{"APP_QUEUE__QUEUES=mail, default", "APP_QUEUE__DRIVER=memory", "APP_QUEUE__WORKERS=8"}},
		config.Definition{Name: "queue", Defaults: queue.DefaultConfig()})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := config.Get[queue.Config](c, "queue")
	if fmt.Sprint(got) != fmt.Sprint(queue.Config{Driver: queue.Memory, DefaultQueue: "default", Workers: 8, PollIntervalMs: 1000, Queues: []string{"mail", "default"},
		RescueAfter: 15 * time.Second, MaxSnoozes: 100, KeepSucceeded: time.Hour}) {
		t.Fatalf("config %+v", got)
	}
	if def := queue.DefaultConfig(); def.Driver != "database" || def.DefaultQueue != "default" || def.Workers != 4 || def.PollIntervalMs != 1000 || fmt.Sprint(def.Queues) != "[high default]" || def.RescueAfter != 15*time.Second {
		t.Fatalf("defaults %+v differ from the spec", def)
	}
}

// TestModuleWithTakesTheDefaultQueues: a Config written in code takes
// every default for its zero fields, the queues included, as a file that
// names no queues does: the workers process high, then default.
func TestModuleWithTakesTheDefaultQueues(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 2)
	_, err := runApp(t, nil, []string{"use"}, queue.ModuleWith(queue.Config{Driver: queue.Memory}), queue.HandleFunc(func(_ context.Context, j ExportContacts, _ queue.JobContext) error {
		ran <- j.CompanyID
		return nil
	}), use(func(q *queue.Queue, _ queue.Dispatcher) error {
		for _, name := range []string{"default", "high"} {
			if _, err := q.Push(ctx, exportOn(name, "on "+name)); err != nil {
				return err
			}
		}
		stats, err := q.RunPending(ctx)
		if err == nil && stats.Succeeded != 2 {
			err = fmt.Errorf("RunPending: %s, want both jobs run", stats)
		}
		return err
	}))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{<-ran, <-ran}; got[0] != "on high" || got[1] != "on default" {
		t.Errorf("ran %q, want high's job, then default's", got)
	}
	// So does New.
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err == nil {
		err = q.Handle(reporting(ran))
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.Push(ctx, exportOn("high", "c1")); err != nil {
		t.Fatal(err)
	}
	if stats, err := q.RunPending(ctx); err != nil || stats.Succeeded != 1 || <-ran != "c1" {
		t.Fatalf("New with a zero Config: %+v, %v; want high's job run", stats, err)
	}
}

// TestEmptyQueuesMeanTheDefaultQueue: as the spec says, RunPending
// processes queue.queues or else default_queue: a queues setting left
// empty in a file, a variable or code boots and works the default queue
// alone.
func TestEmptyQueuesMeanTheDefaultQueue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(dir+"/app.toml", []byte("[queue]\ndriver = \"memory\"\ndefault_queue = \"jobs\"\nqueues = []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sources := map[string]config.Sources{
		"queues = []":        {Dir: dir},
		"APP_QUEUE__QUEUES=": {Environ: []string{"APP_QUEUE__DRIVER=memory", "APP_QUEUE__DEFAULT_QUEUE=jobs", "APP_QUEUE__QUEUES="}},
	}
	for name, src := range sources {
		ran := make(chan string, 2)
		a := app.New(config.Module(src), queue.Module(), queue.HandleFunc(func(_ context.Context, j ExportContacts, _ queue.JobContext) error {
			ran <- j.CompanyID
			return nil
		}), use(func(q *queue.Queue, _ queue.Dispatcher) error {
			if _, err := q.Push(ctx, exportOn("high", "on high")); err != nil {
				return err
			}
			if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "on jobs"}); err != nil {
				return err
			}
			stats, err := q.RunPending(ctx)
			if err == nil && stats.Succeeded != 1 {
				err = fmt.Errorf("RunPending: %s, want the default queue's job alone", stats)
			}
			return err
		}))
		a.Name, a.Stdout, a.Stderr = "crm", io.Discard, io.Discard
		if err := a.Run(ctx, []string{"use"}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := <-ran; got != "on jobs" {
			t.Fatalf("%s: ran %q", name, got)
		}
	}
	q, _ := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory, DefaultQueue: "mail", Queues: []string{}}})
	q.Handle(reporting(make(chan string, 2)))
	q.Push(ctx, exportOn("high", "c1"))
	q.Dispatch(ctx, ExportContacts{CompanyID: "c2"})
	if stats, err := q.RunPending(ctx); err != nil || stats.Succeeded != 1 {
		t.Fatalf("in code: %+v, %v; want the default queue's job alone", stats, err)
	}
}

func TestRegisteringATypeTwiceNamesBoth(t *testing.T) {
	t.Parallel()
	_, err := runApp(t, nil, []string{"use"}, queue.ModuleWith(queue.Config{Driver: queue.Memory}),
		queue.HandleFunc(func(ctx context.Context, job ExportContacts, jc queue.JobContext) error { return nil }),
		queue.HandleFunc(func(ctx context.Context, job ExportContacts, jc queue.JobContext) error { return nil }),
		use(func(*queue.Queue, queue.Dispatcher) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), `queue: job "contacts.export" is registered twice: queue_test.ExportContacts at `) ||
		strings.Count(err.Error(), "module_test.go:") != 2 {
		t.Fatalf("error = %v, want both registrations named", err)
	}
	_, err = runApp(t, nil, []string{"use"}, queue.ModuleWith(queue.Config{Driver: queue.Memory}),
		queue.Register[ExportContacts](func() string { return "not a handler" }),
		use(func(*queue.Queue, queue.Dispatcher) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), "queue.Register[queue_test.ExportContacts]") {
		t.Fatalf("error = %v, want the bad constructor named", err)
	}
}

// notifier needs the Dispatcher, as a *mail.Mailer does.
type notifier struct{ d queue.Dispatcher }

// followUp is what the export handler of the test dispatches.
type followUp struct {
	UserID string `json:"user_id"`
}

func (followUp) JobName() string { return "contacts.follow_up" }

// TestAHandlerMayNeedWhatNeedsTheDispatcher: a handler built by fx may
// need a service that dispatches (the export job mails its link through a
// Mailer that queues through the Dispatcher) without a dependency cycle,
// and code that only dispatches builds no handler.
func TestAHandlerMayNeedWhatNeedsTheDispatcher(t *testing.T) {
	t.Parallel()
	var builds int
	var handled []string
	module := fx.Options(queue.ModuleWith(queue.Config{Driver: queue.Memory}),
		fx.Provide(func(d queue.Dispatcher) *notifier { return &notifier{d} }),
		queue.Register[ExportContacts](func(n *notifier) queue.Handler[ExportContacts] {
			builds++
			return queue.HandlerFunc[ExportContacts](func(ctx context.Context, job ExportContacts, jc queue.JobContext) error {
				handled = append(handled, job.RequestedBy)
				_, err := n.d.Dispatch(ctx, followUp{UserID: "u1"})
				return err
			})
		}),
		queue.HandleFunc(func(ctx context.Context, job followUp, jc queue.JobContext) error {
			handled = append(handled, "follow up "+job.UserID)
			return nil
		}),
	)
	dispatchOnly := app.Commands(app.Command{Name: "dispatch", Action: app.Uses(func(c *cli.Context, n *notifier) error {
		_, err := n.d.Dispatch(c.Context, ExportContacts{RequestedBy: "ada@example.com"})
		return err
	})})
	if out, err := runApp(t, nil, []string{"dispatch"}, module, dispatchOnly); err != nil || builds != 0 {
		t.Fatalf("dispatch: %v %s; the handler was built %d time(s), want none", err, out, builds)
	}
	out, err := runApp(t, nil, []string{"use"}, module, use(func(q *queue.Queue, d queue.Dispatcher) error {
		if _, err := d.Dispatch(context.Background(), ExportContacts{RequestedBy: "ada@example.com"}); err != nil {
			return err
		}
		succeeded := 0
		for {
			stats, err := q.RunPending(context.Background())
			if err != nil || stats.Processed == 0 {
				if succeeded != 2 {
					return fmt.Errorf("%d job(s) succeeded (%v), want the export and the follow-up it queued", succeeded, err)
				}
				return err
			}
			succeeded += stats.Succeeded
		}
	}))
	if err != nil || builds != 1 || strings.Join(handled, ",") != "ada@example.com,follow up u1" {
		t.Fatalf("use: %v %s; %d build(s), handled %v", err, out, builds, handled)
	}
}

const childEnv = "NAVREE_QUEUE_TEST_CHILD_URL"

func TestMain(m *testing.M) {
	if url := os.Getenv(childEnv); url != "" {
		os.Exit(dispatchChild(url))
	}
	if url := os.Getenv(workerEnv); url != "" {
		os.Exit(workerChild(url, os.Args[1:]))
	}
	dbtest.Parallel(4 * runtime.GOMAXPROCS(0)) // the tests mostly wait: for commits, servers, worker processes
	os.Exit(dbtest.Main(m))
}

// dispatchChild dispatches the same unique job from 8 goroutines and
// prints the ids it got.
func dispatchChild(url string) int {
	out, err := runChildApp(url)
	fmt.Print(out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

func runChildApp(url string) (string, error) {
	var mu sync.Mutex
	var ids []string
	a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": url}}), db.Module(), queue.Module(), contactsModule,
		use(func(q *queue.Queue, _ queue.Dispatcher) error {
			var wg sync.WaitGroup
			errs := make(chan error, 8)
			for range 8 {
				wg.Go(func() {
					id, err := q.Dispatch(context.Background(), SyncCalendar{UserID: "same"})
					errs <- err
					mu.Lock()
					ids = append(ids, id)
					mu.Unlock()
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					return err
				}
			}
			return nil
		}))
	a.Stdout, a.Stderr = io.Discard, os.Stderr
	err := a.Run(context.Background(), []string{"use"})
	return strings.Join(ids, "\n") + "\n", err
}

// TestUniqueAcrossProcesses: two processes, each dispatching the same
// unique job from 8 goroutines at once, make exactly one job.
func TestUniqueAcrossProcesses(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		var wg sync.WaitGroup
		outs := make([]string, 2)
		for i := range outs {
			cmd := exec.Command(os.Args[0])
			cmd.Env = append(os.Environ(), childEnv+"="+url)
			cmd.Stderr = os.Stderr
			wg.Go(func() {
				out, err := cmd.Output()
				if err != nil {
					t.Errorf("child: %v", err)
				}
				outs[i] = string(out)
			})
		}
		wg.Wait()
		ids := strings.Fields(outs[0] + outs[1])
		if len(ids) != 16 {
			t.Fatalf("the children printed %d ids, want 16", len(ids))
		}
		for _, id := range ids {
			if id != ids[0] {
				t.Fatalf("dispatches got different ids: %v", ids)
			}
		}
		d := dbtest.Open(t, url)
		var n int
		if err := d.QueryRowContext(context.Background(), "SELECT count(*) FROM jobs").Scan(&n); err != nil || n != 1 {
			t.Fatalf("%d jobs (%v), want 1", n, err)
		}
	})
}

// TestRegisterNamed: a job type made at run time, with a handler fx
// builds from what it needs.
func TestRegisterNamed(t *testing.T) {
	t.Parallel()
	var got []string
	module := fx.Options(queue.ModuleWith(queue.Config{Driver: queue.Memory}),
		fx.Provide(func(d queue.Dispatcher) *notifier { return &notifier{d} }),
		queue.RegisterNamed("events.audit", func(n *notifier) queue.NamedFunc {
			return func(ctx context.Context, payload json.RawMessage, jc queue.JobContext) error {
				got = append(got, jc.Name+" "+string(payload))
				return nil
			}
		}))
	out, err := runApp(t, nil, []string{"use"}, module, use(func(q *queue.Queue, d queue.Dispatcher) error {
		if _, err := d.Push(context.Background(), queue.Envelope{Name: "events.audit", Payload: json.RawMessage(`{"id":1}`)}); err != nil {
			return err
		}
		_, err := q.RunPending(context.Background())
		return err
	}))
	if err != nil || strings.Join(got, ",") != `events.audit {"id":1}` {
		t.Fatalf("use: %v %s; handled %v", err, out, got)
	}
	_, err = runApp(t, nil, []string{"use"}, queue.ModuleWith(queue.Config{Driver: queue.Memory}),
		queue.RegisterNamed("events.audit", func() int { return 1 }), use(func(*queue.Queue, queue.Dispatcher) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), `queue.RegisterNamed("events.audit") at `) || !strings.Contains(err.Error(), "the constructor must be a func(deps...) returning func(context.Context, json.RawMessage, queue.JobContext) error (and an error), not func() int") {
		t.Fatalf("a bad constructor: %v", err)
	}
}
