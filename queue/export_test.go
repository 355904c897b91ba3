package queue

import "github.com/navree/navree/queue/internal/driver"

// StoreOf exposes a queue's driver to the tests, which reserve and fail
// jobs through it until the worker runs them.
func StoreOf(q *Queue) driver.Driver { return q.store }

// OnListen has f called each time a worker of q starts listening for
// dispatches of other processes.
func OnListen(q *Queue, f func()) { q.onListen = f }

// WrapStore puts wrap's driver between q and its store, for tests that
// watch what a worker asks of it.
func WrapStore(q *Queue, wrap func(driver.Driver) driver.Driver) { q.store = wrap(q.store) }
