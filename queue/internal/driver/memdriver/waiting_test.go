package memdriver

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/navree/navree/queue/internal/driver"
)

// TestWaitingOrder pushes jobs mostly in order, as dispatches arrive, and
// some out of it, as delayed and released jobs do, taking some between
// pushes: every pop must be the least (available_at, id) still waiting.
func TestWaitingOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		var w waiting
		var want []*driver.Job
		clock := int64(1000)
		for i := range 500 {
			at := clock
			switch rng.IntN(10) {
			case 0:
				at += int64(rng.IntN(50)) // delayed
			case 1:
				at -= int64(rng.IntN(50)) // released earlier, retried now
			default:
				clock++
			}
			// Ids share a long prefix, as UUIDs of one millisecond do, so
			// some ties are broken by the whole string.
			j := &driver.Job{ID: fmt.Sprintf("0199c1d2-6f7e-7a31-%04d-%03d", rng.IntN(3), i), AvailableAt: at}
			w.push(j)
			want = append(want, j)
			for rng.IntN(3) == 0 && w.len() > 0 {
				slices.SortFunc(want, func(a, b *driver.Job) int {
					return cmp.Or(cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
				})
				if got := w.pop(); got != want[0] {
					t.Fatalf("round %d: popped %d %s, want %d %s", round, got.AvailableAt, got.ID, want[0].AvailableAt, want[0].ID)
				}
				want = want[1:]
			}
			if w.len() != len(want) {
				t.Fatalf("round %d: len %d, want %d", round, w.len(), len(want))
			}
		}
		slices.SortFunc(want, func(a, b *driver.Job) int {
			return cmp.Or(cmp.Compare(a.AvailableAt, b.AvailableAt), cmp.Compare(a.ID, b.ID))
		})
		for _, j := range want {
			if got := w.pop(); got != j {
				t.Fatalf("round %d: drained %s, want %s", round, got.ID, j.ID)
			}
		}
		if w.peek() != nil {
			t.Fatal("not empty after draining")
		}
	}
}
