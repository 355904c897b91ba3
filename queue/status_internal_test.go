package queue

import (
	"strings"
	"testing"
	"time"
)

// TestStatusShowsACountPastTheLimitAsAtLeast: queue:status shows a count
// Stats stopped at as "100000+", in its column; --json gives the number
// Stats gave, CountLimit+1.
func TestStatusShowsACountPastTheLimitAsAtLeast(t *testing.T) {
	t.Parallel()
	stats := []Stats{
		{Queue: "default", Waiting: CountLimit + 1, Delayed: CountLimit, Failed: CountLimit + 1, OldestWaiting: 90 * time.Second},
		{Queue: "mail", Waiting: 3, Prioritized: true},
	}
	var out strings.Builder
	if err := printStatus(&out, stats, false, false); err != nil {
		t.Fatal(err)
	}
	want := `QUEUE               WAITING  DELAYED  RUNNING  STALE  FAILED   OLDEST WAITING
default             100000+  100000   0        0      100000+  1m30s
mail (by priority)  3        0        0        0      0        -
`
	if out.String() != want {
		t.Errorf("queue:status printed:\n%s\nwant:\n%s", out.String(), want)
	}
	out.Reset()
	if err := printStatus(&out, stats[:1], false, true); err != nil {
		t.Fatal(err)
	}
	if want := `[{"queue":"default","waiting":100001,"delayed":100000,"running":0,"stale":0,"failed":100001,"oldest_waiting_secs":90,"paused":false,"unworked":false,"prioritized":false,"held":0,"throttled":[],"unknown_types":{}}]` + "\n"; out.String() != want {
		t.Errorf("queue:status --json printed %s, want %s", out.String(), want)
	}
}
