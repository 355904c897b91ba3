package queue_test

import (
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// restartEnv makes a worker beat every second: it learns of a restart
// within one.
var restartEnv = []string{"APP_QUEUE__RESCUE_AFTER=3s"}

// TestQueueRestartStopsEveryWorkerProcess: queue:restart asks two
// running worker processes; each lets its running job end, takes no new
// one (though the second has a free slot), and exits 0 saying why; a
// worker started after the request runs the job dispatched since, and
// is not stopped by the restart.
func TestQueueRestartStopsEveryWorkerProcess(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		if out, err := runApp(t, map[string]any{"database.url": url}, []string{"queue:restart"}, db.Module(), queue.Module()); err != nil ||
			out != "No worker is registered that has not been asked already: nothing to restart.\n" {
			t.Fatalf("queue:restart with no worker printed %q, %v", out, err)
		}
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Block](), noop[ExportContacts]())
		type proc struct {
			cmd    interface{ Wait() error }
			stdin  io.WriteCloser
			out    io.Reader
			stderr *syncBuffer
		}
		var old []proc
		for _, slots := range []string{"1", "2"} { // the second keeps a slot free
			id, _ := q.Dispatch(ctx, Block{})
			cmd, stdin, stdout, stderr := workerIn(t, url, restartEnv, "queue:work", "--workers", slots)
			if line, _ := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 1\n", id) {
				t.Fatalf("a worker printed %q\n%s", line, stderr)
			}
			old = append(old, proc{cmd, stdin, stdout, stderr})
		}
		out, err := runApp(t, map[string]any{"database.url": url}, []string{"queue:restart"}, db.Module(), queue.Module())
		if err != nil || !regexp.MustCompile(`^Asked 2 queue:work on \S+ to restart: each exits once its running jobs end; workers started from now on keep running\.\n$`).MatchString(out) {
			t.Fatalf("queue:restart printed %q, %v", out, err)
		}
		for _, p := range old {
			<-p.stderr.when("Stopping (restart requested by queue:restart): taking no new jobs, waiting for the running ones to finish (a second signal interrupts them).")
			if !strings.Contains(p.stderr.String(), "restart requested (queue:restart): stopping once the running jobs end") {
				t.Errorf("the restart is not logged:\n%s", p.stderr)
			}
		}
		if out, _ := runApp(t, map[string]any{"database.url": url}, []string{"queue:workers"}, db.Module(), queue.Module()); strings.Count(out, "(restarting)") != 2 {
			t.Errorf("queue:workers printed\n%s\nwant both workers restarting", out)
		}
		// A worker started now keeps running: it takes the job dispatched
		// next (the old ones, alive with a free slot, take none) and stops
		// at --max-jobs, not at the restart.
		newer, _, newOut, newErr := workerIn(t, url, restartEnv, "queue:work", "--workers", "1", "--max-jobs", "1")
		q.Dispatch(ctx, ExportContacts{CompanyID: "after the restart"})
		rest, _ := io.ReadAll(newOut)
		if err := newer.Wait(); err != nil || string(rest) != "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n" ||
			strings.Contains(newErr.String(), "restart") {
			t.Fatalf("the worker started after the restart exited with %v, printing %q\n%s", err, rest, newErr)
		}
		for _, p := range old {
			p.stdin.Close()
			rest, _ := io.ReadAll(p.out)
			if err := p.cmd.Wait(); err != nil || string(rest) != "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n" ||
				!strings.Contains(p.stderr.String(), "Stopped: a restart was requested (queue:restart); start the new build.") {
				t.Fatalf("an old worker exited with %v, printing %q\n%s", err, rest, p.stderr)
			}
		}
	})
}

// TestASecondSignalInterruptsTheRunningJobs: with no stop deadline, the
// first SIGTERM lets the running job go on; a second interrupts it: its
// context ends with ErrInterrupted, the job goes back to wait with its
// attempt not spent, and the worker exits 0 saying so.
func TestASecondSignalInterruptsTheRunningJobs(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		c := &clock{t: time.Now()}
		q := localQueue(t, url, c, noop[Cancellable]())
		id, _ := q.Dispatch(ctx, Cancellable{})
		cmd, _, stdout, stderr := worker(t, url, "queue:work", "--workers", "1")
		if line, _ := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 1\n", id) {
			t.Fatalf("the worker printed %q\n%s", line, stderr)
		}
		stopping := stderr.when("Stopping (signalled): taking no new jobs, waiting for the running ones to finish (a second signal interrupts them).")
		cmd.Process.Signal(syscall.SIGTERM)
		<-stopping
		if j, err := q.Inspector().Job(ctx, id); err != nil || j.State != queue.StateRunning {
			t.Fatalf("after the first signal the job is %+v (%v); want it running", j, err)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(stdout)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
		if want := "stopped: " + queue.ErrInterrupted.Error() + "\nProcessed 1 job attempt(s): 0 succeeded, 0 released for retry, 0 failed, 1 interrupted by the stop (back on their queues).\n"; string(rest) != want {
			t.Fatalf("the worker printed %q; want %q\n%s", rest, want, stderr)
		}
		if !strings.Contains(stderr.String(), "Stopping now: interrupting the running jobs, which go back to their queues.") {
			t.Errorf("the second signal is not told:\n%s", stderr)
		}
		c.Advance(time.Since(c.Now())) // past the interruption, from which the job is due
		if j, err := q.Inspector().Job(ctx, id); err != nil || j.State != queue.StateWaiting || j.Attempts != 0 || j.LastError != "" {
			t.Fatalf("after the second signal the job is %+v (%v); want it waiting, its attempt not spent", j, err)
		}
		// queue:job shows the interrupted attempt; the job is due from
		// when it was interrupted.
		out, err := runApp(t, map[string]any{"database.url": url}, []string{"queue:job", id}, db.Module(), queue.Module())
		stamp := `(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} UTC)`
		want := regexp.MustCompile(`^Job ` + id + `: test\.cancellable on default, waiting\n` +
			`  Dispatched  ` + stamp + `\n` +
			`  Due         ` + stamp + `\n` +
			`  Attempts    0 of 3\n` +
			`  Payload     2 bytes\n` +
			`Attempts:\n` +
			`  1  interrupted: its worker stopped; the attempt not spent  ` + stamp + `  ran \S+  worker [0-9a-f-]{36}\n$`)
		if m := want.FindStringSubmatch(out); err != nil || m == nil || m[2] != m[3] {
			t.Fatalf("queue:job printed (%v):\n%s\nwant the interrupted attempt, the job due from its end", err, out)
		}
	})
}

// TestRestartAndSoftStopUnderLoad: two worker processes of four slots
// with a stop deadline of 20 ms work 600 jobs of 20 to 59 ms; once each
// has started 60, one is sent SIGTERM and the other is asked to restart.
// Both exit 0, interrupting the jobs still running at the deadline; a
// last worker runs what is left. Every job's last run is done, none
// failed or was retried, no two runs of a job overlap, and each run the
// workers counted interrupted was followed by another of the same
// attempt number. A run interrupted after its work was done (while it
// recorded it) returned nil once interrupted: its job went back and ran
// again, as docs/queues.md promises of any handler's return.
func TestRestartAndSoftStopUnderLoad(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE deploy_runs (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL, "+
			"started_ns BIGINT NOT NULL, ended_ns BIGINT NOT NULL, outcome TEXT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Deploy]())
		const jobs = 600
		batch := make([]queue.Job, jobs)
		for i := range batch {
			batch[i] = Deploy{N: i}
		}
		if _, err := q.DispatchMany(ctx, batch...); err != nil {
			t.Fatal(err)
		}
		type proc struct {
			cmd    interface{ Wait() error }
			out    io.Reader
			stderr *syncBuffer
		}
		var procs []proc
		for range 2 {
			cmd, _, stdout, stderr := workerIn(t, url, restartEnv, "queue:work", "--workers", "4", "--stop-timeout", "20ms")
			procs = append(procs, proc{cmd, stdout, stderr})
			for range 60 {
				if line, err := stdout.ReadString('\n'); line != "ran\n" {
					t.Fatalf("a worker printed %q (%v)\n%s", line, err, stderr)
				}
			}
			if len(procs) == 1 {
				cmd.Process.Signal(syscall.SIGTERM)
			} else if _, err := runApp(t, map[string]any{"database.url": url}, []string{"queue:restart"}, db.Module(), queue.Module()); err != nil {
				t.Fatal(err)
			}
		}
		var interrupted int
		for i, p := range procs {
			rest, _ := io.ReadAll(p.out)
			if err := p.cmd.Wait(); err != nil {
				t.Fatalf("worker %d exited with %v\n%s", i, err, p.stderr)
			}
			summary := regexp.MustCompile(`Processed (\d+) job attempt\(s\): (\d+) succeeded, 0 released for retry, 0 failed(?:, (\d+) interrupted by the stop \(back on their queues\))?\.\n$`).FindStringSubmatch(string(rest))
			if summary == nil || strings.Contains(p.stderr.String(), "level=ERROR") {
				t.Fatalf("worker %d printed %q\n%s", i, rest, p.stderr)
			}
			n, _ := strconv.Atoi(summary[3]) // none: ""
			interrupted += n
		}
		last, _, lastOut, lastErr := worker(t, url, "queue:work", "--workers", "4", "--stop-when-empty")
		rest, _ := io.ReadAll(lastOut)
		if err := last.Wait(); err != nil || !strings.HasSuffix(string(rest), " 0 released for retry, 0 failed.\n") {
			t.Fatalf("the last worker exited with %v, printing %q\n%s", err, rest, lastErr)
		}
		type run struct {
			attempt          int
			started, ended   int64
			outcome, process string
		}
		runs := map[string][]run{}
		rows, err := d.QueryContext(ctx, "SELECT job_id, attempt, pid, started_ns, ended_ns, outcome FROM deploy_runs")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			var r run
			var pid int
			if err := rows.Scan(&id, &r.attempt, &pid, &r.started, &r.ended, &r.outcome); err != nil {
				t.Fatal(err)
			}
			r.process = fmt.Sprint(pid)
			runs[id] = append(runs[id], r)
		}
		rows.Close()
		var pending int
		d.QueryRowContext(ctx, "SELECT count(*) FROM jobs").Scan(&pending)
		if len(runs) != jobs || pending != 0 {
			t.Fatalf("%d jobs ran, %d left; want each of %d run, none left", len(runs), pending, jobs)
		}
		followed, doneThenInterrupted := 0, 0
		for id, rs := range runs {
			sort.Slice(rs, func(i, j int) bool { return rs[i].started < rs[j].started })
			for i, r := range rs {
				last := i == len(rs)-1
				switch {
				case r.attempt != 1:
					t.Errorf("job %s ran attempt %d: an interruption spent an attempt (%+v)", id, r.attempt, rs)
				case last && r.outcome != "done":
					t.Errorf("job %s: runs %+v; want the last one done", id, rs)
				case i > 0 && r.started < rs[i-1].ended:
					t.Errorf("job %s: two runs overlap: %+v", id, rs)
				}
				if !last {
					followed++
					if r.outcome == "done" {
						doneThenInterrupted++
					}
				}
			}
		}
		if followed != interrupted {
			t.Errorf("%d runs were followed by another; the workers counted %d interrupted", followed, interrupted)
		}
		t.Logf("%d runs interrupted by the stops, %d of them after their work was done", interrupted, doneThenInterrupted)
	})
}

// TestJobsOfAnOlderOrNewerBuildAcrossProcesses: jobs queued by an older
// build (a payload of version 1, a type under its old name) run on a
// worker of the new build, upgraded and by the alias; a job queued by the
// new build (version 3) is left by a worker of the old build, which
// snoozes it without spending an attempt, and runs on the new build's;
// a job of a type only the new build has is left waiting by an old
// worker of only known types, and run by a new one.
func TestJobsOfAnOlderOrNewerBuildAcrossProcesses(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE ver_runs (job_id TEXT NOT NULL, name TEXT NOT NULL, build TEXT NOT NULL, company TEXT NOT NULL, format TEXT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		old, current := []string{"NAVREE_TEST_BUILD=old"}, []string(nil)
		run := func(env []string, args ...string) string {
			t.Helper()
			cmd, _, stdout, stderr := workerIn(t, url, env, args...)
			out, _ := io.ReadAll(stdout)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("%v exited with %v\n%s\n%s", args, err, out, stderr)
			}
			return string(out)
		}
		run(old, "queue:dispatch", "test.export_versions", `{"company": "c1"}`)
		run(old, "queue:dispatch", "test.export_old", `{"company": "c2"}`)
		if out := run(current, "queue:work", "--stop-when-empty"); !strings.HasSuffix(out, "Processed 2 job attempt(s): 2 succeeded, 0 released for retry, 0 failed.\n") {
			t.Fatalf("the new build's worker printed %q", out)
		}
		runs := func() string {
			rows, err := d.QueryContext(ctx, "SELECT name, build, company, format FROM ver_runs ORDER BY company")
			if err != nil {
				t.Fatal(err)
			}
			defer rows.Close()
			var b strings.Builder
			for rows.Next() {
				var name, build, company, format string
				rows.Scan(&name, &build, &company, &format)
				fmt.Fprintf(&b, "%s %s %s %s\n", name, build, company, format)
			}
			return b.String()
		}
		if got := runs(); got != "test.export_versions new c1 csv\ntest.export_old new c2 csv\n" {
			t.Fatalf("the runs are\n%s", got)
		}
		out := run(current, "queue:dispatch", "test.export_versions", `{"company_id": "c3", "format": "pdf"}`)
		id := strings.TrimSpace(out[strings.LastIndex(out, " ")+1:])
		if out := run(old, "queue:work", "--stop-when-empty"); !strings.HasSuffix(out, "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 0 failed, 1 snoozed.\n") {
			t.Fatalf("the old build's worker printed %q", out)
		}
		q := localQueue(t, url, &clock{t: time.Now()})
		if j, err := q.Inspector().Job(ctx, id); err != nil || j.State != queue.StateDelayed || j.Attempts != 0 || j.Snoozes != 1 {
			t.Fatalf("the new build's job after the old worker is %+v (%v); want it delayed, snoozed once, no attempt spent", j, err)
		}
		// The snooze's 30 s pass.
		if _, err := d.ExecContext(ctx, "UPDATE jobs SET available_at = 0"); err != nil {
			t.Fatal(err)
		}
		if out := run(current, "queue:work", "--stop-when-empty"); !strings.HasSuffix(out, "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n") {
			t.Fatalf("the new build's worker printed %q", out)
		}
		if got := runs(); got != "test.export_versions new c1 csv\ntest.export_old new c2 csv\ntest.export_versions new c3 pdf\n" {
			t.Fatalf("the runs are\n%s", got)
		}

		// A type only the new build has: an old worker of only known types
		// leaves it waiting, and a new one runs it.
		run(current, "queue:dispatch", "test.fresh", `{"company_id": "c4"}`)
		if out := run(old, "queue:work", "--stop-when-empty", "--only-known-types"); !strings.HasSuffix(out, "Processed 0 job attempt(s): 0 succeeded, 0 released for retry, 0 failed.\n") {
			t.Fatalf("the old build's worker of only known types printed %q", out)
		}
		if out := run(current, "queue:work", "--stop-when-empty", "--only-known-types"); !strings.HasSuffix(out, "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n") {
			t.Fatalf("the new build's worker printed %q", out)
		}
		if got := runs(); !strings.HasSuffix(got, "test.fresh new c4 \n") {
			t.Fatalf("the runs are\n%s", got)
		}
	})
}
