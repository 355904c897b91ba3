package driver_test

import (
	"slices"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

// TestJobIDsListsTheIDsOfARange: JobIDs finds the ids of a range in every
// table a job is stored in (waiting, held, failed, kept), in order, as
// many as asked at most, and none outside it.
func TestJobIDsListsTheIDsOfARange(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		id := func(n int, prefix string) string { return prefix + "-0000-7000-8000-00000000000" + string(rune('0'+n)) }
		with := func(n int, prefix, queue string) *driver.Job {
			j := newJob(n, queue, int64(n))
			j.ID = id(n, prefix)
			return j
		}
		waiting := with(1, "0190a1b2", "a")
		running, held := with(2, "0190a1b2", "c"), with(3, "0190a1b2", "c")
		running.LimitKey, running.LimitMax, held.LimitKey, held.LimitMax = "account:1", 1, "account:1", 1
		failed, kept := with(4, "0190a1b2", "b"), with(5, "0190a1b2", "b")
		other := with(6, "0190a1b3", "a")
		insert(t, s, waiting, running, held, failed, kept, other)
		if j := reserve(t, s, "b", 100); j == nil || j.ID != failed.ID {
			t.Fatalf("reserved %+v, want the job to fail", j)
		}
		if ok, err := s.Fail(ctx, failed.ID, 1, driver.Failure{Error: "boom", At: 100}); !ok || err != nil {
			t.Fatalf("Fail = %v, %v", ok, err)
		}
		if j := reserve(t, s, "b", 100); j == nil || j.ID != kept.ID {
			t.Fatalf("reserved %+v, want the job to keep", j)
		}
		if ids, err := s.Complete(ctx, []driver.Attempt{{ID: kept.ID, Attempt: 1, At: 100}}, true); err != nil || len(ids) != 1 {
			t.Fatalf("Complete = %v, %v", ids, err)
		}
		if f, err := s.Lookup(ctx, held.ID); err != nil || f.Job == nil || !f.Job.Held {
			t.Fatalf("the third job is not held: %+v, %v", f, err)
		}

		for _, tt := range []struct {
			from, to string
			limit    int
			want     []string
		}{
			{"0190a1b2-0000-0000-0000-000000000000", "0190a1b2-ffff-ffff-ffff-ffffffffffff", 10, []string{waiting.ID, running.ID, held.ID, failed.ID, kept.ID}},
			{"0190a1b2-0000-0000-0000-000000000000", "0190a1b2-ffff-ffff-ffff-ffffffffffff", 2, []string{waiting.ID, running.ID}},
			{"0190a1b2-0000-7000-8000-000000000003", "0190a1b2-0000-7000-8000-000000000005", 10, []string{held.ID, failed.ID, kept.ID}},
			{"0190a1b3-0000-0000-0000-000000000000", "0190a1b3-ffff-ffff-ffff-ffffffffffff", 10, []string{other.ID}},
			{"0190a1b4-0000-0000-0000-000000000000", "0190a1b4-ffff-ffff-ffff-ffffffffffff", 10, nil},
		} {
			got, err := s.JobIDs(ctx, tt.from, tt.to, tt.limit)
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("JobIDs(%s, %s, %d) = %v, %v; want %v", tt.from, tt.to, tt.limit, got, err, tt.want)
			}
		}
	})
}
