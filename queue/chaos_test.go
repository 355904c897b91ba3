package queue_test

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// TestSIGTERMUnderLoad stops a worker while 100 jobs run: every one
// finishes, none runs again, and the worker exits 0.
func TestSIGTERMUnderLoad(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Block]())
		jobs := make([]queue.Job, 100)
		for i := range jobs {
			jobs[i] = Block{}
		}
		if _, err := q.DispatchMany(ctx, jobs...); err != nil {
			t.Fatal(err)
		}
		cmd, stdin, stdout, stderr := worker(t, url, "queue:work", "--workers", "100")
		started := map[string]bool{}
		for len(started) < 100 {
			line, err := stdout.ReadString('\n')
			if err != nil {
				t.Fatalf("after %d jobs started: %v\n%s", len(started), err, stderr)
			}
			started[strings.Fields(line)[1]] = true
		}
		stopping := stderr.when("Stopping (signalled): taking no new jobs")
		cmd.Process.Signal(syscall.SIGTERM)
		<-stopping
		stdin.Close() // the 100 jobs finish now
		rest, _ := io.ReadAll(stdout)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
		if string(rest) != "Processed 100 job attempt(s): 100 succeeded, 0 released for retry, 0 failed.\n" {
			t.Fatalf("the worker printed %q", rest)
		}
		if n, _ := q.Inspector().PendingCount(ctx, "default"); n != 0 {
			t.Fatalf("%d jobs left: a finished job's completion was lost at shutdown", n)
		}
	})
}

// chaosJobs is how many jobs the chaos test runs; NAVREE_CHAOS_JOBS makes
// a longer soak.
func chaosJobs() int {
	if n, err := strconv.Atoi(os.Getenv("NAVREE_CHAOS_JOBS")); err == nil && n > 0 {
		return n
	}
	return 5000
}

type run struct {
	job      string
	attempt  int
	pid      int
	started  int64
	finished int64 // 0: the process died first
}

// TestChaos runs 3 worker processes of 4 loops on one database and kills
// one with SIGKILL about every second, starting a new one each time,
// until every job is done: 5,000 plain jobs, a batch of 3,000 with a then
// job, and a workflow of 100 steps, each after one to three of the ten
// before it. Their rescue time (queue.rescue_after) is 5 s:
// a killed worker's jobs are taken over 5 s after its last heartbeat, on
// the system clock, as in production; the test reports how long after
// the kills they ran again. Nothing may be lost, no job may run beside
// itself, and a job may run twice only when its earlier attempt's process
// was killed, or was held up past the rescue time (a loaded machine) and
// learned at its next heartbeat that the job was taken over, as
// documented: its outcome is then not kept.
//
// It runs beside the package's other tests: what it asserts does not
// depend on how much of the machine it gets.
func TestChaos(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("the chaos test's worker processes need full speed: run it without -race and -short")
	}
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE chaos_runs (job_id TEXT NOT NULL, attempt INTEGER NOT NULL, pid INTEGER NOT NULL, started_ns BIGINT NOT NULL, finished_ns BIGINT)"); err != nil {
			t.Fatal(err)
		}
		n := chaosJobs()
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Chaos]())
		batch := make([]queue.Job, n)
		for i := range batch {
			batch[i] = Chaos{}
		}
		if _, err := q.DispatchMany(ctx, batch...); err != nil {
			t.Fatal(err)
		}
		inBatch := make([]queue.Job, 3000)
		for i := range inBatch {
			inBatch[i] = Chaos{}
		}
		batchID, err := q.DispatchFlow(ctx, queue.Batch(inBatch...).Then(Chaos{}).Named("chaos"))
		if err != nil {
			t.Fatal(err)
		}
		w := queue.Workflow("chaos")
		for i := range 100 {
			var after []string
			for range min(i, 1+rand.IntN(3)) {
				if dep := fmt.Sprint(i - 1 - rand.IntN(min(i, 10))); !slices.Contains(after, dep) {
					after = append(after, dep)
				}
			}
			w.Step(fmt.Sprint(i), Chaos{}, queue.After(after...))
		}
		workflowID, err := q.DispatchFlow(ctx, w)
		if err != nil {
			t.Fatal(err)
		}
		n += 3000 + 1 + 100

		var mu sync.Mutex
		var logged []string             // errors the workers logged; there must be none
		lastLines := map[int][]string{} // by pid: what each worker printed last, for a failure's report
		lost := map[string]bool{}       // "pid job": a worker that learned that its job was taken over
		var readers sync.WaitGroup
		spawn := func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "queue:work", "--workers", "4")
			cmd.Env = append(os.Environ(), workerEnv+"="+url, "APP_QUEUE__RESCUE_AFTER=5s")
			cmd.Stdout = io.Discard
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			readers.Go(func() {
				s := bufio.NewScanner(stderr)
				for s.Scan() {
					line := s.Text()
					mu.Lock()
					if strings.Contains(line, "level=ERROR") {
						logged = append(logged, fmt.Sprintf("pid %d: %s", cmd.Process.Pid, line))
					}
					if job := jobID.FindStringSubmatch(line); job != nil &&
						(strings.Contains(line, "reservation_lost=true") || strings.Contains(line, "taken over by another worker")) {
						lost[fmt.Sprint(cmd.Process.Pid, " ", job[1])] = true
					}
					last := append(lastLines[cmd.Process.Pid], line)
					lastLines[cmd.Process.Pid] = last[max(0, len(last)-200):]
					mu.Unlock()
				}
			})
			return cmd
		}
		workers := []*exec.Cmd{spawn(), spawn(), spawn()}
		t.Cleanup(func() { // on any failure, before the schema goes
			for _, w := range workers {
				w.Process.Kill()
				w.Wait()
			}
			readers.Wait()
		})
		// working reports whether every worker has run a job: a worker is
		// killed only once the others are past their start.
		working := func() bool {
			for _, w := range workers {
				var n int
				d.QueryRowContext(ctx, "SELECT count(*) FROM chaos_runs WHERE pid = ?", w.Process.Pid).Scan(&n)
				if n == 0 {
					return false
				}
			}
			return true
		}
		killed := map[int]time.Time{} // by pid, when
		// The kills go on until no job is left, for 90 s at most: on a
		// machine too busy for the workers to finish between kills, they
		// then run what is left in peace. Nothing asserted depends on how
		// long that takes; the bound of the wait is on a failure only.
		chaosEnds := time.Now().Add(90 * time.Second)
		lastKill := time.Now() // or the start
		for {
			var left int
			if err := d.QueryRowContext(ctx, "SELECT count(*) FROM jobs").Scan(&left); err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				break
			}
			if time.Since(lastKill) > 5*time.Minute {
				t.Fatalf("%d jobs left 5 minutes after the last kill (or the start): the workers stopped making progress", left)
			}
			time.Sleep(time.Duration(700+rand.IntN(600)) * time.Millisecond) // the chaos's own pace
			if !working() || time.Now().After(chaosEnds) {
				continue
			}
			lastKill = time.Now()
			i := rand.IntN(len(workers))
			victim := workers[i]
			killed[victim.Process.Pid] = time.Now()
			victim.Process.Signal(syscall.SIGKILL)
			victim.Wait()
			workers[i] = spawn()
		}
		stopErrs := map[int]error{}
		for _, w := range workers {
			w.Process.Signal(syscall.SIGTERM)
			// A worker that has not stopped within a minute is stuck: its
			// goroutines' stacks (SIGQUIT) go into the report.
			quit := time.AfterFunc(time.Minute, func() { w.Process.Signal(syscall.SIGQUIT) })
			err := w.Wait()
			quit.Stop()
			var exit *exec.ExitError
			if errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signal() == syscall.SIGTERM {
				continue // it was still starting, so it ended as SIGTERM does: it had taken no job
			}
			if err != nil {
				stopErrs[w.Process.Pid] = err
			}
		}

		readers.Wait() // every worker has exited: their output is complete
		for pid, err := range stopErrs {
			t.Errorf("a worker stopped with %v; it printed last:\n%s", err, strings.Join(lastLines[pid], "\n"))
		}
		for _, line := range logged {
			t.Errorf("a worker logged an error: %s", line)
		}
		var failed int
		d.QueryRowContext(ctx, "SELECT count(*) FROM failed_jobs").Scan(&failed)
		if failed != 0 {
			t.Fatalf("%d jobs failed", failed)
		}
		rows, err := d.QueryContext(ctx, "SELECT job_id, attempt, pid, started_ns, COALESCE(finished_ns, 0) FROM chaos_runs")
		if err != nil {
			t.Fatal(err)
		}
		byJob := map[string][]run{}
		for rows.Next() {
			var r run
			if err := rows.Scan(&r.job, &r.attempt, &r.pid, &r.started, &r.finished); err != nil {
				t.Fatal(err)
			}
			byJob[r.job] = append(byJob[r.job], r)
		}
		rows.Close()
		if len(byJob) != n {
			t.Fatalf("%d of %d jobs ran", len(byJob), n)
		}
		reruns, presumedGone := 0, 0
		var rescues []time.Duration // from a kill to the next attempt of a job its process ran
		for job, runs := range byJob {
			slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.attempt, b.attempt) })
			if runs[len(runs)-1].finished == 0 {
				t.Errorf("job %s: its last attempt never finished, yet the job is gone", job)
			}
			for i, r := range runs[:len(runs)-1] {
				// An earlier attempt: its process was killed, and the next
				// began after it ended; or its worker, held up past the
				// rescue time (a loaded machine), was presumed gone, and
				// learned that it lost the job (its outcome not kept).
				at, wasKilled := killed[r.pid]
				if !wasKilled && lost[fmt.Sprint(r.pid, " ", job)] {
					presumedGone++
					continue
				}
				if !wasKilled {
					t.Errorf("job %s ran again after attempt %d of pid %d, which was not killed (started %s, %s); what that worker printed of the job:\n%s",
						job, r.attempt, r.pid, time.Unix(0, r.started).Format(time.StampMicro), finished(r), mentions(lastLines[r.pid], job))
				}
				next := runs[i+1]
				if r.finished != 0 && next.started < r.finished {
					t.Errorf("job %s: attempt %d started before attempt %d finished", job, next.attempt, r.attempt)
				}
				if r.finished == 0 && wasKilled {
					rescues = append(rescues, time.Unix(0, next.started).Sub(at))
				}
			}
			if len(runs) > 1 {
				reruns++
			}
		}
		checkFlows(t, q, byJob, batchID, workflowID)
		slices.Sort(rescues)
		rescue := "none"
		if len(rescues) > 0 {
			rescue = fmt.Sprintf("min %s, median %s, max %s", rescues[0].Round(10*time.Millisecond), rescues[len(rescues)/2].Round(10*time.Millisecond),
				rescues[len(rescues)-1].Round(10*time.Millisecond))
		}
		t.Logf("%d jobs, %d workers killed, %d jobs ran more than once (each after a kill, or %d taken over from a worker held up past the rescue time), 0 lost; the %d cut off by a kill ran again after it: %s",
			n, len(killed), reruns, presumedGone, len(rescues), rescue)
	})
}

// checkFlows checks the chaos test's flows: the batch's then ran once
// (one job, its reruns checked as any job's) after every job of the batch
// had finished, and each step of the workflow after every step it comes
// after had finished, none lost.
func checkFlows(t *testing.T, q *queue.Queue, byJob map[string][]run, batchID, workflowID string) {
	t.Helper()
	lastFinish := func(id string) int64 { runs := byJob[id]; return runs[len(runs)-1].finished }
	firstStart := func(id string) int64 {
		return slices.MinFunc(byJob[id], func(a, b run) int { return cmp.Compare(a.started, b.started) }).started
	}
	b, err := q.Inspector().Flow(ctx, batchID)
	if err != nil {
		t.Fatal(err)
	}
	if b.State != "succeeded" || b.Succeeded != 3000 || len(b.Steps) != 3001 {
		t.Fatalf("the batch: %+v", b.FlowInfo)
	}
	then := b.Steps[3000]
	if then.Role != "then" || then.State != "succeeded" || len(byJob[then.JobID]) == 0 {
		t.Fatalf("the batch's then: %+v, %d runs", then, len(byJob[then.JobID]))
	}
	for _, s := range b.Steps[:3000] {
		if lastFinish(s.JobID) > firstStart(then.JobID) {
			t.Fatalf("the batch's then started before its job %s finished", s.JobID)
		}
	}
	wf, err := q.Inspector().Flow(ctx, workflowID)
	if err != nil {
		t.Fatal(err)
	}
	if wf.State != "succeeded" || wf.Succeeded != 100 {
		t.Fatalf("the workflow: %+v", wf.FlowInfo)
	}
	ids := map[string]string{}
	for _, s := range wf.Steps {
		ids[s.Name] = s.JobID
	}
	edges := 0
	for _, s := range wf.Steps {
		for _, dep := range s.After {
			edges++
			if lastFinish(ids[dep]) > firstStart(s.JobID) {
				t.Fatalf("workflow step %s started before step %s, which it comes after, finished", s.Name, dep)
			}
		}
	}
	t.Logf("the batch of 3,000 queued its then once, which ran after all of them (%d attempts); the workflow's 100 steps each ran after the steps it comes after (%d dependencies)",
		len(byJob[then.JobID]), edges)
}

// jobID finds the job a worker's log line is about.
var jobID = regexp.MustCompile(`\bjob_id=([0-9a-f-]{36})\b`)

// finished says when an attempt finished, if it did.
func finished(r run) string {
	if r.finished == 0 {
		return "never finished"
	}
	return "finished " + time.Unix(0, r.finished).Format(time.StampMicro)
}

// mentions is the lines that name the job id.
func mentions(lines []string, id string) string {
	var found []string
	for _, l := range lines {
		if strings.Contains(l, id) {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		return "(nothing in its last 200 lines)"
	}
	return strings.Join(found, "\n")
}
