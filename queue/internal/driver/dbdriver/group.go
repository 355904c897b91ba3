package dbdriver

import (
	"context"
	"slices"
	"sync"

	"github.com/navree/navree/queue/internal/driver"
)

// grouper stores single dispatches in groups (group commit): whichever
// waiting insert gets a turn stores every insert waiting by then, all or
// none, and tells their callers. Each caller still returns only once its
// job is committed, or with the error that kept it from being stored;
// concurrent dispatches share a statement and a commit instead of paying
// for one each.
type grouper struct {
	// turn waits for a turn, until ctx ends, and runs fn in it.
	turn func(ctx context.Context, fn func() error) error
	// store stores the jobs of a group, all or none; ctx never ends
	// while it runs, the group's callers waiting on it.
	store func(ctx context.Context, jobs []*driver.Job) error
	// each, if set, reports whether a group whose store failed with err
	// stored none of its jobs, and is to be stored again a job at a
	// time, so that one bad job fails its own dispatch alone.
	each func(err error) bool

	mu      sync.Mutex
	waiting []*waitingInsert // inserts waiting for a turn
}

// waitingInsert is a single insert waiting for a turn, and how its caller
// hears that another stored it.
type waitingInsert struct {
	job    *driver.Job
	done   chan error
	served context.CancelFunc
}

// insert stores job in the next group that gets a turn.
func (g *grouper) insert(ctx context.Context, job *driver.Job) error {
	turnCtx, served := context.WithCancel(ctx)
	defer served()
	w := &waitingInsert{job: job, done: make(chan error, 1), served: served}
	g.mu.Lock()
	g.waiting = append(g.waiting, w)
	g.mu.Unlock()
	err := g.turn(turnCtx, func() error {
		g.mu.Lock()
		group := g.waiting
		g.waiting = nil
		g.mu.Unlock()
		if len(group) == 0 { // another took this one's job into its group
			return nil
		}
		jobs := make([]*driver.Job, len(group))
		for i, w := range group {
			jobs[i] = w.job
		}
		stored := context.WithoutCancel(ctx)
		err := g.store(stored, jobs)
		each := err != nil && len(group) > 1 && g.each != nil && g.each(err)
		for _, w := range group {
			if each {
				w.done <- g.store(stored, []*driver.Job{w.job})
			} else {
				w.done <- err
			}
			w.served()
		}
		return nil
	})
	if err != nil {
		// It did not get a turn: another took this job into its group
		// (and cancelled turnCtx), or ctx ended, or no turn can be had.
		g.mu.Lock()
		i := slices.Index(g.waiting, w)
		if i >= 0 { // still waiting: withdrawn, never stored
			g.waiting = slices.Delete(g.waiting, i, i+1)
		}
		g.mu.Unlock()
		if i >= 0 {
			return err
		}
	}
	return <-w.done
}

// turns is a turn that at most n groups hold at once: on PostgreSQL, where
// groups of different connections store side by side.
func turns(n int) func(ctx context.Context, fn func() error) error {
	held := make(chan struct{}, n)
	return func(ctx context.Context, fn func() error) error {
		select {
		case held <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-held }()
		return fn()
	}
}
