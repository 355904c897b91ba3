// Package schedule dispatches jobs on a schedule: cron expressions and
// intervals, each tick dispatched once through the queue however many
// schedulers run.
package schedule
