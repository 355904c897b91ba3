// Package notify sends notifications to users over channels such as mail,
// queued as jobs.
//
// Not built yet: it will queue through queue.Dispatcher.
package notify
