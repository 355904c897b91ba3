package queue

import (
	"context"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/worker"
)

// observer tells the queue's metrics and traces what its workers do: the
// engine's Observer, when the app gave the queue a meter or a tracer
// provider.
type observer struct {
	meters *meters  // nil: no metrics
	tracer *tracing // nil: no traces
}

// observer is the engine's Observer, or nil when there is nothing to tell.
func (q *Queue) observer() worker.Observer {
	if q.meters == nil && q.tracing == nil {
		return nil
	}
	return &observer{meters: q.meters, tracer: q.tracing}
}

// Started counts the attempt and starts its consumer span, which the
// handler's context carries.
func (o *observer) Started(ctx context.Context, job *driver.Job, waitMs int64) context.Context {
	if o.meters != nil {
		o.meters.started(job, waitMs)
	}
	if o.tracer != nil {
		ctx = o.tracer.process(ctx, job)
	}
	return ctx
}

// Ran ends the attempt's span.
func (o *observer) Ran(ctx context.Context, job *driver.Job, failure string) {
	if o.tracer != nil {
		o.tracer.ran(ctx, failure)
	}
}

// Finished counts the stored outcome.
func (o *observer) Finished(job *driver.Job, outcome worker.Outcome, ms int64) {
	if o.meters != nil {
		o.meters.finished(job, outcome, ms)
	}
}
