package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	windows "github.com/navree/navree/queue/internal/control/rate"
	"github.com/navree/navree/queue/internal/worker"
	"github.com/urfave/cli/v2"
)

// benchQueueName is the queue the benchmark uses, so it never touches an
// app's own jobs.
const benchQueueName = "navree-bench"

// benchJob is the benchmark's no-op job: it carries the time it was
// dispatched, for the latency.
type benchJob struct {
	DispatchedAt int64  `json:"t"`            // Unix nanoseconds
	Priority     int    `json:"p,omitempty"`  // with --priorities
	Queue        string `json:"q,omitempty"`  // with --queues; "" for benchQueueName
	Key          string `json:"k,omitempty"`  // with --keys: its concurrency key
	Limit        int    `json:"l,omitempty"`  // and its limit
	RateKeyOf    string `json:"rk,omitempty"` // with --rate-keys: its rate key
	RateMax      int    `json:"rm,omitempty"` // and its rate
	RatePerMs    int64  `json:"rp,omitempty"`
	Group        string `json:"g,omitempty"` // with --groups: its fairness key
	Fair         bool   `json:"f,omitempty"` // and whether it takes turns by it
}

func (benchJob) JobName() string { return "navree.bench" }
func (j benchJob) JobOptions() Options {
	return Options{Queue: cmp.Or(j.Queue, benchQueueName), Priority: j.Priority, ConcurrencyLimit: j.Limit,
		RateLimit: Rate{Max: j.RateMax, Per: time.Duration(j.RatePerMs) * time.Millisecond}, Fair: j.Fair}
}
func (j benchJob) JobKeys() Keys {
	return Keys{Concurrency: j.Key, Rate: j.RateKeyOf, Fairness: j.Group}
}

// benchJobOf is the benchmark's i-th job (from 0) of o, spread over
// queues, priorities and keys in turn.
func benchJobOf(o benchOptions, queues []string, i int) benchJob {
	j := benchJob{DispatchedAt: time.Now().UnixNano(), Priority: i % o.Priorities, Queue: benchQueueOf(queues, i)}
	if o.Keys > 0 {
		j.Key, j.Limit = "bench:"+strconv.Itoa(i%o.Keys), o.Limit
	}
	if o.RateKeys > 0 {
		j.RateKeyOf, j.RateMax, j.RatePerMs = "bench-rate:"+strconv.Itoa(i%o.RateKeys), o.Rate.Max, o.Rate.Per.Milliseconds()
	}
	if o.Groups > 0 {
		j.Group, j.Fair = "bench-group:"+strconv.Itoa(i%o.Groups), !o.Unfair
		if o.BigGroup > 0 && o.Groups > 1 { // group 0 has the big backlog; these go to the others
			j.Group = "bench-group:" + strconv.Itoa(1+i%(o.Groups-1))
		}
	}
	return j
}

// bigGroupJob is the i-th job of the big group's backlog of o.
func bigGroupJob(o benchOptions, queues []string, i int) benchJob {
	j := benchJobOf(o, queues, i)
	j.Group = "bench-group:0"
	return j
}

// benchWork works the benchmark's jobs until none is left: a worker
// that stops when empty leaves the jobs over their rate limits, so while
// jobs are left it works again once the first full window reopens (or a
// slice of a window later, when none was full as it looked).
func (q *Queue) benchWork(ctx context.Context, queues []string, o benchOptions) (WorkStats, error) {
	var total WorkStats
	for {
		s, err := q.work(ctx, worker.Options{Queues: queues, Workers: o.Workers, StopWhenEmpty: true, Quiet: !o.LogJobs, Only: q.knownTypes(o.OnlyKnownTypes)})
		total.Processed, total.Succeeded, total.Released, total.Failed = total.Processed+s.Processed, total.Succeeded+s.Succeeded, total.Released+s.Released, total.Failed+s.Failed
		if err != nil || total.Succeeded >= o.BigGroup+o.Jobs || o.RateKeys == 0 {
			return total, err
		}
		left := 0
		for _, name := range queues {
			n, err := q.store.PendingCount(ctx, name)
			if err != nil {
				return total, err
			}
			left += n
		}
		if left == 0 {
			return total, nil
		}
		wait := o.Rate.Per / windows.Slices
		if throttles, err := q.Inspector().Throttles(ctx, ""); err != nil {
			return total, err
		} else if len(throttles) > 0 {
			wait = time.Until(throttles[0].Reopens)
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(wait):
		}
	}
}

// benchQueues are the queues of a benchmark spread over n: benchQueueName
// alone, or for n > 1 benchQueueName-0 to benchQueueName-(n-1).
func benchQueues(n int) []string {
	if n <= 1 {
		return []string{benchQueueName}
	}
	out := make([]string, n)
	for i := range out {
		out[i] = benchQueueName + "-" + strconv.Itoa(i)
	}
	return out
}

// maxBenchQueues bounds benchOptions.Queues.
const maxBenchQueues = 1000

func (q *Queue) handleBench(_ context.Context, j benchJob, _ JobContext) error {
	if hook := q.benchHook.Load(); hook != nil {
		(*hook)(j, time.Now())
	}
	return nil
}

// The bounds of benchOptions: its jobs wait in the database, its latency
// samples in memory.
const (
	maxBenchJobs    = 100_000_000
	maxBenchLatency = 100_000
)

// benchOptions say what Queue.bench measures. Zero fields take their
// defaults.
type benchOptions struct {
	Jobs        int    // jobs to dispatch and work; default 10,000
	Workers     int    // jobs run at once; default queue.workers
	Dispatch    string // "bulk" (the default: DispatchMany, 10,000 a call) or "single" (Dispatch)
	Dispatchers int    // goroutines dispatching with "single"; default 8
	Latency     int    // jobs for the latency, dispatched 5 ms apart; default 1,000, negative for none
	// Priorities spreads the jobs over that many priorities, 0 to
	// Priorities-1, in turn; default 1, every job of priority 0.
	Priorities int
	// Queues spreads the jobs over that many queues in turn (see
	// benchQueues), all of them worked by the one worker; default 1.
	Queues int
	// Keys spreads the jobs over that many concurrency keys in turn, each
	// limited to Limit at once (see Options.ConcurrencyLimit); default 0,
	// no limit.
	Keys, Limit int
	// RateKeys spreads the jobs over that many rate keys in turn, each
	// limited to Rate (see Options.RateLimit); default 0, no limit.
	RateKeys int
	Rate     Rate
	// Groups spreads the jobs over that many fairness groups in turn (see
	// Options.Fair); with BigGroup, the jobs go to groups 1 to Groups-1,
	// and BigGroup more jobs of group 0 are dispatched before them (a
	// tenant's backlog). Unfair dispatches the same groups without
	// Options.Fair. Default 0: no groups.
	Groups, BigGroup int
	Unfair           bool
	// OnlyKnownTypes works with the worker's search limited to the job
	// types of the app, as queue:work --only-known-types.
	OnlyKnownTypes bool
	// LogJobs logs every successful attempt of the benchmark's jobs, as
	// queue:work does. Off, only failed and released attempts are logged:
	// the lines would measure the log handler more than the queue (a few
	// microseconds of CPU each), and flood a terminal.
	LogJobs bool
	// Progress, when set, is told what the benchmark is doing.
	Progress func(phase string, done, total int)
}

// benchRate is a measured throughput.
type benchRate struct {
	Jobs      int     `json:"jobs"`
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"jobs_per_second"`
}

func rate(jobs int, d time.Duration) benchRate {
	return benchRate{Jobs: jobs, Seconds: d.Seconds(), PerSecond: float64(jobs) / d.Seconds()}
}

// latencyResult is the time from a dispatch to its handler's start, in
// milliseconds; and its two parts: the time Dispatch took to store the
// job (on a database, its commit), and the time from then until the
// handler started (the worker's part).
type latencyResult struct {
	Jobs      int     `json:"jobs"`
	P50       float64 `json:"p50_ms"`
	P95       float64 `json:"p95_ms"`
	P99       float64 `json:"p99_ms"`
	Max       float64 `json:"max_ms"`
	CommitP50 float64 `json:"commit_p50_ms"`
	CommitP99 float64 `json:"commit_p99_ms"`
	CommitMax float64 `json:"commit_max_ms"`
	AfterP50  float64 `json:"after_commit_p50_ms"`
	AfterP99  float64 `json:"after_commit_p99_ms"`
	AfterMax  float64 `json:"after_commit_max_ms"`
}

// benchResult is what Queue.bench measured.
type benchResult struct {
	Driver   string `json:"driver"`
	Database string `json:"database,omitempty"` // sqlite or postgres
	Jobs     int    `json:"jobs"`
	Workers  int    `json:"workers"`
	Mode     string `json:"dispatch_mode"` // single or bulk
	// Priorities and Queues are how many priorities and queues the jobs
	// were spread over.
	Priorities int    `json:"priorities"`
	Queues     int    `json:"queues"`
	Keys       int    `json:"keys,omitempty"`      // concurrency keys, with --keys
	Limit      int    `json:"limit,omitempty"`     // the limit of each
	RateKeys   int    `json:"rate_keys,omitempty"` // rate keys, with --rate-keys
	Rate       string `json:"rate,omitempty"`      // the rate of each
	Groups     int    `json:"groups,omitempty"`    // fairness groups, with --groups
	BigGroup   int    `json:"big_group,omitempty"` // the backlog of group 0, with --big-group
	Fair       bool   `json:"fair,omitempty"`      // the groups took turns (not --unfair)
	// Small is when the jobs of the groups other than the big one started,
	// with --big-group.
	Small    *smallResult   `json:"small_groups,omitempty"`
	LogJobs  bool           `json:"log_jobs"` // every successful attempt was logged
	Dispatch benchRate      `json:"dispatch"`
	Work     benchRate      `json:"work"`
	Latency  *latencyResult `json:"latency,omitempty"`
	// Memory after the work, once garbage is collected: the process's
	// resident set (Linux only, else 0) and the Go heap in use, in KiB.
	RSSKiB  int64 `json:"rss_kib"`
	HeapKiB int64 `json:"heap_kib"`
}

// memory reads the process's resident set and live heap after a
// collection.
func memory() (rss, heap int64) {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if status, err := os.ReadFile("/proc/self/status"); err == nil {
		for line := range strings.Lines(string(status)) {
			if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				rss, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			}
		}
	}
	return rss, int64(m.HeapInuse / 1024)
}

// bench measures the queue on its own database, on the queue benchQueueName: dispatch
// throughput, work throughput of o.Jobs no-op jobs with o.Workers handlers
// (from the start until the last completion is stored), and the latency
// from dispatch to handler start for jobs dispatched 5 ms apart to idle
// workers. It deletes its jobs, and the successes it kept, when it ends.
func (q *Queue) bench(ctx context.Context, o benchOptions) (benchResult, error) {
	if o.Jobs == 0 {
		o.Jobs = 10_000
	}
	if o.Workers == 0 {
		o.Workers = q.cfg.Workers
	}
	if o.Dispatch == "" {
		o.Dispatch = "bulk"
	}
	if o.Dispatchers == 0 {
		o.Dispatchers = 8
	}
	if o.Latency == 0 {
		o.Latency = 1000
	}
	if o.Priorities == 0 {
		o.Priorities = 1
	}
	if o.Queues == 0 {
		o.Queues = 1
	}
	switch {
	case o.Queues < 1 || o.Queues > maxBenchQueues:
		return benchResult{}, fmt.Errorf("queue: bench: queues (%d) must be 1 to %d", o.Queues, maxBenchQueues)
	case o.Keys < 0 || o.Keys > maxBenchJobs || o.Keys > 0 && (o.Limit < 1 || o.Limit > MaxConcurrencyLimit):
		return benchResult{}, fmt.Errorf("queue: bench: keys (%d) must be 0 to %d, and with keys the limit (%d) 1 to %d", o.Keys, maxBenchJobs, o.Limit, MaxConcurrencyLimit)
	case o.RateKeys < 0 || o.RateKeys > maxBenchJobs || o.RateKeys > 0 && o.Rate.check("the rate") != nil:
		return benchResult{}, fmt.Errorf("queue: bench: rate keys (%d) must be 0 to %d, and with rate keys the rate (%s) from 1/1ms to %d/%s", o.RateKeys, maxBenchJobs, o.Rate, MaxRate, MaxRatePer)
	case o.Groups < 0 || o.Groups > maxBenchJobs || o.BigGroup < 0 || o.BigGroup > maxBenchJobs || o.BigGroup > 0 && o.Groups < 2:
		return benchResult{}, fmt.Errorf("queue: bench: groups (%d) must be 0 to %d, and with a big group (%d jobs, at most %d) at least 2", o.Groups, maxBenchJobs, o.BigGroup, maxBenchJobs)
	case o.Priorities < 1 || o.Priorities > MaxPriority+1:
		return benchResult{}, fmt.Errorf("queue: bench: priorities (%d) must be 1 to %d", o.Priorities, MaxPriority+1)
	case o.Jobs < 1 || o.Jobs > maxBenchJobs || o.Workers < 1 || o.Workers > MaxWorkers || o.Dispatchers < 1 || o.Dispatchers > MaxWorkers:
		return benchResult{}, fmt.Errorf("queue: bench: jobs (%d) must be 1 to %d, workers (%d) and dispatchers (%d) 1 to %d",
			o.Jobs, maxBenchJobs, o.Workers, o.Dispatchers, MaxWorkers)
	case o.Latency > maxBenchLatency:
		return benchResult{}, fmt.Errorf("queue: bench: latency (%d) must be at most %d jobs", o.Latency, maxBenchLatency)
	case o.Dispatch != "bulk" && o.Dispatch != "single":
		return benchResult{}, fmt.Errorf("queue: bench: dispatch must be single or bulk, not %q", o.Dispatch)
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, int, int) {}
	}
	res := benchResult{Driver: string(q.cfg.Driver), Jobs: o.Jobs, Workers: o.Workers, Mode: o.Dispatch, LogJobs: o.LogJobs, Priorities: o.Priorities,
		Queues: o.Queues, Keys: o.Keys}
	if o.Keys > 0 {
		res.Limit = o.Limit
	}
	if o.RateKeys > 0 {
		res.RateKeys, res.Rate = o.RateKeys, o.Rate.String()
	}
	if o.Groups > 0 {
		res.Groups, res.BigGroup, res.Fair = o.Groups, o.BigGroup, !o.Unfair
	}
	if q.cfg.Driver == Database && q.db != nil {
		res.Database = string(q.db.Dialect())
	}
	queues := benchQueues(o.Queues)
	for _, name := range queues {
		if _, err := q.store.Purge(ctx, name); err != nil {
			return res, fmt.Errorf("queue: bench: %w", err)
		}
	}
	defer q.cleanUpBench(context.WithoutCancel(ctx), queues)

	// Dispatch: the big group's backlog first, then the jobs.
	start := time.Now()
	var dispatched atomic.Int64
	for i := 0; i < o.BigGroup; i += 10_000 {
		batch := make([]Job, 0, min(10_000, o.BigGroup-i))
		for k := range cap(batch) {
			batch = append(batch, bigGroupJob(o, queues, i+k))
		}
		if _, err := q.DispatchMany(ctx, batch...); err != nil {
			return res, fmt.Errorf("queue: bench: %w", err)
		}
		progress("dispatch the big group", i+len(batch), o.BigGroup)
	}
	if o.Dispatch == "bulk" {
		batch := make([]Job, 0, 10_000) // bigger chunks than this gain little: one COPY or transaction each
		for i := 0; i < o.Jobs; i += cap(batch) {
			batch = batch[:0]
			for k := range min(cap(batch), o.Jobs-i) {
				batch = append(batch, benchJobOf(o, queues, i+k))
			}
			if _, err := q.DispatchMany(ctx, batch...); err != nil {
				return res, fmt.Errorf("queue: bench: %w", err)
			}
			progress("dispatch", i+len(batch), o.Jobs)
		}
	} else {
		var wg sync.WaitGroup
		errs := make(chan error, o.Dispatchers)
		for range o.Dispatchers {
			wg.Go(func() {
				for n := dispatched.Add(1); n <= int64(o.Jobs); n = dispatched.Add(1) {
					job := benchJobOf(o, queues, int(n-1))
					if _, err := q.Dispatch(ctx, job); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		done := make(chan struct{})
		go func() {
			t := time.NewTicker(200 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-done:
					return
				case <-t.C:
					progress("dispatch", int(min(dispatched.Load(), int64(o.Jobs))), o.Jobs)
				}
			}
		}()
		wg.Wait()
		close(done)
		close(errs)
		if err := <-errs; err != nil {
			return res, fmt.Errorf("queue: bench: %w", err)
		}
	}
	res.Dispatch = rate(o.BigGroup+o.Jobs, time.Since(start))

	// Work.
	var worked atomic.Int64
	small := newSmallGroups(o)
	hook := func(j benchJob, at time.Time) {
		worked.Add(1)
		small.started(j, at)
	}
	q.benchHook.Store(&hook)
	defer q.benchHook.Store(nil)
	ticker := time.NewTicker(200 * time.Millisecond)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case <-done:
				return
			case <-ticker.C:
				progress("work", int(worked.Load()), o.BigGroup+o.Jobs)
			}
		}
	}()
	start = time.Now()
	small.from(start)
	stats, err := q.benchWork(ctx, queues, o)
	elapsed := time.Since(start)
	ticker.Stop()
	close(done)
	if err != nil {
		return res, fmt.Errorf("queue: bench: %w", err)
	}
	if stats.Succeeded != o.BigGroup+o.Jobs {
		return res, fmt.Errorf("queue: bench: %d of %d jobs succeeded (%s)", stats.Succeeded, o.BigGroup+o.Jobs, stats)
	}
	res.Work = rate(o.BigGroup+o.Jobs, elapsed)
	res.Small = small.result()
	res.RSSKiB, res.HeapKiB = memory()

	// Latency.
	if o.Latency > 0 {
		lat, err := q.benchLatency(ctx, o, queues, progress)
		if err != nil {
			return res, err
		}
		res.Latency = &lat
	}
	return res, nil
}

// cleanUpBench deletes the benchmark's jobs (Purge: on PostgreSQL it also
// vacuums the jobs table, so the dead rows the run left do not slow the
// next searches). It logs what fails: the figures stand.
func (q *Queue) cleanUpBench(ctx context.Context, queues []string) {
	for _, name := range queues {
		if _, err := q.store.Purge(ctx, name); err != nil {
			q.logger.Error("queue: bench: delete the benchmark's jobs", "queue", name, "error", err)
		}
	}
}

// benchQueueOf is the queue of the benchmark's job i: "" (benchQueueName)
// for one queue, else the queues in turn.
func benchQueueOf(queues []string, i int) string {
	if len(queues) == 1 {
		return ""
	}
	return queues[i%len(queues)]
}

// benchLatency dispatches o.Latency jobs 5 ms apart to idle workers and
// measures when each handler starts.
func (q *Queue) benchLatency(ctx context.Context, o benchOptions, queues []string, progress func(string, int, int)) (latencyResult, error) {
	type start struct {
		dispatched int64 // Unix nanoseconds
		at         time.Time
	}
	seen := make(chan start, o.Latency)
	hook := func(j benchJob, at time.Time) { seen <- start{j.DispatchedAt, at} }
	q.benchHook.Store(&hook)
	workCtx, stop := context.WithCancel(ctx)
	defer stop()
	worked := make(chan error, 1)
	idle := make(chan struct{})
	var once sync.Once
	go func() {
		_, err := q.work(workCtx, worker.Options{Queues: queues, Workers: o.Workers, Quiet: !o.LogJobs, Only: q.knownTypes(o.OnlyKnownTypes),
			Idle: func() { once.Do(func() { close(idle) }) }})
		worked <- err
	}()
	// The worker is idle once it listens for dispatches and its first
	// search has found nothing: the latency is a job's, not the worker's
	// start.
	select {
	case <-idle:
	case err := <-worked:
		return latencyResult{}, fmt.Errorf("queue: bench: the worker stopped before it was idle: %w", cmp.Or(err, ctx.Err()))
	case <-ctx.Done():
		return latencyResult{}, ctx.Err()
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var lat, commits, after []time.Duration
	stored := make(map[int64]time.Time, o.Latency) // by dispatch time: when Dispatch returned
	for i := range o.Latency {
		select {
		case <-ctx.Done():
			return latencyResult{}, ctx.Err()
		case <-tick.C:
		}
		at := time.Now()
		if _, err := q.Dispatch(ctx, benchJob{DispatchedAt: at.UnixNano(), Queue: benchQueueOf(queues, i)}); err != nil {
			return latencyResult{}, fmt.Errorf("queue: bench: %w", err)
		}
		stored[at.UnixNano()] = time.Now()
		commits = append(commits, stored[at.UnixNano()].Sub(at))
		progress("latency", i+1, o.Latency)
	}
	timeout := time.After(time.Minute)
	for len(lat) < o.Latency {
		select {
		case st := <-seen:
			lat = append(lat, st.at.Sub(time.Unix(0, st.dispatched)))
			// A handler can start before Dispatch has returned to its
			// caller: count that as no wait.
			after = append(after, max(0, st.at.Sub(stored[st.dispatched])))
		case <-timeout:
			return latencyResult{}, fmt.Errorf("queue: bench: only %d of %d latency jobs ran within a minute", len(lat), o.Latency)
		}
	}
	stop()
	if err := <-worked; err != nil {
		return latencyResult{}, fmt.Errorf("queue: bench: %w", err)
	}
	slices.Sort(lat)
	slices.Sort(commits)
	slices.Sort(after)
	pct := func(d []time.Duration, p float64) float64 {
		i := min(len(d)-1, int(p*float64(len(d))))
		return float64(d[i].Microseconds()) / 1000
	}
	return latencyResult{Jobs: len(lat), P50: pct(lat, 0.50), P95: pct(lat, 0.95), P99: pct(lat, 0.99), Max: pct(lat, 1),
		CommitP50: pct(commits, 0.50), CommitP99: pct(commits, 0.99), CommitMax: pct(commits, 1),
		AfterP50: pct(after, 0.50), AfterP99: pct(after, 0.99), AfterMax: pct(after, 1)}, nil
}

// benchCommand is queue:bench.
func benchCommand() app.Command {
	return app.Command{
		Name:  "queue:bench",
		Usage: "Measure the queue on the configured database",
		Description: "Dispatches --jobs no-op jobs on the queue " + benchQueueName + ", works them with --workers handlers,\n" +
			"then measures the latency of --latency jobs dispatched 5 ms apart to idle workers. It deletes its jobs, and the successes it kept, when it ends.",
		Flags: []cli.Flag{
			&cli.IntFlag{Name: "jobs", Value: 10_000, Usage: "jobs to dispatch and work"},
			&cli.IntFlag{Name: "workers", Usage: "jobs run at once", DefaultText: "queue.workers"},
			&cli.StringFlag{Name: "dispatch", Value: "bulk", Usage: "single (Dispatch from --dispatchers goroutines) or bulk (DispatchMany, 10,000 jobs a call)"},
			&cli.IntFlag{Name: "dispatchers", Value: 8, Usage: "goroutines dispatching with --dispatch single"},
			&cli.IntFlag{Name: "priorities", Value: 1, Usage: "spread the jobs over this many priorities, 0 to N-1, in turn (1: all of priority 0)"},
			&cli.IntFlag{Name: "keys", Usage: "spread the jobs over this many concurrency keys, in turn, each limited to --limit at once (0: no limit)"},
			&cli.IntFlag{Name: "limit", Value: 1, Usage: "with --keys: how many jobs of a key run at once"},
			&cli.IntFlag{Name: "rate-keys", Usage: "spread the jobs over this many rate keys, in turn, each limited to --rate (0: no limit)"},
			&cli.StringFlag{Name: "rate", Value: "1000000/1s", Usage: "with --rate-keys: how many jobs of a key start in a window, max/per"},
			&cli.IntFlag{Name: "groups", Usage: "spread the jobs over this many fairness groups, in turn, each job Fair (0: none)"},
			&cli.IntFlag{Name: "big-group", Usage: "with --groups: dispatch this many jobs of group 0 first, and the --jobs to the other groups; reports when the others' jobs started"},
			&cli.BoolFlag{Name: "unfair", Usage: "with --groups: dispatch the groups' jobs without Fair, to compare"},
			&cli.BoolFlag{Name: "only-known-types", Usage: "search only for the job types of the app, as queue:work --only-known-types"},
			&cli.IntFlag{Name: "queues", Value: 1, Usage: "spread the jobs over this many queues, " + benchQueueName + "-0 to -(N-1), in turn, all worked by the one worker"},
			&cli.IntFlag{Name: "latency", Value: 1000, Usage: "jobs for the latency measure: its p99 is the tenth-slowest (0: skip it)"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			&cli.BoolFlag{Name: "log-jobs", Usage: "log every successful attempt, as queue:work does (off: only failures)"},
			&cli.StringFlag{Name: "cpuprofile", Usage: "write a CPU profile of the whole run to `FILE` (read it with go tool pprof)"},
		},
		Action: app.Uses(func(c *cli.Context, q *Queue) error {
			for _, b := range []struct {
				flag   string
				lo, hi int
				also   string
			}{{"jobs", 1, maxBenchJobs, ""}, {"workers", 1, MaxWorkers, ", as queue.workers"}, {"dispatchers", 1, MaxWorkers, ""}, {"latency", 0, maxBenchLatency, ""}} {
				if err := bounded(c, b.flag, b.lo, b.hi, b.also); err != nil {
					return err
				}
			}
			if path := c.String("cpuprofile"); path != "" {
				f, err := os.Create(path)
				if err != nil {
					return fmt.Errorf("queue:bench: --cpuprofile: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("queue:bench: --cpuprofile: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			o := benchOptions{Jobs: c.Int("jobs"), Workers: c.Int("workers"), Dispatch: c.String("dispatch"),
				Dispatchers: c.Int("dispatchers"), Latency: c.Int("latency"), LogJobs: c.Bool("log-jobs"), Priorities: c.Int("priorities"),
				Keys: c.Int("keys"), Limit: c.Int("limit"), RateKeys: c.Int("rate-keys"),
				Queues: c.Int("queues"), Groups: c.Int("groups"), BigGroup: c.Int("big-group"), Unfair: c.Bool("unfair"),
				OnlyKnownTypes: c.Bool("only-known-types")}
			if o.RateKeys > 0 {
				r, err := ParseRate(c.String("rate"))
				if err != nil {
					return fmt.Errorf("queue:bench: --rate: %w", err)
				}
				o.Rate = r
			}
			if o.Latency == 0 {
				o.Latency = -1
			}
			if !c.Bool("json") {
				progress := term.NewProgress(c.App.ErrWriter, "Benchmark", 0)
				o.Progress = func(phase string, done, total int) {
					progress.Show(fmt.Sprintf("%s %d/%d", phase, done, total))
				}
				defer progress.Done()
			}
			res, err := q.bench(c.Context, o)
			if err != nil {
				return err
			}
			if c.Bool("json") {
				enc := json.NewEncoder(c.App.Writer)
				enc.SetIndent("", "  ")
				return enc.Encode(res)
			}
			w := c.App.Writer
			db := res.Driver
			if res.Database != "" {
				db += " (" + res.Database + ")"
			}
			logged := "failed attempts logged"
			if res.LogJobs {
				logged = "every attempt logged"
			}
			fmt.Fprintf(w, "Queue benchmark: %s driver, %d jobs, %d workers, %s\n", db, res.Jobs, res.Workers, logged)
			fmt.Fprintf(w, "dispatch (%s): %d jobs in %.2fs: %.0f jobs/s\n", res.Mode, res.Dispatch.Jobs, res.Dispatch.Seconds, res.Dispatch.PerSecond)
			fmt.Fprintf(w, "work:          %d jobs in %.2fs: %.0f jobs/s\n", res.Work.Jobs, res.Work.Seconds, res.Work.PerSecond)
			if g := res.Small; g != nil {
				turns := "in turns"
				if !res.Fair {
					turns = "without Fair"
				}
				fmt.Fprintf(w, "groups (%s): the %d jobs of %d groups beside a backlog of %d started from %.2fs (median) to %.2fs (last) into the work, %d of the backlog before the last\n",
					turns, g.Jobs, res.Groups-1, res.BigGroup, g.P50, g.Worst, g.BigBefore)
			}
			fmt.Fprintf(w, "memory after the work: %d KiB resident, %d KiB Go heap in use\n", res.RSSKiB, res.HeapKiB)
			if l := res.Latency; l != nil {
				fmt.Fprintf(w, "latency (%d jobs 5 ms apart): p50 %.2f ms, p95 %.2f ms, p99 %.2f ms, max %.2f ms\n", l.Jobs, l.P50, l.P95, l.P99, l.Max)
				fmt.Fprintf(w, "  the dispatch's commit: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", l.CommitP50, l.CommitP99, l.CommitMax)
				fmt.Fprintf(w, "  from the commit to the start: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", l.AfterP50, l.AfterP99, l.AfterMax)
			}
			return nil
		}),
	}
}
