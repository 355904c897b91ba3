// Package mail sends email, at once or queued as a job on the app's queue.
//
// Not built yet: it will queue through queue.Dispatcher.
package mail
