package queue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
)

// FuzzWorkFlags runs queue:work with any arguments on an app with the
// memory driver: it works, or fails with an error, and never panics or
// hangs.
func FuzzWorkFlags(f *testing.F) {
	f.Add("--queue a,b --workers 2 --once")
	f.Add("--queue=mail --max-jobs=500 --max-time=1h")
	f.Add("--workers -3")
	f.Add("--max-time soon --queue")
	f.Add("--queue " + strings.Repeat("q", 200))
	f.Add("--help")
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		for _, a := range args {
			if a == "--" || strings.HasPrefix(a, "--workers") || strings.HasPrefix(a, "-w") {
				return // positional arguments, and goroutine counts beyond reason, are not what this explores
			}
		}
		a := apptest.New(t, queue.ModuleWith(queue.Config{Driver: queue.Memory}))
		done := make(chan struct{})
		go func() {
			defer close(done)
			a.RunCommand("queue:work", append(args, "--stop-when-empty")...)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("queue:work %q did not stop", line)
		}
	})
}
