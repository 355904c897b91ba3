package schedule

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/navree/navree/queue"
)

// EntryStatus is an entry as an operator reads it: its schedule, its next
// tick and the last one a scheduler claimed.
type EntryStatus struct {
	Name string
	Spec string // as schedule:list shows it: "0 3 * * *", "every 30s"
	// Zone is the time zone of a cron entry's fields; "" for Every.
	Zone string
	// Next is the next tick after now; zero when the schedule never fires
	// again.
	Next time.Time
	// Job and Queue are the job type the next tick dispatches and its
	// queue ("" for the app's default queue); "" when a function entry
	// gives no job for it.
	Job, Queue string
	// Last is the last tick a scheduler claimed, nil before the first.
	Last *Tick
}

// Tick is a tick a scheduler claimed.
type Tick struct {
	At    time.Time // the scheduled instant
	JobID string    // the job it dispatched, or the one still pending that it skipped for
	// Skipped says the tick dispatched nothing: WithoutOverlapping found
	// the entry's last job still pending or running (JobID), or the
	// entry's function gave no job.
	Skipped      bool
	DispatchedAt time.Time
}

// Status returns every entry, in the order they were registered, with its
// next tick after the scheduler's clock's now and its last claimed one.
func (s *Scheduler) Status(ctx context.Context) ([]EntryStatus, error) {
	now := s.clock.Now()
	out := make([]EntryStatus, 0, len(s.plans))
	for _, p := range s.plans {
		e := EntryStatus{Name: p.Name, Spec: p.Spec, Next: p.next(now)}
		if p.every == 0 {
			e.Zone = p.loc.String()
		}
		if job := p.job(e.Next); job != nil {
			o := queue.Options{}
			if wo, ok := job.(queue.WithOptions); ok {
				o = wo.JobOptions()
			}
			e.Job, e.Queue = job.JobName(), o.Override(p.Options).Queue
		}
		last, err := s.last(ctx, p.Name)
		if err != nil {
			return nil, err
		}
		e.Last = last
		out = append(out, e)
	}
	return out, nil
}

// last is the entry's latest claimed tick, nil before the first.
func (s *Scheduler) last(ctx context.Context, name string) (*Tick, error) {
	var at, dispatched int64
	var skipped int
	var t Tick
	err := s.db.NewRaw("SELECT tick_at, job_id, skipped, dispatched_at FROM schedule_ticks WHERE name = ? ORDER BY tick_at DESC LIMIT 1", name).
		Scan(ctx, &at, &t.JobID, &skipped, &dispatched)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("schedule: read the ticks of %s: %w", name, err)
	}
	t.At, t.Skipped, t.DispatchedAt = time.UnixMilli(at).UTC(), skipped == 1, time.UnixMilli(dispatched).UTC()
	return &t, nil
}
