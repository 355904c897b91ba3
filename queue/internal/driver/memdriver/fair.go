package memdriver

import (
	"github.com/navree/navree/queue/internal/control/fair"
	"github.com/navree/navree/queue/internal/driver"
)

// place gives j, entering jobs with a FairKey, its place in its queue's
// rounds (fair.Memory).
func (d *Driver) place(j *driver.Job) {
	d.fair.Place(j, d.head(&d.line(j.Queue).fair))
}

// takeFair takes up to want of the due jobs of priority 0 of l, in
// fair.Order, out of its waiting order: those without a key first,
// in due order, then those with one, by place.
func (d *Driver) takeFair(l *line, now int64, want int) []*driver.Job {
	var found, later []*driver.Job
	for plain := 0; plain < want; plain++ {
		j := d.head(&l.waiting)
		if j == nil || j.AvailableAt > now {
			break
		}
		found = append(found, l.waiting.pop())
	}
	for keyed := len(found); keyed < want; {
		j := d.head(&l.fair)
		if j == nil {
			break
		}
		l.fair.pop()
		if j.AvailableAt > now {
			later = append(later, j)
			continue
		}
		found = append(found, j)
		keyed++
	}
	fair.Order(found)
	for _, j := range append(later, found[min(want, len(found)):]...) {
		d.wait(j)
	}
	return found[:min(want, len(found))]
}
