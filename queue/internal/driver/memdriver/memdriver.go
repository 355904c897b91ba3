// Package memdriver keeps jobs in the memory of the process, for tests and
// single-process development. It behaves like the database driver, and
// loses everything when the process exits.
package memdriver

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/navree/navree/queue/internal/control/history"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/control/limit"
	"github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/control/unique"
	"github.com/navree/navree/queue/internal/driver"
)

// Driver is the memory driver. It is safe for concurrent use.
type Driver struct {
	mu     sync.Mutex
	jobs   map[string]*driver.Job
	lines  map[string]*line // by queue: waiting and reserved jobs
	unique unique.Memory
	failed map[string]driver.FailedJob
	kept   map[string]driver.SucceededJob // succeeded_jobs
	paused map[string]bool                // the paused queues, driver.AllQueues among them
	cancel map[string]bool                // the ids of running jobs to cancel
	counts history.Memory                 // throughput and timings
	start  time.Time                      // its clock of reservations: the monotonic time since
	beats  map[string]driver.Worker       // the registered workers, by id
	f      flows
	held   limit.Memory
	rates  rate.Memory
	fair   fair.Memory
}

// New returns an empty memory driver.
func New() *Driver {
	return &Driver{
		jobs:   map[string]*driver.Job{},
		lines:  map[string]*line{},
		unique: unique.Memory{},
		failed: map[string]driver.FailedJob{},
		kept:   map[string]driver.SucceededJob{},
		paused: map[string]bool{},
		cancel: map[string]bool{},
		start:  time.Now(),
		beats:  map[string]driver.Worker{},
		f:      newFlows(),
		held:   limit.NewMemory(),
	}
}

// at resolves a time on the clock of reservations: 0 is the driver's own,
// its process's monotonic clock (counted from the wall clock's reading
// when the driver was made), which no step of the system clock moves.
func (d *Driver) at(t int64) int64 {
	if t != 0 {
		return t
	}
	return d.start.UnixMilli() + time.Since(d.start).Milliseconds()
}

// line returns the state of queue, creating it on first use.
func (d *Driver) line(queue string) *line {
	l := d.lines[queue]
	if l == nil {
		l = &line{reserved: map[*driver.Job]struct{}{}}
		d.lines[queue] = l
	}
	return l
}

// wait puts a job not reserved (new, released or given back) in its
// queue's waiting order.
func (d *Driver) wait(j *driver.Job) {
	l := d.line(j.Queue)
	delete(l.reserved, j)
	if j.FairKey != "" && j.Priority == 0 {
		l.fair.pushAt(newEntry(j, j.FairSeq))
		return
	}
	l.of(j.Priority).push(j)
}

// holder returns the id of the pending job holding key at now, letting a
// job whose window has passed give the key up.
func (d *Driver) holder(key string, now int64) (string, bool) {
	return d.unique.Holder(key, now, func(id string) *driver.Job {
		if j := d.jobs[id]; j != nil {
			return j
		}
		return d.held.Held[id] // held by its limit, it holds its key too
	})
}

// Insert implements driver.Driver. Inside a unit of work the job is queued
// when the unit commits; the unique check runs both now and then.
func (d *Driver) Insert(ctx context.Context, uow *db.UnitOfWork, job *driver.Job) (string, bool, error) {
	now := job.CreatedAt
	stored := *job
	stored.Payload, stored.Meta = slices.Clone(job.Payload), slices.Clone(job.Meta)
	d.mu.Lock()
	defer d.mu.Unlock()
	if stored.DebounceMaxMs > 0 {
		if uow != nil {
			uow.AfterCommit(func(context.Context) {
				d.mu.Lock()
				defer d.mu.Unlock()
				d.debounce(&stored)
			})
			return stored.ID, true, nil
		}
		id, inserted := d.debounce(&stored)
		return id, inserted, nil
	}
	if stored.UniqueKey != "" {
		if id, ok := d.holder(stored.UniqueKey, now); ok {
			return id, false, nil
		}
	}
	if uow != nil {
		uow.AfterCommit(func(context.Context) {
			d.mu.Lock()
			defer d.mu.Unlock()
			if stored.UniqueKey != "" {
				if _, ok := d.holder(stored.UniqueKey, now); ok {
					return // an identical job was queued meanwhile
				}
			}
			d.add(&stored)
		})
		return stored.ID, true, nil
	}
	d.add(&stored)
	return stored.ID, true, nil
}

// InsertMany implements driver.Driver: the memory driver cannot fail
// halfway, so all or none holds of itself.
func (d *Driver) InsertMany(ctx context.Context, uow *db.UnitOfWork, jobs []*driver.Job, now int64) ([]string, error) {
	ids := make([]string, len(jobs))
	if slices.ContainsFunc(jobs, func(j *driver.Job) bool { return j.UniqueKey != "" }) {
		for i, j := range jobs {
			ids[i], _, _ = d.Insert(ctx, uow, j)
		}
		return ids, nil
	}
	stored := make([]*driver.Job, len(jobs))
	for i, j := range jobs {
		c := *j
		c.Payload, c.Meta = slices.Clone(j.Payload), slices.Clone(j.Meta)
		stored[i] = &c
		ids[i] = j.ID
	}
	add := func(context.Context) {
		d.mu.Lock()
		defer d.mu.Unlock()
		for _, j := range stored {
			d.add(j)
		}
	}
	if uow != nil {
		uow.AfterCommit(add)
	} else {
		add(ctx)
	}
	return ids, nil
}

// debounce stores j, a debounced job, or has the waiting job that holds
// its key take its payload, meta and due time (see Driver.Insert); a
// reserved holder gives the key up.
func (d *Driver) debounce(j *driver.Job) (string, bool) {
	if id, ok := d.unique[j.UniqueKey]; ok {
		h := d.jobs[id]
		if h.ReservedAt == 0 {
			c := unique.Debounce(h, j) // a new job: its place in the waiting order is the new due time's (head drops the old)
			d.jobs[id] = c
			d.wait(c)
			return id, false
		}
		d.unique.GiveUp(h)
	}
	d.insert(j)
	return j.ID, true
}

// insert puts j in jobs, its limit's room left aside (see add).
func (d *Driver) insert(j *driver.Job) {
	d.jobs[j.ID] = j
	d.unique.Take(j)
	d.held.Entered(j)
	if j.FairKey != "" {
		d.place(j)
	}
	d.wait(j)
}

// Reserve implements driver.Driver.
func (d *Driver) Reserve(ctx context.Context, r driver.Reservation) ([]*driver.Job, error) {
	queue, now, at, limit := r.Queue, r.Now, d.at(r.At), r.Limit
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.lines[queue]
	if l == nil {
		return nil, nil
	}
	n := min(limit, l.len())
	queueKey, queueRate := driver.QueueKey(queue), r.QueueRate()
	if !queueRate.IsZero() {
		n = min(n, d.rates.Window(queueKey).Room(at, queueRate))
	}
	var out []*driver.Job
	var copies []driver.Job // the caller's copies, in one allocation
	var over []*driver.Job  // jobs over their rate limit, or not of r.Only, put back after
	reserve := func(j *driver.Job) {
		if copies == nil {
			out, copies = make([]*driver.Job, 0, n), make([]driver.Job, 0, n)
		}
		if r.Only != nil && !r.Only.Has(j.Name) {
			over = append(over, j)
			return
		}
		if j.RateKey != "" && !j.Rate.IsZero() && d.rates.Take(j.RateKey, j.Rate, at, 1) == 0 {
			over = append(over, j)
			return
		}
		j.ReservedAt, j.ReservedBy = at, r.By
		j.Attempts++
		l.reserved[j] = struct{}{}
		copies = append(copies, *j)
		out = append(out, &copies[len(copies)-1])
	}
	l.levels.InOrder(&l.waiting, func(w *waiting) bool {
		if w == &l.waiting && d.head(&l.fair) != nil {
			for _, j := range d.takeFair(l, now, n-len(out)) {
				reserve(j)
			}
			return len(out) < n
		}
		for len(out) < n {
			if j := d.head(w); j == nil || j.AvailableAt > now {
				break
			}
			reserve(w.pop())
		}
		return len(out) < n
	})
	if r.Marks != nil {
		r.Marks.Drained = fair.Drained(out, limit)
	}
	var reopens int64
	for _, j := range over {
		d.wait(j)
		if j.RateKey == "" || j.Rate.IsZero() || r.Only != nil && !r.Only.Has(j.Name) {
			continue
		}
		if t := d.rates.Window(j.RateKey).Reopens(at, j.Rate); reopens == 0 || t < reopens {
			reopens = t
		}
	}
	if !queueRate.IsZero() {
		d.rates.Take(queueKey, queueRate, at, len(out))
		if t := d.rates.Window(queueKey).Reopens(at, queueRate); t > at && (reopens == 0 || t < reopens) {
			reopens = t
		}
	}
	if r.Marks != nil && len(out) < limit {
		r.Marks.ReopensIn = 0
		if reopens > at {
			r.Marks.ReopensIn = reopens - at
		}
	}
	return out, nil
}

// head returns the first job of w, or nil; it first drops the jobs
// cancelled while they waited (Cancel leaves them in w).
func (d *Driver) head(w *waiting) *driver.Job {
	for {
		j := w.peek()
		if j == nil || d.jobs[j.ID] == j {
			return j
		}
		w.pop()
	}
}

// TakeOver implements driver.Driver.
func (d *Driver) TakeOver(ctx context.Context, queue string, now int64, by string) (*driver.Job, error) {
	now = d.at(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.lines[queue]
	if l == nil {
		return nil, nil
	}
	stale := d.stale(l, now)
	for stale != nil && stale.RateKey != "" && !stale.Rate.IsZero() && d.rates.Meter(stale.RateKey, stale.Rate, now) > 0 {
		// A restart is a start: with its window full it waits for the
		// rated search, as if never taken over (its dead attempt counted).
		stale.ReservedAt, stale.ReservedBy = 0, ""
		d.wait(stale)
		stale = d.stale(l, now)
	}
	if stale == nil {
		return nil, nil
	}
	stale.ReservedAt, stale.ReservedBy = now, by
	stale.Attempts++
	out := *stale
	return &out, nil
}

// stale returns the job of l whose reservation went stale first by now,
// or nil.
func (d *Driver) stale(l *line, now int64) *driver.Job {
	var stale *driver.Job
	for j := range l.reserved {
		if !d.isStale(j, now) {
			continue
		}
		if stale == nil || cmp.Or(cmp.Compare(j.ReservedAt, stale.ReservedAt), cmp.Compare(j.ID, stale.ID)) < 0 {
			stale = j
		}
	}
	return stale
}

// Behind implements driver.Driver: Reserve leaves out no job, so none is
// behind.
func (d *Driver) Behind(context.Context, string, int64, int64, int64, *driver.Names) (bool, error) {
	return false, nil
}

// Features implements driver.Driver. The memory driver's searches do
// every feature, whatever a Reservation says, and need no record: it
// reports those of its waiting jobs (priorities and fairness keys), as
// queue:status shows them, and has nothing to tidy.
func (d *Driver) Features(_ context.Context, queue string, _ bool) (driver.Features, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.lines[queue]
	if l == nil {
		return 0, nil
	}
	var f driver.Features
	if l.levels.Any(func(w *waiting) bool { return d.head(w) != nil }) {
		f |= driver.FeaturePriority
	}
	if d.head(&l.fair) != nil {
		f |= driver.FeatureFair
	}
	return f, nil
}

// Stale implements driver.Driver.
func (d *Driver) Stale(_ context.Context, queue string, now int64) (bool, error) {
	now = d.at(now)
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.lines[queue]
	return l != nil && d.stale(l, now) != nil, nil
}

// isStale applies driver.IsStale to j and the worker that holds it.
func (d *Driver) isStale(j *driver.Job, at int64) bool {
	var holder *driver.Worker
	if w, ok := d.beats[j.ReservedBy]; ok {
		holder = &w
	}
	return driver.IsStale(j, holder, at)
}

// current returns the job id reserved by attempt, if that reservation is
// still the job's current one.
func (d *Driver) current(id string, attempt int) (*driver.Job, bool) {
	j, ok := d.jobs[id]
	return j, ok && j.ReservedAt != 0 && j.Attempts == attempt
}

// remove takes j out of jobs; the slot of a limited job goes to the
// next held job of its key, as the database drivers' admission gives it.
func (d *Driver) remove(j *driver.Job) {
	delete(d.jobs, j.ID)
	if l := d.lines[j.Queue]; l != nil {
		delete(l.reserved, j)
	}
	d.unique.Release(j)
	if j.LimitKey != "" {
		d.held.Left(j)
		d.admit(j.LimitKey, j.AvailableAt)
	}
}

// Complete implements driver.Driver.
func (d *Driver) Complete(ctx context.Context, done []driver.Attempt, keep bool) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.complete(done, keep), nil
}

// complete is Complete under the lock.
func (d *Driver) complete(done []driver.Attempt, keep bool) []string {
	ids := make([]string, 0, len(done))
	for _, a := range done {
		if j, ok := d.current(a.ID, a.Attempt); ok {
			d.remove(j)
			ids = append(ids, a.ID)
			if _, kept := d.kept[j.ID]; keep && !kept { // a success kept already stays
				d.kept[j.ID] = history.Succeeded(j, a)
			}
		}
	}
	return ids
}

// Unreserve implements driver.Driver.
func (d *Driver) Unreserve(ctx context.Context, id string, attempt int) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, ok := d.current(id, attempt)
	if ok {
		j.ReservedAt, j.ReservedBy = 0, ""
		j.Attempts--
		d.wait(j)
	}
	return ok, nil
}

// Snooze implements driver.Driver.
func (d *Driver) Snooze(ctx context.Context, id string, attempt int, availableAt int64) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, ok := d.current(id, attempt)
	if ok {
		j.ReservedAt, j.ReservedBy, j.AvailableAt = 0, "", availableAt
		j.Attempts--
		j.Snoozes++
		d.wait(j)
	}
	return ok, nil
}

// Interrupt implements driver.Driver.
func (d *Driver) Interrupt(ctx context.Context, id string, attempt int, f driver.Failure) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, ok := d.current(id, attempt)
	if ok {
		f.Interrupted = true
		j.ReservedAt, j.ReservedBy, j.AvailableAt = 0, "", f.At
		j.Attempts--
		j.Errors = append(slices.Clip(j.Errors), f)
		d.wait(j)
	}
	return ok, nil
}

// Release implements driver.Driver.
func (d *Driver) Release(ctx context.Context, id string, attempt int, availableAt int64, f driver.Failure) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, ok := d.current(id, attempt)
	if ok {
		j.ReservedAt, j.ReservedBy, j.AvailableAt, j.LastError = 0, "", availableAt, f.Error
		j.Errors = append(slices.Clip(j.Errors), f)
		d.wait(j)
	}
	return ok, nil
}

// Fail implements driver.Driver.
func (d *Driver) Fail(ctx context.Context, id string, attempt int, f driver.Failure) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	j, ok := d.current(id, attempt)
	if ok {
		d.remove(j)
		d.failed[j.ID] = failedOf(j, f.Error, f.At, min(j.Attempts, j.MaxAttempts), append(slices.Clip(j.Errors), f))
		if j.Flow != "" {
			d.stepFailed(j.ID, f.Error, f.At)
		}
	}
	return ok, nil
}

// Failed implements driver.Driver.
func (d *Driver) Failed(ctx context.Context, after driver.FailedKey, limit int, payloads bool) ([]driver.FailedJob, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.FailedJob
	for _, f := range d.failed {
		if after != (driver.FailedKey{}) && !after.Before(f.Key()) {
			continue
		}
		if payloads {
			f.Payload = slices.Clone(f.Payload)
		} else {
			f.Payload = nil
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b driver.FailedJob) int {
		return cmp.Or(cmp.Compare(a.FailedAt, b.FailedAt), cmp.Compare(a.ID, b.ID))
	})
	return out[:min(len(out), limit)], nil
}

// Retry implements driver.Driver.
func (d *Driver) Retry(ctx context.Context, id string, now int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.failed[id]
	switch {
	case !ok:
		return driver.ErrNoFailedJob
	case f.Flow != "":
		d.retryFlow(f.Flow, now)
	default:
		d.retry(f, now)
	}
	return nil
}

// RetryFailed implements driver.Driver.
func (d *Driver) RetryFailed(ctx context.Context, after, upTo driver.FailedKey, limit int, now int64) (int, driver.FailedKey, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var batch []driver.FailedJob
	for _, f := range d.failed {
		if k := f.Key(); (after == driver.FailedKey{} || after.Before(k)) && !upTo.Before(k) {
			batch = append(batch, f)
		}
	}
	slices.SortFunc(batch, func(a, b driver.FailedJob) int {
		return cmp.Or(cmp.Compare(a.FailedAt, b.FailedAt), cmp.Compare(a.ID, b.ID))
	})
	batch = batch[:min(len(batch), limit)]
	for _, f := range batch {
		switch {
		case f.Flow == "":
			d.retry(f, now)
		case d.failed[f.ID].ID != "": // not put back yet by its flow's retry
			d.retryFlow(f.Flow, now)
		}
	}
	if len(batch) == 0 {
		return 0, after, nil
	}
	return len(batch), batch[len(batch)-1].Key(), nil
}

// retry moves the failed job f back to its queue, available at now.
func (d *Driver) retry(f driver.FailedJob, now int64) {
	delete(d.failed, f.ID)
	b, _ := backoff.Parse(f.Backoff) // written by Fail
	d.add(&driver.Job{ID: f.ID, Queue: f.Queue, Name: f.Name, Payload: f.Payload, MaxAttempts: f.MaxAttempts,
		Backoff: b, TimeoutMs: f.TimeoutMs, AvailableAt: now, CreatedAt: f.CreatedAt, LastError: f.Error, Meta: f.Meta, Errors: f.Errors, Flow: f.Flow, Priority: f.Priority,
		LimitKey: f.LimitKey, LimitMax: f.LimitMax, RateKey: f.RateKey, Rate: f.Rate, FairKey: f.FairKey})
}

// Pause implements driver.Driver.
func (d *Driver) Pause(ctx context.Context, queue string, now int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.paused[queue] = true
	return nil
}

// Resume implements driver.Driver.
func (d *Driver) Resume(ctx context.Context, queue string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	was := len(d.paused) > 0
	if queue == driver.AllQueues {
		clear(d.paused)
		return was, nil
	}
	was = d.paused[queue]
	delete(d.paused, queue)
	return was, nil
}

// Paused implements driver.Driver.
func (d *Driver) Paused(ctx context.Context) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Sorted(maps.Keys(d.paused)), nil
}

// Cancel implements driver.Driver.
func (d *Driver) Cancel(ctx context.Context, id string, now int64) (driver.Cancelled, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for cancelled := range d.cancel {
		if j := d.jobs[cancelled]; j == nil || j.ReservedAt == 0 {
			delete(d.cancel, cancelled)
		}
	}
	if h := d.held.Held[id]; h != nil {
		d.unhold(h)
		d.failed[id] = failedOf(h, driver.CancelledError, now, h.Attempts, h.Errors)
		return driver.Removed, nil
	}
	j := d.jobs[id]
	switch {
	case j == nil:
		return 0, driver.ErrNoJob
	case j.ReservedAt != 0:
		d.cancel[id] = true
		return driver.Signalled, nil
	}
	d.remove(j) // still in its line's waiting jobs, which Reserve drops (see head)
	d.failed[id] = failedOf(j, driver.CancelledError, now, j.Attempts, j.Errors)
	if j.Flow != "" {
		d.stepFailed(id, driver.CancelledError, now)
	}
	return driver.Removed, nil
}

// CancelRequested implements driver.Driver.
func (d *Driver) CancelRequested(ctx context.Context, ids []string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, id := range ids {
		if d.cancel[id] {
			out = append(out, id)
		}
	}
	return out, nil
}

// ForgetCancel implements driver.Driver.
func (d *Driver) ForgetCancel(ctx context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.cancel, id)
	return nil
}

// DeleteFailed implements driver.Driver.
func (d *Driver) DeleteFailed(ctx context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.failed[id]; !ok {
		return driver.ErrNoFailedJob
	}
	delete(d.failed, id)
	return nil
}

// AddThroughput implements driver.Driver.
func (d *Driver) AddThroughput(ctx context.Context, counts []driver.Throughput, timings []driver.Timing, keepFrom int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.counts.Add(counts, timings, keepFrom)
	return nil
}

// Timings implements driver.Driver.
func (d *Driver) Timings(ctx context.Context, since int64, queue, name string) ([]driver.Timing, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts.Timings(since, queue, name), nil
}

// Throughput implements driver.Driver.
func (d *Driver) Throughput(ctx context.Context, since int64) ([]driver.Throughput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.counts.Throughput(since), nil
}

// Lookup implements driver.Driver.
func (d *Driver) Lookup(ctx context.Context, id string) (driver.Found, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if j, ok := d.jobs[id]; ok {
		c := *j
		c.Payload, c.Errors = slices.Clone(j.Payload), slices.Clone(j.Errors)
		return driver.Found{Job: &c}, nil
	}
	if j, ok := d.held.Held[id]; ok {
		c := *j
		c.Payload, c.Errors, c.Held = slices.Clone(j.Payload), slices.Clone(j.Errors), true
		return driver.Found{Job: &c}, nil
	}
	if f, ok := d.failed[id]; ok {
		f.Payload, f.Errors = slices.Clone(f.Payload), slices.Clone(f.Errors)
		return driver.Found{Failed: &f}, nil
	}
	if s, ok := d.kept[id]; ok {
		s.Payload, s.Errors = slices.Clone(s.Payload), slices.Clone(s.Errors)
		return driver.Found{Succeeded: &s}, nil
	}
	return driver.Found{}, driver.ErrNoJob
}

// JobIDs implements driver.Driver.
func (d *Driver) JobIDs(ctx context.Context, from, to string, limit int) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ids []string
	add := func(id string) {
		if from <= id && id <= to {
			ids = append(ids, id)
		}
	}
	for id := range d.jobs {
		add(id)
	}
	for id := range d.held.Held {
		add(id)
	}
	for id := range d.failed {
		add(id)
	}
	for id := range d.kept {
		add(id)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	return ids[:min(len(ids), limit)], nil
}

// PruneSucceeded implements driver.Driver.
func (d *Driver) PruneSucceeded(ctx context.Context, before int64, limit int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return pruneOldest(d.kept, before, limit, func(s driver.SucceededJob) int64 { return s.FinishedAt }), nil
}

// PruneFailed implements driver.Driver.
func (d *Driver) PruneFailed(ctx context.Context, before int64, limit int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return pruneOldest(d.failed, before, limit, func(f driver.FailedJob) int64 { return f.FailedAt }), nil
}

// pruneOldest deletes from jobs, by id, up to limit of those whose time
// (at) is before before, oldest first (then by id), and returns how many.
func pruneOldest[J any](jobs map[string]J, before int64, limit int, at func(J) int64) int {
	type key struct {
		at int64
		id string
	}
	var old []key
	for id, j := range jobs {
		if t := at(j); t < before {
			old = append(old, key{t, id})
		}
	}
	slices.SortFunc(old, func(a, b key) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.id, b.id)) })
	old = old[:min(len(old), limit)]
	for _, k := range old {
		delete(jobs, k.id)
	}
	return len(old)
}

// FlushFailed implements driver.Driver.
func (d *Driver) FlushFailed(ctx context.Context) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.failed)
	clear(d.failed)
	return n, nil
}

// Purge implements driver.Driver.
func (d *Driver) Purge(ctx context.Context, queue string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, j := range d.held.Held { // first: a job removed gives its slot to none of these
		if j.Queue == queue {
			d.unhold(j)
			n++
		}
	}
	var purged []*driver.Job
	for _, j := range d.jobs {
		if j.Queue == queue {
			purged = append(purged, j)
		}
	}
	for _, j := range purged {
		d.remove(j)
	}
	delete(d.lines, queue)
	maps.DeleteFunc(d.kept, func(_ string, s driver.SucceededJob) bool { return s.Queue == queue })
	return n + len(purged), nil
}

// Sync implements driver.Driver: the memory driver keeps nothing on disk.
func (d *Driver) Sync(context.Context) error { return nil }

// Unknown implements driver.Driver.
func (d *Driver) Unknown(_ context.Context, queue string, known []string, limit int) (map[string]int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var waiting []*driver.Job
	for _, j := range d.jobs {
		if j.Queue == queue && j.ReservedAt == 0 {
			waiting = append(waiting, j)
		}
	}
	slices.SortFunc(waiting, func(a, b *driver.Job) int {
		return cmp.Or(cmp.Compare(a.AvailableAt, b.AvailableAt), strings.Compare(a.ID, b.ID))
	})
	out := map[string]int{}
	for _, j := range waiting[:min(limit, len(waiting))] {
		if !slices.Contains(known, j.Name) {
			out[j.Name]++
		}
	}
	return out, nil
}

// PendingCount implements driver.Driver.
func (d *Driver) PendingCount(ctx context.Context, queue string) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, j := range d.jobs {
		if j.Queue == queue {
			n++
		}
	}
	for _, j := range d.held.Held {
		if j.Queue == queue {
			n++
		}
	}
	return n, nil
}

// Heartbeat implements driver.Driver.
func (d *Driver) Heartbeat(_ context.Context, w driver.Worker, now int64, running []driver.Attempt) (driver.Beat, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	at := d.at(now)
	var beat driver.Beat
	if old, ok := d.beats[w.ID]; ok {
		old.HeartbeatAt, old.Running = at, w.Running
		d.beats[w.ID] = old
		beat.Restart = old.RestartAt != 0
	} else {
		w.HeartbeatAt, w.Queues, w.RestartAt = at, slices.Clone(w.Queues), 0
		d.beats[w.ID] = w
	}
	for id, b := range d.beats {
		if b.HeartbeatAt < at-driver.GoneForgottenMs {
			delete(d.beats, id)
		}
	}
	for _, a := range running {
		if _, ok := d.current(a.ID, a.Attempt); !ok {
			beat.Lost = append(beat.Lost, a)
		}
	}
	return beat, nil
}

// Restart implements driver.Driver.
func (d *Driver) Restart(_ context.Context, now int64) ([]driver.Worker, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var asked []driver.Worker
	for id, w := range d.beats {
		if w.RestartAt == 0 {
			w.RestartAt = now
			d.beats[id] = w
			asked = append(asked, w)
		}
	}
	slices.SortFunc(asked, driver.ByStart)
	return asked, nil
}

// Deregister implements driver.Driver.
func (d *Driver) Deregister(_ context.Context, id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.beats, id)
	return nil
}

// Workers implements driver.Driver.
func (d *Driver) Workers(_ context.Context, now int64) ([]driver.Worker, int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]driver.Worker, 0, len(d.beats))
	for _, w := range d.beats {
		w.Queues = slices.Clone(w.Queues)
		out = append(out, w)
	}
	slices.SortFunc(out, driver.ByStart)
	return out, d.at(now), nil
}

// Upkeep implements driver.Driver. Every move out of its jobs lets the
// next held ones in under the driver's lock, so no key is ever left with
// room and jobs held: UpkeepHeld finds none. It keeps no plans:
// UpkeepPlans has nothing to do.
func (d *Driver) Upkeep(_ context.Context, u driver.Upkeep, _, at int64) (int, error) {
	at = d.at(at)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch u {
	case driver.UpkeepRates:
		d.rates.Prune(at)
	case driver.UpkeepPlaces:
		d.fair.Prune(func(queue string) *driver.Job { return d.head(&d.line(queue).fair) })
	case driver.UpkeepHeld, driver.UpkeepPlans:
	default:
		return 0, fmt.Errorf("memdriver: no upkeep %v", u)
	}
	return 0, nil
}
