package flow_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/drivertest"
)

func TestChainRunsInOrderAndStopsAtAFailure(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := drivertest.NewFlow(1, driver.KindChain, false).
			Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false, "a").Step("c", driver.RoleStep, false, "b").
			Step("catch", driver.RoleCatch, false).Start(t, s)
		names, jobs := b.DueNames(t, s, 10)
		if !slices.Equal(names, []string{"a"}) || jobs["a"].Flow == "" {
			t.Fatalf("due at first: %v (flow %q); want [a] of the flow", names, jobs["a"].Flow)
		}
		drivertest.Succeed(t, s, 20, `{"n":1}`, jobs["a"])
		names, jobs = b.DueNames(t, s, 20)
		if !slices.Equal(names, []string{"b"}) {
			t.Fatalf("due after a: %v; want [b]", names)
		}
		up, err := s.Upstream(ctx, jobs["b"].ID)
		if err != nil || len(up) != 1 || up[0].Name != "a" || string(up[0].Result) != `{"n":1}` {
			t.Fatalf("Upstream(b) = %+v, %v; want a's result", up, err)
		}
		drivertest.Fail(t, s, jobs["b"], "boom", 30)
		f, st := b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=failed c=failed catch=queued")
		drivertest.WantCounts(t, f, driver.FlowFailed, 3, 0, 1, 2)
		if f.FinishedAt != 30 {
			t.Fatalf("finished at %d; want 30", f.FinishedAt)
		}
		if names, _ := b.DueNames(t, s, 30); !slices.Equal(names, []string{"catch"}) {
			t.Fatalf("due after b failed: %v; want [catch]", names)
		}
		// Retrying the failed job retries the chain from b: c waits again.
		if err := s.Retry(ctx, jobs["b"].ID, 40); err != nil {
			t.Fatal(err)
		}
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=queued c=held catch=queued")
		drivertest.WantCounts(t, f, driver.FlowRunning, 3, 2, 1, 0)
		names, jobs = b.DueNames(t, s, 40)
		if !slices.Equal(names, []string{"b"}) || jobs["b"].Attempts != 1 {
			t.Fatalf("due after the retry: %v; want [b], attempt 1", names)
		}
		drivertest.Succeed(t, s, 50, "", jobs["b"])
		_, jobs = b.DueNames(t, s, 50)
		drivertest.Succeed(t, s, 60, "", jobs["c"])
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=succeeded c=succeeded catch=queued")
		drivertest.WantCounts(t, f, driver.FlowSucceeded, 3, 0, 3, 0)
	})
}

func TestBatchCallbacks(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		batch := func(n int, cancelOnFailure bool) *drivertest.FlowBuilder {
			return drivertest.NewFlow(n, driver.KindBatch, cancelOnFailure).
				Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false).Step("c", driver.RoleStep, false).
				Step("then", driver.RoleThen, false).Step("catch", driver.RoleCatch, false).Step("finally", driver.RoleFinally, false).Start(t, s)
		}
		// Every job succeeds: then and finally run, catch is skipped.
		b := batch(1, true)
		_, jobs := b.DueNames(t, s, 10)
		drivertest.Succeed(t, s, 20, "", jobs["a"], jobs["b"])
		if names, _ := b.DueNames(t, s, 20); len(names) != 0 {
			t.Fatalf("due with c pending: %v", names)
		}
		drivertest.Succeed(t, s, 30, "", jobs["c"])
		names, cbs := b.DueNames(t, s, 30)
		if !slices.Equal(names, []string{"finally", "then"}) {
			t.Fatalf("due once all succeeded: %v; want [finally then]", names)
		}
		drivertest.Succeed(t, s, 40, "", cbs["then"], cbs["finally"])
		f, st := b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=succeeded c=succeeded catch=skipped finally=succeeded then=succeeded")
		drivertest.WantCounts(t, f, driver.FlowSucceeded, 3, 0, 3, 0)

		// A failure cancels the jobs still waiting; the running one ends;
		// catch runs at once, finally at the end, then never.
		b = batch(2, true)
		jobs = b.Due(t, s, 10)
		for _, n := range []string{"b", "c"} { // give back b and c: they wait
			if ok, err := s.Unreserve(ctx, jobs[n].ID, jobs[n].Attempts); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		drivertest.Fail(t, s, jobs["a"], "boom", 20)
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=failed b=cancelled c=cancelled catch=queued finally=queued then=skipped")
		drivertest.WantCounts(t, f, driver.FlowFailed, 3, 0, 0, 3)
		failed, _ := s.Failed(ctx, driver.FailedKey{}, 10, false)
		if len(failed) != 3 {
			t.Fatalf("failed jobs: %d; want a, and b and c cancelled", len(failed))
		}
		b.Due(t, s, 20) // its catch and finally, out of the way

		// With failures allowed, the others run on.
		b = batch(3, false)
		jobs = b.Due(t, s, 10)
		drivertest.Fail(t, s, jobs["a"], "boom", 20)
		if names, _ := b.DueNames(t, s, 20); !slices.Equal(names, []string{"catch"}) {
			t.Fatalf("due after the first failure: %v; want [catch]", names)
		}
		drivertest.Succeed(t, s, 30, "", jobs["b"], jobs["c"])
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=failed b=succeeded c=succeeded catch=queued finally=queued then=skipped")
		drivertest.WantCounts(t, f, driver.FlowFailed, 3, 0, 2, 1)

		// Jobs added to a running batch count; an ended batch takes none.
		b = batch(4, true)
		jobs = b.Due(t, s, 10)
		extra := drivertest.Job(499, "f", 0)
		b.IDs["d"] = extra.ID
		if err := s.AddSteps(ctx, nil, b.NF.Flow.ID, []*driver.Step{{Job: extra, Name: "d", Role: driver.RoleStep}}, nil); err != nil {
			t.Fatal(err)
		}
		drivertest.Succeed(t, s, 20, "", jobs["a"], jobs["b"], jobs["c"])
		if names, _ := b.DueNames(t, s, 20); !slices.Equal(names, []string{"d"}) {
			t.Fatalf("due with the added job pending: %v; want [d]", names)
		}
		f, _ = b.States(t, s)
		drivertest.WantCounts(t, f, driver.FlowRunning, 4, 1, 3, 0)
		if err := s.AddSteps(ctx, nil, drivertest.FlowID(99), nil, nil); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("AddSteps to no flow: %v; want ErrNoFlow", err)
		}
		if err := s.AddSteps(ctx, nil, drivertest.FlowID(1), []*driver.Step{{Job: drivertest.Job(498, "f", 0), Name: "e", Role: driver.RoleStep}}, nil); !errors.Is(err, driver.ErrFlowEnded) {
			t.Fatalf("AddSteps to an ended batch: %v; want ErrFlowEnded", err)
		}
	})
}

func TestWorkflowFanOutFanIn(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := drivertest.NewFlow(1, driver.KindWorkflow, false).
			Step("a", driver.RoleStep, false).
			Step("b", driver.RoleStep, false, "a").Step("c", driver.RoleStep, false, "a").
			Step("d", driver.RoleStep, false, "b", "c").
			Step("e", driver.RoleStep, true, "c").
			Step("f", driver.RoleStep, false, "d").Start(t, s)
		_, jobs := b.DueNames(t, s, 10)
		drivertest.Succeed(t, s, 20, `"a"`, jobs["a"])
		names, jobs := b.DueNames(t, s, 20)
		if !slices.Equal(names, []string{"b", "c"}) {
			t.Fatalf("fan-out: %v; want [b c]", names)
		}
		drivertest.Succeed(t, s, 30, `"b"`, jobs["b"])
		if names, _ := b.DueNames(t, s, 30); len(names) != 0 {
			t.Fatalf("d ran with c pending: %v", names)
		}
		drivertest.Fail(t, s, jobs["c"], "boom", 40)
		names, jobs = b.DueNames(t, s, 40)
		if !slices.Equal(names, []string{"e"}) {
			t.Fatalf("after c failed: %v; want [e] (runs if failed), not d", names)
		}
		f, st := b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=succeeded c=failed d=failed e=queued f=failed")
		drivertest.WantCounts(t, f, driver.FlowRunning, 6, 1, 2, 3)
		up, _ := s.Upstream(ctx, jobs["e"].ID)
		if len(up) != 1 || up[0].Name != "c" || up[0].State != driver.StepFailed {
			t.Fatalf("Upstream(e) = %+v; want c, failed", up)
		}
		drivertest.Succeed(t, s, 50, "", jobs["e"])
		// Retried from its failed steps: c runs again, d and f wait for it.
		if n, err := s.RetryFlow(ctx, b.NF.Flow.ID, 60); n != 3 || err != nil {
			t.Fatalf("RetryFlow = %d, %v; want 3 steps back", n, err)
		}
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=succeeded c=queued d=held e=succeeded f=held")
		drivertest.WantCounts(t, f, driver.FlowRunning, 6, 3, 3, 0)
		for _, want := range []string{"c", "d", "f"} {
			names, jobs = b.DueNames(t, s, 70)
			if !slices.Equal(names, []string{want}) {
				t.Fatalf("after the retry: %v; want [%s]", names, want)
			}
			drivertest.Succeed(t, s, 70, "", jobs[want])
		}
		f, _ = b.States(t, s)
		drivertest.WantCounts(t, f, driver.FlowSucceeded, 6, 0, 6, 0)
		if _, err := s.RetryFlow(ctx, drivertest.FlowID(9), 80); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("RetryFlow of no flow: %v", err)
		}
	})
}

func TestCancelFlow(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := drivertest.NewFlow(1, driver.KindWorkflow, false).
			Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false).
			Step("c", driver.RoleStep, false, "a").Step("finally", driver.RoleFinally, false).Start(t, s)
		jobs := b.Due(t, s, 10)
		if ok, err := s.Unreserve(ctx, jobs["b"].ID, jobs["b"].Attempts); !ok || err != nil {
			t.Fatal(ok, err)
		}
		did, err := s.CancelFlow(ctx, b.NF.Flow.ID, 20)
		if err != nil || did.Ended != 2 || did.Signalled != 1 {
			t.Fatalf("CancelFlow = %+v, %v; want b and c ended, a signalled", did, err)
		}
		if req, _ := s.CancelRequested(ctx, []string{jobs["a"].ID}); len(req) != 1 {
			t.Fatalf("a, running, was not asked to stop: %v", req)
		}
		drivertest.Succeed(t, s, 30, "", jobs["a"]) // it finished anyway
		f, st := b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=cancelled c=cancelled finally=cancelled")
		drivertest.WantCounts(t, f, driver.FlowCancelled, 3, 0, 1, 2)
		if names, _ := b.DueNames(t, s, 30); len(names) != 0 {
			t.Fatalf("ran after the cancel: %v", names)
		}
		if _, err := s.CancelFlow(ctx, drivertest.FlowID(9), 30); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("CancelFlow of no flow: %v", err)
		}
		// Retried, a cancelled flow runs on: its steps that did not run,
		// then its finally; retried again, with nothing failed, nothing
		// changes.
		if n, err := s.RetryFlow(ctx, b.NF.Flow.ID, 40); n != 2 || err != nil {
			t.Fatalf("RetryFlow of the cancelled flow = %d, %v; want b and c back", n, err)
		}
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=queued c=queued finally=held")
		drivertest.WantCounts(t, f, driver.FlowRunning, 3, 2, 1, 0)
		_, jobs = b.DueNames(t, s, 40)
		drivertest.Succeed(t, s, 50, "", jobs["b"], jobs["c"])
		names, jobs := b.DueNames(t, s, 50)
		if !slices.Equal(names, []string{"finally"}) {
			t.Fatalf("due once the retried steps ended: %v; want [finally]", names)
		}
		drivertest.Succeed(t, s, 60, "", jobs["finally"])
		if n, err := s.RetryFlow(ctx, b.NF.Flow.ID, 70); n != 0 || err != nil {
			t.Fatalf("RetryFlow of a flow that succeeded = %d, %v", n, err)
		}
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=succeeded b=succeeded c=succeeded finally=succeeded")
		drivertest.WantCounts(t, f, driver.FlowSucceeded, 3, 0, 3, 0)
		// Cancelling a waiting job of a flow ends its step.
		b = drivertest.NewFlow(2, driver.KindChain, false).Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false, "a").Start(t, s)
		if did, err := s.Cancel(ctx, b.IDs["a"], 40); did != driver.Removed || err != nil {
			t.Fatal(did, err)
		}
		f, st = b.States(t, s)
		drivertest.WantStates(t, st, "a=cancelled b=failed")
		drivertest.WantCounts(t, f, driver.FlowFailed, 2, 0, 0, 2)
	})
}

// TestMain runs the tests as the conformance suite's (drivertest.Main).
func TestMain(m *testing.M) { os.Exit(drivertest.Main(m)) }

var ctx = context.Background()

// A batch's then is released once, however many transactions end its
// last jobs at the same moment.
func TestBatchThenOnceUnderConcurrentFinishes(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := drivertest.NewFlow(1, driver.KindBatch, true)
		for i := range 200 {
			b.Step(fmt.Sprint("j", i), driver.RoleStep, false)
		}
		b.Step("then", driver.RoleThen, false).Step("finally", driver.RoleFinally, false).Start(t, s)
		jobs := b.Due(t, s, 10)
		if len(jobs) != 200 {
			t.Fatalf("due: %d; want 200", len(jobs))
		}
		all := slices.Collect(maps.Values(jobs))
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := g * 25; i < (g+1)*25; i += 5 {
					drivertest.Succeed(t, s, 20, "", all[i:i+5]...)
				}
			}()
		}
		wg.Wait()
		names, _ := b.DueNames(t, s, 20)
		if !slices.Equal(names, []string{"finally", "then"}) {
			t.Fatalf("due once all finished: %v; want finally and then, once each", names)
		}
		f, _ := b.States(t, s)
		drivertest.WantCounts(t, f, driver.FlowSucceeded, 200, 0, 200, 0)
	})
}

func TestResultsAndOutcomes(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		plain, failing := drivertest.Job(1, "r", 0), drivertest.Job(2, "r", 0)
		drivertest.Insert(t, s, plain, failing)
		if o, _ := s.Outcome(ctx, plain.ID); o.State != driver.OutcomePending {
			t.Fatalf("Outcome of a waiting job: %+v", o)
		}
		j := drivertest.Reserve(t, s, "r", 10)
		drivertest.Succeed(t, s, 20, `{"total":3}`, j)
		if o, err := s.Outcome(ctx, plain.ID); o.State != driver.OutcomeSucceeded || string(o.Result) != `{"total":3}` || err != nil {
			t.Fatalf("Outcome after success = %+v, %v", o, err)
		}
		j = drivertest.Reserve(t, s, "r", 10)
		drivertest.Fail(t, s, j, "boom", 20)
		if o, _ := s.Outcome(ctx, failing.ID); o.State != driver.OutcomeFailed || o.Error != "boom" {
			t.Fatalf("Outcome of a failed job: %+v", o)
		}
		if o, _ := s.Outcome(ctx, drivertest.Job(3, "r", 0).ID); o.State != driver.OutcomeUnknown {
			t.Fatalf("Outcome of no job: %+v", o)
		}
		// A flow that ended is pruned with its steps and results; results
		// of no flow by their age.
		b := drivertest.NewFlow(1, driver.KindChain, false).Step("a", driver.RoleStep, false).Start(t, s)
		jobs := b.Due(t, s, 10)
		drivertest.Succeed(t, s, 30, `1`, jobs["a"])
		if n, err := s.PruneFlows(ctx, 25, 10); n != 1 || err != nil {
			t.Fatalf("PruneFlows(25) = %d, %v; want the result of 20", n, err)
		}
		if o, _ := s.Outcome(ctx, plain.ID); o.State != driver.OutcomeUnknown {
			t.Fatalf("a pruned result: %+v", o)
		}
		if n, err := s.PruneFlows(ctx, 31, 10); n != 1 || err != nil {
			t.Fatalf("PruneFlows(31) = %d, %v; want the flow", n, err)
		}
		if _, _, err := s.ReadFlow(ctx, b.NF.Flow.ID); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("ReadFlow of a pruned flow: %v", err)
		}
	})
}

func TestRetryFailedRetriesFlows(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		plain := drivertest.Job(1, "f", 0)
		drivertest.Insert(t, s, plain)
		b := drivertest.NewFlow(1, driver.KindChain, false).Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false, "a").Start(t, s)
		for _, j := range b.Due(t, s, 10) {
			drivertest.Fail(t, s, j, "boom", 20)
		}
		if p := drivertest.Reserve(t, s, "f", 10); p != nil {
			t.Fatalf("left: %v", p)
		}
		n, _, err := s.RetryFailed(ctx, driver.FailedKey{}, driver.FailedKey{FailedAt: 1 << 60, ID: drivertest.LastID}, 10, 30)
		if n != 2 || err != nil {
			t.Fatalf("RetryFailed = %d, %v; want 2", n, err)
		}
		_, st := b.States(t, s)
		drivertest.WantStates(t, st, "a=queued b=held")
		if names, _ := b.DueNames(t, s, 30); len(names) != 2 {
			t.Fatalf("due after RetryFailed: %v; want the plain job and a", names)
		}
	})
}

// A failed step whose failed job was deleted (queue:failed delete, a
// prune) has nothing left to run: RetryFlow leaves it failed, and puts
// back the steps that can run.
func TestRetryFlowLeavesAStepWhoseJobIsGone(t *testing.T) {
	drivertest.Each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := drivertest.NewFlow(1, driver.KindBatch, false).Step("a", driver.RoleStep, false).Step("b", driver.RoleStep, false).Start(t, s)
		jobs := b.Due(t, s, 10)
		drivertest.Fail(t, s, jobs["a"], "boom", 20)
		drivertest.Fail(t, s, jobs["b"], "boom", 20)
		if err := s.DeleteFailed(ctx, jobs["a"].ID); err != nil {
			t.Fatal(err)
		}
		if n, err := s.RetryFlow(ctx, b.NF.Flow.ID, 30); n != 1 || err != nil {
			t.Fatalf("RetryFlow = %d, %v; want b alone back", n, err)
		}
		f, st := b.States(t, s)
		drivertest.WantStates(t, st, "a=failed b=queued")
		drivertest.WantCounts(t, f, driver.FlowRunning, 2, 1, 0, 1)
		if names, _ := b.DueNames(t, s, 30); !slices.Equal(names, []string{"b"}) {
			t.Fatalf("due after the retry: %v; want [b]", names)
		}
	})
}
