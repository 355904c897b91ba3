package dashboard

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/navree/navree/queue"
)

// The queue keeps no record of the jobs it finished, so no call of it
// says how many ran in the last minutes. The dashboard derives a trend
// instead: it keeps, in memory, the counts of the Stats calls its pages
// make, and compares the newest with the oldest of the last few minutes.
// The trend is the change of the backlog (waiting, delayed and running
// jobs) and of the failed jobs per minute: a backlog that shrinks by 100
// a minute is worked off at least that fast. It starts empty with each
// process, and sees only the minutes someone had a page open.
const (
	trendWindow = 5 * time.Minute  // samples older than this are dropped
	trendMinGap = 2 * time.Second  // Stats calls closer together keep one sample
	trendMinAge = 10 * time.Second // the least time a trend is computed over
)

// counts are a queue's counts in one sample.
type counts struct{ pending, failed int }

type sample struct {
	at     time.Time
	queues map[string]counts
}

// trend holds the samples of one Dashboard.
type trend struct {
	mu      sync.Mutex
	samples []sample // oldest first
}

// rate is a queue's trend.
type rate struct {
	Over    time.Duration // how long the trend is computed over; 0 when there is none yet
	Pending float64       // change of waiting+delayed+running per minute
	Failed  float64       // change of failed per minute
	Capped  bool          // a count is over queue.CountLimit: its change is unknown
}

// observe adds a sample of stats taken at now and returns each queue's
// rate since the oldest sample of the window.
func (t *trend) observe(now time.Time, stats []queue.QueueStats) map[string]rate {
	cur := sample{at: now, queues: make(map[string]counts, len(stats))}
	capped := map[string]bool{}
	for _, s := range stats {
		cur.queues[s.Queue] = counts{pending: s.Waiting + s.Delayed + s.Running, failed: s.Failed}
		if s.Waiting > queue.CountLimit || s.Delayed > queue.CountLimit || s.Running > queue.CountLimit || s.Failed > queue.CountLimit {
			capped[s.Queue] = true
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for len(t.samples) > 0 && now.Sub(t.samples[0].at) > trendWindow {
		t.samples = t.samples[1:]
	}
	if n := len(t.samples); n == 0 || now.Sub(t.samples[n-1].at) >= trendMinGap {
		t.samples = append(t.samples, cur)
	} else if now.Before(t.samples[n-1].at) { // the clock went back: start over
		t.samples = []sample{cur}
	}
	out := make(map[string]rate, len(stats))
	first := t.samples[0]
	over := now.Sub(first.at)
	for _, s := range stats {
		if over < trendMinAge {
			out[s.Queue] = rate{}
			continue
		}
		was := first.queues[s.Queue] // a queue absent then had no jobs
		c := cur.queues[s.Queue]
		minutes := over.Minutes()
		out[s.Queue] = rate{Over: over, Pending: float64(c.pending-was.pending) / minutes,
			Failed: float64(c.failed-was.failed) / minutes, Capped: capped[s.Queue]}
	}
	return out
}

// perMinute shows a change per minute: "+12/min", "−0.5/min", "0/min".
func perMinute(v float64) string {
	sign := "+"
	if v < 0 {
		sign, v = "−", -v
	}
	switch {
	case v < 0.05:
		return "0/min"
	case v < 10:
		return fmt.Sprintf("%s%.1f/min", sign, v)
	}
	return fmt.Sprintf("%s%d/min", sign, int64(math.Round(v)))
}
