package dashboard

import (
	"fmt"
	"math"
	"time"

	"github.com/navree/navree/queue"
)

// throughputWindow is how far back the queues page counts the attempts
// the workers finished ([queue.Inspector.Throughput]).
const throughputWindow = 5 * time.Minute

// rate is what the workers of every process finished of a queue per
// minute, over the last throughputWindow.
type rate struct {
	Done   float64 // attempts finished: succeeded, released for a retry, or failed
	Failed float64 // of them, failed for good
}

// rates averages the throughput of each queue over the window.
func rates(counts []queue.Throughput) map[string]rate {
	out := map[string]rate{}
	minutes := throughputWindow.Minutes()
	for _, c := range counts {
		r := out[c.Queue]
		r.Done += float64(c.Succeeded+c.Released+c.Failed) / minutes
		r.Failed += float64(c.Failed) / minutes
		out[c.Queue] = r
	}
	return out
}

// perMinute shows a rate: "12/min", "0.5/min", "0/min".
func perMinute(v float64) string {
	switch {
	case v < 0.05:
		return "0/min"
	case v < 10:
		return fmt.Sprintf("%.1f/min", v)
	}
	return fmt.Sprintf("%d/min", int64(math.Round(v)))
}
