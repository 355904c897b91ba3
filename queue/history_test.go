package queue_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue"
)

// TestSucceededJobsAreKeptWithTheirHistory: with keep_succeeded, a job
// that failed once then succeeded stays readable, with its worker, run,
// wait and the first attempt's error; queue:job prints its timeline; the
// workers prune it once it is older than keep_succeeded. Without it,
// nothing is kept.
func TestSucceededJobsAreKeptWithTheirHistory(t *testing.T) {
	t.Parallel()
	handler := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, _ ExportContacts, jc queue.JobContext) error {
		if jc.Attempt == 1 {
			return errors.New("smtp: 451 try later\nsecond line")
		}
		return nil
	}))
	regs := map[string]queue.Registration{"contacts.export": handler}
	t.Run("kept", func(t *testing.T) {
		eachWith(t, queue.Config{KeepSucceeded: 24 * time.Hour}, regs, func(t *testing.T, f fixture) {
			id, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
			if err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(3 * time.Second) // it waited 3 s
			if stats, err := f.q.RunPending(ctx); stats.Released != 1 || err != nil {
				t.Fatalf("first run: %v, %v", stats, err)
			}
			f.clock.Advance(time.Second + 500*time.Millisecond) // its backoff, 1 s, and half a second more
			if stats, err := f.q.RunPending(ctx); stats.Succeeded != 1 || err != nil {
				t.Fatalf("second run: %v, %v", stats, err)
			}
			j, err := f.q.Inspector().Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			uuidRE := regexp.MustCompile(`^[0-9a-f-]{36}$`)
			if j.State != queue.StateSucceeded || !j.Succeeded || j.Attempts != 2 || j.Wait != 500*time.Millisecond || !j.FinishedAt.Equal(t0.Add(4500*time.Millisecond)) ||
				!uuidRE.MatchString(j.Worker) || len(j.Failures) != 1 || j.Failures[0].Attempt != 1 || j.Failures[0].Error != "smtp: 451 try later\nsecond line" ||
				!j.Failures[0].At.Equal(t0.Add(3*time.Second)) || !uuidRE.MatchString(j.Failures[0].Worker) || string(j.Payload) != `{"company_id":"c1","requested_by":""}` {
				t.Fatalf("the kept job: %+v", j)
			}
			page, _, err := f.q.Inspector().Jobs(ctx, queue.JobsQuery{State: queue.StateSucceeded})
			if err != nil || len(page) != 1 || page[0].ID != id || page[0].Worker != j.Worker || !page[0].FinishedAt.Equal(j.FinishedAt) {
				t.Fatalf("the succeeded jobs: %+v, %v", page, err)
			}
			var out strings.Builder
			j.RunTime, j.Failures[0].RunTime = 120*time.Millisecond, 50*time.Millisecond // the machine's, made fixed
			if err := queue.PrintJob(&out, j, false); err != nil {
				t.Fatal(err)
			}
			got := strings.NewReplacer(id, "ID", j.Worker, "WORKER2", j.Failures[0].Worker, "WORKER1").Replace(out.String())
			want := "Job ID: contacts.export on default, succeeded\n" +
				"  Dispatched  2026-10-26 08:14:02.000 UTC\n" +
				"  Finished    2026-10-26 08:14:06.500 UTC, after waiting 500ms and running 120ms\n" +
				"  Attempts    2 of 3\n" +
				"  Worker      WORKER2\n" +
				"  Payload     37 bytes\n" +
				"Attempts:\n" +
				"  1  released   2026-10-26 08:14:05.000 UTC  ran 50ms   worker WORKER1\n" +
				"     smtp: 451 try later\n" +
				"     second line\n" +
				"  2  succeeded  2026-10-26 08:14:06.500 UTC  ran 120ms  worker WORKER2\n"
			if got != want {
				t.Errorf("queue:job printed:\n%s\nwant:\n%s", got, want)
			}
			// A day and a minute on, a worker prunes it as it starts.
			f.clock.Advance(24*time.Hour + time.Minute)
			if _, err := f.q.RunPending(ctx); err != nil {
				t.Fatal(err)
			}
			if _, err := f.q.Inspector().Job(ctx, id); !errors.Is(err, queue.ErrNoJob) {
				t.Fatalf("after keep_succeeded: %v; want the job pruned", err)
			}
		})
	})
	t.Run("not kept", func(t *testing.T) {
		eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
			id, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
			f.q.RunPending(ctx)
			f.clock.Advance(time.Second)
			if stats, err := f.q.RunPending(ctx); stats.Succeeded != 1 || err != nil {
				t.Fatalf("second run: %v, %v", stats, err)
			}
			if _, err := f.q.Inspector().Job(ctx, id); !errors.Is(err, queue.ErrNoJob) ||
				err.Error() != "there is no job with id "+id+": it succeeded and is not kept (queue.keep_succeeded), was deleted, or never was" {
				t.Fatalf("without keep_succeeded: %v; want the job gone, saying why", err)
			}
		})
	})
}

// TestTimingsGivePercentilesByMinute: the workers count how long each
// attempt waited and ran, by minute, queue and type; Timings reads their
// percentiles back, a point per step, filtered by queue and type, and
// refuses a window it does not keep.
func TestTimingsGivePercentilesByMinute(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		for range 20 {
			f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		}
		f.clock.Advance(2 * time.Second) // each job has waited 2 s
		if stats, err := f.q.RunPending(ctx); stats.Succeeded != 20 || err != nil {
			t.Fatalf("RunPending: %v, %v", stats, err)
		}
		f.clock.Advance(2 * time.Minute)
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "c2"})
		f.clock.Advance(30 * time.Second)
		if stats, err := f.q.RunPending(ctx); stats.Succeeded != 1 || err != nil {
			t.Fatalf("RunPending: %v, %v", stats, err)
		}
		within := func(got, want time.Duration) bool { return got >= want*84/100 && got <= want*119/100 }
		points, err := f.q.Inspector().Timings(ctx, queue.TimingsQuery{Window: 5 * time.Minute})
		if err != nil || len(points) != 5 {
			t.Fatalf("Timings = %d points, %v; want 5", len(points), err)
		}
		first, last := points[2], points[4] // the minutes of the two runs: now is 2 min 32 s on
		if !first.Start.Equal(t0.Truncate(time.Minute)) || first.Attempts != 20 || !within(first.WaitP50, 2*time.Second) ||
			!within(first.WaitP95, 2*time.Second) || first.RunP95 <= 0 {
			t.Errorf("the first minute: %+v", first)
		}
		if last.Attempts != 1 || !within(last.WaitP50, 30*time.Second) || points[3].Attempts != 0 || points[3].WaitP50 != 0 {
			t.Errorf("the last minutes: %+v, %+v", points[3], last)
		}
		whole, err := f.q.Inspector().Timings(ctx, queue.TimingsQuery{Window: 5 * time.Minute, Step: 5 * time.Minute, Name: "contacts.export"})
		if err != nil || len(whole) != 1 || whole[0].Attempts != 21 || !within(whole[0].WaitP50, 2*time.Second) || !within(whole[0].WaitP95, 2*time.Second) {
			t.Errorf("the window's contacts.export: %+v, %v; want 21 attempts", whole, err)
		}
		if none, _ := f.q.Inspector().Timings(ctx, queue.TimingsQuery{Window: 5 * time.Minute, Step: 5 * time.Minute, Name: "reports.build"}); len(none) != 1 || none[0].Attempts != 0 {
			t.Errorf("a type that never ran: %+v", none)
		}
		if other, _ := f.q.Inspector().Timings(ctx, queue.TimingsQuery{Window: time.Hour, Queue: "mail"}); len(other) != 60 || other[59].Attempts != 0 {
			t.Errorf("the queue mail: %+v", other)
		}
		for _, bad := range []queue.TimingsQuery{{Window: 25 * time.Hour}, {Window: time.Hour, Step: 90 * time.Second}, {}} {
			if _, err := f.q.Inspector().Timings(ctx, bad); !errors.Is(err, queue.ErrInvalidQuery) {
				t.Errorf("Timings(%+v): %v; want ErrInvalidQuery", bad, err)
			}
		}
	})
}
