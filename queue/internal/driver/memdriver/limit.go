package memdriver

import (
	"cmp"
	"context"
	"slices"

	"github.com/navree/navree/queue/internal/driver"
)

// limits are the concurrency limits' state: how many jobs of each key are
// in jobs, and the held ones, each key's in the order they go in.
type limits struct {
	in   map[string]int
	next map[string][]*driver.Job // by priority, then due time, then id
	byID map[string]*driver.Job
}

func newLimits() limits {
	return limits{in: map[string]int{}, next: map[string][]*driver.Job{}, byID: map[string]*driver.Job{}}
}

// heldBefore orders the held jobs of a key as the database's
// queue_held_next does.
func heldBefore(a, b *driver.Job) int {
	return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
}

// add stores j: a limited job is held when its key has no room or holds
// jobs already.
func (d *Driver) add(j *driver.Job) {
	key := j.LimitKey
	if key == "" || d.held.in[key] < j.LimitMax && len(d.held.next[key]) == 0 {
		d.insert(j)
		return
	}
	q := d.held.next[key]
	i, _ := slices.BinarySearchFunc(q, j, heldBefore)
	d.held.next[key] = slices.Insert(q, i, j)
	d.held.byID[j.ID] = j
	if j.UniqueKey != "" {
		d.unique[j.UniqueKey] = j.ID
	}
	d.admit(key, 0)
}

// admit moves the next held jobs of key into jobs while it has room, due
// no earlier than floor (the due time of the job that left, as the
// database drivers' admission does).
func (d *Driver) admit(key string, floor int64) {
	for q := d.held.next[key]; len(q) > 0 && d.held.in[key] < q[0].LimitMax; q = d.held.next[key] {
		h := q[0]
		d.unhold(h)
		h.AvailableAt = max(h.AvailableAt, floor)
		d.insert(h)
	}
	if d.held.in[key] == 0 && len(d.held.next[key]) == 0 {
		delete(d.held.in, key)
	}
}

// unhold takes the held job j out of the held jobs.
func (d *Driver) unhold(j *driver.Job) {
	delete(d.held.byID, j.ID)
	if j.UniqueKey != "" && d.unique[j.UniqueKey] == j.ID {
		delete(d.unique, j.UniqueKey) // insert takes it again as it is let in
	}
	q := slices.DeleteFunc(d.held.next[j.LimitKey], func(h *driver.Job) bool { return h == j })
	if len(q) == 0 {
		delete(d.held.next, j.LimitKey)
	} else {
		d.held.next[j.LimitKey] = q
	}
}

// Readmit implements driver.Driver: every move out of its jobs lets the
// next held ones in under the driver's lock, so no key is ever left with
// room and jobs held.
func (d *Driver) Readmit(context.Context, int64) (int, error) { return 0, nil }
