package driver_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
)

func limited(n int, queue string, availableAt int64, key string, most int) *driver.Job {
	j := newJob(n, queue, availableAt)
	j.LimitKey, j.LimitMax = key, most
	return j
}

// TestEveryWayOutOfJobsLetsTheNextIn: whichever way a limited job leaves
// jobs, the transaction that moves it lets its key's next held job in,
// due no earlier than the job that left: a success (kept or not), a
// failure, a cancel of a waiting job, a purge of its queue (the held job
// waits in another), a flow's step that succeeds, and a cancelled flow.
func TestEveryWayOutOfJobsLetsTheNextIn(t *testing.T) {
	each(t, func(t *testing.T, s driver.Driver, _ *db.DB) {
		ways := []struct {
			name    string
			running bool // the job leaves as it runs, not as it waits
			flow    bool // the job is a flow's step
			out     func(j *driver.Job) error
		}{
			{"complete", true, false, func(j *driver.Job) error {
				return completed(s.Complete(ctx, []driver.Attempt{{ID: j.ID, Attempt: j.Attempts, Limit: j.LimitKey}}, false))
			}},
			{"complete-kept", true, false, func(j *driver.Job) error {
				return completed(s.Complete(ctx, []driver.Attempt{{ID: j.ID, Attempt: j.Attempts, Limit: j.LimitKey, At: 120}}, true))
			}},
			{"fail", true, false, func(j *driver.Job) error {
				return moved(s.Fail(ctx, j.ID, j.Attempts, driver.Failure{Attempt: j.Attempts, At: 120, Error: "boom", Limit: j.LimitKey}))
			}},
			{"cancel", false, false, func(j *driver.Job) error {
				did, err := s.Cancel(ctx, j.ID, 120)
				if err == nil && did != driver.Removed {
					err = fmt.Errorf("Cancel = %v, want removed", did)
				}
				return err
			}},
			{"purge", false, false, func(j *driver.Job) error {
				n, err := s.Purge(ctx, j.Queue)
				if err == nil && n != 1 {
					err = fmt.Errorf("Purge = %d, want 1", n)
				}
				return err
			}},
			{"flow-step", true, true, func(j *driver.Job) error {
				return completed(s.Finish(ctx, []driver.Attempt{{ID: j.ID, Attempt: j.Attempts, Limit: j.LimitKey, Flow: j.Flow, At: 120}}, false))
			}},
			{"flow-cancel", false, true, func(j *driver.Job) error {
				_, err := s.CancelFlow(ctx, j.Flow, 120)
				return err
			}},
		}
		for i, w := range ways {
			key := "way:" + w.name
			var first *driver.Job
			n := 1000 + 10*i // the first job's number
			if w.flow {
				n = (i+1)*100 + 1
				b := newFlow(i+1, driver.KindChain, true).Step("a", driver.RoleStep, false)
				first = b.NF.Steps[0].Job
				first.Queue, first.AvailableAt, first.LimitKey, first.LimitMax = "out-"+w.name, 50, key, 1
				b.Start(t, s)
				first.Flow = b.NF.Flow.ID
			} else {
				first = limited(1000+10*i, "out-"+w.name, 50, key, 1)
				insert(t, s, first)
			}
			next := limited(1001+10*i, "next-"+w.name, 10, key, 1)
			insert(t, s, next)
			if f := lookup(t, s, 1001+10*i); f.Job == nil || !f.Job.Held {
				t.Fatalf("%s: the next job is not held behind the first: %+v", w.name, f)
			}
			due := lookup(t, s, n).Job.AvailableAt // a flow's step is due as it is released
			if due < 50 && !w.flow {
				t.Fatalf("%s: the first job is due at %d, want 50", w.name, due)
			}
			leaving := first
			if w.running {
				if leaving = reserve(t, s, first.Queue, 100); leaving == nil || !strings.EqualFold(leaving.ID, first.ID) {
					t.Fatalf("%s: reserved %+v, want the first", w.name, leaving)
				}
			}
			if err := w.out(leaving); err != nil {
				t.Fatalf("%s: %v", w.name, err)
			}
			f := lookup(t, s, 1001+10*i)
			if f.Job == nil || f.Job.Held {
				t.Fatalf("%s: the next job is not let in: %+v", w.name, f)
			}
			if want := max(10, due); f.Job.AvailableAt != want {
				t.Fatalf("%s: the next job is due at %d, want %d: no earlier than the one that left", w.name, f.Job.AvailableAt, want)
			}
			if j := reserve(t, s, "next-"+w.name, 100); j == nil || !strings.EqualFold(j.ID, next.ID) {
				t.Fatalf("%s: reserved %+v, want the next job", w.name, j)
			}
		}
	})
}

// completed is nil when a Complete or Finish took one job.
func completed(ids []string, err error) error {
	if err == nil && len(ids) != 1 {
		err = fmt.Errorf("completed %v, want one job", ids)
	}
	return err
}

// moved is nil when a Fail moved its job.
func moved(ok bool, err error) error {
	if err == nil && !ok {
		err = errors.New("the job did not move")
	}
	return err
}
