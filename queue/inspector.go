package queue

import "time"

// Inspector is the queue's read and admin side: its counts, its jobs and
// failed jobs, retrying, deleting and cancelling them, and pausing
// queues. It runs no job and needs no handler, so what takes it (the
// dashboard, the admin commands, a page of the app) does not build the
// app's job handlers, nor what they depend on. The queue module provides
// it; without fx, [Queue.Inspector] gives the one of a queue.
type Inspector struct{ q *Queue }

// Inspector returns the read and admin side of q.
func (q *Queue) Inspector() *Inspector { return &Inspector{q} }

// DefaultQueue is the queue a job goes to when neither its type nor its
// dispatch names one: [Config.DefaultQueue], queue.default_queue.
func (i *Inspector) DefaultQueue() string { return i.q.cfg.DefaultQueue }

// KeepSucceeded is how long the jobs that succeed are kept in the history
// (queue.keep_succeeded); 0 when none are.
func (i *Inspector) KeepSucceeded() time.Duration { return i.q.cfg.KeepSucceeded }
