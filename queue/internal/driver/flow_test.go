package driver_test

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// lastID is after every id.
const lastID = "ffffffff-ffff-ffff-ffff-ffffffffffff"

// flowID is the id of test flow n.
func flowID(n int) string { return fmt.Sprintf("01900000-0000-7000-9000-%012d", n) }

// flowBuilder builds a NewFlow of steps named by letters, each a job of
// the queue "f" with one attempt, its id numbered in the order added.
type flowBuilder struct {
	nf  driver.NewFlow
	ids map[string]string
	n   int
}

func newFlow(n int, kind string, cancelOnFailure bool) *flowBuilder {
	return &flowBuilder{nf: driver.NewFlow{Flow: driver.Flow{ID: flowID(n), Kind: kind, Name: kind + " test", CreatedAt: 1,
		State: driver.FlowRunning, CancelOnFailure: cancelOnFailure}}, ids: map[string]string{}, n: n * 100}
}

// step adds a step of role named name that waits for deps.
func (b *flowBuilder) step(name, role string, runIfFailed bool, deps ...string) *flowBuilder {
	b.n++
	j := newJob(b.n, "f", 0)
	j.MaxAttempts, j.Name = 1, "job."+name
	b.ids[name] = j.ID
	s := &driver.Step{Job: j, Name: name, Role: role, Waiting: len(deps), RunIfFailed: runIfFailed}
	for _, d := range deps {
		b.nf.Edges = append(b.nf.Edges, driver.Edge{From: b.ids[d], To: j.ID})
		s.Deps = append(s.Deps, b.ids[d])
	}
	b.nf.Steps = append(b.nf.Steps, s)
	if role == driver.RoleStep {
		b.nf.Flow.Total++
		b.nf.Flow.Pending++
	}
	return b
}

func (b *flowBuilder) start(t *testing.T, s driver.Driver) *flowBuilder {
	t.Helper()
	if err := s.StartFlow(ctx, nil, &b.nf); err != nil {
		t.Fatal(err)
	}
	return b
}

// name is the step name of the job id.
func (b *flowBuilder) name(id string) string {
	for n, x := range b.ids {
		if strings.EqualFold(x, id) {
			return n
		}
	}
	return "?" + id
}

// due reserves every job of the queue "f" due at now and returns them by
// step name.
func (b *flowBuilder) due(t *testing.T, s driver.Driver, now int64) map[string]*driver.Job {
	t.Helper()
	out := map[string]*driver.Job{}
	for {
		j := reserve(t, s, "f", now)
		if j == nil {
			return out
		}
		out[b.name(j.ID)] = j
	}
}

// dueNames is due's names, sorted.
func (b *flowBuilder) dueNames(t *testing.T, s driver.Driver, now int64) ([]string, map[string]*driver.Job) {
	t.Helper()
	jobs := b.due(t, s, now)
	return slices.Sorted(maps.Keys(jobs)), jobs
}

func succeed(t *testing.T, s driver.Driver, at int64, result string, jobs ...*driver.Job) {
	t.Helper()
	done := make([]driver.Attempt, len(jobs))
	for i, j := range jobs {
		done[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts, Flow: j.Flow, Result: result, At: at}
	}
	ids, err := s.Finish(ctx, done, false)
	if err != nil || len(ids) != len(jobs) {
		t.Fatalf("Finish = %v, %v; want %d ids", ids, err, len(jobs))
	}
}

// states reads the flow and its steps' states by name.
func (b *flowBuilder) states(t *testing.T, s driver.Driver) (driver.Flow, map[string]string) {
	t.Helper()
	f, steps, err := s.ReadFlow(ctx, b.nf.Flow.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, st := range steps {
		out[st.Name] = st.State
	}
	return f, out
}

func wantStates(t *testing.T, got map[string]string, want string) {
	t.Helper()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		parts = append(parts, k+"="+got[k])
	}
	if g := strings.Join(parts, " "); g != want {
		t.Fatalf("steps: %s\n want: %s", g, want)
	}
}

func wantCounts(t *testing.T, f driver.Flow, state string, total, pending, succeeded, failed int) {
	t.Helper()
	if f.State != state || f.Total != total || f.Pending != pending || f.Succeeded != succeeded || f.Failed != failed {
		t.Fatalf("flow %s total %d pending %d succeeded %d failed %d; want %s %d %d %d %d",
			f.State, f.Total, f.Pending, f.Succeeded, f.Failed, state, total, pending, succeeded, failed)
	}
}

func TestChainRunsInOrderAndStopsAtAFailure(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := newFlow(1, driver.KindChain, false).
			step("a", driver.RoleStep, false).step("b", driver.RoleStep, false, "a").step("c", driver.RoleStep, false, "b").
			step("catch", driver.RoleCatch, false).start(t, s)
		names, jobs := b.dueNames(t, s, 10)
		if !slices.Equal(names, []string{"a"}) || jobs["a"].Flow == "" {
			t.Fatalf("due at first: %v (flow %q); want [a] of the flow", names, jobs["a"].Flow)
		}
		succeed(t, s, 20, `{"n":1}`, jobs["a"])
		names, jobs = b.dueNames(t, s, 20)
		if !slices.Equal(names, []string{"b"}) {
			t.Fatalf("due after a: %v; want [b]", names)
		}
		up, err := s.Upstream(ctx, jobs["b"].ID)
		if err != nil || len(up) != 1 || up[0].Name != "a" || string(up[0].Result) != `{"n":1}` {
			t.Fatalf("Upstream(b) = %+v, %v; want a's result", up, err)
		}
		fail(t, s, jobs["b"], "boom", 30)
		f, st := b.states(t, s)
		wantStates(t, st, "a=succeeded b=failed c=failed catch=queued")
		wantCounts(t, f, driver.FlowFailed, 3, 0, 1, 2)
		if f.FinishedAt != 30 {
			t.Fatalf("finished at %d; want 30", f.FinishedAt)
		}
		if names, _ := b.dueNames(t, s, 30); !slices.Equal(names, []string{"catch"}) {
			t.Fatalf("due after b failed: %v; want [catch]", names)
		}
		// Retrying the failed job retries the chain from b: c waits again.
		if err := s.Retry(ctx, jobs["b"].ID, 40); err != nil {
			t.Fatal(err)
		}
		f, st = b.states(t, s)
		wantStates(t, st, "a=succeeded b=queued c=held catch=queued")
		wantCounts(t, f, driver.FlowRunning, 3, 2, 1, 0)
		names, jobs = b.dueNames(t, s, 40)
		if !slices.Equal(names, []string{"b"}) || jobs["b"].Attempts != 1 {
			t.Fatalf("due after the retry: %v; want [b], attempt 1", names)
		}
		succeed(t, s, 50, "", jobs["b"])
		_, jobs = b.dueNames(t, s, 50)
		succeed(t, s, 60, "", jobs["c"])
		f, st = b.states(t, s)
		wantStates(t, st, "a=succeeded b=succeeded c=succeeded catch=queued")
		wantCounts(t, f, driver.FlowSucceeded, 3, 0, 3, 0)
	})
}

func TestBatchCallbacks(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		batch := func(n int, cancelOnFailure bool) *flowBuilder {
			return newFlow(n, driver.KindBatch, cancelOnFailure).
				step("a", driver.RoleStep, false).step("b", driver.RoleStep, false).step("c", driver.RoleStep, false).
				step("then", driver.RoleThen, false).step("catch", driver.RoleCatch, false).step("finally", driver.RoleFinally, false).start(t, s)
		}
		// Every job succeeds: then and finally run, catch is skipped.
		b := batch(1, true)
		_, jobs := b.dueNames(t, s, 10)
		succeed(t, s, 20, "", jobs["a"], jobs["b"])
		if names, _ := b.dueNames(t, s, 20); len(names) != 0 {
			t.Fatalf("due with c pending: %v", names)
		}
		succeed(t, s, 30, "", jobs["c"])
		names, cbs := b.dueNames(t, s, 30)
		if !slices.Equal(names, []string{"finally", "then"}) {
			t.Fatalf("due once all succeeded: %v; want [finally then]", names)
		}
		succeed(t, s, 40, "", cbs["then"], cbs["finally"])
		f, st := b.states(t, s)
		wantStates(t, st, "a=succeeded b=succeeded c=succeeded catch=skipped finally=succeeded then=succeeded")
		wantCounts(t, f, driver.FlowSucceeded, 3, 0, 3, 0)

		// A failure cancels the jobs still waiting; the running one ends;
		// catch runs at once, finally at the end, then never.
		b = batch(2, true)
		jobs = b.due(t, s, 10)
		for _, n := range []string{"b", "c"} { // give back b and c: they wait
			if ok, err := s.Unreserve(ctx, jobs[n].ID, jobs[n].Attempts); !ok || err != nil {
				t.Fatal(ok, err)
			}
		}
		fail(t, s, jobs["a"], "boom", 20)
		f, st = b.states(t, s)
		wantStates(t, st, "a=failed b=cancelled c=cancelled catch=queued finally=queued then=skipped")
		wantCounts(t, f, driver.FlowFailed, 3, 0, 0, 3)
		failed, _ := s.Failed(ctx, driver.FailedKey{}, 10, false)
		if len(failed) != 3 {
			t.Fatalf("failed jobs: %d; want a, and b and c cancelled", len(failed))
		}
		b.due(t, s, 20) // its catch and finally, out of the way

		// With failures allowed, the others run on.
		b = batch(3, false)
		jobs = b.due(t, s, 10)
		fail(t, s, jobs["a"], "boom", 20)
		if names, _ := b.dueNames(t, s, 20); !slices.Equal(names, []string{"catch"}) {
			t.Fatalf("due after the first failure: %v; want [catch]", names)
		}
		succeed(t, s, 30, "", jobs["b"], jobs["c"])
		f, st = b.states(t, s)
		wantStates(t, st, "a=failed b=succeeded c=succeeded catch=queued finally=queued then=skipped")
		wantCounts(t, f, driver.FlowFailed, 3, 0, 2, 1)

		// Jobs added to a running batch count; an ended batch takes none.
		b = batch(4, true)
		jobs = b.due(t, s, 10)
		extra := newJob(499, "f", 0)
		b.ids["d"] = extra.ID
		if err := s.AddSteps(ctx, nil, b.nf.Flow.ID, []*driver.Step{{Job: extra, Name: "d", Role: driver.RoleStep}}, nil); err != nil {
			t.Fatal(err)
		}
		succeed(t, s, 20, "", jobs["a"], jobs["b"], jobs["c"])
		if names, _ := b.dueNames(t, s, 20); !slices.Equal(names, []string{"d"}) {
			t.Fatalf("due with the added job pending: %v; want [d]", names)
		}
		f, _ = b.states(t, s)
		wantCounts(t, f, driver.FlowRunning, 4, 1, 3, 0)
		if err := s.AddSteps(ctx, nil, flowID(99), nil, nil); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("AddSteps to no flow: %v; want ErrNoFlow", err)
		}
		if err := s.AddSteps(ctx, nil, flowID(1), []*driver.Step{{Job: newJob(498, "f", 0), Name: "e", Role: driver.RoleStep}}, nil); !errors.Is(err, driver.ErrFlowEnded) {
			t.Fatalf("AddSteps to an ended batch: %v; want ErrFlowEnded", err)
		}
	})
}

func TestWorkflowFanOutFanIn(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := newFlow(1, driver.KindWorkflow, false).
			step("a", driver.RoleStep, false).
			step("b", driver.RoleStep, false, "a").step("c", driver.RoleStep, false, "a").
			step("d", driver.RoleStep, false, "b", "c").
			step("e", driver.RoleStep, true, "c").
			step("f", driver.RoleStep, false, "d").start(t, s)
		_, jobs := b.dueNames(t, s, 10)
		succeed(t, s, 20, `"a"`, jobs["a"])
		names, jobs := b.dueNames(t, s, 20)
		if !slices.Equal(names, []string{"b", "c"}) {
			t.Fatalf("fan-out: %v; want [b c]", names)
		}
		succeed(t, s, 30, `"b"`, jobs["b"])
		if names, _ := b.dueNames(t, s, 30); len(names) != 0 {
			t.Fatalf("d ran with c pending: %v", names)
		}
		fail(t, s, jobs["c"], "boom", 40)
		names, jobs = b.dueNames(t, s, 40)
		if !slices.Equal(names, []string{"e"}) {
			t.Fatalf("after c failed: %v; want [e] (runs if failed), not d", names)
		}
		f, st := b.states(t, s)
		wantStates(t, st, "a=succeeded b=succeeded c=failed d=failed e=queued f=failed")
		wantCounts(t, f, driver.FlowRunning, 6, 1, 2, 3)
		up, _ := s.Upstream(ctx, jobs["e"].ID)
		if len(up) != 1 || up[0].Name != "c" || up[0].State != driver.StepFailed {
			t.Fatalf("Upstream(e) = %+v; want c, failed", up)
		}
		succeed(t, s, 50, "", jobs["e"])
		// Retried from its failed steps: c runs again, d and f wait for it.
		if n, err := s.RetryFlow(ctx, b.nf.Flow.ID, 60); n != 3 || err != nil {
			t.Fatalf("RetryFlow = %d, %v; want 3 steps back", n, err)
		}
		f, st = b.states(t, s)
		wantStates(t, st, "a=succeeded b=succeeded c=queued d=held e=succeeded f=held")
		wantCounts(t, f, driver.FlowRunning, 6, 3, 3, 0)
		for _, want := range []string{"c", "d", "f"} {
			names, jobs = b.dueNames(t, s, 70)
			if !slices.Equal(names, []string{want}) {
				t.Fatalf("after the retry: %v; want [%s]", names, want)
			}
			succeed(t, s, 70, "", jobs[want])
		}
		f, _ = b.states(t, s)
		wantCounts(t, f, driver.FlowSucceeded, 6, 0, 6, 0)
		if _, err := s.RetryFlow(ctx, flowID(9), 80); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("RetryFlow of no flow: %v", err)
		}
	})
}

func TestCancelFlow(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := newFlow(1, driver.KindWorkflow, false).
			step("a", driver.RoleStep, false).step("b", driver.RoleStep, false).
			step("c", driver.RoleStep, false, "a").step("finally", driver.RoleFinally, false).start(t, s)
		jobs := b.due(t, s, 10)
		if ok, err := s.Unreserve(ctx, jobs["b"].ID, jobs["b"].Attempts); !ok || err != nil {
			t.Fatal(ok, err)
		}
		did, err := s.CancelFlow(ctx, b.nf.Flow.ID, 20)
		if err != nil || did.Ended != 2 || did.Signalled != 1 {
			t.Fatalf("CancelFlow = %+v, %v; want b and c ended, a signalled", did, err)
		}
		if req, _ := s.CancelRequested(ctx, []string{jobs["a"].ID}); len(req) != 1 {
			t.Fatalf("a, running, was not asked to stop: %v", req)
		}
		succeed(t, s, 30, "", jobs["a"]) // it finished anyway
		f, st := b.states(t, s)
		wantStates(t, st, "a=succeeded b=cancelled c=cancelled finally=cancelled")
		wantCounts(t, f, driver.FlowCancelled, 3, 0, 1, 2)
		if names, _ := b.dueNames(t, s, 30); len(names) != 0 {
			t.Fatalf("ran after the cancel: %v", names)
		}
		if _, err := s.CancelFlow(ctx, flowID(9), 30); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("CancelFlow of no flow: %v", err)
		}
		// Retried, a cancelled flow runs on: its steps that did not run,
		// then its finally; retried again, with nothing failed, nothing
		// changes.
		if n, err := s.RetryFlow(ctx, b.nf.Flow.ID, 40); n != 2 || err != nil {
			t.Fatalf("RetryFlow of the cancelled flow = %d, %v; want b and c back", n, err)
		}
		f, st = b.states(t, s)
		wantStates(t, st, "a=succeeded b=queued c=queued finally=held")
		wantCounts(t, f, driver.FlowRunning, 3, 2, 1, 0)
		_, jobs = b.dueNames(t, s, 40)
		succeed(t, s, 50, "", jobs["b"], jobs["c"])
		names, jobs := b.dueNames(t, s, 50)
		if !slices.Equal(names, []string{"finally"}) {
			t.Fatalf("due once the retried steps ended: %v; want [finally]", names)
		}
		succeed(t, s, 60, "", jobs["finally"])
		if n, err := s.RetryFlow(ctx, b.nf.Flow.ID, 70); n != 0 || err != nil {
			t.Fatalf("RetryFlow of a flow that succeeded = %d, %v", n, err)
		}
		f, st = b.states(t, s)
		wantStates(t, st, "a=succeeded b=succeeded c=succeeded finally=succeeded")
		wantCounts(t, f, driver.FlowSucceeded, 3, 0, 3, 0)
		// Cancelling a waiting job of a flow ends its step.
		b = newFlow(2, driver.KindChain, false).step("a", driver.RoleStep, false).step("b", driver.RoleStep, false, "a").start(t, s)
		if did, err := s.Cancel(ctx, b.ids["a"], 40); did != driver.Removed || err != nil {
			t.Fatal(did, err)
		}
		f, st = b.states(t, s)
		wantStates(t, st, "a=cancelled b=failed")
		wantCounts(t, f, driver.FlowFailed, 2, 0, 0, 2)
	})
}

// A batch's then is released once, however many transactions end its
// last jobs at the same moment.
func TestBatchThenOnceUnderConcurrentFinishes(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := newFlow(1, driver.KindBatch, true)
		for i := range 200 {
			b.step(fmt.Sprint("j", i), driver.RoleStep, false)
		}
		b.step("then", driver.RoleThen, false).step("finally", driver.RoleFinally, false).start(t, s)
		jobs := b.due(t, s, 10)
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
					succeed(t, s, 20, "", all[i:i+5]...)
				}
			}()
		}
		wg.Wait()
		names, _ := b.dueNames(t, s, 20)
		if !slices.Equal(names, []string{"finally", "then"}) {
			t.Fatalf("due once all finished: %v; want finally and then, once each", names)
		}
		f, _ := b.states(t, s)
		wantCounts(t, f, driver.FlowSucceeded, 200, 0, 200, 0)
	})
}

func TestResultsAndOutcomes(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		plain, failing := newJob(1, "r", 0), newJob(2, "r", 0)
		insert(t, s, plain, failing)
		if o, _ := s.Outcome(ctx, plain.ID); o.State != driver.OutcomePending {
			t.Fatalf("Outcome of a waiting job: %+v", o)
		}
		j := reserve(t, s, "r", 10)
		succeed(t, s, 20, `{"total":3}`, j)
		if o, err := s.Outcome(ctx, plain.ID); o.State != driver.OutcomeSucceeded || string(o.Result) != `{"total":3}` || err != nil {
			t.Fatalf("Outcome after success = %+v, %v", o, err)
		}
		j = reserve(t, s, "r", 10)
		fail(t, s, j, "boom", 20)
		if o, _ := s.Outcome(ctx, failing.ID); o.State != driver.OutcomeFailed || o.Error != "boom" {
			t.Fatalf("Outcome of a failed job: %+v", o)
		}
		if o, _ := s.Outcome(ctx, newJob(3, "r", 0).ID); o.State != driver.OutcomeUnknown {
			t.Fatalf("Outcome of no job: %+v", o)
		}
		// A flow that ended is pruned with its steps and results; results
		// of no flow by their age.
		b := newFlow(1, driver.KindChain, false).step("a", driver.RoleStep, false).start(t, s)
		jobs := b.due(t, s, 10)
		succeed(t, s, 30, `1`, jobs["a"])
		if n, err := s.PruneFlows(ctx, 25, 10); n != 1 || err != nil {
			t.Fatalf("PruneFlows(25) = %d, %v; want the result of 20", n, err)
		}
		if o, _ := s.Outcome(ctx, plain.ID); o.State != driver.OutcomeUnknown {
			t.Fatalf("a pruned result: %+v", o)
		}
		if n, err := s.PruneFlows(ctx, 31, 10); n != 1 || err != nil {
			t.Fatalf("PruneFlows(31) = %d, %v; want the flow", n, err)
		}
		if _, _, err := s.ReadFlow(ctx, b.nf.Flow.ID); !errors.Is(err, driver.ErrNoFlow) {
			t.Fatalf("ReadFlow of a pruned flow: %v", err)
		}
	})
}

func TestRetryFailedRetriesFlows(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		plain := newJob(1, "f", 0)
		insert(t, s, plain)
		b := newFlow(1, driver.KindChain, false).step("a", driver.RoleStep, false).step("b", driver.RoleStep, false, "a").start(t, s)
		for _, j := range b.due(t, s, 10) {
			fail(t, s, j, "boom", 20)
		}
		if p := reserve(t, s, "f", 10); p != nil {
			t.Fatalf("left: %v", p)
		}
		n, _, err := s.RetryFailed(ctx, driver.FailedKey{}, driver.FailedKey{FailedAt: 1 << 60, ID: lastID}, 10, 30)
		if n != 2 || err != nil {
			t.Fatalf("RetryFailed = %d, %v; want 2", n, err)
		}
		_, st := b.states(t, s)
		wantStates(t, st, "a=queued b=held")
		if names, _ := b.dueNames(t, s, 30); len(names) != 2 {
			t.Fatalf("due after RetryFailed: %v; want the plain job and a", names)
		}
	})
}

// A failed step whose failed job was deleted (queue:failed delete, a
// prune) has nothing left to run: RetryFlow leaves it failed, and puts
// back the steps that can run.
func TestRetryFlowLeavesAStepWhoseJobIsGone(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		b := newFlow(1, driver.KindBatch, false).step("a", driver.RoleStep, false).step("b", driver.RoleStep, false).start(t, s)
		jobs := b.due(t, s, 10)
		fail(t, s, jobs["a"], "boom", 20)
		fail(t, s, jobs["b"], "boom", 20)
		if err := s.DeleteFailed(ctx, jobs["a"].ID); err != nil {
			t.Fatal(err)
		}
		if n, err := s.RetryFlow(ctx, b.nf.Flow.ID, 30); n != 1 || err != nil {
			t.Fatalf("RetryFlow = %d, %v; want b alone back", n, err)
		}
		f, st := b.states(t, s)
		wantStates(t, st, "a=failed b=queued")
		wantCounts(t, f, driver.FlowRunning, 2, 1, 0, 1)
		if names, _ := b.dueNames(t, s, 30); !slices.Equal(names, []string{"b"}) {
			t.Fatalf("due after the retry: %v; want [b]", names)
		}
	})
}
