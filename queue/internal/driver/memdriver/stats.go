package memdriver

import (
	"cmp"
	"context"
	"maps"
	"slices"

	"github.com/navree/navree/queue/internal/driver"
)

// Stats implements driver.Driver. It looks at every job: the memory
// driver holds what one process can.
func (d *Driver) Stats(_ context.Context, now, at int64, limit int) ([]driver.Stats, error) {
	at = d.at(at)
	d.mu.Lock()
	defer d.mu.Unlock()
	byQueue := map[string]*driver.Stats{}
	of := func(queue string) *driver.Stats {
		s := byQueue[queue]
		if s == nil {
			s = &driver.Stats{Queue: queue}
			byQueue[queue] = s
		}
		return s
	}
	for _, j := range d.jobs {
		s := of(j.Queue)
		switch {
		case j.ReservedAt != 0:
			s.Running++
			if d.isStale(j, at) {
				s.Stale++
			}
		case j.AvailableAt <= now:
			if s.Waiting == 0 || j.AvailableAt < s.OldestAvailableAt {
				s.OldestAvailableAt = j.AvailableAt
			}
			s.Waiting++
		default:
			s.Delayed++
		}
	}
	for _, f := range d.failed {
		of(f.Queue).Failed++
	}
	for _, j := range d.held.Held {
		of(j.Queue).Held++
	}
	out := make([]driver.Stats, 0, len(byQueue))
	for _, queue := range slices.Sorted(maps.Keys(byQueue)) {
		s := byQueue[queue]
		s.Waiting, s.Delayed, s.Failed, s.Held = min(s.Waiting, limit), min(s.Delayed, limit), min(s.Failed, limit), min(s.Held, limit)
		out = append(out, *s)
	}
	return out, nil
}

// Jobs implements driver.Driver. It looks at every job of the state and
// sorts those after q.After.
func (d *Driver) Jobs(_ context.Context, q driver.JobsQuery) ([]driver.JobInfo, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.JobInfo
	keep := func(queue, name string, info driver.JobInfo) {
		if (q.Queue == "" || queue == q.Queue) && (q.Name == "" || name == q.Name) &&
			(q.After == (driver.JobKey{}) || q.After.Before(info.Key(q.State))) {
			out = append(out, info)
		}
	}
	switch q.State {
	case driver.Failed:
		for _, f := range d.failed {
			keep(f.Queue, f.Name, driver.JobInfo{ID: f.ID, Queue: f.Queue, Name: f.Name, Attempts: f.Attempts, MaxAttempts: f.MaxAttempts,
				CreatedAt: f.CreatedAt, FailedAt: f.FailedAt, LastError: f.Error, PayloadSize: len(f.Payload)})
		}
	case driver.Succeeded:
		for _, s := range d.kept {
			keep(s.Queue, s.Name, driver.JobInfo{ID: s.ID, Queue: s.Queue, Name: s.Name, Attempts: s.Attempts, MaxAttempts: s.MaxAttempts,
				ReservedBy: s.Worker, CreatedAt: s.CreatedAt, FinishedAt: s.FinishedAt, RunMs: s.RunMs, WaitMs: s.WaitMs, PayloadSize: len(s.Payload)})
		}
	default:
		for _, j := range d.jobs {
			var state driver.JobState
			switch {
			case j.ReservedAt != 0:
				state = driver.Running
			case j.AvailableAt <= q.Now:
				state = driver.Waiting
			default:
				state = driver.Delayed
			}
			if state == q.State {
				keep(j.Queue, j.Name, driver.JobInfo{ID: j.ID, Queue: j.Queue, Name: j.Name, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
					AvailableAt: j.AvailableAt, ReservedAt: j.ReservedAt, ReservedBy: j.ReservedBy, CreatedAt: j.CreatedAt, LastError: j.LastError, PayloadSize: len(j.Payload)})
			}
		}
	}
	slices.SortFunc(out, func(a, b driver.JobInfo) int {
		ka, kb := a.Key(q.State), b.Key(q.State)
		return cmp.Or(cmp.Compare(ka.At, kb.At), cmp.Compare(ka.ID, kb.ID))
	})
	return out[:min(len(out), q.Limit)], nil
}
