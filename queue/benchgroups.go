package queue

import (
	"slices"
	"sync"
	"time"
)

// smallGroups records, with --big-group, when the jobs of the groups
// other than the big one start, counted from the start of the work, and
// how many of the big group's started before the last of them.
type smallGroups struct {
	on        bool
	mu        sync.Mutex
	begin     time.Time
	starts    []time.Duration
	big       int
	bigBefore int
}

// smallResult is what smallGroups saw: when the small groups' jobs
// started, in seconds from the start of the work (the median and the
// last), and how many of the big group's jobs started before the last.
type smallResult struct {
	Jobs      int     `json:"jobs"`
	P50       float64 `json:"p50_start_s"`
	Worst     float64 `json:"worst_start_s"`
	BigBefore int     `json:"big_jobs_before_the_last"`
}

func newSmallGroups(o benchOptions) *smallGroups {
	return &smallGroups{on: o.BigGroup > 0, starts: make([]time.Duration, 0, min(o.Jobs, maxBenchLatency))}
}

// from sets the start of the work.
func (s *smallGroups) from(t time.Time) {
	s.mu.Lock()
	s.begin = t
	s.mu.Unlock()
}

// started records that j started at at.
func (s *smallGroups) started(j benchJob, at time.Time) {
	if !s.on {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if j.Group == "bench-group:0" {
		s.big++
		return
	}
	s.starts = append(s.starts, at.Sub(s.begin))
	s.bigBefore = s.big
}

// result is what s saw, nil without a big group.
func (s *smallGroups) result() *smallResult {
	if !s.on || len(s.starts) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sorted := slices.Sorted(slices.Values(s.starts))
	return &smallResult{Jobs: len(sorted), P50: sorted[len(sorted)/2].Seconds(), Worst: sorted[len(sorted)-1].Seconds(), BigBefore: s.bigBefore}
}
