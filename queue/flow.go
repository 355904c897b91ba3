package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"go.opentelemetry.io/otel/trace"
)

// Flow is jobs composed: a [Chain], a [Batch] or a [Workflow], each a
// graph of steps that are jobs. A step is queued once the steps it
// depends on have succeeded, in the transaction that records the last of
// them; a flow's callbacks ([Flow.Then], [Flow.Catch], [Flow.Finally])
// are queued, exactly once, in the transaction that records the outcome
// that calls for them. Build one with Chain, Batch or Workflow and queue
// it with [Queue.DispatchFlow]; its builder methods return the flow, to
// be chained, and keep the first mistake for DispatchFlow to report.
type Flow struct {
	kind          string
	name          string
	steps         []flowStep
	callbacks     []flowStep // then, catch and finally, in the order given
	allowFailures bool
	err           error
}

// flowStep is a step of a Flow as built.
type flowStep struct {
	name        string
	role        string
	job         Job
	after       []string // a workflow's: the names of the steps it comes after
	deps        []int    // the steps it comes after, by index
	runIfFailed bool
}

// Chain returns a flow that runs jobs one after another: each is queued
// when the one before it has succeeded. A job that fails (its attempts
// used up) stops the chain: the jobs after it fail, not run, with the
// error "not run: a step it depends on did not succeed", and the chain's
// [Flow.Catch] job, if it has one, is queued.
func Chain(jobs ...Job) *Flow {
	f := &Flow{kind: driver.KindChain}
	f.addChain("", jobs)
	return f
}

// Batch returns a flow that runs jobs side by side, with callbacks:
// [Flow.Then] once every job has succeeded, [Flow.Catch] at the first
// failure, [Flow.Finally] once every job has ended. The first failure
// cancels the jobs of the batch not yet started, unless
// [Flow.AllowFailures]. Jobs join a running batch with
// [Queue.AddToBatch]; a chain joins it with [Flow.Chain].
func Batch(jobs ...Job) *Flow {
	f := &Flow{kind: driver.KindBatch}
	for _, j := range jobs {
		f.steps = append(f.steps, flowStep{name: stepName(j), role: driver.RoleStep, job: j})
	}
	return f
}

// Workflow returns an empty workflow called name: a graph of named steps
// ([Flow.Step]), each queued once the steps it comes [After] have
// succeeded, with their results to read ([JobContext.Upstream]).
func Workflow(name string) *Flow {
	return &Flow{kind: driver.KindWorkflow, name: name}
}

// StepOption is an option of a workflow's step.
type StepOption func(*flowStep)

// After makes a step wait for the steps named: it is queued once every
// one of them has succeeded.
func After(steps ...string) StepOption {
	return func(s *flowStep) { s.after = append(s.after, steps...) }
}

// RunIfFailed makes a step run once the steps it comes after have ended,
// whether or not they succeeded; without it, a step whose dependency
// failed fails too, not run.
func RunIfFailed() StepOption {
	return func(s *flowStep) { s.runIfFailed = true }
}

// Step adds the step name, the job job, to a workflow. Names are unique
// in a workflow; the graph they make must have no cycle.
func (f *Flow) Step(name string, job Job, opts ...StepOption) *Flow {
	if f.kind != driver.KindWorkflow {
		return f.fail(fmt.Errorf("queue: Step %q: only a workflow has named steps; a %s takes its jobs in queue.%s", name, f.kind, title(f.kind)))
	}
	s := flowStep{name: name, role: driver.RoleStep, job: job}
	for _, o := range opts {
		o(&s)
	}
	f.steps = append(f.steps, s)
	return f
}

// Chain adds a chain of jobs to a batch: its first job runs beside the
// batch's others, each next one once the one before it succeeded.
func (f *Flow) Chain(jobs ...Job) *Flow {
	if f.kind != driver.KindBatch {
		return f.fail(fmt.Errorf("queue: Chain: only a batch takes chains; a %s's jobs are its own", f.kind))
	}
	f.addChain(strconv.Itoa(len(f.steps)+1)+".", jobs)
	return f
}

// addChain adds jobs as a chain, their names prefixed.
func (f *Flow) addChain(prefix string, jobs []Job) {
	for i, j := range jobs {
		s := flowStep{name: stepName(j), role: driver.RoleStep, job: j}
		if prefix != "" {
			s.name = prefix + strconv.Itoa(i+1) + " " + s.name
		}
		if i > 0 {
			s.deps = []int{len(f.steps) - 1}
		}
		f.steps = append(f.steps, s)
	}
}

// stepName is the name a job of a chain or a batch is shown by: its job
// type.
func stepName(j Job) string {
	if j == nil {
		return ""
	}
	return j.JobName()
}

// JobsOf makes envelopes jobs, for the steps of a flow: the jobs modules
// make as envelopes (an event's queued listeners, events.Bus.Envelopes; a
// notification's deliveries, notify.Notifier.Envelopes) run as steps with
// their payloads, options, delays and meta.
func JobsOf(envs ...Envelope) []Job {
	jobs := make([]Job, len(envs))
	for i, e := range envs {
		jobs[i] = envelopeJob{e}
	}
	return jobs
}

// envelopeJob is an envelope as a step's job.
type envelopeJob struct{ e Envelope }

func (j envelopeJob) JobName() string              { return j.e.Name }
func (j envelopeJob) MarshalJSON() ([]byte, error) { return j.e.Payload, nil }

// Named names the flow, for queue:batches and the dashboard.
func (f *Flow) Named(name string) *Flow {
	f.name = name
	return f
}

// Then queues job once every step of the flow has succeeded.
func (f *Flow) Then(job Job) *Flow { return f.callback(driver.RoleThen, job) }

// Catch queues job at the flow's first failed step (a job whose attempts
// are used up, or cancelled).
func (f *Flow) Catch(job Job) *Flow { return f.callback(driver.RoleCatch, job) }

// Finally queues job once every step of the flow has ended, whatever
// their outcomes.
func (f *Flow) Finally(job Job) *Flow { return f.callback(driver.RoleFinally, job) }

func (f *Flow) callback(role string, job Job) *Flow {
	f.callbacks = append(f.callbacks, flowStep{name: role, role: role, job: job})
	return f
}

// AllowFailures keeps a batch running after a failure: its other jobs
// still run. Its then never runs once a job failed; catch and finally do.
func (f *Flow) AllowFailures() *Flow {
	if f.kind != driver.KindBatch {
		return f.fail(fmt.Errorf("queue: AllowFailures: only a batch has it; a failed step of a %s fails its dependants unless they RunIfFailed", f.kind))
	}
	f.allowFailures = true
	return f
}

func (f *Flow) fail(err error) *Flow {
	if f.err == nil {
		f.err = err
	}
	return f
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

// what names f in errors.
func (f *Flow) what() string {
	if f.name != "" {
		return f.kind + " " + strconv.Quote(f.name)
	}
	return f.kind
}

// DispatchFlow queues f and returns its id: the steps that wait for none
// are queued at once, the others held until their dependencies end.
// Inside a unit of work (found on ctx) it joins it, as a dispatch does.
// A flow with no step, a step of no job or of an unknown job type, a
// unique job, a step after one that is not in the workflow, or a cycle is
// refused with an error that names it, and nothing is queued.
func (q *Queue) DispatchFlow(ctx context.Context, f *Flow) (id string, err error) {
	nf, err := q.newFlow(f)
	if err != nil {
		return "", err
	}
	if q.tracing != nil { // one send span for the flow; every step's attempt links to it
		rows := make([]*driver.Job, len(nf.Steps))
		for i, s := range nf.Steps {
			rows[i] = s.Job
		}
		var span trace.Span
		ctx, span = q.tracing.send(ctx, rows)
		defer func() { sent(span, nil, err) }() // no message id: a flow is many
	}
	if q.recorder != nil { // a fake records what is queued now: the roots
		var envs []Envelope
		for _, s := range nf.Roots() {
			envs = append(envs, Envelope{Name: s.Job.Name, Payload: s.Job.Payload, Meta: s.Job.Meta, Options: Options{Queue: s.Job.Queue}})
		}
		if _, err := q.enqueue(ctx, db.UnitOfWorkFrom(ctx), false, envs...); err != nil {
			return "", err
		}
		return nf.Flow.ID, nil
	}
	uow := db.UnitOfWorkFrom(ctx)
	if err := q.store.StartFlow(ctx, uow, nf); err != nil {
		return "", fmt.Errorf("queue: dispatch the %s: %w", f.what(), err)
	}
	q.announceSteps(ctx, uow, nf.Roots())
	return nf.Flow.ID, nil
}

// AddToBatch adds jobs to the running batch id: they run beside its
// others, and its callbacks wait for them too. A batch whose jobs have
// all ended takes none: [ErrFlowEnded].
func (q *Queue) AddToBatch(ctx context.Context, id string, jobs ...Job) error {
	u, err := uuid.FromString(id)
	if err != nil {
		return &NoFlowError{ID: id}
	}
	nf, err := q.newFlow(Batch(jobs...))
	if err != nil {
		return err
	}
	uow := db.UnitOfWorkFrom(ctx)
	switch err := q.store.AddSteps(ctx, uow, u.String(), nf.Steps, nil); {
	case errors.Is(err, driver.ErrNoFlow):
		return &NoFlowError{ID: u.String()}
	case errors.Is(err, driver.ErrFlowEnded):
		return fmt.Errorf("queue: add %d jobs to batch %s: %w", len(jobs), u, ErrFlowEnded)
	case err != nil:
		return fmt.Errorf("queue: add %d jobs to batch %s: %w", len(jobs), u, err)
	}
	q.announceSteps(ctx, uow, nf.Roots())
	return nil
}

// announceSteps wakes the workers of the steps queued, once uow (if any)
// commits.
func (q *Queue) announceSteps(ctx context.Context, uow *db.UnitOfWork, roots []*driver.Step) {
	announce := func(ctx context.Context) {
		var seen []string
		for _, s := range roots {
			if q.meters != nil {
				q.meters.dispatchedRow(ctx, s.Job)
			}
			if !slices.Contains(seen, s.Job.Queue) {
				seen = append(seen, s.Job.Queue)
				q.dispatched(ctx, s.Job.Queue)
			}
		}
	}
	if uow != nil {
		uow.AfterCommit(announce)
	} else {
		announce(ctx)
	}
}

// ErrFlowEnded is the error of [Queue.AddToBatch] for a batch whose jobs
// have all ended.
var ErrFlowEnded = errors.New("the batch has ended: every job of it has succeeded or failed, and its callbacks were queued")

// ErrNoFlow is matched (errors.Is) by the error for an id that is no
// chain, batch or workflow.
var ErrNoFlow = errors.New("there is no chain, batch or workflow with that id")

// NoFlowError is the error for an id that is no chain, batch or
// workflow: pruned, or never was.
type NoFlowError struct{ ID string }

func (e *NoFlowError) Error() string {
	return "there is no chain, batch or workflow with id " + e.ID + ": it was pruned with the failed jobs (queue.prune_failed), or never was"
}

// Is reports whether target is [ErrNoFlow].
func (e *NoFlowError) Is(target error) bool { return target == ErrNoFlow }

// newFlow checks f and makes its rows.
func (q *Queue) newFlow(f *Flow) (*driver.NewFlow, error) {
	if f == nil {
		return nil, errors.New("queue: DispatchFlow was given a nil flow: make one with queue.Chain, queue.Batch or queue.Workflow")
	}
	if f.err != nil {
		return nil, f.err
	}
	if len(f.steps) == 0 {
		return nil, fmt.Errorf("queue: the %s has no step: give it at least one job", f.what())
	}
	if f.kind == driver.KindWorkflow {
		if err := f.checkGraph(); err != nil {
			return nil, err
		}
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("queue: new flow id: %w", err)
	}
	now := q.clock.Now().UnixMilli()
	nf := &driver.NewFlow{Flow: driver.Flow{ID: id.String(), Kind: f.kind, Name: f.name, CreatedAt: now, State: driver.FlowRunning,
		CancelOnFailure: f.kind == driver.KindBatch && !f.allowFailures, Total: len(f.steps), Pending: len(f.steps)}}
	var ids []string
	for i, s := range append(slices.Clip(f.steps), f.callbacks...) {
		where := fmt.Sprintf("the %s's step %d (%s)", f.what(), i+1, s.name)
		if s.role != driver.RoleStep {
			where = fmt.Sprintf("the %s's %s job", f.what(), s.role)
		}
		if s.job == nil {
			return nil, fmt.Errorf("queue: %s is nil: give it a job", where)
		}
		var e Envelope
		if ej, ok := s.job.(envelopeJob); ok {
			if e = ej.e; e.check() != nil {
				return nil, fmt.Errorf("%w (in %s)", e.check(), where)
			}
		} else if e, err = EnvelopeOf(s.job); err != nil {
			return nil, err
		}
		row, err := q.row(e, true)
		if err != nil {
			return nil, fmt.Errorf("%w (in %s)", err, where)
		}
		step := &driver.Step{Job: row, Name: s.name, Role: s.role, RunIfFailed: s.runIfFailed, Waiting: len(s.deps), DelayMs: ceilMs(max(e.Delay, 0))}
		ids = append(ids, row.ID)
		for _, dep := range s.deps {
			nf.Edges = append(nf.Edges, driver.Edge{From: ids[dep], To: row.ID})
			step.Deps = append(step.Deps, ids[dep])
		}
		nf.Steps = append(nf.Steps, step)
	}
	return nf, nil
}

// checkGraph refuses a workflow whose steps repeat a name, come after a
// step it does not have, or make a cycle; and orders its steps so that
// each comes after those it depends on.
func (f *Flow) checkGraph() error {
	index := map[string]int{}
	for i, s := range f.steps {
		if s.name == "" {
			return fmt.Errorf("queue: the %s's step %d has no name", f.what(), i+1)
		}
		if _, dup := index[s.name]; dup {
			return fmt.Errorf("queue: the %s has two steps named %q: name each step once", f.what(), s.name)
		}
		index[s.name] = i
	}
	for _, s := range f.steps {
		for _, dep := range s.after {
			if _, ok := index[dep]; !ok {
				names := make([]string, len(f.steps))
				for i, s := range f.steps {
					names[i] = s.name
				}
				return fmt.Errorf("queue: the %s's step %q comes after %q, which is no step of it (its steps: %s)",
					f.what(), s.name, dep, strings.Join(names, ", "))
			}
			if dep == s.name {
				return fmt.Errorf("queue: the %s's step %q comes after itself", f.what(), s.name)
			}
		}
	}
	// A depth-first walk in the order given: a step met again while on
	// the path is a cycle; the order it leaves steps in is one where each
	// comes after its dependencies.
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]int, len(f.steps))
	var order []flowStep
	var path []string
	var visit func(i int) error
	visit = func(i int) error {
		switch state[i] {
		case onPath:
			from := slices.Index(path, f.steps[i].name)
			return fmt.Errorf("queue: the %s has a cycle: %s -> %s: a step cannot wait for itself",
				f.what(), strings.Join(path[from:], " -> "), f.steps[i].name)
		case done:
			return nil
		}
		state[i] = onPath
		path = append(path, f.steps[i].name)
		for _, dep := range f.steps[i].after {
			if err := visit(index[dep]); err != nil {
				return err
			}
		}
		path = path[:len(path)-1]
		state[i] = done
		order = append(order, f.steps[i])
		return nil
	}
	for i := range f.steps {
		if err := visit(i); err != nil {
			return err
		}
	}
	at := map[string]int{}
	for i, s := range order {
		at[s.name] = i
		order[i].deps = nil
		for _, dep := range s.after {
			order[i].deps = append(order[i].deps, at[dep])
		}
	}
	f.steps = order
	return nil
}

// StepResult is a step a job's step depends on, as [JobContext.Upstream]
// reads it: its name, job, state and result.
type StepResult struct {
	Step   string // its name in the flow
	JobID  string
	Name   string          // the job type
	State  string          // succeeded, failed, cancelled, or skipped
	Result json.RawMessage // what its handler recorded (SetResult), nil if nothing
}

// Decode decodes the step's result into v; an error when it has none.
func (r StepResult) Decode(v any) error {
	if r.Result == nil {
		return fmt.Errorf("queue: step %q (job %s, %s) recorded no result", r.Step, r.JobID, r.State)
	}
	if err := json.Unmarshal(r.Result, v); err != nil {
		return fmt.Errorf("queue: decode the result of step %q (job %s): %w", r.Step, r.JobID, err)
	}
	return nil
}

// MaxResultBytes bounds a job's result, as MaxPayloadBytes its payload: a
// result carries ids and small values, not data.
const MaxResultBytes = MaxPayloadBytes

// SetResult records v, as JSON, as the result of the attempt: kept with
// the job if the attempt succeeds, for the steps that come after it
// ([JobContext.Upstream]) and for [Queue.Await]. The last call wins. A
// value that does not encode, or whose JSON is over [MaxResultBytes], is
// an error, and nothing is recorded.
func (jc JobContext) SetResult(v any) error {
	if jc.job == nil {
		return errors.New("queue: SetResult outside a job's attempt: only a handler the queue runs can record a result")
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("queue: encode the result of job %s (%s): %w", jc.JobID, jc.Name, err)
	}
	if len(b) > MaxResultBytes {
		return fmt.Errorf("queue: the result of job %s (%s) is %d bytes, over the limit of %d: store the data elsewhere and record its id: %w",
			jc.JobID, jc.Name, len(b), MaxResultBytes, ErrPayloadTooLarge)
	}
	jc.job.Result = b
	return nil
}

// Upstream reads the steps that the running job's step depends on, with
// their results, in the order they were added: for a step, those it
// comes after (the one before it, in a chain); for a flow's then, catch
// or finally, every step of the flow. A job of no flow has none.
func (jc JobContext) Upstream(ctx context.Context) ([]StepResult, error) {
	if jc.Flow == "" || jc.q == nil {
		return nil, nil
	}
	steps, err := jc.q.store.Upstream(ctx, jc.JobID)
	if err != nil {
		return nil, fmt.Errorf("queue: read the steps before job %s: %w", jc.JobID, err)
	}
	out := make([]StepResult, len(steps))
	for i, s := range steps {
		out[i] = StepResult{Step: s.Name, JobID: strings.ToLower(s.Job.ID), Name: s.Job.Name, State: s.State, Result: s.Result}
	}
	return out, nil
}

// ErrNoResult is matched (errors.Is) by the error of [Queue.Await] for a
// job that left no result.
var ErrNoResult = errors.New("the job left no result")

// JobFailedError is the error of [Queue.Await] for a job that failed.
type JobFailedError struct {
	ID     string
	Reason string // its last error, as kept with the failed job
}

func (e *JobFailedError) Error() string {
	return "queue: job " + e.ID + " failed: " + e.Reason
}

// Await waits until the job id has finished and returns its result: what
// its handler recorded with [JobContext.SetResult], nil if nothing. A job
// that failed (its attempts used up, or cancelled) gives a
// [*JobFailedError]; one that is in no state and left no result (it
// succeeded without recording one and is not kept, or never was) an error
// matching [ErrNoResult]. It is woken at once by the jobs this process's
// workers finish, and, on PostgreSQL, by those of every process whose
// workers listen; otherwise it looks again every half second at most.
// ctx bounds the wait: give it a deadline.
func (q *Queue) Await(ctx context.Context, id string) (json.RawMessage, error) {
	u, err := uuid.FromString(id)
	if err != nil {
		return nil, fmt.Errorf("queue: await %q: not a job id: %w", id, ErrNoResult)
	}
	id = u.String()
	pause := 5 * time.Millisecond
	for {
		woken := q.waker.Wait()
		o, err := q.store.Outcome(ctx, id)
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("queue: await job %s: still pending: %w", id, context.Cause(ctx))
		case err != nil:
			return nil, fmt.Errorf("queue: await job %s: %w", id, err)
		}
		switch o.State {
		case driver.OutcomeSucceeded:
			return o.Result, nil
		case driver.OutcomeFailed:
			return nil, &JobFailedError{ID: id, Reason: o.Error}
		case driver.OutcomeUnknown:
			return nil, fmt.Errorf("queue: await job %s: it is not waiting, running or failed, and %w: it succeeded without recording one (and is not kept), or never was", id, ErrNoResult)
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("queue: await job %s: still pending: %w", id, context.Cause(ctx))
		case <-woken:
			timer.Stop()
		case <-timer.C:
			pause = min(2*pause, 500*time.Millisecond)
		}
	}
}

// AwaitResult is [Queue.Await], with the result decoded into a T.
func AwaitResult[T any](ctx context.Context, q *Queue, id string) (T, error) {
	var v T
	raw, err := q.Await(ctx, id)
	if err != nil {
		return v, err
	}
	if raw == nil {
		return v, fmt.Errorf("queue: await job %s: it succeeded and %w", id, ErrNoResult)
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("queue: decode the result of job %s: %w", id, err)
	}
	return v, nil
}
