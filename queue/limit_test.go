package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// accountSync is a job limited to two at once per account.
type accountSync struct {
	Account string `json:"account"`
	N       int    `json:"n"`
}

func (accountSync) JobName() string           { return "test.account_sync" }
func (accountSync) JobOptions() queue.Options { return queue.Options{ConcurrencyLimit: 2} }
func (a accountSync) JobKeys() queue.Keys     { return queue.Keys{Concurrency: "account:" + a.Account} }

// gate runs accountSync jobs: each counts itself running for its key,
// tells started, and waits for open.
type gate struct {
	mu      sync.Mutex
	running map[string]int
	peak    map[string]int
	started chan string
	open    chan struct{}
}

func newGate() *gate {
	return &gate{running: map[string]int{}, peak: map[string]int{}, started: make(chan string, 100), open: make(chan struct{})}
}

func (g *gate) handler() queue.Registration {
	return queue.HandlerOf[accountSync](queue.HandlerFunc[accountSync](func(ctx context.Context, a accountSync, _ queue.JobContext) error {
		key := a.JobKeys().Concurrency
		g.mu.Lock()
		g.running[key]++
		g.peak[key] = max(g.peak[key], g.running[key])
		g.mu.Unlock()
		g.started <- key
		select {
		case <-g.open:
		case <-ctx.Done():
			return ctx.Err()
		}
		g.mu.Lock()
		g.running[key]--
		g.mu.Unlock()
		return nil
	}))
}

// work starts a worker of workers handlers on q until it is empty, and
// returns once n of g's jobs have started, with where the worker's
// stats come when it is done.
func (g *gate) work(t *testing.T, q *queue.Queue, workers, n int) <-chan queue.WorkStats {
	t.Helper()
	done := make(chan queue.WorkStats, 1)
	go func() {
		s, err := q.Work(ctx, queue.WorkOptions{Workers: workers, StopWhenEmpty: true})
		if err != nil {
			t.Error(err)
		}
		done <- s
	}()
	for range n {
		<-g.started
	}
	return done
}

// TestAConcurrencyLimitRunsNoMoreOfAKeyAtOnce: eight handlers, six jobs
// of one account and two of another, a limit of two: two of each run, the
// other four wait held (queue:status and queue:job say so), and once the
// first end the held ones run, never more than two of a key at once, each
// on its first attempt.
func TestAConcurrencyLimitRunsNoMoreOfAKeyAtOnce(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			g := newGate()
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.account_sync": g.handler()})
			var ids []string
			for i := range 8 {
				account := "1"
				if i >= 6 {
					account = "2"
				}
				id, err := f.q.Dispatch(ctx, accountSync{Account: account, N: i})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			done := g.work(t, f.q, 8, 4)
			stats, err := f.q.Inspector().Stats(ctx)
			if err != nil || len(stats) != 1 || stats[0].Running != 4 || stats[0].Held != 4 || stats[0].Waiting != 0 {
				t.Fatalf("stats with four running: %+v, %v; want 4 running, 4 held", stats, err)
			}
			var status bytes.Buffer
			if err := queue.PrintStatus(&status, stats, false, false); err != nil || !strings.Contains(status.String(), "default (4 held by limits)") {
				t.Fatalf("queue:status prints:\n%s(%v)", status.String(), err)
			}
			d, err := f.q.Inspector().Job(ctx, ids[5])
			if err != nil || d.State != queue.StateHeld || d.ConcurrencyKey != "account:1" || d.ConcurrencyLimit != 2 || d.Attempts != 0 {
				t.Fatalf("the last job of account 1: %+v, %v; want held, by account:1, limit 2, no attempt", d, err)
			}
			var out bytes.Buffer
			if err := queue.PrintJob(&out, d, false); err != nil ||
				!strings.Contains(out.String(), ", held\n") || !strings.Contains(out.String(), "\n  Limit       2 at once of account:1\n  Held        until a job of account:1 ends\n") {
				t.Fatalf("queue:job prints:\n%s(%v)", out.String(), err)
			}
			close(g.open)
			s := <-done
			if s.Succeeded != 8 || s.Processed != 8 {
				t.Fatalf("the worker: %+v; want the eight jobs run once each", s)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			if g.peak["account:1"] != 2 || g.peak["account:2"] != 2 {
				t.Fatalf("most running at once: %v; want 2 of each account", g.peak)
			}
		})
	}
}

// TestACrashedWorkersSlotComesBackWithItsRescue: a limit of one, its job
// reserved by a worker that died; the held job waits until the takeover
// runs the first, then runs.
func TestACrashedWorkersSlotComesBackWithItsRescue(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []int
	reg := queue.HandlerOf[oneAtATime](queue.HandlerFunc[oneAtATime](func(_ context.Context, j oneAtATime, jc queue.JobContext) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, j.N*10+jc.Attempt)
		return nil
	}))
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.one_at_a_time": reg}, func(t *testing.T, f fixture) {
		mu.Lock()
		ran = nil
		mu.Unlock()
		for n := range 2 {
			if _, err := f.q.Dispatch(ctx, oneAtATime{N: n + 1}); err != nil {
				t.Fatal(err)
			}
		}
		if j := f.reserve(t, "default"); j == nil || j.Attempts != 1 { // the worker that dies
			t.Fatalf("reserved %+v", j)
		}
		if s, err := f.q.RunPending(ctx); err != nil || s.Processed != 0 {
			t.Fatalf("ran %+v, %v while the dead worker's job holds the slot", s, err)
		}
		f.clock.Advance(queue.DefaultTimeout + 31*time.Second) // its reservation is stale
		if s, err := f.q.RunPending(ctx); err != nil || s.Succeeded != 2 {
			t.Fatalf("after the takeover: %+v, %v; want both run", s, err)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != 2 || ran[0] != 12 || ran[1] != 21 {
			t.Fatalf("ran %v; want job 1's second attempt (the takeover), then job 2's first", ran)
		}
	})
}

type oneAtATime struct {
	N int `json:"n"`
}

func (oneAtATime) JobName() string           { return "test.one_at_a_time" }
func (oneAtATime) JobOptions() queue.Options { return queue.Options{ConcurrencyLimit: 1} }

// TestAFailedLimitedJobRetriedWaitsForItsKey: a retried job of a full
// key is held again, and runs once the key has room.
func TestAFailedLimitedJobRetriedWaitsForItsKey(t *testing.T) {
	t.Parallel()
	fail := true
	var mu sync.Mutex
	reg := queue.HandlerOf[oneAtATime](queue.HandlerFunc[oneAtATime](func(context.Context, oneAtATime, queue.JobContext) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return queue.Permanent(errBoom)
		}
		return nil
	}))
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.one_at_a_time": reg}, func(t *testing.T, f fixture) {
		mu.Lock()
		fail = true
		mu.Unlock()
		failed, err := f.q.Dispatch(ctx, oneAtATime{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if s, _ := f.q.RunPending(ctx); s.Failed != 1 {
			t.Fatalf("ran %+v; want the job failed", s)
		}
		second, err := f.q.Dispatch(ctx, oneAtATime{N: 2})
		if err != nil {
			t.Fatal(err)
		}
		if j := f.reserve(t, "default"); j == nil || j.ID != second {
			t.Fatalf("reserved %+v; want the second job", j)
		}
		if _, err := f.q.Inspector().Retry(ctx, failed); err != nil {
			t.Fatal(err)
		}
		if d, err := f.q.Inspector().Job(ctx, failed); err != nil || d.State != queue.StateHeld || len(d.Failures) != 1 {
			t.Fatalf("the retried job: %+v, %v; want held, its failure kept", d, err)
		}
	})
}

var errBoom = errorString("boom")

type errorString string

func (e errorString) Error() string { return string(e) }

func TestConcurrencyLimitRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Memory, migratedSQLite(t), queue.Config{}, map[string]queue.Registration{"test.account_sync": noop[accountSync]()})
	for _, c := range []struct {
		e    queue.Envelope
		want string
	}{
		{queue.Envelope{Options: queue.Options{ConcurrencyLimit: -1}},
			"queue: job contacts.export: ConcurrencyLimit is -1; want 1 to 10000, or 0 for no limit"},
		{queue.Envelope{Options: queue.Options{ConcurrencyLimit: 10_001}},
			"queue: job contacts.export: ConcurrencyLimit is 10001; want 1 to 10000, or 0 for no limit"},
		{queue.Envelope{Options: queue.Options{ConcurrencyLimit: 2, Debounce: queue.Debounce{For: time.Second}}},
			"queue: job contacts.export: ConcurrencyLimit and Debounce cannot be combined: a job held by its limit is not replaced by the next dispatch; choose one"},
		{queue.Envelope{Options: queue.Options{ConcurrencyLimit: 2}, Keys: queue.Keys{Concurrency: "account\n42"}},
			"queue: the concurrency key of contacts.export is not printable UTF-8: use no control characters or invalid bytes"},
		{queue.Envelope{Options: queue.Options{ConcurrencyLimit: 2}, Keys: queue.Keys{Concurrency: strings.Repeat("k", queue.MaxUniqueKeyLen+1)}},
			"queue: the concurrency key of contacts.export has 1001 bytes; want 1 to 1000"},
	} {
		c.e.Name, c.e.Payload = "contacts.export", json.RawMessage(`{}`)
		if _, err := f.q.Push(ctx, c.e); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v; want %q", c.e.Options, err, c.want)
		}
	}
}

// reservations records each search's start and the jobs it took.
type reservations struct {
	driver.Driver
	mu    sync.Mutex
	found map[string]int64 // job id -> From of the search that took it
}

func (r *reservations) Reserve(ctx context.Context, res driver.Reservation) ([]*driver.Job, error) {
	jobs, err := r.Driver.Reserve(ctx, res)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, j := range jobs {
		r.found[j.ID] = res.From
	}
	return jobs, err
}

// TestTheJobLetInIsFoundByTheNextSearch: a worker whose cursor moved past
// a held job's due time (its search found the queue empty an hour after
// the dispatch) finds the job let in by its completion at once, from the
// due time of the job that ended, not a second later by a full sweep.
func TestTheJobLetInIsFoundByTheNextSearch(t *testing.T) {
	t.Parallel()
	ran := make(chan int, 2)
	reg := queue.HandlerOf[oneAtATime](queue.HandlerFunc[oneAtATime](func(_ context.Context, j oneAtATime, _ queue.JobContext) error {
		ran <- j.N
		return nil
	}))
	eachWith(t, queue.Config{PollIntervalMs: 3_600_000, Workers: 2}, map[string]queue.Registration{"test.one_at_a_time": reg}, func(t *testing.T, f fixture) {
		ids := make([]string, 2)
		for n := range ids {
			id, err := f.q.Dispatch(ctx, oneAtATime{N: n + 1})
			if err != nil {
				t.Fatal(err)
			}
			ids[n] = id
		}
		f.clock.Advance(time.Hour)
		r := &reservations{found: map[string]int64{}}
		queue.WrapStore(f.q, func(d driver.Driver) driver.Driver { r.Driver = d; return r })
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.q.Work(workCtx, queue.WorkOptions{Queues: []string{"default"}}) }()
		for want := 1; want <= 2; want++ {
			select {
			case got := <-ran:
				if got != want {
					t.Fatalf("ran job %d, want %d", got, want)
				}
			case <-time.After(30 * time.Second): // a bound on the failure only
				stop()
				t.Fatalf("job %d did not run", want)
			}
		}
		stop()
		<-done
		r.mu.Lock()
		defer r.mu.Unlock()
		if from, ok := r.found[ids[1]]; !ok || from != t0.UnixMilli()-1000 {
			t.Fatalf("the job let in was taken by a search from %d (%v), want from the due time of the one that ended, less a second: %d",
				from, ok, t0.UnixMilli()-1000)
		}
	})
}

// oldKeyed names its concurrency key with the method queue read before
// Keys.
type oldKeyed struct{ Account string }

func (oldKeyed) JobName() string           { return "test.old_keyed" }
func (oldKeyed) JobOptions() queue.Options { return queue.Options{ConcurrencyLimit: 1} }
func (o oldKeyed) ConcurrencyKey() string  { return "account:" + o.Account }

// TestAnOldKeyMethodIsRefused: a job that still names its key with
// ConcurrencyKey (read before Keys) is refused at dispatch, saying how
// to name it now, rather than limited by its type alone.
func TestAnOldKeyMethodIsRefused(t *testing.T) {
	t.Parallel()
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.Dispatch(ctx, oldKeyed{Account: "42"})
	want := "queue: job test.old_keyed: its ConcurrencyKey method is no longer read: name its keys with a JobKeys method instead, " +
		"func (j queue_test.oldKeyed) JobKeys() queue.Keys { return queue.Keys{Concurrency: ...} }"
	if err == nil || err.Error() != want {
		t.Fatalf("Dispatch: %v\nwant %s", err, want)
	}
}

// uniqueReport is a report of an account, limited to one at once per
// account and unique for an hour by its payload (the account and the
// report).
type uniqueReport struct {
	Account string `json:"account"`
	Report  string `json:"report"`
}

func (uniqueReport) JobName() string { return "test.unique_report" }
func (uniqueReport) JobOptions() queue.Options {
	return queue.Options{ConcurrencyLimit: 1, UniqueFor: time.Hour}
}
func (r uniqueReport) JobKeys() queue.Keys { return queue.Keys{Concurrency: "account:" + r.Account} }

// TestAUniqueJobHeldByItsLimitHoldsItsKey: a concurrency limit combines
// with a unique job (Laravel's ShouldBeUnique with WithoutOverlapping):
// while a unique job waits held by its limit, a dispatch of the same
// job returns its id, as for one that waits or runs; an envelope's
// UniqueKey too; once its unique window passed, a dispatch is stored; each
// stored job runs once, one of the account at a time, and a dispatch
// after they ran is stored again.
func TestAUniqueJobHeldByItsLimitHoldsItsKey(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ran := map[string]int{}
			var mu sync.Mutex
			handler := queue.HandlerOf[uniqueReport](queue.HandlerFunc[uniqueReport](func(_ context.Context, r uniqueReport, _ queue.JobContext) error {
				mu.Lock()
				defer mu.Unlock()
				ran[r.Report]++
				return nil
			}))
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.unique_report": handler})
			dispatch := func(r uniqueReport) string {
				t.Helper()
				id, err := f.q.Dispatch(ctx, r)
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			first, held := dispatch(uniqueReport{"1", "sales"}), dispatch(uniqueReport{"1", "churn"})
			if d, err := f.q.Inspector().Job(ctx, held); err != nil || d.State != queue.StateHeld {
				t.Fatalf("the second job: %+v, %v; want held by the limit", d, err)
			}
			if again := dispatch(uniqueReport{"1", "churn"}); again != held {
				t.Fatalf("the held job dispatched again: %s; want the held one's id %s", again, held)
			}
			if again := dispatch(uniqueReport{"1", "sales"}); again != first {
				t.Fatalf("the waiting job dispatched again: %s; want its id %s", again, first)
			}
			key := "churn-report:1"
			e := queue.Envelope{Name: "test.unique_report", Payload: json.RawMessage(`{"account":"1","report":"churn-by-key"}`),
				Options: queue.Options{ConcurrencyLimit: 1}, Keys: queue.Keys{Concurrency: "account:1"}, UniqueKey: &key}
			byKey, err := f.q.Push(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if again, err := f.q.Push(ctx, e); err != nil || again != byKey {
				t.Fatalf("the held job of an envelope's UniqueKey pushed again: %s, %v; want %s", again, err, byKey)
			}
			f.clock.Advance(time.Hour) // the unique window of the held job passes
			late := dispatch(uniqueReport{"1", "churn"})
			if late == held {
				t.Fatalf("a dispatch after the unique window returned the held job %s; want a new one", held)
			}
			s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true})
			if err != nil || s.Succeeded != 4 {
				t.Fatalf("the worker: %+v, %v; want the four jobs stored run once each", s, err)
			}
			if ran["sales"] != 1 || ran["churn"] != 2 || ran["churn-by-key"] != 1 {
				t.Fatalf("ran %v; want sales once, churn twice (held, then after its window), churn-by-key once", ran)
			}
			if again := dispatch(uniqueReport{"1", "sales"}); again == first {
				t.Fatal("a dispatch after the job ran returned its id; want a new job")
			}
		})
	}
}

// TestUniqueDispatchesOfALimitedJobRaceToOne: twenty goroutines dispatch
// the same unique, limited job at once while its account's slot is taken:
// one job is stored, held, and every dispatch returns its id.
func TestUniqueDispatchesOfALimitedJobRaceToOne(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.unique_report": noop[uniqueReport]()})
			if _, err := f.q.Dispatch(ctx, uniqueReport{"1", "sales"}); err != nil {
				t.Fatal(err)
			}
			ids := make([]string, 20)
			var wg sync.WaitGroup
			for i := range ids {
				wg.Go(func() {
					id, err := f.q.Dispatch(ctx, uniqueReport{"1", "churn"})
					if err != nil {
						t.Error(err)
					}
					ids[i] = id
				})
			}
			wg.Wait()
			for _, id := range ids {
				if id != ids[0] {
					t.Fatalf("the dispatches returned %v; want one id", ids)
				}
			}
			stats, err := f.q.Inspector().Stats(ctx)
			if err != nil || len(stats) != 1 || stats[0].Held != 1 || stats[0].Waiting != 1 {
				t.Fatalf("stats: %+v, %v; want one waiting, one held", stats, err)
			}
		})
	}
}

// TestAConcurrencyLimitHoldsForFlowSteps: the steps of chains and of a
// batch keep their jobs' concurrency limits (two at once per account):
// three chains and a batch of account 1 and a batch of account 2 start
// two of each account, the rest held (queue:status counts them); once
// let go every step runs once, never more than two of an account at
// once, and every flow succeeds.
func TestAConcurrencyLimitHoldsForFlowSteps(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			g := newGate()
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.account_sync": g.handler()})
			var flows []string
			for i := range 3 {
				id, err := f.q.DispatchFlow(ctx, queue.Chain(accountSync{Account: "1", N: i}, accountSync{Account: "1", N: 10 + i}))
				if err != nil {
					t.Fatal(err)
				}
				flows = append(flows, id)
			}
			for _, account := range []string{"1", "2"} {
				var jobs []queue.Job
				for i := range 3 {
					jobs = append(jobs, accountSync{Account: account, N: 20 + i})
				}
				id, err := f.q.DispatchFlow(ctx, queue.Batch(jobs...))
				if err != nil {
					t.Fatal(err)
				}
				flows = append(flows, id)
			}
			done := g.work(t, f.q, 8, 4)
			stats, err := f.q.Inspector().Stats(ctx)
			if err != nil || len(stats) != 1 || stats[0].Running != 4 || stats[0].Held != 5 {
				t.Fatalf("stats with four running: %+v, %v; want 4 running (2 of each account), 5 held (the rest of the roots of account 1: 3 chains' and 3 of the batch, less 2; 1 of account 2)", stats, err)
			}
			close(g.open)
			if s := <-done; s.Succeeded != 12 || s.Processed != 12 {
				t.Fatalf("the worker: %+v; want the twelve steps run once each", s)
			}
			g.mu.Lock()
			peak := maps.Clone(g.peak)
			g.mu.Unlock()
			if peak["account:1"] != 2 || peak["account:2"] != 2 {
				t.Fatalf("most running at once: %v; want 2 of each account", peak)
			}
			for _, id := range flows {
				if d, err := f.q.Inspector().Flow(ctx, id); err != nil || d.State != "succeeded" {
					t.Fatalf("flow %s: %+v, %v; want succeeded", id, d.FlowInfo, err)
				}
			}
		})
	}
}

// TestACancelledFlowsHeldStepNeverRuns: a batch's step held by its limit
// is cancelled with its flow (a failed job, "cancelled"), is not let in
// when the key has room, and when the flow is retried is held by its
// limit again while its key is full, then runs.
func TestACancelledFlowsHeldStepNeverRuns(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			g := newGate()
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.account_sync": g.handler()})
			first, err := f.q.DispatchFlow(ctx, queue.Batch(accountSync{Account: "1", N: 1}, accountSync{Account: "1", N: 2}))
			if err != nil {
				t.Fatal(err)
			}
			second, err := f.q.DispatchFlow(ctx, queue.Batch(accountSync{Account: "1", N: 3}))
			if err != nil {
				t.Fatal(err)
			}
			if stats, err := f.q.Inspector().Stats(ctx); err != nil || len(stats) != 1 || stats[0].Held != 1 || stats[0].Waiting != 2 {
				t.Fatalf("stats: %+v, %v; want two waiting, the second batch's step held", stats, err)
			}
			if c, err := f.q.Inspector().CancelFlow(ctx, second); err != nil || c.Ended != 1 {
				t.Fatalf("CancelFlow: %+v, %v; want its held step ended", c, err)
			}
			if stats, err := f.q.Inspector().Stats(ctx); err != nil || len(stats) != 1 || stats[0].Held != 0 || stats[0].Failed != 1 {
				t.Fatalf("stats after the cancel: %+v, %v; want none held, one failed", stats, err)
			}
			close(g.open)
			if s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true}); err != nil || s.Succeeded != 2 {
				t.Fatalf("the worker: %+v, %v; want the first batch's two steps, not the cancelled one", s, err)
			}
			if d, err := f.q.Inspector().Flow(ctx, first); err != nil || d.State != "succeeded" {
				t.Fatalf("the first batch: %+v, %v", d.FlowInfo, err)
			}
			if d, err := f.q.Inspector().Flow(ctx, second); err != nil || d.State != "cancelled" {
				t.Fatalf("the second batch: %+v, %v; want cancelled", d.FlowInfo, err)
			}
			for n := range 2 { // the account's key full again: two wait
				if _, err := f.q.Dispatch(ctx, accountSync{Account: "1", N: 4 + n}); err != nil {
					t.Fatal(err)
				}
			}
			if n, err := f.q.Inspector().RetryFlow(ctx, second); err != nil || n != 1 {
				t.Fatalf("RetryFlow: %d, %v", n, err)
			}
			if stats, err := f.q.Inspector().Stats(ctx); err != nil || len(stats) != 1 || stats[0].Held != 1 || stats[0].Waiting != 2 {
				t.Fatalf("stats after the retry: %+v, %v; want the retried step held by its full key", stats, err)
			}
			if s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true}); err != nil || s.Succeeded != 3 {
				t.Fatalf("the worker after the retry: %+v, %v; want the two jobs and the step", s, err)
			}
			if d, err := f.q.Inspector().Flow(ctx, second); err != nil || d.State != "succeeded" {
				t.Fatalf("the second batch retried: %+v, %v; want succeeded", d.FlowInfo, err)
			}
		})
	}
}

// TestAWorkerLetsInWhatAnOlderBuildLeftHeld: a key's jobs that left jobs
// without letting the next one in (as a worker of an older build
// completes during a rolling deploy) leave it with room and a job held;
// a worker's upkeep, as it starts, lets that job in and says so in a
// WARN with the count of keys, and the job runs. The memory driver lets
// the next in under its lock at every move, so it never leaves one.
func TestAWorkerLetsInWhatAnOlderBuildLeftHeld(t *testing.T) {
	t.Parallel()
	regs := map[string]queue.Registration{"test.one_at_a_time": queue.HandlerOf[oneAtATime](queue.HandlerFunc[oneAtATime](
		func(context.Context, oneAtATime, queue.JobContext) error { return nil }))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		first := f.dispatch(t, oneAtATime{N: 1}, 0)
		held := f.dispatch(t, oneAtATime{N: 2}, 0)
		if j, err := f.q.Inspector().Job(ctx, held); err != nil || j.State != queue.StateHeld {
			t.Fatalf("the second job: %+v, %v; want held behind the first", j, err)
		}
		if f.driver == queue.Memory {
			return
		}
		q, err := f.db.Querier(ctx)
		if err == nil {
			_, err = q.ExecContext(ctx, "DELETE FROM jobs WHERE id = ?", first) // an older build's completion
		}
		if err != nil {
			t.Fatal(err)
		}
		// The upkeep runs beside the worker's first search, and a worker
		// waits for it as it stops: the next one finds the job let in.
		if ran := f.runPending(t).Succeeded + f.runPending(t).Succeeded; ran != 1 {
			t.Fatalf("the workers ran %d jobs; want the job left held let in and run", ran)
		}
		line := logLineWith(t, f.logs.String(), `"keys":`)
		if line["level"] != "WARN" || line["keys"] != 1.0 || line["msg"] != "let in the held jobs of concurrency keys that had room: "+
			"a job of theirs left without letting the next in, as a worker of an older build does during a rolling deploy" {
			t.Fatalf("the upkeep logged %v", line)
		}
	})
}
