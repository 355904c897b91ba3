// Package events dispatches application events to listeners, which may run
// at once or be queued as jobs.
//
// Not built yet: queued listeners will queue through queue.Dispatcher.
package events
