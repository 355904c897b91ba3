// Package schedule runs jobs on a schedule by dispatching them to the
// app's queue when they are due.
//
// Not built yet.
package schedule
