package worker

import (
	"context"
	"sync/atomic"
)

// mark says, by queue, that jobs its search must allow for may wait
// there: jobs with a priority, a rate limit or a fairness key. A sweep
// and the prober look (look, reading only), and a dispatch of this
// process of such a job marks every queue at once (it bumps dispatched).
type mark struct {
	on         []atomic.Bool
	look       func(ctx context.Context, queue string) (bool, error)
	dispatched *atomic.Int64 // nil: none is
	seen       int64         // the last count of dispatched the fetcher saw
}

func newMark(queues int, look func(context.Context, string) (bool, error), dispatched *atomic.Int64) *mark {
	return &mark{on: make([]atomic.Bool, queues), look: look, dispatched: dispatched}
}

// set looks at the queue i, name, and reports whether it found the queue
// newly marked. A look that fails marks it: the search then allows for
// what may wait, and reports the database's error.
func (m *mark) set(ctx context.Context, i int, name string) bool {
	found, err := m.look(ctx, name)
	was := m.on[i].Swap(found || err != nil)
	return found && !was
}

// catchUp marks every queue if this process dispatched such a job since
// the fetcher last looked.
func (m *mark) catchUp() {
	if m.dispatched == nil {
		return
	}
	if n := m.dispatched.Load(); n != m.seen {
		m.seen = n
		for i := range m.on {
			m.on[i].Store(true)
		}
	}
}

// marks are w's marks: of priorities, rate limits and fairness (an
// array: ranging over it allocates nothing, on the fetcher's path).
func (w *worker) marks() [3]*mark { return [3]*mark{w.prio, w.rated, w.fair} }
