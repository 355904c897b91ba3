package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// Flaky fails its first FailTimes attempts.
type Flaky struct {
	FailTimes int    `json:"fail_times"`
	Secret    string `json:"secret,omitempty"`
}

func (Flaky) JobName() string { return "test.flaky" }

// Panicky panics on every attempt.
type Panicky struct{}

func (Panicky) JobName() string           { return "test.panicky" }
func (Panicky) JobOptions() queue.Options { return queue.Options{MaxAttempts: 1} }
func (Slow) JobName() string              { return "test.slow" }
func (Slow) JobOptions() queue.Options {
	return queue.Options{MaxAttempts: 1, Timeout: 50 * time.Millisecond}
}
func (Stubborn) JobName() string { return "test.stubborn" }
func (Stubborn) JobOptions() queue.Options {
	return queue.Options{MaxAttempts: 1, Timeout: 50 * time.Millisecond}
}
func (Prioritised) JobName() string             { return "test.prioritised" }
func (p Prioritised) JobOptions() queue.Options { return queue.Options{Queue: p.Queue} }

// Slow runs until its timeout cuts it off.
type Slow struct{}

// Stubborn ignores its context when its timeout passes.
type Stubborn struct{}

// Prioritised goes to the queue it names.
type Prioritised struct {
	Queue string `json:"queue"`
	N     int    `json:"n"`
}

// recorder collects what handlers saw.
type recorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, s)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func workerHandlers(rec *recorder, release <-chan struct{}) map[string]queue.Registration {
	return map[string]queue.Registration{
		"test.flaky": queue.HandlerOf[Flaky](queue.HandlerFunc[Flaky](func(ctx context.Context, j Flaky, jc queue.JobContext) error {
			rec.add(fmt.Sprintf("flaky %s attempt %d", jc.Queue, jc.Attempt))
			if jc.Attempt <= j.FailTimes {
				return fmt.Errorf("attempt %d failed", jc.Attempt)
			}
			return nil
		})),
		"test.panicky": queue.HandlerOf[Panicky](queue.HandlerFunc[Panicky](func(context.Context, Panicky, queue.JobContext) error {
			panic("handler bug")
		})),
		"test.slow": queue.HandlerOf[Slow](queue.HandlerFunc[Slow](func(ctx context.Context, _ Slow, _ queue.JobContext) error {
			<-ctx.Done()
			return ctx.Err()
		})),
		"test.stubborn": queue.HandlerOf[Stubborn](queue.HandlerFunc[Stubborn](func(context.Context, Stubborn, queue.JobContext) error {
			<-release
			return nil
		})),
		"test.prioritised": queue.HandlerOf[Prioritised](queue.HandlerFunc[Prioritised](func(ctx context.Context, j Prioritised, jc queue.JobContext) error {
			rec.add(fmt.Sprintf("%s %d", jc.Queue, j.N))
			return nil
		})),
		"contacts.export": queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
			rec.add(fmt.Sprintf("export %s %s %s %d", j.CompanyID, jc.Name, jc.Queue, jc.Attempt))
			return nil
		})),
	}
}

// eachWorker runs f on every backend with the worker test handlers.
func eachWorker(t *testing.T, f func(t *testing.T, fx fixture, rec *recorder)) {
	rec := &recorder{}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	eachWith(t, queue.Config{}, workerHandlers(rec, release), func(t *testing.T, fx fixture) {
		rec.mu.Lock()
		rec.seen = nil
		rec.mu.Unlock()
		f(t, fx, rec)
	})
}

func (f fixture) runPending(t *testing.T) queue.WorkStats {
	t.Helper()
	stats, err := f.q.RunPending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return stats
}

// counts are the counts of a queue.WorkStats, without its Errors, to
// compare.
type counts struct{ Processed, Succeeded, Released, Failed, Lost int }

func counted(s queue.WorkStats) counts {
	return counts{s.Processed, s.Succeeded, s.Released, s.Failed, s.Lost}
}

func TestRunPendingRunsWhatIsAvailable(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		first, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "c2"})
		f.q.Later(ctx, ExportContacts{CompanyID: "later"}, time.Minute)
		f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"}) // queue "sync" is not a worker queue
		stats := f.runPending(t)
		if counted(stats) != (counts{Processed: 2, Succeeded: 2}) {
			t.Fatalf("stats %+v", stats)
		}
		if got := fmt.Sprint(rec.list()); got != "[export c1 contacts.export default 1 export c2 contacts.export default 1]" {
			t.Fatalf("handlers saw %s", got)
		}
		if f.pending(t, "default") != 1 || f.pending(t, "sync") != 1 {
			t.Fatal("the delayed job and the job of another queue should stay queued")
		}
		if stats := f.runPending(t); stats.Processed != 0 {
			t.Fatalf("a second RunPending ran %+v", stats)
		}
		f.clock.Advance(time.Minute)
		if stats := f.runPending(t); stats.Succeeded != 1 {
			t.Fatalf("after the delay RunPending ran %+v", stats)
		}
		stats, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"sync"}, StopWhenEmpty: true})
		if err != nil || stats.Succeeded != 1 {
			t.Fatalf("Work on sync: %+v, %v", stats, err)
		}
		if strings.Contains(f.logs.String(), first) == false {
			t.Fatal("no log line names the job")
		}
	})
}

func TestQueuesRunInPriorityOrder(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		for i, q := range []string{"default", "low", "default", "high", "high"} {
			f.q.Dispatch(ctx, Prioritised{Queue: q, N: i})
		}
		stats, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"high", "default", "low"}, Workers: 1, StopWhenEmpty: true})
		if err != nil || stats.Succeeded != 5 {
			t.Fatalf("%+v, %v", stats, err)
		}
		if got := fmt.Sprint(rec.list()); got != "[high 3 high 4 default 0 default 2 low 1]" {
			t.Fatalf("ran %s, want high first, then default, then low, each oldest first", got)
		}
	})
}

func TestRetriesBackOffThenFail(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		id, _ := f.q.Dispatch(ctx, Flaky{FailTimes: 9}) // default options: 3 attempts, 1 s then 2 s
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 1, Released: 1}) {
			t.Fatalf("attempt 1: %+v", stats)
		}
		f.clock.Advance(999 * time.Millisecond)
		if stats := f.runPending(t); stats.Processed != 0 {
			t.Fatal("retried before the 1 s backoff")
		}
		f.clock.Advance(time.Millisecond)
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 1, Released: 1}) {
			t.Fatalf("attempt 2: %+v", stats)
		}
		f.clock.Advance(1999 * time.Millisecond)
		if stats := f.runPending(t); stats.Processed != 0 {
			t.Fatal("retried before the 2 s backoff")
		}
		f.clock.Advance(time.Millisecond)
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 1, Failed: 1}) {
			t.Fatalf("attempt 3: %+v", stats)
		}
		if f.pending(t, "default") != 0 {
			t.Fatal("the failed job is still in jobs")
		}
		failed := f.failed(t)
		if len(failed) != 1 || failed[0].ID != id || failed[0].Attempts != 3 || failed[0].Error != "attempt 3 failed" {
			t.Fatalf("failed jobs %+v, want the job with the last attempt's error", failed)
		}
		logs := f.logs.String()
		for _, want := range []string{
			`"outcome":"released","retry_in_secs":1,"error":"attempt 1 failed"`,
			`"outcome":"released","retry_in_secs":2,"error":"attempt 2 failed"`,
			`"outcome":"failed","error":"attempt 3 failed"`,
		} {
			if !strings.Contains(logs, want) {
				t.Errorf("logs lack %s:\n%s", want, logs)
			}
		}

		// A job that succeeds on a retry is removed.
		f.q.Dispatch(ctx, Flaky{FailTimes: 1})
		f.runPending(t)
		f.clock.Advance(time.Second)
		if stats := f.runPending(t); stats.Succeeded != 1 || f.pending(t, "default") != 0 {
			t.Fatalf("the retry did not succeed and leave: %+v", stats)
		}
	})
}

func TestPanicsAndTimeoutsAreFailedAttempts(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		f.q.Dispatch(ctx, Panicky{})
		f.q.Dispatch(ctx, Slow{})
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 2, Failed: 2}) {
			t.Fatalf("stats %+v", stats)
		}
		failed := f.failed(t)
		errs := map[string]string{}
		for _, j := range failed {
			errs[j.Name] = j.Error
		}
		if errs["test.panicky"] != "panic: handler bug" || errs["test.slow"] != "timed out after 50ms: context deadline exceeded" {
			t.Fatalf("errors %q", errs)
		}
		if logs := f.logs.String(); !strings.Contains(logs, `"stack":"goroutine`) || !strings.Contains(logs, "worker_test.go") {
			t.Fatalf("the panic's stack is not in the log:\n%s", logs)
		}
		// The worker survived: it still runs jobs.
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "after"})
		if stats := f.runPending(t); stats.Succeeded != 1 {
			t.Fatalf("after a panic: %+v", stats)
		}
	})
}

// TestAFailedAttemptShowsItsError: the stats of a run keep each failed
// attempt's error, the first MaxWorkErrors of them, and print them after
// the summary, so that a test that prints them says why a job failed.
func TestAFailedAttemptShowsItsError(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		flaky, _ := f.q.Dispatch(ctx, Flaky{FailTimes: 9})
		panicky, _ := f.q.Dispatch(ctx, Panicky{})
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		stats := f.runPending(t)
		want := []queue.AttemptError{
			{JobID: flaky, Name: "test.flaky", Queue: "default", Attempt: 1, MaxAttempts: 3, Retried: true, Error: "attempt 1 failed"},
			{JobID: panicky, Name: "test.panicky", Queue: "default", Attempt: 1, MaxAttempts: 1, Error: "panic: handler bug"},
		}
		if !slices.Equal(stats.Errors, want) {
			t.Fatalf("Errors = %+v\nwant %+v", stats.Errors, want)
		}
		if got := fmt.Sprintf("%v", stats); got != "Processed 3 job attempt(s): 1 succeeded, 1 released for retry, 1 failed.\n"+
			"test.flaky job "+flaky+", attempt 1 of 3, released for a retry: attempt 1 failed\n"+
			"test.panicky job "+panicky+", attempt 1 of 1, failed: panic: handler bug" {
			t.Fatalf("the stats print as:\n%s", got)
		}

		// A run keeps the first MaxWorkErrors, and says there were more.
		for range queue.MaxWorkErrors + 2 {
			f.q.Dispatch(ctx, Panicky{})
		}
		stats = f.runPending(t)
		lines := strings.Split(stats.String(), "\n")
		if len(stats.Errors) != queue.MaxWorkErrors || stats.Failed != queue.MaxWorkErrors+2 || len(lines) != queue.MaxWorkErrors+2 ||
			lines[len(lines)-1] != "(the first 10 failed attempts; the log has every one)" {
			t.Fatalf("%d errors kept of %d failures, printed:\n%s", len(stats.Errors), stats.Failed, stats)
		}
	})
}

func TestAHandlerThatIgnoresItsTimeoutIsAbandoned(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		f.q.Dispatch(ctx, Stubborn{})
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "next"})
		// One handler: the job after the abandoned one runs in the slot
		// that took its place.
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 2, Succeeded: 1, Failed: 1}) {
			t.Fatalf("stats %+v", stats)
		}
		if seen := rec.list(); len(seen) != 1 || !strings.Contains(seen[0], "next") {
			t.Fatalf("handlers saw %q, want the export after the stubborn job", seen)
		}
		failed := f.failed(t)
		if len(failed) != 1 || failed[0].Error != "timed out after 50ms" {
			t.Fatalf("failed %+v", failed)
		}
		if !strings.Contains(f.logs.String(), "still running after its timeout; abandoned") {
			t.Fatal("the abandoned handler was not logged")
		}
	})
}

func TestUnknownTypesAndBadPayloadsFailAtOnce(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		now := t0.UnixMilli()
		store := func(id, name, payload string) {
			j := &driver.Job{ID: id, Queue: "default", Name: name, Payload: []byte(payload), MaxAttempts: 5,
				Backoff: backoff.Fixed(0), TimeoutMs: 1000, AvailableAt: now, CreatedAt: now}
			if _, _, err := f.store.Insert(ctx, nil, j); err != nil {
				t.Fatal(err)
			}
		}
		store("01900000-0000-7000-8000-000000000001", "gone.job", `{}`)
		store("01900000-0000-7000-8000-000000000002", "contacts.export", `{"company_id": 5}`)
		store("01900000-0000-7000-8000-000000000003", "contacts.export", `{not json`)
		if stats := f.runPending(t); counted(stats) != (counts{Processed: 3, Failed: 3}) {
			t.Fatalf("stats %+v: want each failed at once, without retries", stats)
		}
		failed := f.failed(t)
		want := []string{
			`no handler for job type "gone.job" in this binary`,
			"the payload of job contacts.export does not decode: json: cannot unmarshal number into Go struct field ExportContacts.company_id of type string",
			"the payload of job contacts.export does not decode: invalid character 'n' looking for beginning of object key string",
		}
		for i, j := range failed {
			if j.Attempts != 1 || j.Error != want[i] {
				t.Errorf("failed job %d: attempts %d, error %q; want 1, %q", i, j.Attempts, j.Error, want[i])
			}
		}
	})
}

func TestOneLogRecordPerAttemptWithoutPayloads(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		const marker = "MARKER-7f3a-do-not-log"
		id, _ := f.q.Dispatch(ctx, Flaky{FailTimes: 1, Secret: marker})
		f.runPending(t)
		f.clock.Advance(time.Second)
		f.runPending(t)
		logs := f.logs.String()
		if strings.Contains(logs, marker) {
			t.Fatalf("a payload reached the log:\n%s", logs)
		}
		lines := strings.Split(strings.TrimSpace(logs), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d log records for 2 attempts:\n%s", len(lines), logs)
		}
		for i, line := range lines {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			want := map[string]any{"logger": "navree.job", "name": "test.flaky", "job_id": id, "queue": "default", "attempt": float64(i + 1)}
			want["outcome"] = []string{"released", "succeeded"}[i]
			for k, v := range want {
				if rec[k] != v {
					t.Errorf("record %d: %s = %v, want %v", i, k, rec[k], v)
				}
			}
			if _, ok := rec["duration_ms"].(float64); !ok {
				t.Errorf("record %d has no duration_ms", i)
			}
			if _, hasRetry := rec["retry_in_secs"]; hasRetry != (i == 0) {
				t.Errorf("record %d: retry_in_secs present = %v", i, hasRetry)
			}
		}
	})
}

// TestATakenOverJobIsFenced takes a job over while its first handler still
// runs: the first attempt's late success changes nothing, and the second
// attempt's outcome is the one recorded.
func TestATakenOverJobIsFenced(t *testing.T) {
	t.Parallel()
	firstRunning := make(chan struct{})
	finishFirst := make(chan struct{})
	handler := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
		if jc.Attempt == 1 {
			close(firstRunning)
			<-finishFirst
			return nil // a late success
		}
		return errors.New("second attempt failed")
	}))
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			firstRunning, finishFirst = make(chan struct{}), make(chan struct{})
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"contacts.export": handler})
			id, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
			first := make(chan queue.WorkStats)
			go func() { stats, _ := f.q.RunPending(ctx); first <- stats }()
			<-firstRunning

			f.clock.Advance(60*time.Second + 30*time.Second) // the job's timeout plus 30 s
			if stats := f.runPending(t); counted(stats) != (counts{Processed: 1, Released: 1}) {
				t.Fatalf("the takeover ran %+v", stats)
			}
			close(finishFirst)
			// The first worker kept no outcome, and says so.
			if stats := <-first; counted(stats) != (counts{Processed: 1, Lost: 1}) ||
				stats.String() != "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 0 failed, 1 lost its reservation." {
				t.Fatalf("the fenced-out worker counted %+v: %s", stats, stats)
			}

			j := f.reserve(t, "default")
			if j != nil {
				t.Fatal("the job was available before its backoff")
			}
			f.clock.Advance(2 * time.Second)
			j = f.reserve(t, "default")
			if j == nil || j.ID != id || j.Attempts != 3 || j.LastError != "second attempt failed" {
				t.Fatalf("the job is %+v: want the second attempt's release recorded", j)
			}
			if !strings.Contains(f.logs.String(), `"reservation_lost":true`) {
				t.Fatalf("the fenced-out attempt was not logged as such:\n%s", f.logs)
			}
		})
	}
}

func TestWorkLimits(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		for i := range 5 {
			f.q.Dispatch(ctx, ExportContacts{CompanyID: fmt.Sprint(i)})
		}
		if stats, _ := f.q.Work(ctx, queue.WorkOptions{Once: true}); stats.Processed != 1 {
			t.Fatalf("Once ran %+v", stats)
		}
		if stats, _ := f.q.Work(ctx, queue.WorkOptions{MaxJobs: 2, Workers: 3}); stats.Processed != 2 {
			t.Fatalf("MaxJobs 2 ran %+v", stats)
		}
		if stats, _ := f.q.Work(ctx, queue.WorkOptions{StopWhenEmpty: true, Workers: 2}); stats.Processed != 2 {
			t.Fatalf("StopWhenEmpty ran %+v", stats)
		}
		if stats, err := f.q.Work(ctx, queue.WorkOptions{MaxTime: 20 * time.Millisecond}); stats.Processed != 0 || err != nil {
			t.Fatalf("MaxTime on an empty queue: %+v, %v", stats, err)
		}
		if stats, _ := f.q.Work(ctx, queue.WorkOptions{Once: true}); stats.Processed != 0 {
			t.Fatalf("Once on an empty queue ran %+v", stats)
		}
		if _, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{""}}); err == nil {
			t.Fatal("Work accepted an empty queue name")
		}
	})
}

// reporting is a handler of ExportContacts that sends each job's company
// to ran.
func reporting(ran chan<- string) queue.Registration {
	return queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
		ran <- j.CompanyID
		return nil
	}))
}

// TestAnIdleWorkerWakesAtADispatch: with an hour between polls, only the
// dispatch's signal can start the job.
func TestAnIdleWorkerWakesAtADispatch(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 1)
	handler := reporting(ran)
	eachWith(t, queue.Config{PollIntervalMs: 3_600_000, Workers: 2}, map[string]queue.Registration{"contacts.export": handler}, func(t *testing.T, f fixture) {
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan queue.WorkStats)
		go func() { stats, _ := f.q.Work(workCtx, queue.WorkOptions{}); done <- stats }()
		// Once idle (nothing to take), the loops wait for the next poll, an hour away.
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "woken"})
		if got := <-ran; got != "woken" {
			t.Fatal(got)
		}
		err := f.db.Transaction(ctx, func(ctx context.Context) error {
			_, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "after commit"})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := <-ran; got != "after commit" {
			t.Fatal(got)
		}
		stop()
		if stats := <-done; stats.Succeeded != 2 {
			t.Fatalf("stats %+v", stats)
		}
	})
}

// TestAJobBehindTheCursorRunsAtTheNextFullSearch: a database worker
// searches from a second behind the last job it reserved; a job stored
// with an older available_at (its transaction committed late, or its
// process's clock lags) is not lost: the full search, once a second by the
// queue's clock, takes it.
func TestAJobBehindTheCursorRunsAtTheNextFullSearch(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 1)
	handler := reporting(ran)
	eachWith(t, queue.Config{PollIntervalMs: 5, Workers: 1}, map[string]queue.Registration{"contacts.export": handler}, func(t *testing.T, f fixture) {
		workCtx, stop := context.WithCancel(ctx)
		defer stop()
		go f.q.Work(workCtx, queue.WorkOptions{})
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "first"})
		if got := <-ran; got != "first" {
			t.Fatal(got)
		}
		now := f.clock.Now().UnixMilli()
		late := &driver.Job{ID: "01900000-0000-7000-8000-000000000001", Queue: "default", Name: "contacts.export",
			Payload: []byte(`{"company_id":"late"}`), MaxAttempts: 3, Backoff: backoff.Fixed(0), TimeoutMs: 1000, AvailableAt: now - 5000, CreatedAt: now}
		if _, _, err := f.store.Insert(ctx, nil, late); err != nil {
			t.Fatal(err)
		}
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "marker"})
		want := []string{"marker", "late"} // the memory driver has no cursor: the older job first
		if f.driver == queue.Memory {
			want = []string{"late", "marker"}
		}
		if got := <-ran; got != want[0] {
			t.Fatalf("ran %q first, want %q", got, want[0])
		}
		f.clock.Advance(time.Second)
		if got := <-ran; got != want[1] {
			t.Fatalf("ran %q, want %q", got, want[1])
		}
	})
}

// TestAWorkerThatStopsWhenEmptySearchesInFullFirst: a job stored behind
// the worker's cursor (its transaction committed late) is not left
// behind by a worker told to stop once the queue is empty: its last
// search before stopping is a full one.
func TestAWorkerThatStopsWhenEmptySearchesInFullFirst(t *testing.T) {
	t.Parallel()
	var store driver.Driver
	var clk *clock
	late := func() error {
		now := clk.Now().UnixMilli()
		_, _, err := store.Insert(ctx, nil, &driver.Job{ID: "01900000-0000-7000-8000-000000000002", Queue: "default", Name: "contacts.export",
			Payload: []byte(`{"company_id":"late"}`), MaxAttempts: 3, Backoff: backoff.Fixed(0), TimeoutMs: 1000, AvailableAt: now - 5000, CreatedAt: now})
		return err
	}
	var ran []string
	handler := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
		ran = append(ran, j.CompanyID)
		if j.CompanyID == "first" { // stored while the worker runs, behind its cursor
			return late()
		}
		return nil
	}))
	eachWith(t, queue.Config{Workers: 1}, map[string]queue.Registration{"contacts.export": handler}, func(t *testing.T, f fixture) {
		store, clk, ran = f.store, f.clock, nil
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "first"})
		stats, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"default"}, StopWhenEmpty: true})
		if err != nil || stats.Succeeded != 2 || !slices.Equal(ran, []string{"first", "late"}) {
			t.Fatalf("ran %v (%s, %v); want the late job run before the worker stopped", ran, stats, err)
		}
		if n := f.pending(t, "default"); n != 0 {
			t.Fatalf("%d jobs left waiting", n)
		}
	})
}

// TestARunningWorkerTakesOverAStaleReservation: a worker that is already
// running finds a job whose worker died once its reservation goes stale
// (its prober looks for such reservations once a second, beside the
// fetcher), not only when it starts.
func TestARunningWorkerTakesOverAStaleReservation(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 1)
	eachWith(t, queue.Config{PollIntervalMs: 5, Workers: 1}, map[string]queue.Registration{"contacts.export": reporting(ran)}, func(t *testing.T, f fixture) {
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "orphan"})
		if f.reserve(t, "default") == nil { // by a worker that then died
			t.Fatal("nothing to reserve")
		}
		from, stop := searchingWorker(f, nil)
		defer stop()
		<-from // the worker's first sweep is over: the reservation was not stale then
		go func() {
			for range from { // closed by stop
			}
		}()
		select {
		case got := <-ran:
			t.Fatalf("ran %q before the reservation went stale", got)
		default:
		}
		f.clock.Advance(25 * time.Hour) // past any job's timeout plus 30 s, and past a day
		select {
		case got := <-ran:
			if got != "orphan" {
				t.Fatalf("ran %q, want the orphan", got)
			}
		case <-time.After(30 * time.Second): // a bound on the failure only
			t.Fatal("the stale reservation was not taken over")
		}
	})
}

// searches records where each reservation of a worker started.
type searches struct {
	driver.Driver
	from chan int64
}

func (s searches) Reserve(ctx context.Context, r driver.Reservation) ([]*driver.Job, error) {
	s.from <- r.From
	return s.Driver.Reserve(ctx, r)
}

// searchingWorker starts a worker on f's default queue whose store
// (searches, or what store makes of it) sends where each of its searches
// starts; each search waits for its value to be received. stop ends the
// worker, receiving its last searches; the channel is closed then.
func searchingWorker(f fixture, store func(searches) driver.Driver) (from <-chan int64, stop func()) {
	s := searches{from: make(chan int64)}
	queue.WrapStore(f.q, func(d driver.Driver) driver.Driver {
		s.Driver = d
		if store == nil {
			return s
		}
		return store(s)
	})
	workCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.q.Work(workCtx, queue.WorkOptions{Queues: []string{"default"}})
	}()
	out := make(chan int64)
	go func() {
		defer close(out)
		for {
			select {
			case v := <-s.from:
				select {
				case out <- v:
				case <-done:
				}
			case <-done:
				return
			}
		}
	}()
	return out, func() {
		cancel()
		for range out { // the relay closes it once the worker has stopped
		}
	}
}

// TestASearchThatFindsTheQueueEmptyMovesTheCursor: once a search has taken
// every job due, the next starts a second before it, not from the oldest
// row (on PostgreSQL, past the dead index entries of the jobs already
// done). Time passing brings no full search by itself: only a job found
// behind the cursor does.
func TestASearchThatFindsTheQueueEmptyMovesTheCursor(t *testing.T) {
	t.Parallel()
	eachWith(t, queue.Config{PollIntervalMs: 1, Workers: 1}, nil, func(t *testing.T, f fixture) {
		searches, stop := searchingWorker(f, nil)
		defer stop()
		if from := <-searches; from != 0 {
			t.Fatalf("the first search started at %d, want a full search (0)", from)
		}
		if from := <-searches; from != t0.UnixMilli()-1000 {
			t.Fatalf("a search after the queue was found empty started at %d, want %d", from, t0.UnixMilli()-1000)
		}
		for range 2 {
			f.clock.Advance(time.Second)
			now := f.clock.Now().UnixMilli()
			// The search under way when the clock moved started from the
			// cursor before; the one after it, from the new one.
			for from := range searches {
				if from == 0 || from > now-1000 {
					t.Fatalf("a search %s after the start started at %d, want a second or more before %d", time.UnixMilli(now).Sub(t0), from, now)
				}
				if from == now-1000 {
					break
				}
			}
		}
	})
}

// blindLooks is a store whose read-only looks fail, as on a connection
// that broke.
type blindLooks struct{ searches }

func (blindLooks) Behind(context.Context, string, int64, int64, int64, *driver.Names) (bool, error) {
	return false, errors.New("connection reset")
}

func (blindLooks) Stale(context.Context, string, int64) (bool, error) {
	return false, errors.New("connection reset")
}

// TestALookThatFailsCountsAsFound: when the prober cannot look behind the
// cursor, the worker searches the queue in full rather than trust it
// (where its own error, if it lasts, is reported).
func TestALookThatFailsCountsAsFound(t *testing.T) {
	t.Parallel()
	eachWith(t, queue.Config{PollIntervalMs: 1, Workers: 1}, nil, func(t *testing.T, f fixture) {
		searches, stop := searchingWorker(f, func(s searches) driver.Driver { return blindLooks{s} })
		defer stop()
		if from := <-searches; from != 0 {
			t.Fatalf("the first search started at %d, want 0", from)
		}
		if from := <-searches; from == 0 {
			t.Fatal("the second search was a full one before any look")
		}
		f.clock.Advance(time.Second)
		for range 1000 { // the look fails within a few searches
			if from := <-searches; from == 0 {
				return
			}
		}
		t.Fatal("no full search after the look failed")
	})
}

// TestStoppingWaitsForRunningJobs: cancelling Work's context takes no new
// job, and the running one finishes.
func TestStoppingWaitsForRunningJobs(t *testing.T) {
	t.Parallel()
	running := make(chan struct{}, 1)
	finish := make(chan struct{})
	handler := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
		running <- struct{}{}
		<-finish
		return ctx.Err() // nil: stopping the worker does not cancel a job
	}))
	eachWith(t, queue.Config{Workers: 1}, map[string]queue.Registration{"contacts.export": handler}, func(t *testing.T, f fixture) {
		finish = make(chan struct{})
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "1"})
		f.q.Dispatch(ctx, ExportContacts{CompanyID: "2"})
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan queue.WorkStats)
		go func() { stats, _ := f.q.Work(workCtx, queue.WorkOptions{}); done <- stats }()
		<-running
		stop()
		close(finish)
		if stats := <-done; counted(stats) != (counts{Processed: 1, Succeeded: 1}) {
			t.Fatalf("stats %+v: want the running job finished and no new one taken", stats)
		}
		if f.pending(t, "default") != 1 {
			t.Fatal("the second job should still wait")
		}
	})
}

// RetryNow fails its first attempt and is retried at once.
type RetryNow struct {
	Kind string `json:"kind"` // quick, retry or slow
}

func (RetryNow) JobName() string           { return "test.retry_now" }
func (RetryNow) JobOptions() queue.Options { return queue.Options{Backoff: queue.Fixed(0)} }

// TestStopWhenEmptyWaitsForImmediateRetries: while one loop is busy with a
// slow job, jobs put back for an immediate retry still run before the
// other loops call the queue empty. (A loop that read the real clock
// before the retry was stored used to miss it and stop, leaving it to the
// slow loop.)
func TestStopWhenEmptyWaitsForImmediateRetries(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			var mu sync.Mutex
			var retried int
			var allRetried chan struct{}
			handler := queue.HandlerOf[RetryNow](queue.HandlerFunc[RetryNow](func(ctx context.Context, j RetryNow, jc queue.JobContext) error {
				switch {
				case j.Kind == "quick":
					return nil
				case j.Kind == "slow":
					select {
					case <-allRetried:
						return nil
					case <-time.After(5 * time.Second):
						return errors.New("the retries waited for the slow job")
					}
				case jc.Attempt == 1:
					return errors.New("first attempt")
				}
				mu.Lock()
				defer mu.Unlock()
				if retried++; retried == 2 {
					close(allRetried)
				}
				return nil
			}))
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, nil)
			// The real clock: the race is between loops reading it.
			q, err := queue.New(queue.Params{Config: queue.Config{Driver: b.driver}, DB: f.db, Clock: app.SystemClock{},
				Logger: slogDiscard()})
			if err == nil {
				err = q.Handle(handler)
			}
			if err != nil {
				t.Fatal(err)
			}
			for round := range 10 {
				retried, allRetried = 0, make(chan struct{})
				for _, kind := range []string{"quick", "quick", "quick", "retry", "retry", "slow"} {
					q.Dispatch(ctx, RetryNow{Kind: kind})
				}
				stats, err := q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true})
				if err != nil || counted(stats) != (counts{Processed: 8, Succeeded: 6, Released: 2}) {
					t.Fatalf("round %d: %+v, %v", round, stats, err)
				}
			}
		})
	}
}

// TestWorkersHearDispatchesOfOtherProcesses: on PostgreSQL a worker whose
// next poll is an hour away runs a job dispatched by another queue (as
// another process would) at once, and still does after its listening
// connection is killed and comes back.
func TestWorkersHearDispatchesOfOtherProcesses(t *testing.T) {
	t.Parallel()
	url := migratedPostgres(t)
	workerURL, name := named(t, url)
	ran := make(chan string, 1)
	handler := reporting(ran)
	worker := newFixture(t, queue.Database, workerURL, queue.Config{PollIntervalMs: 3_600_000}, map[string]queue.Registration{"contacts.export": handler})
	other := newFixture(t, queue.Database, url, queue.Config{}, nil)
	listening := make(chan struct{}, 4)
	queue.OnListen(worker.q, func() { listening <- struct{}{} })
	// The listener's connection is its own, outside the pool: a worker
	// whose pool holds one connection still reserves and completes jobs.
	worker.db.SetMaxOpenConns(1)

	workCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { _, err := worker.q.Work(workCtx, queue.WorkOptions{}); done <- err }()
	<-listening
	other.q.Dispatch(ctx, ExportContacts{CompanyID: "first"})
	select {
	case got := <-ran:
		if got != "first" {
			t.Fatal(got)
		}
	case <-time.After(30 * time.Second): // a bound on the failure only
		t.Fatal("a worker with a pool of one connection ran nothing: the listener holds it")
	}

	// Kill the listening connection: the worker reconnects and listens again.
	var killed int
	if err := other.db.QueryRowContext(ctx, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = ? AND query = 'LISTEN navree_jobs' AND state = 'idle'", name).Scan(&killed); err != nil || killed != 1 {
		t.Fatalf("terminated %d listening connections (%v)", killed, err)
	}
	<-listening
	other.q.Dispatch(ctx, ExportContacts{CompanyID: "after reconnect"})
	if got := <-ran; got != "after reconnect" {
		t.Fatal(got)
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(worker.logs.String(), "polling until it reconnects") {
		t.Fatalf("the lost connection was not logged:\n%s", worker.logs)
	}
}

// TestAllStaleJobsAreTakenOverAtOnce: a dead worker's many jobs come back
// together, not one a second.
func TestAllStaleJobsAreTakenOverAtOnce(t *testing.T) {
	t.Parallel()
	eachWorker(t, func(t *testing.T, f fixture, rec *recorder) {
		for i := range 5 {
			f.q.Dispatch(ctx, ExportContacts{CompanyID: fmt.Sprint(i)})
		}
		// A worker reserves them all, then dies.
		if jobs, err := f.store.Reserve(ctx, driver.Reservation{Queue: "default", Now: f.clock.Now().UnixMilli(), At: f.clock.Now().UnixMilli(), Limit: 10}); err != nil || len(jobs) != 5 {
			t.Fatalf("reserved %d, %v", len(jobs), err)
		}
		f.clock.Advance(91 * time.Second)
		stats, err := f.q.Work(ctx, queue.WorkOptions{Workers: 5, StopWhenEmpty: true})
		if err != nil || stats.Succeeded != 5 {
			t.Fatalf("%+v, %v", stats, err)
		}
		if n := len(rec.list()); n != 5 {
			t.Fatalf("%d jobs ran", n)
		}
	})
}

// calls records the completions and syncs a worker asks of its store.
type calls struct {
	driver.Driver
	recorder
}

func (c *calls) Complete(ctx context.Context, done []driver.Attempt, keep bool) ([]string, error) {
	c.add("complete")
	return c.Driver.Complete(ctx, done, keep)
}

func (c *calls) Sync(ctx context.Context) error {
	c.add("sync")
	return c.Driver.Sync(ctx)
}

// TestAStoppingWorkerSyncsItsCompletions: completions may commit without
// waiting for the disk, so when Work returns it has made them durable;
// a worker that completed nothing has nothing to sync.
func TestAStoppingWorkerSyncsItsCompletions(t *testing.T) {
	t.Parallel()
	eachWith(t, queue.Config{}, nil, func(t *testing.T, f fixture) {
		c := &calls{}
		queue.WrapStore(f.q, func(d driver.Driver) driver.Driver { c.Driver = d; return c })
		f.runPending(t)
		if log := c.list(); len(log) != 0 {
			t.Fatalf("a worker that ran nothing asked %v of its store", log)
		}
		for range 3 {
			if _, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "acme"}); err != nil {
				t.Fatal(err)
			}
		}
		if stats := f.runPending(t); stats.Succeeded != 3 {
			t.Fatalf("stats %+v", stats)
		}
		log := c.list()
		if n := len(log); n < 2 || log[n-1] != "sync" || log[n-2] != "complete" || slices.Index(log, "sync") != n-1 {
			t.Fatalf("the worker asked %v of its store, want its completions then one sync", log)
		}
	})
}

// reserves counts a worker's searches for jobs, and closes searched once
// the first is over.
type reserves struct {
	driver.Driver
	n        atomic.Int64
	searched chan struct{}
}

func (r *reserves) Reserve(ctx context.Context, res driver.Reservation) ([]*driver.Job, error) {
	jobs, err := r.Driver.Reserve(ctx, res)
	if r.n.Add(1) == 1 {
		close(r.searched)
	}
	return jobs, err
}

// TestAFreedHandlerDoesNotSearchADrainedQueue: once a search has taken
// every job due (fewer than it asked for), a handler that comes free makes
// no job due; the worker waits for the next dispatch instead of searching
// again (at low load that search found nothing, once per job).
func TestAFreedHandlerDoesNotSearchADrainedQueue(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 2)
	// Three handlers, so that no search fills its limit with one job: a
	// handler reports before its slot is free, and a search that takes as
	// many jobs as it asked for must look again for more.
	eachWith(t, queue.Config{PollIntervalMs: 3_600_000, Workers: 3}, map[string]queue.Registration{"contacts.export": reporting(ran)}, func(t *testing.T, f fixture) {
		r := &reserves{searched: make(chan struct{})}
		queue.WrapStore(f.q, func(d driver.Driver) driver.Driver { r.Driver = d; return r })
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan queue.WorkStats)
		go func() { stats, _ := f.q.Work(workCtx, queue.WorkOptions{Queues: []string{"default"}}); done <- stats }()
		<-r.searched // the worker's first search, of an empty queue
		for _, company := range []string{"a", "b"} {
			f.q.Dispatch(ctx, ExportContacts{CompanyID: company})
			if got := <-ran; got != company {
				t.Fatalf("ran %q, want %q", got, company)
			}
		}
		stop()
		if stats := <-done; stats.Succeeded != 2 {
			t.Fatalf("%+v", stats)
		}
		// The first search (the queue empty), then one per dispatch.
		if n := r.n.Load(); n != 3 {
			t.Fatalf("%d searches, want 3", n)
		}
	})
}
