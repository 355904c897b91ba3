package memdriver

import (
	"cmp"
	"context"
	"slices"

	"github.com/navree/navree/queue/internal/control/flow"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// flows are the memory driver's flows, steps, edges and results.
type flows struct {
	rows    map[string]*driver.Flow
	steps   map[string]*driver.Step // by job id
	order   map[string][]string     // a flow's steps, as stored
	out     map[string][]string     // the steps that wait for a step
	results map[string]result       // by job id
}

type result struct {
	flow string
	data []byte
	at   int64
}

func newFlows() flows {
	return flows{rows: map[string]*driver.Flow{}, steps: map[string]*driver.Step{}, order: map[string][]string{},
		out: map[string][]string{}, results: map[string]result{}}
}

// StartFlow implements driver.Flows: inside a unit of work, the flow is
// stored when it commits.
func (d *Driver) StartFlow(ctx context.Context, uow *db.UnitOfWork, nf *driver.NewFlow) error {
	store := func(context.Context) {
		d.mu.Lock()
		defer d.mu.Unlock()
		f := nf.Flow
		d.f.rows[f.ID] = &f
		d.addSteps(f.ID, nf.Steps, nf.Edges)
	}
	if uow != nil {
		uow.AfterCommit(store)
	} else {
		store(ctx)
	}
	return nil
}

// addSteps stores steps and edges of flow, the roots' jobs due.
func (d *Driver) addSteps(flow string, steps []*driver.Step, edges []driver.Edge) {
	for _, s := range steps {
		c := *s
		job := *s.Job
		job.Payload, job.Meta = slices.Clone(job.Payload), slices.Clone(job.Meta)
		c.Job = &job
		c.Flow, c.State = flow, driver.StepHeld
		d.f.steps[job.ID] = &c
		d.f.order[flow] = append(d.f.order[flow], job.ID)
		if c.Role == driver.RoleStep && c.Waiting == 0 {
			d.releaseStep(&c, job.CreatedAt)
		}
	}
	for _, e := range edges {
		d.f.out[e.From] = append(d.f.out[e.From], e.To)
	}
}

// AddSteps implements driver.Flows: inside a unit of work, the steps are
// added when it commits (if the flow is still running then).
func (d *Driver) AddSteps(ctx context.Context, uow *db.UnitOfWork, id string, steps []*driver.Step, edges []driver.Edge) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.running(id); err != nil || uow == nil {
		if err == nil {
			d.grow(id, steps, edges)
		}
		return err
	}
	uow.AfterCommit(func(context.Context) {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.running(id) == nil {
			d.grow(id, steps, edges)
		}
	})
	return nil
}

// running says whether the flow id takes steps: ErrNoFlow, ErrFlowEnded.
func (d *Driver) running(id string) error {
	switch f := d.f.rows[id]; {
	case f == nil:
		return driver.ErrNoFlow
	case f.Pending == 0:
		return driver.ErrFlowEnded
	}
	return nil
}

// grow adds steps and edges to the running flow id, and counts them.
func (d *Driver) grow(id string, steps []*driver.Step, edges []driver.Edge) {
	f := d.f.rows[id]
	for _, s := range steps {
		if s.Role == driver.RoleStep {
			f.Total++
			f.Pending++
		}
	}
	d.addSteps(id, steps, edges)
}

// releaseStep puts a held step's job in its queue.
func (d *Driver) releaseStep(s *driver.Step, now int64) {
	j := *s.Job
	j.Flow, j.AvailableAt, j.CreatedAt = s.Flow, now+s.DelayMs, now
	s.State, s.Job.Payload = driver.StepQueued, nil // the job has it now, as in the database
	d.add(&j)
}

// Finish implements driver.Flows.
func (d *Driver) Finish(ctx context.Context, done []driver.Attempt, keep bool) ([]string, error) {
	d.mu.Lock() // the jobs, their results and their flows change at once
	defer d.mu.Unlock()
	ids := d.complete(done, keep)
	var steps []string
	var at int64
	for _, a := range done {
		if !slices.Contains(ids, a.ID) {
			continue
		}
		at = max(at, a.At)
		if a.Result != "" {
			d.f.results[a.ID] = result{flow: a.Flow, data: []byte(a.Result), at: a.At}
		}
		if a.Flow != "" {
			steps = append(steps, a.ID)
		}
	}
	if len(steps) == 0 {
		return ids, nil
	}
	tx := memTx{d}
	ended, _ := tx.End(steps, driver.StepSucceeded, "", at)
	return ids, flow.Resolve(tx, ended, at)
}

// failed ends the step of a job moved to the failed jobs.
func (d *Driver) stepFailed(id, errText string, at int64) {
	tx := memTx{d}
	ended, _ := tx.End([]string{id}, flow.FailedState(errText), errText, at)
	_ = flow.Resolve(tx, ended, at)
}

// CancelFlow implements driver.Flows.
func (d *Driver) CancelFlow(ctx context.Context, id string, now int64) (driver.FlowCancel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.f.rows[id]
	if f == nil {
		return driver.FlowCancel{}, driver.ErrNoFlow
	}
	tx := memTx{d}
	var did driver.FlowCancel
	var callbacks, steps []string
	for _, sid := range d.f.order[id] {
		s := d.f.steps[sid]
		switch {
		case s.State == driver.StepHeld && s.Role != driver.RoleStep:
			callbacks = append(callbacks, sid)
		case s.State == driver.StepHeld:
			steps = append(steps, sid)
		case s.State == driver.StepQueued && d.jobs[sid] != nil && d.jobs[sid].ReservedAt != 0:
			d.cancel[sid] = true
			did.Signalled++
		}
	}
	if f.Pending > 0 {
		f.State = driver.FlowCancelled
	}
	_, _ = tx.End(callbacks, driver.StepCancelled, driver.FlowCancelledErr+f.Kind, now)
	waiting, _ := tx.Unqueue(id, driver.FlowCancelledErr+f.Kind, now)
	ended, _ := tx.End(append(waiting, steps...), driver.StepCancelled, driver.FlowCancelledErr+f.Kind, now)
	did.Ended = len(ended)
	return did, flow.Resolve(tx, ended, now)
}

// RetryFlow implements driver.Flows.
func (d *Driver) RetryFlow(ctx context.Context, id string, now int64) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.f.rows[id] == nil {
		return 0, driver.ErrNoFlow
	}
	return d.retryFlow(id, now), nil
}

// retryFlow puts back the steps of flow id that did not succeed.
func (d *Driver) retryFlow(id string, now int64) int {
	f := d.f.rows[id]
	var again, held, callbacks []*driver.Step
	for _, sid := range d.f.order[id] {
		s := d.f.steps[sid]
		switch {
		case s.Role != driver.RoleStep && (s.State == driver.StepCancelled || s.Role == driver.RoleThen && s.State == driver.StepSkipped):
			callbacks = append(callbacks, s)
		case s.Role != driver.RoleStep || s.State != driver.StepFailed && s.State != driver.StepCancelled:
		case d.failed[sid].ID != "":
			again = append(again, s)
		case s.Job.Payload != nil: // never released; else its failed job is gone
			held = append(held, s)
		}
	}
	if len(again)+len(held) == 0 {
		return 0
	}
	for _, s := range callbacks {
		s.State, s.Error, s.EndedAt = driver.StepHeld, "", 0
	}
	for _, s := range again {
		s.State, s.Error, s.EndedAt = driver.StepQueued, "", 0
		d.retry(d.failed[s.Job.ID], now)
	}
	for _, s := range held {
		s.State, s.Error, s.EndedAt = driver.StepHeld, "", 0
	}
	n := len(again) + len(held)
	f.Pending += n
	f.Failed -= n
	f.FinishedAt, f.State = 0, driver.FlowRunning
	for _, s := range held {
		s.Waiting, s.FailedDeps = 0, 0
		for _, dep := range s.Deps {
			if d.f.steps[dep].State != driver.StepSucceeded {
				s.Waiting++
			}
		}
		if s.Waiting == 0 {
			d.releaseStep(s, now)
		}
	}
	return n
}

// ReadFlow implements driver.Flows.
func (d *Driver) ReadFlow(ctx context.Context, id string) (driver.Flow, []driver.Step, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f := d.f.rows[id]
	if f == nil {
		return driver.Flow{}, nil, driver.ErrNoFlow
	}
	steps := make([]driver.Step, 0, len(d.f.order[id]))
	for _, sid := range d.f.order[id] {
		steps = append(steps, d.readStep(sid))
	}
	return *f, steps, nil
}

// readStep is a copy of the step sid, with its result.
func (d *Driver) readStep(sid string) driver.Step {
	s := *d.f.steps[sid]
	job := *s.Job
	s.Job = &job
	if s.State != driver.StepHeld {
		job.Payload = nil
	}
	s.Deps = slices.Clone(s.Deps)
	s.Result = slices.Clone(d.f.results[sid].data)
	return s
}

// ListFlows implements driver.Flows.
func (d *Driver) ListFlows(ctx context.Context, q driver.FlowsQuery) ([]driver.Flow, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.Flow
	for _, f := range d.f.rows {
		if (q.Kind == "" || f.Kind == q.Kind) && (q.Before == "" || f.ID < q.Before) {
			out = append(out, *f)
		}
	}
	slices.SortFunc(out, func(a, b driver.Flow) int { return cmp.Compare(b.ID, a.ID) })
	return out[:min(len(out), q.Limit)], nil
}

// Upstream implements driver.Flows.
func (d *Driver) Upstream(ctx context.Context, id string) ([]driver.Step, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.f.steps[id]
	if s == nil {
		return nil, nil
	}
	deps := s.Deps
	if s.Role != driver.RoleStep {
		deps = nil
		for _, sid := range d.f.order[s.Flow] {
			if d.f.steps[sid].Role == driver.RoleStep {
				deps = append(deps, sid)
			}
		}
	}
	out := make([]driver.Step, len(deps))
	for i, dep := range deps {
		out[i] = d.readStep(dep)
	}
	return out, nil
}

// Outcome implements driver.Flows.
func (d *Driver) Outcome(ctx context.Context, id string) (driver.Outcome, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if r, ok := d.f.results[id]; ok {
		return driver.Outcome{State: driver.OutcomeSucceeded, Result: slices.Clone(r.data)}, nil
	}
	if _, ok := d.jobs[id]; ok {
		return driver.Outcome{State: driver.OutcomePending}, nil
	}
	if f, ok := d.failed[id]; ok {
		return driver.Outcome{State: driver.OutcomeFailed, Error: f.Error}, nil
	}
	if s := d.f.steps[id]; s != nil {
		switch s.State {
		case driver.StepHeld, driver.StepQueued:
			return driver.Outcome{State: driver.OutcomePending}, nil
		case driver.StepSucceeded:
			return driver.Outcome{State: driver.OutcomeSucceeded}, nil
		}
		return driver.Outcome{State: driver.OutcomeFailed, Error: cmp.Or(s.Error, s.State)}, nil
	}
	if _, ok := d.kept[id]; ok {
		return driver.Outcome{State: driver.OutcomeSucceeded}, nil
	}
	return driver.Outcome{}, nil
}

// PruneFlows implements driver.Flows.
func (d *Driver) PruneFlows(ctx context.Context, before int64, limit int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var old []*driver.Flow
	for _, f := range d.f.rows {
		if f.Pending == 0 && f.FinishedAt < before {
			old = append(old, f)
		}
	}
	slices.SortFunc(old, func(a, b *driver.Flow) int {
		return cmp.Or(cmp.Compare(a.FinishedAt, b.FinishedAt), cmp.Compare(a.ID, b.ID))
	})
	old = old[:min(len(old), limit)]
	for _, f := range old {
		for _, sid := range d.f.order[f.ID] {
			delete(d.f.steps, sid)
			delete(d.f.out, sid)
			delete(d.f.results, sid)
		}
		delete(d.f.order, f.ID)
		delete(d.f.rows, f.ID)
	}
	n := len(old)
	for id, r := range d.f.results {
		if n < limit && r.flow == "" && r.at < before {
			delete(d.f.results, id)
			n++
		}
	}
	return n, nil
}

// memTx is the memory driver's FlowTx: it runs under the driver's lock.
type memTx struct{ d *Driver }

func (t memTx) End(ids []string, state, errText string, at int64) ([]flow.Ended, error) {
	var out []flow.Ended
	for _, id := range ids {
		s := t.d.f.steps[id]
		if s == nil || s.State != driver.StepHeld && s.State != driver.StepQueued {
			continue
		}
		s.State, s.Error, s.EndedAt = state, errText, at
		out = append(out, flow.Ended{ID: id, Flow: s.Flow, Role: s.Role, State: state, Dependants: len(t.d.f.out[id]) > 0})
	}
	return out, nil
}

func (t memTx) Satisfy(ids []string, failed bool) ([]flow.Held, error) {
	var out []flow.Held
	for _, id := range ids {
		for _, to := range t.d.f.out[id] {
			s := t.d.f.steps[to]
			if s == nil || s.State != driver.StepHeld {
				continue
			}
			s.Waiting--
			if failed {
				s.FailedDeps++
			}
			out = append(out, flow.Held{ID: to, Flow: s.Flow, Waiting: s.Waiting, FailedDeps: s.FailedDeps, RunIfFailed: s.RunIfFailed})
		}
	}
	return out, nil
}

func (t memTx) Tally(flow string, succeeded, failed int, at int64) (driver.Flow, error) {
	f := t.d.f.rows[flow]
	f.Pending -= succeeded + failed
	f.Succeeded += succeeded
	f.Failed += failed
	if f.Pending == 0 && f.FinishedAt == 0 {
		f.FinishedAt = at
		if f.State == driver.FlowRunning {
			f.State = driver.FlowSucceeded
			if f.Failed > 0 {
				f.State = driver.FlowFailed
			}
		}
	}
	return *f, nil
}

func (t memTx) Release(ids []string, now int64) error {
	for _, id := range ids {
		if s := t.d.f.steps[id]; s != nil && s.State == driver.StepHeld {
			t.d.releaseStep(s, now)
		}
	}
	return nil
}

func (t memTx) HeldOf(flow, role string) ([]string, error) {
	var out []string
	for _, id := range t.d.f.order[flow] {
		if s := t.d.f.steps[id]; s.Role == role && s.State == driver.StepHeld {
			out = append(out, id)
		}
	}
	return out, nil
}

func (t memTx) Unqueue(flow, errText string, now int64) ([]string, error) {
	var out []string
	for _, id := range t.d.f.order[flow] {
		if h := t.d.held.Held[id]; h != nil { // held by its limit: it never runs either
			t.d.unhold(h)
			t.d.failed[id] = failedOf(h, errText, now, h.Attempts, nil)
			out = append(out, id)
			continue
		}
		j := t.d.jobs[id]
		if j == nil || j.ReservedAt != 0 {
			continue
		}
		t.d.remove(j)
		t.d.failed[id] = failedOf(j, errText, now, j.Attempts, nil)
		out = append(out, id)
	}
	return out, nil
}

// failedOf is j as a failed job: its error errText, failed at at, after
// attempts.
func failedOf(j *driver.Job, errText string, at int64, attempts int, errs []driver.Failure) driver.FailedJob {
	return driver.FailedJob{ID: j.ID, Queue: j.Queue, Name: j.Name, Payload: j.Payload, MaxAttempts: j.MaxAttempts,
		Backoff: j.Backoff.String(), TimeoutMs: j.TimeoutMs, Attempts: attempts, Error: errText,
		CreatedAt: j.CreatedAt, FailedAt: at, Meta: j.Meta, Flow: j.Flow, Priority: j.Priority, Errors: errs,
		LimitKey: j.LimitKey, LimitMax: j.LimitMax, RateKey: j.RateKey, Rate: j.Rate, FairKey: j.FairKey, Snoozes: j.Snoozes}
}
