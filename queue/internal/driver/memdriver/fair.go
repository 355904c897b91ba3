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
// fair.Order (fair.Take).
func (d *Driver) takeFair(l *line, now int64, want int) []*driver.Job {
	return fair.Take(lineOf{d, &l.waiting}, lineOf{d, &l.fair}, now, want, d.wait)
}

// lineOf is a waiting list whose head skips the entries of jobs gone
// (head): a fair.Line.
type lineOf struct {
	d *Driver
	w *waiting
}

func (l lineOf) Head() *driver.Job { return l.d.head(l.w) }
func (l lineOf) Pop() *driver.Job  { return l.w.pop() }
