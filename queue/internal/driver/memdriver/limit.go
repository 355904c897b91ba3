package memdriver

import (
	"github.com/navree/navree/queue/internal/driver"
)

// The concurrency limits' counts and held jobs are package limit's
// (limit.Memory, d.held); these keep the driver's unique keys beside
// them.

// add stores j: a limited job is held when its key has no room or holds
// jobs already.
func (d *Driver) add(j *driver.Job) {
	if d.held.Room(j) {
		d.insert(j)
		return
	}
	d.held.Hold(j)
	d.unique.Take(j)
	d.admit(j.LimitKey, 0)
}

// admit moves the next held jobs of key into jobs while it has room, due
// no earlier than floor (the due time of the job that left, as the
// database drivers' admission does).
func (d *Driver) admit(key string, floor int64) {
	for h := d.held.Next(key); h != nil; h = d.held.Next(key) {
		d.unhold(h)
		h.AvailableAt = max(h.AvailableAt, floor)
		d.insert(h)
	}
	d.held.Tidy(key)
}

// unhold takes the held job j out of the held jobs.
func (d *Driver) unhold(j *driver.Job) {
	d.held.Unhold(j)
	d.unique.Release(j) // insert takes it again as it is let in
}
