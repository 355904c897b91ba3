package memdriver

import (
	"context"

	"github.com/navree/navree/queue/internal/driver"
)

// fairness is the state of fair queues: each group's next place, by queue
// and key, and each queue's highest next place given (queue_fair).
type fairness struct {
	next map[[2]string]int64
	max  map[string]int64
}

// place gives j, entering jobs with a FairKey, its place in its queue's
// rounds, as the database's trigger jobs_fair does: its group's next, or
// the round the queue serves (its lowest place waiting; with none, the
// next after the last given), whichever is later.
func (d *Driver) place(j *driver.Job) {
	if d.fair.next == nil {
		d.fair = fairness{next: map[[2]string]int64{}, max: map[string]int64{}}
	}
	round := int64(1)
	if first := d.head(&d.line(j.Queue).fair); first != nil {
		round = first.FairSeq
	} else if m, ok := d.fair.max[j.Queue]; ok {
		round = m
	}
	k := [2]string{j.Queue, j.FairKey}
	seq := round
	if next, ok := d.fair.next[k]; ok {
		seq = max(next, round)
	}
	d.fair.next[k] = seq + 1
	d.fair.max[j.Queue] = max(d.fair.max[j.Queue], seq+1)
	j.FairSeq = seq
}

// takeFair takes up to want of the due jobs of priority 0 of l, in
// driver.FairOrder, out of its waiting order: those without a key first,
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
	driver.FairOrder(found)
	for _, j := range append(later, found[min(want, len(found)):]...) {
		d.wait(j)
	}
	return found[:min(want, len(found))]
}

// PruneGroups implements driver.Driver.
func (d *Driver) PruneGroups(context.Context) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, next := range d.fair.next {
		round := d.fair.max[k[0]] - 1
		if first := d.head(&d.line(k[0]).fair); first != nil {
			round = first.FairSeq
		}
		if next <= round {
			delete(d.fair.next, k)
		}
	}
	return nil
}
