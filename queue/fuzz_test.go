package queue_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
)

// FuzzWorkFlags runs queue:work with any arguments on an app with the
// memory driver: it works, or fails with an error, and never panics,
// hangs or runs out of memory (--workers is bounded as queue.workers is).
func FuzzWorkFlags(f *testing.F) {
	f.Add("--queue a,b --workers 2 --once")
	f.Add("--queue=mail --max-jobs=500 --max-time=1h")
	f.Add("--workers -3")
	f.Add("--workers 100000000")
	f.Add("--workers=10000 --max-jobs 1")
	f.Add("--max-time soon --queue")
	f.Add("--queue " + strings.Repeat("q", 200))
	f.Add("--help")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		if slices.Contains(args, "--") || strings.Contains(line, "stop-when-empty") {
			return // positional arguments are not what this explores, nor a worker told not to stop
		}
		a := apptest.New(t, queue.ModuleWith(queue.Config{Driver: queue.Memory}))
		done := make(chan struct{})
		go func() {
			defer close(done)
			// First: last, it was the value of a flag left without one
			// ("-queue"), and the worker was told nothing of stopping.
			a.RunCommand("queue:work", append([]string{"--stop-when-empty"}, args...)...)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("queue:work %q did not stop", line)
		}
	})
}
