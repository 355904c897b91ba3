package migrations

import (
	"embed"
	"io/fs"
)

//go:embed queue/*.sql notifications/*.sql schedule/*.sql
var files embed.FS

// Queue is the queue module's set: the tables jobs and failed_jobs, and
// on SQLite queue_clock.
var Queue = sub("queue")

// Notifications is the notify module's set: the table notifications,
// where the database channel keeps what an inbox lists.
var Notifications = sub("notifications")

// Schedule is the schedule module's set: the table schedule_ticks, the
// ticks the schedulers claimed.
var Schedule = sub("schedule")

func sub(dir string) fs.FS {
	s, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // only for a folder the embed pattern does not hold
	}
	return s
}
