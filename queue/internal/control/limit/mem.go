package limit

import (
	"cmp"
	"slices"

	"github.com/navree/navree/queue/internal/driver"
)

// Memory is concurrency limits' part of the memory driver: how many jobs
// of each key are in the driver's jobs, and the held ones, each key's in
// the order they go in. The driver holds its lock around every call.
type Memory struct {
	in   map[string]int
	next map[string][]*driver.Job // by Order
	// Held are the held jobs, by id.
	Held map[string]*driver.Job
}

// NewMemory returns the state of no limited job.
func NewMemory() Memory {
	return Memory{in: map[string]int{}, next: map[string][]*driver.Job{}, Held: map[string]*driver.Job{}}
}

// Order orders the held jobs of a key as they go in, as the database's
// index queue_held_next does: by priority, higher first, then due time,
// then id.
func Order(a, b *driver.Job) int {
	return cmp.Or(cmp.Compare(b.Priority, a.Priority), cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
}

// Room reports whether j goes into the jobs at once: it has no limit, or
// its key has room and holds no job.
func (m *Memory) Room(j *driver.Job) bool {
	return j.LimitKey == "" || m.in[j.LimitKey] < j.LimitMax && len(m.next[j.LimitKey]) == 0
}

// Hold holds j, in its key's order.
func (m *Memory) Hold(j *driver.Job) {
	q := m.next[j.LimitKey]
	i, _ := slices.BinarySearchFunc(q, j, Order)
	m.next[j.LimitKey] = slices.Insert(q, i, j)
	m.Held[j.ID] = j
}

// Entered counts j, limited or not, in the driver's jobs.
func (m *Memory) Entered(j *driver.Job) {
	if j.LimitKey != "" {
		m.in[j.LimitKey]++
	}
}

// Left counts j, limited or not, out of the driver's jobs.
func (m *Memory) Left(j *driver.Job) {
	if j.LimitKey != "" {
		m.in[j.LimitKey]--
	}
}

// Next returns the next held job of key when the key has room for it
// under its limit, else nil.
func (m *Memory) Next(key string) *driver.Job {
	if q := m.next[key]; len(q) > 0 && m.in[key] < q[0].LimitMax {
		return q[0]
	}
	return nil
}

// Unhold takes the held job j out of the held jobs.
func (m *Memory) Unhold(j *driver.Job) {
	delete(m.Held, j.ID)
	q := slices.DeleteFunc(m.next[j.LimitKey], func(h *driver.Job) bool { return h == j })
	if len(q) == 0 {
		delete(m.next, j.LimitKey)
	} else {
		m.next[j.LimitKey] = q
	}
}

// Tidy forgets key once none of its jobs is in or held.
func (m *Memory) Tidy(key string) {
	if m.in[key] == 0 && len(m.next[key]) == 0 {
		delete(m.in, key)
	}
}
