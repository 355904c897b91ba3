// Package queue is Navree's background job queue: a request stores a job
// and answers at once, worker processes run it, retry it when it fails and
// keep what keeps failing for a person to retry.
//
// The queue is being built; see docs/queues.md for what it will offer.
package queue
