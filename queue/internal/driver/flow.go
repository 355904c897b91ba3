package driver

import (
	"context"
	"errors"
	"slices"

	"github.com/navree/navree/db"
)

// A flow is a graph of steps, each a job: a chain, a batch or a workflow.
// A step waits, held, until the steps it depends on have ended; the
// transaction that ends a step (its job's completion, failure or cancel)
// resolves what that changes, through a driver's FlowTx and Resolve, and
// nothing ever walks a whole graph to find what is due.

// The kinds of flows.
const (
	KindChain    = "chain"
	KindBatch    = "batch"
	KindWorkflow = "workflow"
)

// The states of a flow.
const (
	FlowRunning   = "running"
	FlowSucceeded = "succeeded"
	FlowFailed    = "failed"
	FlowCancelled = "cancelled"
)

// The roles of steps: a step of the graph, or a callback of the flow,
// which no step depends on and which is released by the flow's counts.
const (
	RoleStep    = "step"
	RoleThen    = "then"    // once every step has succeeded
	RoleCatch   = "catch"   // at the first step that fails
	RoleFinally = "finally" // once every step has ended
)

// The states of a step.
const (
	StepHeld      = "held"   // waiting for its dependencies, or a callback for its moment
	StepQueued    = "queued" // its job is in jobs
	StepSucceeded = "succeeded"
	StepFailed    = "failed"
	StepCancelled = "cancelled"
	StepSkipped   = "skipped" // a callback whose moment never came
)

// DependencyFailed is the error of a step failed because a step it
// depends on did not succeed; BatchFailed that of a batch's step
// cancelled by the batch's first failure.
const (
	DependencyFailed = "not run: a step it depends on did not succeed"
	BatchFailed      = "not run: another job of its batch failed"
	FlowCancelledErr = "cancelled with its " // + kind
)

// Flow is a flow's row: its counts are of its steps, callbacks left out.
type Flow struct {
	ID              string
	Kind            string
	Name            string
	CreatedAt       int64
	FinishedAt      int64 // 0 while a step has not ended
	State           string
	CancelOnFailure bool
	Total           int
	Pending         int
	Succeeded       int
	Failed          int
}

// Step is a step of a flow, and the job it is (whose ID is the step's).
type Step struct {
	Job         *Job // the job; its Payload nil once it was released (read side)
	Flow        string
	Name        string
	Role        string
	State       string
	Waiting     int // dependencies not ended
	FailedDeps  int // dependencies ended otherwise than succeeded
	RunIfFailed bool
	DelayMs     int64
	Error       string
	EndedAt     int64
	Result      []byte // read side: its job's result, if any
	Deps        []string
}

// Edge says that the step To waits for the step From (job ids).
type Edge struct{ From, To string }

// FailedState is the state a step ends in when its job is moved to the
// failed jobs with errText: cancelled for a cancel, else failed.
func FailedState(errText string) string {
	if errText == CancelledError {
		return StepCancelled
	}
	return StepFailed
}

// Ended is a step whose state FlowTx.End changed; Dependants says that
// steps wait for it (Resolve asks FlowTx.Satisfy of those alone).
type Ended struct {
	ID, Flow, Role, State string
	Dependants            bool
}

// Held is a held step as FlowTx.Satisfy left it.
type Held struct {
	ID, Flow    string
	Waiting     int
	FailedDeps  int
	RunIfFailed bool
}

// FlowTx is what a driver offers Resolve inside the transaction that
// ends steps. Each method changes only steps in the state it names, so
// that what two transactions race for happens once.
type FlowTx interface {
	// End sets the steps ids not yet ended (held or queued) to state,
	// with errText, at at, and returns those it changed.
	End(ids []string, state, errText string, at int64) ([]Ended, error)
	// Satisfy counts, for each edge from one of ids, one dependency
	// ended for the held step it leads to (and one failed when failed),
	// and returns those steps as they are now.
	Satisfy(ids []string, failed bool) ([]Held, error)
	// Tally counts succeeded and failed steps of flow ended, and returns
	// the flow as it is now (its FinishedAt and State set once Pending is
	// 0, unless it was cancelled).
	Tally(flow string, succeeded, failed int, at int64) (Flow, error)
	// Release moves the held steps ids into jobs, due at now plus their
	// delays.
	Release(ids []string, now int64) error
	// HeldOf lists the held steps of flow in role.
	HeldOf(flow, role string) ([]string, error)
	// Unqueue moves the waiting jobs of flow (not running) to the failed
	// jobs with errText, at now, and returns their ids.
	Unqueue(flow, errText string, now int64) ([]string, error)
}

// Resolve works out, in the transaction of tx, what the steps ended
// change: it counts them in their flows, releases the steps whose
// dependencies have all ended (fails those with a failed one, unless they
// run if failed), releases a flow's callbacks when its counts call for
// them, and cancels a batch's waiting steps at its first failure; each
// step it ends in turn is resolved the same way.
func Resolve(tx FlowTx, ended []Ended, now int64) error {
	for len(ended) > 0 {
		var next []Ended
		var ok, bad []string
		type tally struct{ succeeded, failed int }
		tallies := map[string]*tally{}
		var flows []string
		for _, e := range ended {
			if e.Role != RoleStep {
				continue
			}
			t := tallies[e.Flow]
			if t == nil {
				t = &tally{}
				tallies[e.Flow] = t
				flows = append(flows, e.Flow)
			}
			switch {
			case e.State == StepSucceeded:
				t.succeeded++
				if e.Dependants {
					ok = append(ok, e.ID)
				}
			default:
				t.failed++
				if e.Dependants {
					bad = append(bad, e.ID)
				}
			}
		}
		// The dependants first, then the flows' rows: each transaction
		// takes the rows it locks in that order.
		var release, fail []string
		for _, set := range []struct {
			ids    []string
			failed bool
		}{{ok, false}, {bad, true}} {
			if len(set.ids) == 0 {
				continue
			}
			held, err := tx.Satisfy(set.ids, set.failed)
			if err != nil {
				return err
			}
			for _, h := range held {
				switch {
				case h.FailedDeps > 0 && !h.RunIfFailed:
					fail = append(fail, h.ID)
				case h.Waiting <= 0:
					release = append(release, h.ID)
				}
			}
		}
		release = slices.DeleteFunc(release, func(id string) bool { return slices.Contains(fail, id) })
		if len(release) > 0 {
			if err := tx.Release(release, now); err != nil {
				return err
			}
		}
		if len(fail) > 0 {
			e, err := tx.End(fail, StepFailed, DependencyFailed, now)
			if err != nil {
				return err
			}
			next = append(next, e...)
		}
		slices.Sort(flows)
		for _, id := range flows {
			t := tallies[id]
			f, err := tx.Tally(id, t.succeeded, t.failed, now)
			if err != nil {
				return err
			}
			e, err := callbacks(tx, f, t.failed, now)
			if err != nil {
				return err
			}
			next = append(next, e...)
		}
		ended = next
	}
	return nil
}

// callbacks does what a flow's counts, after failed more failures, call
// for: at its first failure its catch, and a batch's waiting steps
// cancelled; once no step is pending its finally, and its then if none
// failed (else skipped), its catch skipped if none did.
func callbacks(tx FlowTx, f Flow, failed int, now int64) ([]Ended, error) {
	if f.State == FlowCancelled {
		return nil, nil
	}
	var ended []Ended
	if failed > 0 && f.Failed == failed { // the first failures
		if f.CancelOnFailure && f.Pending > 0 {
			ids, err := tx.Unqueue(f.ID, BatchFailed, now)
			if err != nil {
				return nil, err
			}
			held, err := tx.HeldOf(f.ID, RoleStep)
			if err != nil {
				return nil, err
			}
			if ended, err = tx.End(append(ids, held...), StepCancelled, BatchFailed, now); err != nil {
				return nil, err
			}
		}
		if err := releaseRole(tx, f.ID, RoleCatch, now); err != nil {
			return nil, err
		}
	}
	if f.Pending > 0 {
		return ended, nil
	}
	if err := releaseRole(tx, f.ID, RoleFinally, now); err != nil {
		return nil, err
	}
	run, skip := RoleThen, RoleCatch
	if f.Failed > 0 {
		run, skip = "", RoleThen
	}
	if run != "" {
		if err := releaseRole(tx, f.ID, run, now); err != nil {
			return nil, err
		}
	}
	ids, err := tx.HeldOf(f.ID, skip)
	if err != nil || len(ids) == 0 {
		return ended, err
	}
	_, err = tx.End(ids, StepSkipped, "", now)
	return ended, err
}

func releaseRole(tx FlowTx, flow, role string, now int64) error {
	ids, err := tx.HeldOf(flow, role)
	if err != nil || len(ids) == 0 {
		return err
	}
	return tx.Release(ids, now)
}

// NewFlow is a flow to store: its row, its steps (each with its job, the
// roots' due when stored) and the edges between them.
type NewFlow struct {
	Flow  Flow
	Steps []*Step
	Edges []Edge
}

// Roots are the steps of nf that wait for none: stored straight into
// jobs.
func (nf *NewFlow) Roots() []*Step {
	var roots []*Step
	for _, s := range nf.Steps {
		if s.Role == RoleStep && s.Waiting == 0 {
			roots = append(roots, s)
		}
	}
	return roots
}

// FlowCancel says what CancelFlow did.
type FlowCancel struct {
	Ended     int // steps not started, ended as cancelled
	Signalled int // running steps asked to stop
}

// ErrNoFlow is returned for an id that is no flow; ErrFlowEnded by
// AddSteps for a flow whose steps have all ended.
var (
	ErrNoFlow    = errors.New("no such flow")
	ErrFlowEnded = errors.New("the flow has ended")
)

// Outcome is what Await reads of a job: OutcomePending while it waits or
// runs, else its result (OutcomeSucceeded) or error (OutcomeFailed);
// OutcomeUnknown when it is in no table: it succeeded without a result
// (and was not kept), or never was.
type Outcome struct {
	State  JobOutcome
	Result []byte
	Error  string
}

// JobOutcome is where a job stands, as Await sees it.
type JobOutcome int

// Where a job stands.
const (
	OutcomeUnknown JobOutcome = iota
	OutcomePending
	OutcomeSucceeded
	OutcomeFailed
)

// FlowsQuery asks for a page of flows, newest first.
type FlowsQuery struct {
	Kind   string // "": every kind
	Before string // the id of the last flow of the page before; "": from the newest
	Limit  int
}

// Finisher completes the jobs of flows' steps: the engine's part of
// Flows (see Core).
type Finisher interface {
	// Finish is Complete for jobs of flows or with results (an Attempt's
	// Flow or Result set): in one transaction it deletes them, keeps
	// their results and resolves their flows. It returns the ids it
	// deleted.
	Finish(ctx context.Context, done []Attempt, keep bool) ([]string, error)
}

// Flows stores flows: every driver is one.
type Flows interface {
	// StartFlow stores nf in uow when it is not nil (as Insert does): its
	// row, its held steps, and its roots' jobs.
	StartFlow(ctx context.Context, uow *db.UnitOfWork, nf *NewFlow) error
	// AddSteps adds steps (and their edges) to the running flow id:
	// ErrNoFlow, or ErrFlowEnded when every step of it has ended.
	AddSteps(ctx context.Context, uow *db.UnitOfWork, id string, steps []*Step, edges []Edge) error
	Finisher
	// CancelFlow cancels the flow id: its held steps and callbacks and its
	// waiting jobs end as cancelled (its jobs moved to the failed jobs),
	// its running jobs are asked to stop, and nothing of it runs after.
	CancelFlow(ctx context.Context, id string, now int64) (FlowCancel, error)
	// RetryFlow runs the flow id again from its steps that did not
	// succeed: their jobs back from the failed jobs, the steps that never
	// ran held again, and its callbacks that were cancelled, and its then
	// if it was skipped, held again. It returns how many steps it put
	// back; with none to put back, it changes nothing.
	RetryFlow(ctx context.Context, id string, now int64) (int, error)
	// ReadFlow reads the flow id, its steps (in the order stored, with
	// their results and dependencies), ErrNoFlow when there is none.
	ReadFlow(ctx context.Context, id string) (Flow, []Step, error)
	// ListFlows lists flows, newest first.
	ListFlows(ctx context.Context, q FlowsQuery) ([]Flow, error)
	// Upstream returns the steps the step id depends on, with their
	// results; for a callback, every step of its flow.
	Upstream(ctx context.Context, id string) ([]Step, error)
	// Outcome reads where the job id stands.
	Outcome(ctx context.Context, id string) (Outcome, error)
	// PruneFlows deletes up to limit flows that ended before before, with
	// their steps, edges and results, and the results of jobs of no flow
	// kept since before; it returns how many flows and results.
	PruneFlows(ctx context.Context, before int64, limit int) (int, error)
}
