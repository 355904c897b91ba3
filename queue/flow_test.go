package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
)

// addJob adds Add to the results of the steps it comes after and records
// the sum as its result; Fail makes it fail for good.
type addJob struct {
	Step string `json:"step"`
	Add  int    `json:"add"`
	Fail bool   `json:"fail,omitempty"`
}

func (addJob) JobName() string { return "test.add" }

// ranLog records the steps run, in order.
type ranLog struct {
	mu  sync.Mutex
	ran []string
	up  map[string][]queue.StepResult // what each step read upstream
}

func (l *ranLog) steps() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ran)
}

func (l *ranLog) handler() queue.Registration {
	return queue.HandlerOf[addJob](queue.HandlerFunc[addJob](func(ctx context.Context, j addJob, jc queue.JobContext) error {
		up, err := jc.Upstream(ctx)
		if err != nil {
			return err
		}
		l.mu.Lock()
		l.ran = append(l.ran, j.Step)
		if l.up == nil {
			l.up = map[string][]queue.StepResult{}
		}
		l.up[j.Step] = up
		l.mu.Unlock()
		if j.Fail {
			return queue.Permanent(errors.New(j.Step + " failed"))
		}
		sum := j.Add
		for _, r := range up {
			var n int
			if r.State == "succeeded" {
				if err := r.Decode(&n); err != nil {
					return err
				}
			}
			sum += n
		}
		return jc.SetResult(sum)
	}))
}

// drain runs the jobs available until none is left.
func drain(t *testing.T, f fixture) {
	t.Helper()
	for range 50 {
		s, err := f.q.RunPending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Processed == 0 {
			return
		}
	}
	t.Fatal("jobs kept coming")
}

func flowFixture(t *testing.T, f func(t *testing.T, fx fixture, log *ranLog)) {
	log := &ranLog{}
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.add": log.handler()}, func(t *testing.T, fx fixture) {
		log.mu.Lock()
		log.ran, log.up = nil, nil
		log.mu.Unlock()
		f(t, fx, log)
	})
}

// stepStates is a flow's steps as "name=state" in their order.
func stepStates(t *testing.T, f fixture, id string) (queue.FlowDetail, string) {
	t.Helper()
	d, err := f.q.Inspector().Flow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, s := range d.Steps {
		parts = append(parts, s.Name+"="+s.State)
	}
	return d, strings.Join(parts, " ")
}

func TestAChainPassesItsResultsOn(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		id, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "a", Add: 1}, addJob{Step: "b", Add: 2}, addJob{Step: "c", Add: 3}).
			Catch(addJob{Step: "catch"}).Named("import"))
		if err != nil {
			t.Fatal(err)
		}
		if n := f.pending(t, "default"); n != 1 {
			t.Fatalf("pending at first: %d; want the chain's first job alone", n)
		}
		drain(t, f)
		if got := log.steps(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("ran %v; want a, b, c in order and no catch", got)
		}
		d, states := stepStates(t, f, id)
		if states != "test.add=succeeded test.add=succeeded test.add=succeeded catch=skipped" || d.State != "succeeded" || d.Name != "import" ||
			d.Kind != "chain" || d.Total != 3 || d.Succeeded != 3 || !d.FinishedAt.Equal(t0) {
			t.Fatalf("the chain: %+v\n%s", d.FlowInfo, states)
		}
		last := d.Steps[2]
		if string(last.Result) != "6" || !slices.Equal(last.After, []string{"test.add"}) {
			t.Fatalf("the last step: %+v; want result 6, after the one before", last)
		}
		if v, err := queue.AwaitResult[int](ctx, f.q, last.JobID); v != 6 || err != nil {
			t.Fatalf("AwaitResult = %d, %v; want 6", v, err)
		}
	})
}

// TestOneRunPendingRunsAWholeChain: a StopWhenEmpty worker stores what
// it ran before it stops, and runs the steps those completions released.
func TestOneRunPendingRunsAWholeChain(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		if _, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "a", Add: 1}, addJob{Step: "b", Add: 2}, addJob{Step: "c", Add: 3})); err != nil {
			t.Fatal(err)
		}
		if s, err := f.q.RunPending(ctx); err != nil || s.Succeeded != 3 {
			t.Fatalf("RunPending: %v, %v; want the three steps run", s, err)
		}
		if got := log.steps(); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Fatalf("ran %v; want a, b, c", got)
		}
	})
}

func TestAChainStopsAtAFailureAndRunsItsCatch(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		id, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "a", Add: 1}, addJob{Step: "b", Fail: true}, addJob{Step: "c"}).
			Catch(addJob{Step: "catch"}))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, f)
		if got := log.steps(); !slices.Equal(got, []string{"a", "b", "catch"}) {
			t.Fatalf("ran %v; want a, b, then the catch", got)
		}
		d, states := stepStates(t, f, id)
		if states != "test.add=succeeded test.add=failed test.add=failed catch=succeeded" || d.State != "failed" || d.Failed != 2 {
			t.Fatalf("the chain: %+v\n%s", d.FlowInfo, states)
		}
		if d.Steps[1].Error != "b failed" || d.Steps[2].Error != "not run: a step it depends on did not succeed" {
			t.Fatalf("errors: %q, %q", d.Steps[1].Error, d.Steps[2].Error)
		}
		// The catch reads every step of its chain.
		var seen []string
		for _, r := range log.up["catch"] {
			seen = append(seen, r.State)
		}
		if !slices.Equal(seen, []string{"succeeded", "failed", "failed"}) {
			t.Fatalf("the catch read %v", seen)
		}
		// queue:retry of the failed job runs the chain on from it.
		if _, err := f.q.Inspector().Retry(ctx, d.Steps[1].JobID); err != nil {
			t.Fatal(err)
		}
		if _, states := stepStates(t, f, id); states != "test.add=succeeded test.add=queued test.add=held catch=succeeded" {
			t.Fatalf("after the retry: %s", states)
		}
	})
}

func TestABatchCallsBackOnce(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		id, err := f.q.DispatchFlow(ctx, queue.Batch(addJob{Step: "a", Add: 1}, addJob{Step: "b", Add: 2}).
			Chain(addJob{Step: "c1", Add: 10}, addJob{Step: "c2", Add: 20}).
			Then(addJob{Step: "then"}).Catch(addJob{Step: "catch"}).Finally(addJob{Step: "finally"}))
		if err != nil {
			t.Fatal(err)
		}
		if err := f.q.AddToBatch(ctx, id, addJob{Step: "d", Add: 100}); err != nil {
			t.Fatal(err)
		}
		drain(t, f)
		got := log.steps()
		if len(got) != 7 || got[5] != "then" && got[5] != "finally" || slices.Contains(got, "catch") {
			t.Fatalf("ran %v; want the five jobs, then then and finally", got)
		}
		var sum int
		for _, r := range log.up["then"] {
			var n int
			_ = r.Decode(&n)
			sum += n
		}
		if sum != 1+2+10+30+100 || len(log.up["then"]) != 5 {
			t.Fatalf("then read %d results summing %d; want 5 summing 143", len(log.up["then"]), sum)
		}
		d, states := stepStates(t, f, id)
		if d.Total != 5 || d.Succeeded != 5 || d.State != "succeeded" || d.Done() != 1 ||
			states != "test.add=succeeded test.add=succeeded 3.1 test.add=succeeded 3.2 test.add=succeeded then=succeeded catch=skipped finally=succeeded test.add=succeeded" {
			t.Fatalf("the batch: %+v\n%s", d.FlowInfo, states)
		}
		err = f.q.AddToBatch(ctx, id, addJob{Step: "e"})
		if !errors.Is(err, queue.ErrFlowEnded) || err.Error() != "queue: add 1 jobs to batch "+id+": the batch has ended: every job of it has succeeded or failed, and its callbacks were queued" {
			t.Fatalf("AddToBatch to an ended batch: %v", err)
		}
		list, _, err := f.q.Inspector().Flows(ctx, queue.FlowsQuery{Kind: "batch"})
		if err != nil || len(list) != 1 || list[0].ID != id {
			t.Fatalf("Flows = %+v, %v", list, err)
		}
	})
}

func TestABatchStopsAtItsFirstFailureUnlessFailuresAreAllowed(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		id, err := f.q.DispatchFlow(ctx, queue.Batch(addJob{Step: "a", Fail: true}, addJob{Step: "b"}).
			Then(addJob{Step: "then"}).Catch(addJob{Step: "catch"}).Finally(addJob{Step: "finally"}))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, f)
		if got := log.steps(); !slices.Equal(got, []string{"a", "catch", "finally"}) {
			t.Fatalf("ran %v; want a, then catch and finally, b cancelled", got)
		}
		if _, states := stepStates(t, f, id); states != "test.add=failed test.add=cancelled then=skipped catch=succeeded finally=succeeded" {
			t.Fatalf("the batch: %s", states)
		}
		log.mu.Lock()
		log.ran = nil
		log.mu.Unlock()
		id, err = f.q.DispatchFlow(ctx, queue.Batch(addJob{Step: "a", Fail: true}, addJob{Step: "b"}).AllowFailures().
			Then(addJob{Step: "then"}).Finally(addJob{Step: "finally"}))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, f)
		if got := log.steps(); !slices.Equal(got, []string{"a", "b", "finally"}) {
			t.Fatalf("ran %v; want a and b, then finally", got)
		}
	})
}

func TestAWorkflowFansOutAndIn(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		// Steps may be given in any order.
		w := queue.Workflow("onboard").
			Step("notify", addJob{Step: "notify"}, queue.After("resize", "scan")).
			Step("fetch", addJob{Step: "fetch", Add: 1}).
			Step("resize", addJob{Step: "resize", Add: 2}, queue.After("fetch")).
			Step("scan", addJob{Step: "scan", Fail: true}, queue.After("fetch")).
			Step("audit", addJob{Step: "audit"}, queue.After("scan"), queue.RunIfFailed())
		id, err := f.q.DispatchFlow(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		drain(t, f)
		got := log.steps()
		if len(got) != 4 || got[0] != "fetch" || got[3] != "audit" || slices.Contains(got, "notify") {
			t.Fatalf("ran %v; want fetch, resize and scan, then audit; notify not", got)
		}
		d, states := stepStates(t, f, id)
		if states != "fetch=succeeded resize=succeeded scan=failed notify=failed audit=succeeded" || d.State != "failed" {
			t.Fatalf("the workflow: %s %s", d.State, states)
		}
		if up := log.up["audit"]; len(up) != 1 || up[0].Step != "scan" || up[0].State != "failed" || up[0].Result != nil {
			t.Fatalf("audit read %+v", up)
		}
		// Retried from its failed steps: scan fails again, notify waits
		// for it and fails again; nothing succeeded runs twice.
		if n, err := f.q.Inspector().RetryFlow(ctx, id); n != 2 || err != nil {
			t.Fatalf("RetryFlow = %d, %v", n, err)
		}
		drain(t, f)
		if got := log.steps(); len(got) != 5 || got[4] != "scan" {
			t.Fatalf("ran %v after the retry; want scan again alone", got)
		}
	})
}

func TestFlowsJoinTheUnitOfWork(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		boom := errors.New("boom")
		err := f.db.Transaction(ctx, func(ctx context.Context) error {
			if _, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "a"}, addJob{Step: "b"})); err != nil {
				return err
			}
			return boom
		})
		if !errors.Is(err, boom) || f.pending(t, "default") != 0 {
			t.Fatalf("rolled back: %v, %d pending", err, f.pending(t, "default"))
		}
		if list, _, _ := f.q.Inspector().Flows(ctx, queue.FlowsQuery{}); len(list) != 0 {
			t.Fatalf("a flow rolled back is kept: %+v", list)
		}
		err = f.db.Transaction(ctx, func(ctx context.Context) error {
			_, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "a"}, addJob{Step: "b"}))
			return err
		})
		if err != nil || f.pending(t, "default") != 1 {
			t.Fatalf("committed: %v, %d pending", err, f.pending(t, "default"))
		}
		drain(t, f)
		if got := log.steps(); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("ran %v", got)
		}
		// Jobs added to a batch in a unit of work that rolls back are not.
		batch, err := f.q.DispatchFlow(ctx, queue.Batch(addJob{Step: "c"}))
		if err != nil {
			t.Fatal(err)
		}
		err = f.db.Transaction(ctx, func(ctx context.Context) error {
			if err := f.q.AddToBatch(ctx, batch, addJob{Step: "d"}); err != nil {
				return err
			}
			return boom
		})
		if d, _ := f.q.Inspector().Flow(ctx, batch); !errors.Is(err, boom) || d.Total != 1 || f.pending(t, "default") != 1 {
			t.Fatalf("AddToBatch rolled back: %v; the batch has %d steps, %d jobs pending", err, d.Total, f.pending(t, "default"))
		}
	})
}

func TestCancelAFlow(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		id, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "a"}, addJob{Step: "b"}).Finally(addJob{Step: "finally"}))
		if err != nil {
			t.Fatal(err)
		}
		did, err := f.q.Inspector().CancelFlow(ctx, id)
		if err != nil || did.Ended != 2 || did.Signalled != 0 {
			t.Fatalf("CancelFlow = %+v, %v", did, err)
		}
		drain(t, f)
		if got := log.steps(); len(got) != 0 {
			t.Fatalf("ran %v after the cancel", got)
		}
		d, states := stepStates(t, f, id)
		if states != "test.add=cancelled test.add=cancelled finally=cancelled" || d.State != "cancelled" || d.Steps[0].Error != "cancelled with its chain" {
			t.Fatalf("the chain: %s %s %q", d.State, states, d.Steps[0].Error)
		}
		if _, err := f.q.Inspector().CancelFlow(ctx, "0190d2a4-0000-7000-8000-000000000000"); !errors.Is(err, queue.ErrNoFlow) ||
			err.Error() != "there is no chain, batch or workflow with id 0190d2a4-0000-7000-8000-000000000000: it was pruned with the failed jobs (queue.prune_failed), or never was" {
			t.Fatalf("CancelFlow of no flow: %v", err)
		}
	})
}

func TestAwait(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		ok, err := f.q.Dispatch(ctx, addJob{Step: "ok", Add: 7})
		if err != nil {
			t.Fatal(err)
		}
		bad, _ := f.q.Dispatch(ctx, addJob{Step: "bad", Fail: true})
		short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if _, err := f.q.Await(short, ok); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "still pending") {
			t.Fatalf("Await of a waiting job past its deadline: %v", err)
		}
		done := make(chan error, 1)
		go func() {
			v, err := queue.AwaitResult[int](ctx, f.q, ok)
			if err == nil && v != 7 {
				err = fmt.Errorf("result %d", v)
			}
			done <- err
		}()
		drain(t, f)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		var failed *queue.JobFailedError
		if _, err := f.q.Await(ctx, bad); !errors.As(err, &failed) || err.Error() != "queue: job "+bad+" failed: bad failed" {
			t.Fatalf("Await of a failed job: %v", err)
		}
		if _, err := f.q.Await(ctx, "0190d2a4-0000-7000-8000-000000000000"); !errors.Is(err, queue.ErrNoResult) {
			t.Fatalf("Await of no job: %v", err)
		}
	})
}

func TestFlowsRefusedAtDispatch(t *testing.T) {
	f := newFixture(t, queue.Memory, migratedSQLite(t), queue.Config{}, map[string]queue.Registration{"test.add": (&ranLog{}).handler()})
	a := addJob{Step: "a"}
	for _, c := range []struct {
		flow *queue.Flow
		want string
	}{
		{queue.Batch(), "queue: the batch has no step: give it at least one job"},
		{queue.Chain(a, nil), "queue: the chain's step 2 () is nil: give it a job"},
		{queue.Chain(a, Unregistered{}), `queue: unknown job "nobody.handles": no module registered a handler for it`},
		{queue.Batch(a).Then(SyncCalendar{}), "queue: job activities.sync_calendar: UniqueFor and a flow's step cannot be combined: its flow already runs each step once (in the batch's then job)"},
		{queue.Chain(a).Step("x", a), `queue: Step "x": only a workflow has named steps; a chain takes its jobs in queue.Chain`},
		{queue.Workflow("w").Step("a", a).Step("a", a), `queue: the workflow "w" has two steps named "a": name each step once`},
		{queue.Workflow("w").Step("a", a, queue.After("b")).Step("c", a), `queue: the workflow "w"'s step "a" comes after "b", which is no step of it (its steps: a, c)`},
		{queue.Workflow("w").Step("a", a, queue.After("c")).Step("b", a, queue.After("a")).Step("c", a, queue.After("b")),
			`queue: the workflow "w" has a cycle: a -> c -> b -> a: a step cannot wait for itself`},
		{queue.Workflow("w").Step("a", a, queue.After("a")), `queue: the workflow "w"'s step "a" comes after itself`},
		{queue.Chain(a).AllowFailures(), "queue: AllowFailures: only a batch has it; a failed step of a chain fails its dependants unless they RunIfFailed"},
	} {
		if _, err := f.q.DispatchFlow(ctx, c.flow); err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("DispatchFlow:\n got %v\nwant %s", err, c.want)
		}
	}
	if n := f.pending(t, "default"); n != 0 {
		t.Fatalf("%d jobs queued by flows refused", n)
	}
}

// TestFlowCommands: queue:batches lists flows with their progress, and
// queue:workflow shows one step by step, cancels it or retries it.
func TestFlowCommands(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		c := &clock{t: t0}
		run := func(args ...string) string {
			t.Helper()
			out, err := runApp(t, map[string]any{"database.url": url}, args, db.Module(), queue.Module(), app.WithClock(c))
			if err != nil {
				return "error: " + err.Error()
			}
			return out
		}
		if out := run("queue:batches"); out != "No batch is kept: dispatch one with queue.Batch (those that ended are pruned with the failed jobs).\n" {
			t.Fatalf("no batch: %q", out)
		}
		log := &ranLog{}
		q := localQueue(t, url, c, log.handler())
		batch, err := q.DispatchFlow(ctx, queue.Batch(addJob{Step: "a", Add: 1}, addJob{Step: "b", Fail: true}, addJob{Step: "c"}).AllowFailures().Named("import"))
		if err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Second)
		wf, err := q.DispatchFlow(ctx, queue.Workflow("onboard").Step("fetch", addJob{Step: "fetch", Add: 2}).
			Step("scan", addJob{Step: "scan"}, queue.After("fetch")).Finally(addJob{Step: "finally"}))
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := q.RunPending(ctx); err != nil {
				t.Fatal(err)
			}
		}
		want := "ID                                    KIND   NAME    STATE   PROGRESS          FAILED  DISPATCHED\n" +
			batch + "  batch  import  failed  [##########] 3/3  1       2026-10-26 08:14:02 UTC\n"
		if out := run("queue:batches"); out != want {
			t.Errorf("queue:batches printed:\n%s\nwant:\n%s", out, want)
		}
		if out := run("queue:batches", "--kind", "all"); !strings.HasPrefix(out, "ID ") || strings.Index(out, wf) > strings.Index(out, batch) {
			t.Errorf("queue:batches --kind all, newest first:\n%s", out)
		}
		if out := run("queue:batches", "--kind", "nope"); out != `error: queue:batches: --kind: queue: list flows: unknown kind "nope"; want chain, batch or workflow` {
			t.Errorf("a bad kind: %q", out)
		}
		d, err := q.Inspector().Flow(ctx, wf)
		if err != nil {
			t.Fatal(err)
		}
		want = "Workflow " + wf + " (onboard): succeeded, [##########] 2/2, 0 failed\n" +
			"  Dispatched  2026-10-26 08:14:03.000 UTC\n" +
			"  Ended       2026-10-26 08:14:03.000 UTC\n" +
			"STEP     STATE      AFTER      JOB                                   RESULT OR ERROR\n" +
			"fetch    succeeded  -          " + d.Steps[0].JobID + "  2\n" +
			"scan     succeeded  fetch      " + d.Steps[1].JobID + "  2\n" +
			"finally  succeeded  (finally)  " + d.Steps[2].JobID + "  4\n"
		if out := run("queue:workflow", wf); out != want {
			t.Errorf("queue:workflow printed:\n%s\nwant:\n%s", out, want)
		}
		var row struct {
			State string `json:"state"`
			Steps []struct {
				Name   string          `json:"name"`
				After  []string        `json:"after"`
				Result json.RawMessage `json:"result"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(run("queue:workflow", wf, "--json")), &row); err != nil || row.State != "succeeded" || len(row.Steps) != 3 ||
			row.Steps[1].After[0] != "fetch" || string(row.Steps[2].Result) != "4" {
			t.Errorf("queue:workflow --json: %+v, %v", row, err)
		}
		if out := run("queue:workflow", batch, "--retry"); out != "Retrying "+batch+": 1 steps put back.\n" {
			t.Errorf("--retry: %q", out)
		}
		if out := run("queue:workflow", batch, "--cancel"); out != "Cancelled "+batch+": 1 steps will not run, 0 running were asked to stop.\n" {
			t.Errorf("--cancel: %q", out)
		}
		if out := run("queue:workflow", "nope"); out != "error: there is no chain, batch or workflow with id nope: it was pruned with the failed jobs (queue.prune_failed), or never was" {
			t.Errorf("a bad id: %q", out)
		}
	})
}

// TestResultsAreBounded: a result over MaxResultBytes, or one that does
// not encode, is refused by SetResult, and the job succeeds without one.
func TestResultsAreBounded(t *testing.T) {
	errs := make(chan error, 2)
	handler := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, _ ExportContacts, jc queue.JobContext) error {
		errs <- jc.SetResult(strings.Repeat("x", queue.MaxResultBytes))
		errs <- jc.SetResult(make(chan int))
		return nil
	}))
	f := newFixture(t, queue.Memory, migratedSQLite(t), queue.Config{}, map[string]queue.Registration{"contacts.export": handler})
	id, err := f.q.Dispatch(ctx, ExportContacts{})
	if err != nil {
		t.Fatal(err)
	}
	drain(t, f)
	tooBig, bad := <-errs, <-errs
	if !errors.Is(tooBig, queue.ErrPayloadTooLarge) || tooBig.Error() != "queue: the result of job "+id+" (contacts.export) is 1048578 bytes, over the limit of 1048576: store the data elsewhere and record its id: payload too large" {
		t.Errorf("SetResult of 1 MiB and 2 bytes: %v", tooBig)
	}
	if bad == nil || !strings.HasPrefix(bad.Error(), "queue: encode the result of job "+id+" (contacts.export): json: unsupported type") {
		t.Errorf("SetResult of a channel: %v", bad)
	}
	if _, err := f.q.Await(ctx, id); !errors.Is(err, queue.ErrNoResult) {
		t.Errorf("Await of the job: %v; want ErrNoResult", err)
	}
	if err := (queue.JobContext{}).SetResult(1); err == nil {
		t.Error("SetResult outside an attempt: no error")
	}
}

// TestPruneFailedPrunesTheFlowsThatEnded: flows that ended before the
// age given are deleted with the failed jobs; running ones are kept.
func TestPruneFailedPrunesTheFlowsThatEnded(t *testing.T) {
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		ended, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "a", Add: 1}))
		if err != nil {
			t.Fatal(err)
		}
		drain(t, f)
		f.clock.Advance(48 * time.Hour)
		running, err := f.q.DispatchFlow(ctx, queue.Chain(addJob{Step: "b"}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Inspector().PruneFailed(ctx, 24*time.Hour, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Inspector().Flow(ctx, ended); !errors.Is(err, queue.ErrNoFlow) {
			t.Errorf("the flow that ended two days ago: %v; want it pruned", err)
		}
		if _, err := f.q.Inspector().Flow(ctx, running); err != nil {
			t.Errorf("the running flow: %v", err)
		}
	})
}

// TestWorkflowsAgainstABruteForceReference builds random graphs of up to
// 8 steps, some failing, some running if failed, and checks DispatchFlow
// and the runs against a reference that knows nothing of the queue: a
// graph has a cycle if a step reaches itself in the transitive closure of
// its edges (refused); otherwise a step runs if every step it comes after
// has ended and either succeeded or it runs if failed, worked out by
// sweeping until nothing changes; and each step that runs does so once,
// after every step it comes after.
func TestWorkflowsAgainstABruteForceReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 13))
	graphs := make([][]refStep, 60)
	for g := range graphs {
		n := 1 + rng.IntN(8)
		steps := make([]refStep, n)
		for i := range steps {
			for j := range n {
				if rng.IntN(3) == 0 && (j < i || rng.IntN(8) == 0) { // mostly backward edges; some forward, which may close a cycle
					steps[i].after = append(steps[i].after, j)
				}
			}
			steps[i].fail, steps[i].runIfFailed = rng.IntN(4) == 0, rng.IntN(3) == 0
		}
		graphs[g] = steps
	}
	flowFixture(t, func(t *testing.T, f fixture, log *ranLog) {
		var cycles, run, notRun int
		defer func() {
			t.Logf("%d graphs: %d refused for a cycle; %d steps run, %d not run", len(graphs), cycles, run, notRun)
		}()
		for g, steps := range graphs {
			log.mu.Lock()
			log.ran = nil
			log.mu.Unlock()
			w := queue.Workflow(fmt.Sprint("g", g))
			for i, s := range steps {
				var after []string
				for _, j := range s.after {
					after = append(after, fmt.Sprint("s", j))
				}
				opts := []queue.StepOption{queue.After(after...)}
				if s.runIfFailed {
					opts = append(opts, queue.RunIfFailed())
				}
				w.Step(fmt.Sprint("s", i), addJob{Step: fmt.Sprint("s", i), Fail: s.fail}, opts...)
			}
			_, err := f.q.DispatchFlow(ctx, w)
			if refCycle(steps) {
				if err == nil || !strings.Contains(err.Error(), "cycle") && !strings.Contains(err.Error(), "comes after itself") {
					t.Fatalf("graph %d %v has a cycle; DispatchFlow: %v", g, steps, err)
				}
				cycles++
				continue
			}
			if err != nil {
				t.Fatalf("graph %d %v: %v", g, steps, err)
			}
			drain(t, f)
			ran := log.steps()
			at := map[string]int{}
			for k, name := range ran {
				if _, twice := at[name]; twice {
					t.Fatalf("graph %d: %s ran twice: %v", g, name, ran)
				}
				at[name] = k
			}
			want := refRuns(steps)
			for i, s := range steps {
				name := fmt.Sprint("s", i)
				if _, did := at[name]; did != want[i] {
					t.Fatalf("graph %d %v: %s ran %v, the reference says %v (ran: %v)", g, steps, name, did, want[i], ran)
				} else if did {
					run++
				} else {
					notRun++
				}
				for _, j := range s.after {
					if k, ok := at[fmt.Sprint("s", j)]; want[i] && ok && k > at[name] {
						t.Fatalf("graph %d: %s ran before s%d, which it comes after: %v", g, name, j, ran)
					}
				}
			}
		}
	})
}

// refStep is a step of a reference graph: the steps it comes after, by
// index; whether it fails; whether it runs if they failed.
type refStep struct {
	after             []int
	fail, runIfFailed bool
}

// refCycle reports whether a step reaches itself, by the transitive
// closure of the edges (Warshall).
func refCycle(steps []refStep) bool {
	n := len(steps)
	reach := make([][]bool, n)
	for i := range reach {
		reach[i] = make([]bool, n)
		for _, j := range steps[i].after {
			reach[i][j] = true
		}
	}
	for k := range n {
		for i := range n {
			for j := range n {
				reach[i][j] = reach[i][j] || reach[i][k] && reach[k][j]
			}
		}
	}
	for i := range n {
		if reach[i][i] {
			return true
		}
	}
	return false
}

// refRuns says which steps of an acyclic graph run: sweeping until
// nothing changes, a step ends once every step it comes after has ended;
// it runs if each of them succeeded (ran and did not fail), or, running
// if failed, whatever they did.
func refRuns(steps []refStep) []bool {
	n := len(steps)
	ended, runs := make([]bool, n), make([]bool, n)
	for changed := true; changed; {
		changed = false
		for i, s := range steps {
			if ended[i] {
				continue
			}
			ready, ok := true, true
			for _, j := range s.after {
				ready = ready && ended[j]
				ok = ok && runs[j] && !steps[j].fail
			}
			if ready {
				ended[i], runs[i], changed = true, ok || s.runIfFailed, true
			}
		}
	}
	return runs
}
