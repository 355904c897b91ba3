package history

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/navree/navree/queue/internal/driver"
)

// Memory is the history's counts in the memory driver: the throughput
// by queue and minute, and the timings. The driver holds its lock around
// every call; the successes it keeps are its own map (see Succeeded).
type Memory struct {
	done  map[[2]string]driver.Throughput // by queue and minute
	timed map[driver.Timing]int64         // counts by timing, Count zero
}

// Add adds counts and timings, and forgets those of minutes before
// keepFrom, as AddThroughput does.
func (m *Memory) Add(counts []driver.Throughput, timings []driver.Timing, keepFrom int64) {
	if m.done == nil {
		m.done, m.timed = map[[2]string]driver.Throughput{}, map[driver.Timing]int64{}
	}
	for _, t := range timings {
		n := t.Count
		t.Count = 0
		m.timed[t] += n
	}
	for t := range m.timed {
		if t.Minute < keepFrom {
			delete(m.timed, t)
		}
	}
	for _, c := range counts {
		k := [2]string{c.Queue, strconv.FormatInt(c.Minute, 10)}
		t := m.done[k]
		t.Queue, t.Minute = c.Queue, c.Minute
		t.Succeeded, t.Released, t.Failed = t.Succeeded+c.Succeeded, t.Released+c.Released, t.Failed+c.Failed
		m.done[k] = t
	}
	for k, t := range m.done {
		if t.Minute < keepFrom {
			delete(m.done, k)
		}
	}
}

// Timings are the timings from minute since on, of queue and of the
// type name ("" for every one), by minute.
func (m *Memory) Timings(since int64, queue, name string) []driver.Timing {
	var out []driver.Timing
	for t, n := range m.timed {
		if t.Minute >= since && (queue == "" || t.Queue == queue) && (name == "" || t.Name == name) {
			t.Count = n
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b driver.Timing) int { return cmp.Compare(a.Minute, b.Minute) })
	return out
}

// Throughput is the throughput from minute since on, by queue and
// minute.
func (m *Memory) Throughput(since int64) []driver.Throughput {
	var out []driver.Throughput
	for _, t := range m.done {
		if t.Minute >= since {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(a, b driver.Throughput) int {
		return cmp.Or(cmp.Compare(a.Queue, b.Queue), cmp.Compare(a.Minute, b.Minute))
	})
	return out
}

// Succeeded is the job j as the history keeps it, succeeded by the
// attempt a: the row of succeeded_jobs, as the statements Keep write it.
func Succeeded(j *driver.Job, a driver.Attempt) driver.SucceededJob {
	return driver.SucceededJob{ID: j.ID, Queue: j.Queue, Name: j.Name, Payload: j.Payload, MaxAttempts: j.MaxAttempts,
		Attempts: j.Attempts, CreatedAt: j.CreatedAt, FinishedAt: a.At, RunMs: a.Ms, WaitMs: a.Wait, Worker: j.ReservedBy,
		Errors: j.Errors, Meta: j.Meta, Snoozes: j.Snoozes}
}
