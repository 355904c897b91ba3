package memdriver

import (
	"encoding/binary"

	"github.com/navree/navree/queue/internal/control/priority"
	"github.com/navree/navree/queue/internal/driver"
)

// line is one queue: its waiting jobs, in the order they are reserved,
// and its reserved ones, for the takeover.
type line struct {
	waiting  waiting                  // those of priority 0 without a FairKey
	fair     waiting                  // those of priority 0 with one, by place (FairSeq) first
	levels   priority.Levels[waiting] // those of other priorities
	reserved map[*driver.Job]struct{}
}

// of returns the waiting jobs of priority.
func (l *line) of(priority int) *waiting {
	if priority == 0 {
		return &l.waiting
	}
	return l.levels.Of(priority)
}

// len counts the waiting jobs of every priority.
func (l *line) len() int {
	n := l.waiting.len() + l.fair.len()
	l.levels.Each(func(w *waiting) { n += w.len() })
	return n
}

// waiting holds a queue's waiting jobs in order of available_at, then id.
// Most jobs arrive in that order (dispatched now, with time-ordered ids),
// so they are appended to a sorted run and taken from its front; the
// others go to a min-heap. The next job is the first of either.
type waiting struct {
	run  []entry // sorted; run[head:] are waiting
	head int
	heap []entry
}

// entry is a waiting job and its sort key: its place (FairSeq, in a
// line's fair jobs; 0 elsewhere), available_at and the first 16 bytes of
// its id, big-endian, so two integers order most ids without comparing
// the strings.
type entry struct {
	seq    int64
	at     int64
	k0, k1 uint64
	job    *driver.Job
}

func newEntry(j *driver.Job, seq int64) entry {
	var b [16]byte
	copy(b[:], j.ID)
	return entry{seq: seq, at: j.AvailableAt, k0: binary.BigEndian.Uint64(b[:8]), k1: binary.BigEndian.Uint64(b[8:]), job: j}
}

func (a entry) less(b entry) bool {
	switch {
	case a.seq != b.seq:
		return a.seq < b.seq
	case a.at != b.at:
		return a.at < b.at
	case a.k0 != b.k0:
		return a.k0 < b.k0
	case a.k1 != b.k1:
		return a.k1 < b.k1
	}
	return a.job.ID < b.job.ID
}

func (w *waiting) len() int { return len(w.run) - w.head + len(w.heap) }

// push adds j, in due order.
func (w *waiting) push(j *driver.Job) { w.pushAt(newEntry(j, 0)) }

// pushAt adds e.
func (w *waiting) pushAt(e entry) {
	if w.head == len(w.run) { // empty run: start over at the front
		w.run, w.head = w.run[:0], 0
	}
	if w.head == len(w.run) || !e.less(w.run[len(w.run)-1]) {
		if w.head > 0 && len(w.run) == cap(w.run) && w.head >= len(w.run)/2 {
			// Reuse the taken half of the array rather than grow it.
			n := copy(w.run, w.run[w.head:])
			clear(w.run[n:])
			w.run, w.head = w.run[:n], 0
		}
		w.run = append(w.run, e)
		return
	}
	w.heap = append(w.heap, e)
	h := w.heap
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h[i].less(h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

// fromRun reports whether the next job is the run's first rather than the
// heap's.
func (w *waiting) fromRun() bool {
	return w.head < len(w.run) && (len(w.heap) == 0 || w.run[w.head].less(w.heap[0]))
}

// peek returns the next job, or nil.
func (w *waiting) peek() *driver.Job {
	switch {
	case w.fromRun():
		return w.run[w.head].job
	case len(w.heap) > 0:
		return w.heap[0].job
	}
	return nil
}

// pop takes the next job; there must be one.
func (w *waiting) pop() *driver.Job {
	if w.fromRun() {
		j := w.run[w.head].job
		w.run[w.head] = entry{}
		w.head++
		return j
	}
	h := w.heap
	top := h[0].job
	last := len(h) - 1
	h[0] = h[last]
	h[last] = entry{}
	h = h[:last]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < len(h) && h[l].less(h[least]) {
			least = l
		}
		if r < len(h) && h[r].less(h[least]) {
			least = r
		}
		if least == i {
			break
		}
		h[i], h[least] = h[least], h[i]
		i = least
	}
	w.heap = h
	return top
}
