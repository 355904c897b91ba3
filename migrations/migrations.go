package migrations

import (
	"embed"
	"io/fs"
)

//go:embed queue/*.sql
var files embed.FS

// Queue is the queue module's set: the tables jobs and failed_jobs, and
// on SQLite queue_clock.
var Queue = sub("queue")

func sub(dir string) fs.FS {
	s, err := fs.Sub(files, dir)
	if err != nil {
		panic(err) // only for a folder the embed pattern does not hold
	}
	return s
}
