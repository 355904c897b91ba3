package schedule

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/uptrace/bun"
)

// Scheduler dispatches the jobs of the app's entries at their ticks. Any
// number of schedulers may run on one database: each tick is claimed in
// the table schedule_ticks, in the transaction that dispatches its job,
// so it is dispatched once.
type Scheduler struct {
	db         *db.DB
	dispatcher queue.Dispatcher
	registry   queue.Registry // nil: Work is not listed among the workers
	clock      app.Clock
	logger     *slog.Logger
	plans      []plan // by name
	started    time.Time
}

// Dispatched is the outcome of one tick an entry claimed.
type Dispatched struct {
	Entry   string
	Tick    time.Time
	JobID   string // the job dispatched, or the pending one a skipped tick found
	Skipped bool   // WithoutOverlapping: the last job is still pending or running
}

// RunDue dispatches, for each entry, its latest tick due by now, unless
// a scheduler has already claimed it: the tick at hand, or after a
// downtime the latest missed one within the entry's catch-up window (none
// older). An entry no scheduler has run yet dispatches no tick from
// more than a minute before this scheduler started. It returns what it
// dispatched, also when it returns the errors of other entries.
func (s *Scheduler) RunDue(ctx context.Context) ([]Dispatched, error) {
	now := s.clock.Now()
	last, err := s.lastTicks(ctx, now.Add(grace))
	if err != nil {
		return nil, err
	}
	var out []Dispatched
	var errs []error
	for _, p := range s.plans {
		d, err := s.runDue(ctx, p, last[p.Name], now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if d != nil {
			out = append(out, *d)
		}
	}
	return out, errors.Join(errs...)
}

// grace is how late a scheduler may wake for a tick, busy or paused,
// before the tick counts as missed: even with CatchUp(0) it is run.
const grace = time.Minute

// runDue claims the tick of p due at now, if any, given the latest tick
// claimed for p (zero for none).
func (s *Scheduler) runDue(ctx context.Context, p plan, last, now time.Time) (*Dispatched, error) {
	from := now.Add(-max(p.CatchUp, grace))
	// A new entry: no tick from well before this scheduler started
	// (schedule:run from cron starts just after its tick), nor, after the
	// clock stepped back, from well before now.
	first := s.started
	if now.Before(first) {
		first = now
	}
	if first = first.Add(-grace); last.IsZero() && from.Before(first) {
		from = first
	}
	if !last.IsZero() && !from.After(last) {
		from = last
	}
	tick := p.latest(from, now)
	if tick.IsZero() {
		return nil, nil
	}
	return s.claim(ctx, p, tick)
}

// lastTicks is the latest tick claimed for each entry up to until, in
// one query however many entries there are; an entry with none is not in
// it. A claim later than that was made by a clock ahead of this one
// (this scheduler's, before it stepped back, or another server's): the
// scheduler goes on from its own time, and the claim only keeps its own
// tick from being dispatched again.
func (s *Scheduler) lastTicks(ctx context.Context, until time.Time) (map[string]time.Time, error) {
	last := map[string]time.Time{}
	if len(s.plans) == 0 {
		return last, nil
	}
	names := make([]string, len(s.plans))
	for i, p := range s.plans {
		names[i] = p.Name
	}
	var claimed []struct {
		Name   string `bun:"name"`
		TickAt int64  `bun:"tick_at"`
	}
	if err := s.db.NewRaw("SELECT name, MAX(tick_at) AS tick_at FROM schedule_ticks WHERE name IN (?) AND tick_at <= ? GROUP BY name",
		bun.In(names), until.UnixMilli()).Scan(ctx, &claimed); err != nil {
		return nil, fmt.Errorf("schedule: read the claimed ticks: %w", err)
	}
	for _, c := range claimed {
		last[c.Name] = time.UnixMilli(c.TickAt)
	}
	return last, nil
}

// claim records the tick of p and dispatches its job, in one transaction:
// a scheduler that finds the tick claimed dispatches nothing (nil).
func (s *Scheduler) claim(ctx context.Context, p plan, tick time.Time) (*Dispatched, error) {
	var out *Dispatched
	err := s.db.Transaction(ctx, func(ctx context.Context) error {
		tx, err := s.db.Querier(ctx)
		if err != nil {
			return err
		}
		job := p.job(tick.In(p.loc))
		if job == nil {
			res, err := tx.NewRaw("INSERT INTO schedule_ticks (name, tick_at, job_id, skipped, dispatched_at) VALUES (?, ?, '', 1, ?) ON CONFLICT DO NOTHING",
				p.Name, tick.UnixMilli(), s.clock.Now().UnixMilli()).Exec(ctx)
			if err == nil {
				if n, _ := res.RowsAffected(); n == 1 {
					out = &Dispatched{Entry: p.Name, Tick: tick, Skipped: true}
				}
			}
			return err
		}
		res, err := tx.NewRaw("INSERT INTO schedule_ticks (name, tick_at, job_id, skipped, dispatched_at) VALUES (?, ?, '', 0, ?) ON CONFLICT DO NOTHING",
			p.Name, tick.UnixMilli(), s.clock.Now().UnixMilli()).Exec(ctx)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // another scheduler claimed it
		}
		env, err := queue.EnvelopeOf(job)
		if err != nil {
			return err
		}
		env.Options = env.Options.Override(p.Options)
		var previous string
		if p.WithoutOverlapping {
			key := "schedule:" + p.Name
			env.UniqueKey = &key
			if err := tx.NewRaw("SELECT job_id FROM schedule_ticks WHERE name = ? AND tick_at < ? AND skipped = 0 ORDER BY tick_at DESC LIMIT 1",
				p.Name, tick.UnixMilli()).Scan(ctx, &previous); err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
		}
		id, err := s.dispatcher.Push(ctx, env)
		if err != nil {
			return fmt.Errorf("dispatch %s: %w", env.Name, err)
		}
		skipped := p.WithoutOverlapping && id == previous
		flag := 0
		if skipped {
			flag = 1
		}
		if _, err := tx.NewRaw("UPDATE schedule_ticks SET job_id = ?, skipped = ? WHERE name = ? AND tick_at = ?", id, flag, p.Name, tick.UnixMilli()).Exec(ctx); err != nil {
			return err
		}
		out = &Dispatched{Entry: p.Name, Tick: tick, JobID: id, Skipped: skipped}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("schedule: %s at %s: %w", p.Name, tick.UTC().Format(time.RFC3339), err)
	}
	if out != nil {
		s.logger.InfoContext(ctx, "tick", "entry", p.Name, "tick", tick.UTC().Format(time.RFC3339), "job_id", out.JobID, "skipped", out.Skipped)
	}
	return out, nil
}

// RunNow dispatches the job of the entry name at once, as a tick of now,
// whatever its schedule says: to try an entry.
func (s *Scheduler) RunNow(ctx context.Context, name string) (*Dispatched, error) {
	for _, p := range s.plans {
		if p.Name == name {
			d, err := s.claim(ctx, p, s.clock.Now())
			if err == nil && d == nil {
				return nil, fmt.Errorf("schedule: %s: a scheduler claimed this very tick", name)
			}
			return d, err
		}
	}
	return nil, fmt.Errorf("schedule: %w %q; %s", ErrNoEntry, name, s.names())
}

// ErrNoEntry is returned by RunNow for a name the app schedules nothing
// under.
var ErrNoEntry = errors.New("no entry")

func (s *Scheduler) names() string {
	if len(s.plans) == 0 {
		return "the app schedules none (schedule.Cron, schedule.Every)"
	}
	names := make([]string, len(s.plans))
	for i, p := range s.plans {
		names[i] = p.Name
	}
	return "there are " + strings.Join(names, ", ")
}

// Next is the earliest tick of any entry after now; zero without entries.
func (s *Scheduler) Next(now time.Time) time.Time {
	var next time.Time
	for _, p := range s.plans {
		if n := p.next(now); !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next
}

// pruneBatch is how many claims [Scheduler.Prune] deletes in one
// transaction.
const pruneBatch = 1000

// Prune deletes the claims of ticks older than before, keeping each
// entry's latest (it tells the scheduler where the entry stands),
// pruneBatch to a transaction; and returns how many. schedule:work prunes
// those older than 7 days once an hour; schedule:prune does it at once.
func (s *Scheduler) Prune(ctx context.Context, before time.Time) (int, error) {
	deleted := 0
	for {
		var n int64
		err := s.db.Transaction(ctx, func(ctx context.Context) error {
			tx, err := s.db.Querier(ctx)
			if err != nil {
				return err
			}
			res, err := tx.NewRaw(`DELETE FROM schedule_ticks WHERE (name, tick_at) IN (
				SELECT name, tick_at FROM schedule_ticks o WHERE tick_at < ?
				AND tick_at < (SELECT MAX(t.tick_at) FROM schedule_ticks t WHERE t.name = o.name) LIMIT ?)`, before.UnixMilli(), pruneBatch).Exec(ctx)
			if err == nil {
				n, _ = res.RowsAffected()
			}
			return err
		})
		if deleted += int(n); err != nil || n < pruneBatch {
			return deleted, err
		}
	}
}

// Work runs the scheduler until ctx ends: it sleeps until the next tick
// (a minute at most, so that a step of the clock is noticed), dispatches
// what is due, and once an hour prunes the claims older than 7 days. With
// a Registry, it is listed among the workers (queue:workers) while it
// runs, and stops when a restart is requested (queue:restart), returning
// queue.ErrRestart.
func (s *Scheduler) Work(ctx context.Context) error { return s.work(ctx, nil) }

// work is Work, calling started (when set) once it is registered.
func (s *Scheduler) work(ctx context.Context, started func()) error {
	if s.registry != nil {
		var leave func()
		ctx, leave = s.registry.Register(ctx, queue.KindScheduler)
		defer leave()
	}
	if started != nil {
		started()
	}
	var pruned time.Time
	for {
		if _, err := s.RunDue(ctx); err != nil {
			if ctx.Err() != nil {
				return stopped(ctx)
			}
			s.logger.ErrorContext(ctx, "a tick failed", "error", err)
		}
		now := s.clock.Now()
		if now.Sub(pruned) > time.Hour {
			if _, err := s.Prune(ctx, now.Add(-7*24*time.Hour)); err != nil && ctx.Err() == nil {
				s.logger.WarnContext(ctx, "pruning the ticks failed", "error", err)
			}
			pruned = now
		}
		wait := time.Minute
		if next := s.Next(now); !next.IsZero() && next.Sub(now) < wait {
			wait = max(next.Sub(now), time.Millisecond)
		}
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return stopped(ctx)
		case <-timer.C:
		}
	}
}

// stopped is work's error once ctx ended: queue.ErrRestart after a
// restart request, else none.
func stopped(ctx context.Context) error {
	if errors.Is(context.Cause(ctx), queue.ErrRestart) {
		return queue.ErrRestart
	}
	return nil
}
