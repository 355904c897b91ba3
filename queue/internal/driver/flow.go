package driver

import (
	"context"
	"errors"

	"github.com/navree/navree/db"
)

// A flow is a graph of steps, each a job: a chain, a batch or a workflow.
// A step waits, held, until the steps it depends on have ended; the
// transaction that ends a step (its job's completion, failure or cancel)
// resolves what that changes, through a driver's flow.Tx and
// flow.Resolve (package queue/internal/control/flow), and nothing ever
// walks a whole graph to find what is due. Here are a flow's rows and
// the Driver's methods on them.

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
