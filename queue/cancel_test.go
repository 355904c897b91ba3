package queue_test

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
)

// TestCancelAWaitingJob: it becomes a failed job, "cancelled", that
// queue:retry puts back and DeleteFailed deletes; an id that is no job is
// a clear error.
func TestCancelAWaitingJob(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		id, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.q.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if s, err := f.q.RunPending(ctx); s.Processed != 0 || err != nil {
			t.Fatalf("RunPending after the cancel = %+v, %v", s, err)
		}
		failed := f.failed(t)
		if len(failed) != 1 || failed[0].ID != id || failed[0].Error != "cancelled" || failed[0].Attempts != 0 {
			t.Fatalf("failed jobs = %+v, want the cancelled one", failed)
		}
		for _, bad := range []string{id, "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", "nope"} {
			err := f.q.Inspector().Cancel(ctx, bad)
			if !errors.Is(err, queue.ErrNoJob) || err.Error() != "there is no waiting, delayed or running job with id "+bad+" (queue:failed lists the failed ones)" {
				t.Fatalf("Cancel(%s) = %v", bad, err)
			}
		}
		if n, err := f.q.Inspector().Retry(ctx, id); n != 1 || err != nil {
			t.Fatalf("Retry of the cancelled job = %d, %v", n, err)
		}
		if err := f.q.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		// DeleteFailed deletes it for good; once.
		if err := f.q.Inspector().DeleteFailed(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := f.q.Inspector().DeleteFailed(ctx, id); !errors.Is(err, queue.ErrNoFailedJob) || err.Error() != "there is no failed job with id "+id {
			t.Fatalf("DeleteFailed again: %v", err)
		}
		if len(f.failed(t)) != 0 || f.pending(t, "default") != 0 {
			t.Fatal("the deleted job is still stored")
		}
	})
}

// TestCancelARunningJob: the attempt's context is cancelled with the
// cause ErrCancelled; the handler's error then fails the job as
// "cancelled", its attempts left unused.
func TestCancelARunningJob(t *testing.T) {
	t.Parallel()
	started, causes := make(chan string, 1), make(chan error, 1)
	handler := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, _ ExportContacts, jc queue.JobContext) error {
		started <- jc.JobID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return ctx.Err()
	}))
	eachWith(t, queue.Config{Workers: 1}, map[string]queue.Registration{"contacts.export": handler}, func(t *testing.T, f fixture) {
		if _, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
			t.Fatal(err)
		}
		done := make(chan queue.WorkStats)
		go func() { s, _ := f.q.RunPending(ctx); done <- s }()
		id := <-started
		if err := f.q.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if cause := <-causes; cause != queue.ErrCancelled {
			t.Fatalf("the handler's context ended with the cause %v, want ErrCancelled", cause)
		}
		if s := <-done; s.Failed != 1 || s.Released != 0 {
			t.Fatalf("RunPending = %+v, want one job failed, none released for a retry", s)
		}
		failed := f.failed(t)
		if len(failed) != 1 || failed[0].ID != id || failed[0].Error != "cancelled" || failed[0].Attempts != 1 {
			t.Fatalf("failed jobs = %+v, want the cancelled one after its first attempt", failed)
		}
		if logs := f.logs.String(); !strings.Contains(logs, `"msg":"cancelling a running job"`) || !strings.Contains(logs, `"outcome":"cancelled"`) {
			t.Errorf("the cancel is not logged:\n%s", logs)
		}
		if err := f.q.Inspector().Cancel(ctx, id); !errors.Is(err, queue.ErrNoJob) {
			t.Fatalf("Cancel of the failed job: %v", err)
		}
	})
}

// TestCancelAJobRunningInAnotherProcess: the worker process running the
// job hears of the cancel (on PostgreSQL by its NOTIFY, on SQLite by its
// once-a-second look), cancels the attempt's context with ErrCancelled,
// and the job fails as cancelled.
func TestCancelAJobRunningInAnotherProcess(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Cancellable]())
		id, err := q.Dispatch(ctx, Cancellable{})
		if err != nil {
			t.Fatal(err)
		}
		cmd, _, stdout, stderr := worker(t, url, "queue:work", "--stop-when-empty")
		if line, err := stdout.ReadString('\n'); err != nil || line != "started "+id+" 1\n" {
			t.Fatalf("the worker printed %q, %v\n%s", line, err, stderr)
		}
		if err := q.Inspector().Cancel(ctx, id); err != nil {
			t.Fatal(err)
		}
		if line, err := stdout.ReadString('\n'); err != nil || line != "stopped: job cancelled\n" {
			t.Fatalf("the handler printed %q, %v\n%s", line, err, stderr)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
		if !strings.Contains(stderr.String(), `msg="cancelling a running job" logger=navree.job name=test.cancellable job_id=`+id) ||
			!strings.Contains(stderr.String(), "outcome=cancelled error=cancelled") {
			t.Errorf("the worker logged:\n%s", stderr)
		}
		failed, _, err := q.Inspector().Failed(ctx, queue.FailedQuery{})
		if err != nil || len(failed) != 1 || failed[0].ID != id || failed[0].Error != "cancelled" || failed[0].Attempts != 1 {
			t.Fatalf("failed jobs = %+v, %v", failed, err)
		}
	})
}

// TestCancelCommand: what queue:cancel and queue:forget print, and refuse.
func TestCancelCommand(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		run := func(args ...string) (string, error) {
			return runApp(t, map[string]any{"database.url": url}, args, db.Module(), queue.Module(), contactsModule)
		}
		out, err := run("queue:dispatch", "contacts.export", "{}")
		id := regexp.MustCompile(`[0-9a-f-]{36}`).FindString(out)
		if err != nil || id == "" {
			t.Fatalf("queue:dispatch: %q, %v", out, err)
		}
		if out, err := run("queue:cancel", id); err != nil || out != "Cancelled the job "+id+": it is a failed job now (queue:retry "+id+" runs it after all).\n" {
			t.Fatalf("queue:cancel: %q, %v", out, err)
		}
		if out, err := run("queue:forget", id); err != nil || out != "Deleted the failed job "+id+".\n" {
			t.Fatalf("queue:forget: %q, %v", out, err)
		}
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"queue:forget", id}, "there is no failed job with id " + id},
			{[]string{"queue:forget"}, "queue:forget takes one argument, a failed job's id (queue:failed lists them)"},
			{[]string{"queue:cancel", id}, "there is no waiting, delayed or running job with id " + id + " (queue:failed lists the failed ones)"},
			{[]string{"queue:cancel"}, "queue:cancel takes one argument, a job's id (queue:status counts the jobs; queue:failed lists the failed ones)"},
		} {
			if _, err := run(tt.args...); err == nil || err.Error() != tt.want {
				t.Errorf("%v: %v, want %s", tt.args, err, tt.want)
			}
		}
	})
}

// TestJobLooksUpAJobInEachState: by id, with its payload and options,
// waiting, delayed, running and failed; an id that is no job stored is a
// NoJobError.
func TestJobLooksUpAJobInEachState(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		waiting, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"}) // unique, on sync, 5 attempts, fixed 30 s
		delayed, _ := f.q.Later(ctx, ExportContacts{CompanyID: "later"}, time.Hour)
		running, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "now"})
		f.reserve(t, "default")
		failedID, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "bad"})
		if err := f.q.Inspector().Cancel(ctx, failedID); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			id      string
			state   queue.JobState
			payload string
			backoff string
			unique  bool
		}{
			{waiting, queue.StateWaiting, `{"user_id":"u1"}`, "fixed:30000", true},
			{delayed, queue.StateDelayed, `{"company_id":"later","requested_by":""}`, "exponential:1000:300000", false},
			{running, queue.StateRunning, `{"company_id":"now","requested_by":""}`, "exponential:1000:300000", false},
			{failedID, queue.StateFailed, `{"company_id":"bad","requested_by":""}`, "exponential:1000:300000", false},
		} {
			j, err := f.q.Inspector().Job(ctx, tt.id)
			if err != nil || j.ID != tt.id || j.State != tt.state || string(j.Payload) != tt.payload || j.PayloadBytes != len(tt.payload) ||
				j.Backoff != tt.backoff || j.Unique != tt.unique || j.Timeout != time.Minute {
				t.Errorf("Job(%s) = %+v, %v; want %s with %s, backoff %s, unique %v, timeout 1m", tt.id, j, err, tt.state, tt.payload, tt.backoff, tt.unique)
			}
		}
		if j, _ := f.q.Inspector().Job(ctx, failedID); j.LastError != "cancelled" || j.FailedAt.IsZero() {
			t.Errorf("the failed job's error and time: %+v", j)
		}
		if j, _ := f.q.Inspector().Job(ctx, running); j.ReservedAt.IsZero() || j.Attempts != 1 {
			t.Errorf("the running job's reservation: %+v", j)
		}
		for _, bad := range []string{"0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", "nope"} {
			if _, err := f.q.Inspector().Job(ctx, bad); !errors.Is(err, queue.ErrNoJob) {
				t.Errorf("Job(%s): %v", bad, err)
			}
		}
	})
}

// TestThroughputCountsWhatWorkersFinished: each Work call adds what it
// finished, by queue and minute, when it stops; a later minute is a row
// of its own; a window outside the bounds is refused.
func TestThroughputCountsWhatWorkersFinished(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		f.clock.t = f.clock.Now().Truncate(time.Minute)
		first := f.clock.Now()
		if _, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"default", "sync"}, StopWhenEmpty: true}); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(time.Minute)
		for range 2 {
			f.q.Dispatch(ctx, ExportContacts{CompanyID: "c2"})
		}
		if _, err := f.q.RunPending(ctx); err != nil {
			t.Fatal(err)
		}
		got, err := f.q.Inspector().Throughput(ctx, 10*time.Minute)
		want := []queue.Throughput{
			{Queue: "default", Minute: first.UTC(), Succeeded: 1},
			{Queue: "default", Minute: first.Add(time.Minute).UTC(), Succeeded: 2},
			{Queue: "sync", Minute: first.UTC(), Succeeded: 1},
		}
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("Throughput = %+v, %v\nwant %+v", got, err, want)
		}
		f.clock.Advance(30 * time.Second) // a window of 10 s reaches back into this minute only
		if got, _ := f.q.Inspector().Throughput(ctx, 10*time.Second); len(got) != 1 || got[0].Succeeded != 2 {
			t.Fatalf("Throughput of the current minute = %+v", got)
		}
		if _, err := f.q.Inspector().Throughput(ctx, 25*time.Hour); !errors.Is(err, queue.ErrInvalidQuery) {
			t.Fatalf("Throughput(25h): %v", err)
		}
	})
}
