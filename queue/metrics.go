package queue

import (
	"context"
	"fmt"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/worker"
)

// meterName is the instrumentation scope of the queue's metrics.
const meterName = "github.com/navree/navree/queue"

// durationBuckets are the bounds, in seconds, of the run-time and
// queue-wait histograms: from 5 ms to an hour.
var durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600}

// meters are the queue's OpenTelemetry instruments, made when the app
// gives the queue a meter provider ([Params.MeterProvider]); a Queue
// without one has none and records nothing.
type meters struct {
	dispatched, startedN                                         metric.Int64Counter
	succeeded, released, failed, cancelled, snoozed, interrupted metric.Int64Counter
	runTime, wait                                                metric.Float64Histogram
	sets                                                         sync.Map // attribute sets by label, made once each
	// known are the queues whose gauges read 0 when they have no job,
	// rather than vanish from the collection: those configured
	// (Config.Queues, DefaultQueue, RateLimits), those worked, and those
	// seen (in a count, a dispatch, an attempt). A set of names the app
	// chose, so bounded.
	known sync.Map
}

// label is what the counters and histograms are broken down by: the
// queue and the job type, both bounded (names the app registers and
// configures), never an id or a payload.
type label struct{ queue, job string }

// newMeters makes the instruments of q on mp, and the gauges that read
// the counts of [Inspector.Stats] at each collection.
func newMeters(q *Queue, mp metric.MeterProvider) (*meters, error) {
	m := mp.Meter(meterName)
	ms := &meters{}
	ms.know(q.cfg.DefaultQueue)
	ms.know(q.cfg.Queues...)
	for name := range q.queueRates {
		ms.know(name)
	}
	var errs []error
	counter := func(name, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit("{job}"), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	ms.dispatched = counter("navree.queue.jobs.dispatched", "Jobs stored by a dispatch (inside a unit of work: once it commits)")
	ms.startedN = counter("navree.queue.jobs.started", "Attempts started by the workers of this process")
	ms.succeeded = counter("navree.queue.jobs.succeeded", "Attempts that succeeded, their completion stored")
	ms.released = counter("navree.queue.jobs.released", "Attempts that failed and were released for a retry")
	ms.snoozed = counter("navree.queue.jobs.snoozed", "Attempts whose handler snoozed: the job waits again, the attempt not spent")
	ms.interrupted = counter("navree.queue.jobs.interrupted", "Attempts interrupted by their worker's stop deadline: the job waits again, the attempt not spent")
	ms.failed = counter("navree.queue.jobs.failed", "Attempts that failed the job: its last, or a permanent error")
	ms.cancelled = counter("navree.queue.jobs.cancelled", "Attempts stopped by a cancel request")
	ms.runTime = histogram("navree.queue.job.run_time", "How long an attempt's handler ran")
	ms.wait = histogram("navree.queue.job.wait", "How long a job had been due when an attempt started")

	waiting, err1 := m.Int64ObservableGauge("navree.queue.waiting", metric.WithUnit("{job}"), metric.WithDescription("Jobs due now, not taken by a worker (counted up to 100001)"))
	delayed, err2 := m.Int64ObservableGauge("navree.queue.delayed", metric.WithUnit("{job}"), metric.WithDescription("Jobs due later: delayed, or released for a retry (counted up to 100001)"))
	running, err3 := m.Int64ObservableGauge("navree.queue.running", metric.WithUnit("{job}"), metric.WithDescription("Jobs taken by a worker (counted up to 100001)"))
	oldest, err4 := m.Float64ObservableGauge("navree.queue.oldest_wait", metric.WithUnit("s"), metric.WithDescription("How long the waiting job due first has been due; 0 when none waits"))
	held, err5 := m.Int64ObservableGauge("navree.queue.held", metric.WithUnit("{job}"), metric.WithDescription("Jobs held by their concurrency limits (counted up to 100001)"))
	throttled, err6 := m.Int64ObservableGauge("navree.queue.throttled", metric.WithUnit("{limit}"),
		metric.WithDescription("Rate limits whose window is full that keep jobs of the queue waiting (its own, and its jobs' keys)"))
	errs = append(errs, err1, err2, err3, err4, err5, err6)
	for _, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("queue: make the metrics: %w", err)
		}
	}
	_, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		stats, err := q.Inspector().Stats(ctx)
		if err != nil {
			return fmt.Errorf("queue: read the counts for the metrics: %w", err)
		}
		counted := make(map[string]bool, len(stats))
		for _, s := range stats {
			counted[s.Queue] = true
			ms.know(s.Queue)
		}
		// A known queue that has no job now reads 0: a drained queue's
		// gauges read 0 rather than vanish.
		ms.known.Range(func(name, _ any) bool {
			if !counted[name.(string)] {
				stats = append(stats, Stats{Queue: name.(string)})
			}
			return true
		})
		for _, s := range stats {
			set := metric.WithAttributes(attribute.String("queue", s.Queue))
			o.ObserveInt64(waiting, int64(s.Waiting), set)
			o.ObserveInt64(delayed, int64(s.Delayed), set)
			o.ObserveInt64(running, int64(s.Running), set)
			o.ObserveFloat64(oldest, s.OldestWaiting.Seconds(), set)
			o.ObserveInt64(held, int64(s.Held), set)
			o.ObserveInt64(throttled, int64(len(s.Throttled)), set)
		}
		return nil
	}, waiting, delayed, running, oldest, held, throttled)
	if err != nil {
		return nil, fmt.Errorf("queue: make the metrics: %w", err)
	}
	return ms, nil
}

// know adds queues to the known ones, whose gauges read 0 without jobs.
func (ms *meters) know(queues ...string) {
	for _, name := range queues {
		if _, ok := ms.known.Load(name); !ok {
			ms.known.Store(name, struct{}{})
		}
	}
}

// of is the attribute set of a job's queue and type.
func (ms *meters) of(queue, job string) metric.MeasurementOption {
	l := label{queue, job}
	if set, ok := ms.sets.Load(l); ok {
		return set.(metric.MeasurementOption)
	}
	ms.know(queue)
	set, _ := ms.sets.LoadOrStore(l, metric.WithAttributeSet(attribute.NewSet(attribute.String("queue", queue), attribute.String("job", job))))
	return set.(metric.MeasurementOption)
}

// dispatchedRow counts a stored job.
func (ms *meters) dispatchedRow(ctx context.Context, row *driver.Job) {
	ms.dispatched.Add(ctx, 1, ms.of(row.Queue, row.Name))
}

// started counts an attempt and the time its job waited.
func (ms *meters) started(job *driver.Job, waitMs int64) {
	set := ms.of(job.Queue, job.Name)
	ms.startedN.Add(context.Background(), 1, set)
	ms.wait.Record(context.Background(), float64(waitMs)/1000, set)
}

// finished counts an attempt's stored outcome and its run time.
func (ms *meters) finished(job *driver.Job, outcome worker.Outcome, runMs int64) {
	set := ms.of(job.Queue, job.Name)
	switch outcome {
	case worker.Succeeded:
		ms.succeeded.Add(context.Background(), 1, set)
	case worker.Released:
		ms.released.Add(context.Background(), 1, set)
	case worker.Failed:
		ms.failed.Add(context.Background(), 1, set)
	case worker.Cancelled:
		ms.cancelled.Add(context.Background(), 1, set)
	case worker.Snoozed:
		ms.snoozed.Add(context.Background(), 1, set)
	case worker.Interrupted:
		ms.interrupted.Add(context.Background(), 1, set)
	}
	ms.runTime.Record(context.Background(), float64(runMs)/1000, set)
}
