package queue

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/navree/navree/queue/internal/driver"
)

// TimingsQuery asks [Inspector.Timings] for the run time and queue wait of
// the attempts of a window, a point per step.
type TimingsQuery struct {
	// Window is how far back the points go, up to [MaxThroughputWindow]
	// (the timings of older minutes are deleted).
	Window time.Duration
	// Step is the span of each point, in whole minutes; default a minute.
	Step  time.Duration
	Queue string // "": every queue
	Name  string // the job type; "": every type
}

// Timing is the run time and queue wait of the attempts of a span, at
// their 50th and 95th percentiles: estimated from counts by half-octave
// (each within 19% of the exact percentile). Attempts is how many there
// were; with none, the durations are 0.
type Timing struct {
	Start    time.Time // of the span, UTC
	Attempts int64
	RunP50   time.Duration
	RunP95   time.Duration
	WaitP50  time.Duration
	WaitP95  time.Duration
}

// histogram counts attempts by bucket (driver.Bucket).
type histogram [driver.Buckets]int64

// percentile estimates the p-th quantile (0 < p ≤ 1) of the counted
// durations: the geometric middle of the bucket that holds it; 0 for no
// count.
func (h *histogram) percentile(p float64) time.Duration {
	var total int64
	for _, n := range h {
		total += n
	}
	if total == 0 {
		return 0
	}
	rank := int64(math.Ceil(p * float64(total)))
	var seen int64
	for b, n := range h {
		if seen += n; seen >= rank {
			return bucketMiddle(b)
		}
	}
	return bucketMiddle(driver.Buckets - 1)
}

// bucketMiddle is the geometric middle of bucket b: 50 µs for the first,
// the floor for the last (it has no end).
func bucketMiddle(b int) time.Duration {
	switch b {
	case 0:
		return 50 * time.Microsecond
	case driver.Buckets - 1:
		return time.Duration(driver.BucketFloor(b)) * time.Microsecond
	}
	return time.Duration(float64(driver.BucketFloor(b))*math.Pow(2, 0.25)) * time.Microsecond
}

// Timings returns the run time and queue wait of the attempts that the
// workers of every process ran in the window's minutes up to the current
// one, of the queue and job type the query names (every one for ""), one
// point per step, the oldest first, a step without attempts included; a
// step as long as the window gives the window's percentiles. Each worker adds its
// counts every five seconds, so the current minute lags by up to that.
func (i *Inspector) Timings(ctx context.Context, query TimingsQuery) ([]Timing, error) {
	q := i.q
	step := query.Step
	if step == 0 {
		step = time.Minute
	}
	if query.Window <= 0 || query.Window > MaxThroughputWindow || step%time.Minute != 0 || step <= 0 || step > query.Window {
		return nil, fmt.Errorf("queue: timings: %w: the window is %s and the step %s; want a window of more than 0, at most %s, and a step of whole minutes within it",
			ErrInvalidQuery, query.Window, step, MaxThroughputWindow)
	}
	// The window's whole minutes, the current one last, in steps from the
	// first: the last step may end after now.
	stepMs := step.Milliseconds()
	minute := q.clock.Now().UnixMilli() / 60_000 * 60_000
	first := minute - query.Window.Milliseconds() + 60_000
	rows, err := q.store.Timings(ctx, first, query.Queue, query.Name)
	if err != nil {
		return nil, fmt.Errorf("queue: timings: %w", err)
	}
	n := int((minute - first + stepMs) / stepMs)
	runs, waits := make([]histogram, n), make([]histogram, n)
	for _, r := range rows {
		k := int((r.Minute - first) / stepMs)
		if k < 0 || k >= n || r.Bucket < 0 || r.Bucket >= driver.Buckets {
			continue
		}
		if r.Wait {
			waits[k][r.Bucket] += r.Count
		} else {
			runs[k][r.Bucket] += r.Count
		}
	}
	out := make([]Timing, n)
	for k := range out {
		var attempts int64
		for _, c := range runs[k] {
			attempts += c
		}
		out[k] = Timing{Start: time.UnixMilli(first + int64(k)*stepMs).UTC(), Attempts: attempts,
			RunP50: runs[k].percentile(0.5), RunP95: runs[k].percentile(0.95), WaitP50: waits[k].percentile(0.5), WaitP95: waits[k].percentile(0.95)}
	}
	return out, nil
}
