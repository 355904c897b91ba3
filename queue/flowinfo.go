package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/queue/internal/driver"
)

// FlowInfo is what an operator is shown of a chain, batch or workflow:
// its counts are of its steps, its then, catch and finally left out.
type FlowInfo struct {
	ID         string
	Kind       string // chain, batch or workflow
	Name       string
	State      string // running, succeeded, failed or cancelled
	CreatedAt  time.Time
	FinishedAt time.Time // zero while a step has not ended
	Total      int
	Pending    int // not ended: held, waiting or running
	Succeeded  int
	Failed     int // failed, cancelled, or not run for a failed dependency
}

// Done is the share of f's steps that have ended, from 0 to 1.
func (f FlowInfo) Done() float64 {
	if f.Total == 0 {
		return 1
	}
	return float64(f.Total-f.Pending) / float64(f.Total)
}

// FlowStep is a step of a flow, as [Inspector.Flow] reads it.
type FlowStep struct {
	Name        string
	Role        string // step, then, catch or finally
	State       string // held, queued, succeeded, failed, cancelled or skipped
	JobID       string
	Job         string // the job type
	Queue       string
	After       []string // the names of the steps it comes after
	AfterJobs   []string // and their job ids, in the same order
	RunIfFailed bool
	Error       string          // why it ended, when it did not succeed
	EndedAt     time.Time       // zero while it has not ended
	Result      json.RawMessage // what its handler recorded, nil if nothing
}

// FlowDetail is a flow with its steps, in the order they were added.
type FlowDetail struct {
	FlowInfo
	Steps []FlowStep
}

// FlowsQuery asks [Inspector.Flows] for a page of flows, newest first.
type FlowsQuery struct {
	Kind  string // chain, batch or workflow; "" for every kind
	After string // the next token of the page before; "" for the first
	Limit int    // 0 for 50
}

// Flows lists flows, newest first, and the token of the next page ("" at
// the last).
func (i *Inspector) Flows(ctx context.Context, query FlowsQuery) ([]FlowInfo, string, error) {
	switch query.Kind {
	case "", driver.KindChain, driver.KindBatch, driver.KindWorkflow:
	default:
		return nil, "", fmt.Errorf("queue: list flows: unknown kind %q; want chain, batch or workflow", query.Kind)
	}
	if query.Limit <= 0 {
		query.Limit = 50
	}
	flows, err := i.q.store.ListFlows(ctx, driver.FlowsQuery{Kind: query.Kind, Before: query.After, Limit: query.Limit + 1})
	if err != nil {
		return nil, "", fmt.Errorf("queue: list flows: %w", err)
	}
	var next string
	if len(flows) > query.Limit {
		flows = flows[:query.Limit]
		next = strings.ToLower(flows[len(flows)-1].ID)
	}
	out := make([]FlowInfo, len(flows))
	for k, f := range flows {
		out[k] = flowInfo(f)
	}
	return out, next, nil
}

func flowInfo(f driver.Flow) FlowInfo {
	info := FlowInfo{ID: strings.ToLower(f.ID), Kind: f.Kind, Name: f.Name, State: f.State, CreatedAt: time.UnixMilli(f.CreatedAt),
		Total: f.Total, Pending: f.Pending, Succeeded: f.Succeeded, Failed: f.Failed}
	if f.FinishedAt != 0 {
		info.FinishedAt = time.UnixMilli(f.FinishedAt)
	}
	return info
}

// flowID checks an id given for a flow.
func flowID(id string) (string, error) {
	u, err := uuid.FromString(id)
	if err != nil {
		return "", &NoFlowError{ID: id}
	}
	return u.String(), nil
}

// Flow reads the chain, batch or workflow id with its steps; a
// [*NoFlowError] when there is none.
func (i *Inspector) Flow(ctx context.Context, id string) (FlowDetail, error) {
	id, err := flowID(id)
	if err != nil {
		return FlowDetail{}, err
	}
	f, steps, err := i.q.store.ReadFlow(ctx, id)
	switch {
	case errors.Is(err, driver.ErrNoFlow):
		return FlowDetail{}, &NoFlowError{ID: id}
	case err != nil:
		return FlowDetail{}, fmt.Errorf("queue: read flow %s: %w", id, err)
	}
	names := map[string]string{}
	for _, s := range steps {
		names[strings.ToLower(s.Job.ID)] = s.Name
	}
	d := FlowDetail{FlowInfo: flowInfo(f), Steps: make([]FlowStep, len(steps))}
	for k, s := range steps {
		st := FlowStep{Name: s.Name, Role: s.Role, State: s.State, JobID: strings.ToLower(s.Job.ID), Job: s.Job.Name, Queue: s.Job.Queue,
			RunIfFailed: s.RunIfFailed, Error: s.Error, Result: s.Result}
		if s.EndedAt != 0 {
			st.EndedAt = time.UnixMilli(s.EndedAt)
		}
		for _, dep := range s.Deps {
			st.After = append(st.After, names[strings.ToLower(dep)])
			st.AfterJobs = append(st.AfterJobs, strings.ToLower(dep))
		}
		d.Steps[k] = st
	}
	return d, nil
}

// FlowCancellation is what [Inspector.CancelFlow] did.
type FlowCancellation struct {
	Ended     int // steps not started, now cancelled
	Signalled int // running steps asked to stop
}

// CancelFlow cancels the chain, batch or workflow id: its steps not
// started end as cancelled (those queued are moved to the failed jobs),
// its running steps are asked to stop as [Inspector.Cancel] asks, and
// none of its steps or callbacks runs after. A [*NoFlowError] when there
// is none.
func (i *Inspector) CancelFlow(ctx context.Context, id string) (FlowCancellation, error) {
	id, err := flowID(id)
	if err != nil {
		return FlowCancellation{}, err
	}
	did, err := i.q.store.CancelFlow(ctx, id, i.q.clock.Now().UnixMilli())
	switch {
	case errors.Is(err, driver.ErrNoFlow):
		return FlowCancellation{}, &NoFlowError{ID: id}
	case err != nil:
		return FlowCancellation{}, fmt.Errorf("queue: cancel flow %s: %w", id, err)
	}
	if did.Signalled > 0 {
		i.q.cancels.Add(1)
	}
	return FlowCancellation(did), nil
}

// RetryFlow runs the chain, batch or workflow id again from its steps
// that did not succeed: their jobs go back to their queues, attempts
// started over; the steps that never ran wait again for their
// dependencies; a then that was skipped, and the callbacks a cancel
// ended, wait again. It returns how many steps it put back: 0, and
// nothing changed, for a flow with no failed step. [Inspector.Retry] of a failed job of a flow does the
// same for its flow.
func (i *Inspector) RetryFlow(ctx context.Context, id string) (int, error) {
	id, err := flowID(id)
	if err != nil {
		return 0, err
	}
	n, err := i.q.store.RetryFlow(ctx, id, i.q.clock.Now().UnixMilli())
	switch {
	case errors.Is(err, driver.ErrNoFlow):
		return 0, &NoFlowError{ID: id}
	case err != nil:
		return 0, fmt.Errorf("queue: retry flow %s: %w", id, err)
	}
	i.q.waker.Wake() // the driver told other processes' workers
	return n, nil
}
