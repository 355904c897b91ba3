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
			if _, err := f.q.Inspector().Job(ctx, id); !errors.Is(err, queue.ErrNoJob) {
				t.Fatalf("without keep_succeeded: %v; want the job gone", err)
			}
		})
	})
}
