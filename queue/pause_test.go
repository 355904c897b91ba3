package queue_test

import (
	"context"
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// exportOn is the job ExportContacts of company on queue.
func exportOn(queueName, company string) queue.Envelope {
	e, _ := queue.EnvelopeOf(ExportContacts{CompanyID: company})
	e.Options.Queue = queueName
	return e
}

// TestAPausedQueueKeepsItsJobsUntilResumed: a running worker takes no job
// of a paused queue, though it takes those of the others in the same
// search, and takes them once the queue is resumed; only a dispatch, the
// pause or the resume can wake it (an hour between polls). Stats shows the
// pause.
func TestAPausedQueueKeepsItsJobsUntilResumed(t *testing.T) {
	t.Parallel()
	ran := make(chan string, 4)
	eachWith(t, queue.Config{PollIntervalMs: 3_600_000, Workers: 2}, map[string]queue.Registration{"contacts.export": reporting(ran)}, func(t *testing.T, f fixture) {
		if err := f.q.Inspector().Pause(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Push(ctx, exportOn("default", "paused")); err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Push(ctx, exportOn("high", "high")); err != nil {
			t.Fatal(err)
		}
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan queue.WorkStats)
		go func() {
			stats, _ := f.q.Work(workCtx, queue.WorkOptions{Queues: []string{"high", "default"}})
			done <- stats
		}()
		// One search takes the job of high, and would take the other with
		// it: the worker has two free handlers.
		if got := <-ran; got != "high" {
			t.Fatalf("ran %q first, want the job of high", got)
		}
		stats, err := f.q.Inspector().Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(stats, func(s queue.Stats) bool { return s.Queue == "default" }); i < 0 || !stats[i].Paused || stats[i].Waiting != 1 || stats[i].Running != 0 {
			t.Fatalf("Stats = %+v, want default paused with its job waiting", stats)
		}
		if err := f.q.Inspector().Resume(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		if got := <-ran; got != "paused" {
			t.Fatalf("after the resume ran %q, want the job of default", got)
		}
		stop()
		if s := <-done; s.Succeeded != 2 {
			t.Fatalf("%+v", s)
		}
		if logs := f.logs.String(); !strings.Contains(logs, `"msg":"queue paused","logger":"navree.job","queue":"default"`) ||
			!strings.Contains(logs, `"msg":"queue resumed","logger":"navree.job","queue":"default"`) {
			t.Errorf("the worker did not log the pause and the resume:\n%s", logs)
		}
	})
}

// TestPauseAll: pausing every queue stops every queue, those without
// jobs yet too; one queue cannot be resumed alone meanwhile; resuming all
// resumes those paused one by one too. Stats lists a paused queue with no
// jobs.
func TestPauseAll(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		if err := f.q.Inspector().Pause(ctx, "mail"); err != nil {
			t.Fatal(err)
		}
		stats, err := f.q.Inspector().Stats(ctx)
		if err != nil || !reflect.DeepEqual(stats, []queue.Stats{{Queue: "mail", Paused: true}}) {
			t.Fatalf("Stats with mail paused and no job = %+v, %v", stats, err)
		}
		if err := f.q.Inspector().Pause(ctx, queue.AllQueues); err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
			t.Fatal(err)
		}
		if s, err := f.q.RunPending(ctx); s.Processed != 0 || err != nil {
			t.Fatalf("RunPending with every queue paused = %+v, %v", s, err)
		}
		err = f.q.Inspector().Resume(ctx, "default")
		if !errors.Is(err, queue.ErrEveryQueuePaused) || err.Error() != "queue: resume default: every queue is paused (queue:pause all): resume all, then pause the others again" {
			t.Fatalf("Resume(default) with every queue paused: %v", err)
		}
		if all, err := f.q.Inspector().EveryQueuePaused(ctx); !all || err != nil {
			t.Fatalf("EveryQueuePaused = %v, %v", all, err)
		}
		if err := f.q.Inspector().Resume(ctx, queue.AllQueues); err != nil {
			t.Fatal(err)
		}
		if s, err := f.q.RunPending(ctx); s.Succeeded != 1 || err != nil {
			t.Fatalf("RunPending after resuming all = %+v, %v", s, err)
		}
		if stats, err := f.q.Inspector().Stats(ctx); err != nil || len(stats) != 0 {
			t.Fatalf("Stats after resuming all = %+v, %v; want mail's pause gone too", stats, err)
		}
		if err := f.q.Inspector().Pause(ctx, "a,b"); err == nil || err.Error() != `queue: invalid queue name "a,b": use 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'` {
			t.Fatalf("Pause(a,b): %v", err)
		}
	})
}

// TestAPauseHoldsAcrossWorkerProcesses: two worker processes hear of a
// pause made by a third (on PostgreSQL by its NOTIFY, on SQLite at their
// next poll) and log it; from then on neither takes a job of the paused
// queue, though they take those of another queue dispatched after it;
// both hear of the resume and run them.
func TestAPauseHoldsAcrossWorkerProcesses(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE runs (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Record]())
		var children []*syncBuffer
		for range 2 {
			_, _, _, stderr := worker(t, url, "queue:work", "--queue", "high,default", "--workers", "2")
			children = append(children, stderr)
		}
		heard := func(line string) {
			t.Helper()
			for _, stderr := range children {
				select {
				case <-stderr.when(line):
				case <-time.After(10 * time.Second):
					t.Fatalf("a worker did not log %s:\n%s", line, stderr)
				}
			}
		}
		if err := q.Inspector().Pause(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		heard(`msg="queue paused" logger=navree.job queue=default`)
		for range 3 {
			if _, err := q.Dispatch(ctx, Record{}); err != nil {
				t.Fatal(err)
			}
		}
		e, _ := queue.EnvelopeOf(Record{})
		e.Options.Queue = "high"
		high, err := q.Push(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		runs := func() (n int, highRan bool) {
			t.Helper()
			if err := d.QueryRowContext(ctx, "SELECT count(*), count(CASE WHEN job_id = ? THEN 1 END) FROM runs", high).Scan(&n, &highRan); err != nil {
				t.Fatal(err)
			}
			return n, highRan
		}
		eventually(t, "the job of high runs", func() bool { _, ran := runs(); return ran })
		if n, _ := runs(); n != 1 {
			t.Fatalf("%d runs while default was paused, want only the job of high", n)
		}
		if err := q.Inspector().Resume(ctx, "default"); err != nil {
			t.Fatal(err)
		}
		heard(`msg="queue resumed" logger=navree.job queue=default`)
		eventually(t, "the jobs of default run", func() bool { n, _ := runs(); return n == 4 })
	})
}

// eventually waits, up to ten seconds, for ok to hold: what another
// process does, seen in the database.
func eventually(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPauseAndResumeCommands: what queue:pause, queue:resume and
// queue:status print, and what they refuse.
func TestPauseAndResumeCommands(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		run := func(args ...string) (string, error) {
			return runApp(t, map[string]any{"database.url": url}, args, db.Module(), queue.Module(), contactsModule)
		}
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"queue:pause", "mail"}, "Paused the queue mail: workers take no new jobs of it; the running ones finish. queue:resume mail resumes it.\n"},
			{[]string{"queue:dispatch", "contacts.export", "{}"}, ""},
			{[]string{"queue:status"}, "QUEUE          WAITING  DELAYED  RUNNING  STALE  FAILED  OLDEST WAITING\ndefault        1        0        0        0      0       0s\nmail (paused)  0        0        0        0      0       -\n"},
			{[]string{"queue:resume", "mail"}, "Resumed the queue mail.\n"},
			{[]string{"queue:resume", "mail"}, "The queue mail was not paused.\n"},
			{[]string{"queue:pause", "all"}, "Paused every queue: workers take no new jobs; the running ones finish. queue:resume all resumes them.\n"},
			{[]string{"queue:status"}, "Every queue is paused: queue:resume all resumes them.\nQUEUE    WAITING  DELAYED  RUNNING  STALE  FAILED  OLDEST WAITING\ndefault  1        0        0        0      0       0s\n"},
			{[]string{"queue:work", "--stop-when-empty"}, "Working queues high, default with 4 workers (database driver, " + url + ").\nlevel=INFO msg=\"every queue paused\" logger=navree.job\nProcessed 0 job attempt(s): 0 succeeded, 0 released for retry, 0 failed.\n"},
			{[]string{"queue:resume", "all"}, "Resumed every queue.\n"},
			{[]string{"queue:resume", "all"}, "No queue was paused.\n"},
		} {
			out, err := run(tt.args...)
			out = regexp.MustCompile(`\d+s\n`).ReplaceAllString(out, "0s\n")
			out = regexp.MustCompile(`(?m)^time=\S+ `).ReplaceAllString(out, "")
			if err != nil || tt.want != "" && out != tt.want {
				t.Fatalf("%v printed\n%q (%v)\nwant\n%q", tt.args, out, err, tt.want)
			}
		}
		for _, tt := range []struct {
			args []string
			want string
		}{
			{[]string{"queue:pause"}, "queue:pause takes one argument, a queue name or all, such as: queue:pause mail"},
			{[]string{"queue:pause", "a b"}, `queue: invalid queue name "a b": use 1 to 100 ASCII letters, digits, '-', '_', '.' or ':'`},
			{[]string{"queue:resume"}, "queue:resume takes one argument, a queue name or all, such as: queue:resume mail"},
		} {
			if _, err := run(tt.args...); err == nil || err.Error() != tt.want {
				t.Errorf("%v: %v, want %s", tt.args, err, tt.want)
			}
		}
	})
}
