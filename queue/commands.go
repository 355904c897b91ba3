package queue

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	"github.com/navree/navree/db"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// bounded checks that the int flag of c's command is within lo to hi
// when it is given; also says where the same bounds apply.
func bounded(c *cli.Context, flag string, lo, hi int, also string) error {
	if v := c.Int(flag); c.IsSet(flag) && (v < lo || v > hi) {
		return fmt.Errorf("%s: --%s must be %d to %d%s, not %d", c.Command.Name, flag, lo, hi, also, v)
	}
	return nil
}

// workIn is what queue:work uses: the queue, the app's metrics endpoint
// when it has one, served on --health-addr, and, with db.Module, the
// check that the app's migrations have run, before it starts.
type workIn struct {
	fx.In
	Queue    *Queue
	Metrics  app.MetricsRoute `optional:"true"`
	Migrated db.Migrated      `optional:"true"`
}

// failedPage is how many failed jobs queue:failed reads at a time.
const failedPage = 100

func commands() []app.Command {
	return []app.Command{
		monitorCommand(),
		workersCommand(),
		restartCommand(),
		jobCommand(),
		batchesCommand(),
		workflowCommand(),
		{
			Name:  "queue:work",
			Usage: "Run queued jobs until stopped",
			Description: "Runs queue.workers jobs at once from the worker queues (queue.queues), highest priority first.\n" +
				"SIGINT or SIGTERM stops it gracefully: it takes no new job and waits for the running ones, until\n" +
				"--stop-timeout: then it interrupts them and puts them back on their queues, their attempt not spent.\n" +
				"A second signal does that at once. queue:restart stops it the same way; it then exits 0.",
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "queue", Usage: "queues to work, highest priority first (comma-separated or repeated)", DefaultText: "queue.queues"},
				&cli.IntFlag{Name: "workers", Usage: "jobs to run at once", DefaultText: "queue.workers"},
				&cli.BoolFlag{Name: "once", Usage: "run a single job, if one is available, then stop"},
				&cli.IntFlag{Name: "max-jobs", Usage: "stop after running this many job attempts (0: no limit)"},
				&cli.DurationFlag{Name: "max-time", Usage: "stop taking jobs after this long, such as 1h (0: no limit)"},
				&cli.BoolFlag{Name: "stop-when-empty", Usage: "stop once no job is available and none is running"},
				&cli.StringFlag{Name: "health-addr", Usage: "answer health checks on `ADDR`, such as :8081: GET /livez, and /readyz once the worker is registered; " +
					"with metrics.enabled, the worker's metrics too, at metrics.path, to the requests metrics.Access lets in"},
				&cli.BoolFlag{Name: "only-known-types", Usage: "take only the jobs of the types this build has handlers for, leaving the others waiting (default: queue.only_known_types)"},
				&cli.DurationFlag{Name: "stop-timeout", Usage: "once stopping, interrupt the jobs still running after `D`, such as 25s, and put them back on their queues (0: no deadline)",
					DefaultText: "queue.stop_timeout"},
			},
			Action: app.Uses(func(c *cli.Context, p workIn) error {
				if err := p.Migrated.Check(c.Context); err != nil {
					return err
				}
				q := p.Queue
				o := WorkOptions{
					Queues:         c.StringSlice("queue"),
					Workers:        c.Int("workers"),
					Once:           c.Bool("once"),
					MaxJobs:        c.Int("max-jobs"),
					MaxTime:        c.Duration("max-time"),
					StopWhenEmpty:  c.Bool("stop-when-empty"),
					OnlyKnownTypes: c.Bool("only-known-types"),
				}
				if err := bounded(c, "workers", 1, MaxWorkers, ", as queue.workers"); err != nil {
					return err
				}
				if o.MaxJobs < 0 || o.MaxTime < 0 {
					return fmt.Errorf("queue:work: --max-jobs and --max-time must not be negative")
				}
				if c.IsSet("stop-timeout") {
					d := c.Duration("stop-timeout")
					if d < 0 || d > MaxStopTimeout {
						return fmt.Errorf("queue:work: --stop-timeout is %s; want 0s (no deadline) to 24h, such as 25s, as queue.stop_timeout", d)
					}
					o.StopTimeout = cmp.Or(d, -1)
				}
				for i, name := range o.Queues {
					o.Queues[i] = strings.TrimSpace(name)
					if err := checkQueue(o.Queues[i]); err != nil { // before any work, not after it
						return fmt.Errorf("queue:work: --queue: %w", err)
					}
				}
				fmt.Fprintln(c.App.ErrWriter, q.startLine(o))
				h := newHealth()
				if addr := c.String("health-addr"); addr != "" {
					bound, stop, err := serveHealth(addr, h, p.Metrics)
					if err != nil {
						return err
					}
					defer stop()
					o.Heartbeat = h.beat
					fmt.Fprintf(c.App.ErrWriter, "Health checks on http://%s/livez and /readyz\n", bound)
					if h.metrics != "" {
						fmt.Fprintf(c.App.ErrWriter, "Metrics on http://%s%s, to the requests metrics.Access lets in\n", bound, h.metrics)
					}
				}
				done, stopNow := make(chan struct{}), make(chan struct{})
				defer close(done)
				o.StopNow = stopNow
				// The first signal ends c.Context (App.Main); this sees
				// it too, and the second, which stops the worker at once.
				signals := make(chan os.Signal, 2)
				signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
				defer signal.Stop(signals)
				deadline := q.workOptions(o).StopTimeout
				var told sync.Once
				stopping := func(why string) {
					told.Do(func() {
						h.stop(why)
						if deadline > 0 {
							fmt.Fprintf(c.App.ErrWriter, "Stopping (%s): taking no new jobs; the running ones have %s to finish, then go back to their queues (a second signal: at once).\n", why, deadline)
						} else {
							fmt.Fprintf(c.App.ErrWriter, "Stopping (%s): taking no new jobs, waiting for the running ones to finish (a second signal interrupts them).\n", why)
						}
					})
				}
				o.Restarting = func() { stopping("restart requested by queue:restart") }
				go func() {
					select {
					case <-c.Context.Done():
						stopping("signalled")
					case <-done:
						return
					}
					for n := 0; n < 2; {
						select {
						case <-signals:
							n++
						case <-done:
							return
						}
					}
					signal.Stop(signals) // a third signal kills the process
					close(stopNow)
					fmt.Fprintln(c.App.ErrWriter, "Stopping now: interrupting the running jobs, which go back to their queues.")
				}()
				progress := term.NewProgress(c.App.ErrWriter, "Working", 0)
				o.Progress = func(s WorkStats) {
					progress.Show(fmt.Sprintf("%d attempt(s): %d succeeded, %d released for retry, %d failed", s.Processed, s.Succeeded, s.Released, s.Failed))
				}
				stats, err := q.Work(c.Context, o)
				progress.Done()
				fmt.Fprintln(c.App.Writer, stats.summary(c.App.Writer))
				if errors.Is(err, ErrRestart) {
					fmt.Fprintln(c.App.ErrWriter, "Stopped: a restart was requested (queue:restart); start the new build.")
					return nil
				}
				return err
			}),
		},
		{
			Name:  "queue:bench",
			Usage: "Measure the queue on the configured database",
			Description: "Dispatches --jobs no-op jobs on the queue " + benchQueueName + ", works them with --workers handlers,\n" +
				"then measures the latency of --latency jobs dispatched 5 ms apart to idle workers. It deletes its jobs when it ends.",
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
		},
		{
			Name:      "queue:dispatch",
			Usage:     "Queue a job of a registered type, its payload given as JSON",
			ArgsUsage: "NAME [JSON]",
			Description: "Queues a job of type NAME (such as contacts.export) with the payload JSON, decoded into the\n" +
				"job's type with unknown fields refused, and prints its id. JSON may be left out only for a type\n" +
				"without fields.",
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "delay", Usage: "run it after this long, such as 10m", DefaultText: "at once"},
				&cli.StringFlag{Name: "queue", Usage: "queue it on this queue", DefaultText: "the job type's own, or queue.default_queue"},
			},
			Action: app.Uses(func(c *cli.Context, q *Queue) error {
				if c.NArg() < 1 || c.NArg() > 2 {
					return fmt.Errorf("queue:dispatch takes a job type and its JSON payload, such as: queue:dispatch contacts.export '{\"company_id\": \"c1\"}'; %s", q.registered(""))
				}
				e, err := q.envelopeFromJSON(c.App.Name, c.Args().Get(0), []byte(c.Args().Get(1)))
				if err != nil {
					return err
				}
				if c.Duration("delay") < 0 {
					return fmt.Errorf("queue:dispatch: --delay must not be negative, not %s", c.Duration("delay"))
				}
				e.Delay = c.Duration("delay")
				if c.IsSet("queue") {
					e.Options.Queue = strings.TrimSpace(c.String("queue"))
					if err := checkQueue(e.Options.Queue); err != nil {
						return err
					}
				}
				id, err := q.Push(c.Context, e)
				if err != nil {
					return err
				}
				o, _ := q.resolve(e.Name, e.Options)
				when := ""
				if e.Delay > 0 {
					when = ", due in " + e.Delay.String()
				}
				fmt.Fprintf(c.App.Writer, "Queued %s on %s%s: job %s\n", e.Name, o.Queue, when, id)
				if left := q.unworked([]string{o.Queue}); left != nil {
					fmt.Fprintln(c.App.ErrWriter, "Warning: "+q.leftOut(left))
				}
				return nil
			}),
		},
		{
			Name:  "queue:status",
			Usage: "Show each queue's waiting, delayed, running, stale and failed jobs",
			Description: "Prints a table of the jobs of each queue that has one: waiting (due now), delayed, running,\n" +
				"stale (running, their worker presumed dead), failed, and how long the oldest waiting job has waited;\n" +
				"and the paused queues. A count stops at 100000: more shows as 100000+ (100001 with --json).",
			Flags: []cli.Flag{
				&cli.DurationFlag{Name: "watch", Usage: "print it again every `D`, such as 2s, until stopped (on a terminal: redrawn in place)", DefaultText: "once"},
				&cli.BoolFlag{Name: "json", Usage: "print it as JSON"},
			},
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				q := i.q
				every := c.Duration("watch")
				if c.IsSet("watch") && every < 100*time.Millisecond {
					return fmt.Errorf("queue:status: --watch must be 100ms or more, not %s", every)
				}
				terminal := term.IsTerminal(c.App.Writer)
				for first := true; ; first = false {
					stats, err := i.Stats(c.Context)
					if err != nil {
						return err
					}
					if err := i.UnknownTypes(c.Context, stats); err != nil {
						return err
					}
					all, err := i.EveryQueuePaused(c.Context)
					if err != nil {
						return err
					}
					if every > 0 && terminal {
						fmt.Fprint(c.App.Writer, "\033[H\033[2J") // redraw in place
					} else if every > 0 && !first {
						fmt.Fprintln(c.App.Writer)
					}
					if every > 0 && !c.Bool("json") {
						fmt.Fprintf(c.App.Writer, "%s\n", q.clock.Now().UTC().Format(time.DateTime+" UTC"))
					}
					if err := printStatus(c.App.Writer, stats, all, c.Bool("json")); err != nil {
						return err
					}
					var left []string
					for _, s := range stats {
						if s.Unworked {
							left = append(left, s.Queue)
						}
					}
					if left != nil && !c.Bool("json") {
						fmt.Fprintln(c.App.Writer, q.leftOut(left))
					}
					if every == 0 {
						return nil
					}
					select {
					case <-c.Context.Done():
						return nil
					case <-time.After(every):
					}
				}
			}),
		},
		{
			Name:  "queue:failed",
			Usage: "List the failed jobs",
			Description: "Prints a header, then one line per failed job, oldest failure first: its id, queue, type,\n" +
				"attempts, when it failed (UTC) and the first line of its error. It reads them a page at a time,\n" +
				"its columns aligned.",
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				q := i.q
				page := FailedQuery{Limit: failedPage}
				var widths [5]int // of the columns before the error's
				for listed := 0; ; {
					jobs, next, err := q.failed(c.Context, page, false)
					if err != nil {
						return err
					}
					if listed == 0 && len(jobs) == 0 {
						fmt.Fprintln(c.App.Writer, "No failed jobs.")
					}
					rows := make([][6]string, 0, len(jobs)+1)
					if listed == 0 && len(jobs) > 0 {
						rows = append(rows, [6]string{"ID", "QUEUE", "TYPE", "ATTEMPTS", "FAILED (UTC)", "ERROR"})
					}
					listed += len(jobs)
					for _, j := range jobs {
						first, _, _ := strings.Cut(j.Error, "\n")
						rows = append(rows, [6]string{j.ID, j.Queue, j.Name, strconv.Itoa(j.Attempts), j.FailedAt.UTC().Format(time.DateTime), first})
					}
					// The columns of a page are as wide as their widest cell
					// on it and on the pages before, the header's included.
					for _, r := range rows {
						for col := range widths {
							widths[col] = max(widths[col], len(r[col]))
						}
					}
					for _, r := range rows {
						fmt.Fprintf(c.App.Writer, "%-*s  %-*s  %-*s  %-*s  %-*s  %s\n",
							widths[0], r[0], widths[1], r[1], widths[2], r[2], widths[3], r[3], widths[4], r[4], r[5])
					}
					if next == "" {
						return nil
					}
					page.After = next
				}
			}),
		},
		{
			Name:      "queue:retry",
			Usage:     "Put a failed job, or every failed job, back on its queue",
			ArgsUsage: "ID|all",
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				q := i.q
				if c.NArg() != 1 {
					return fmt.Errorf("queue:retry takes one argument, a failed job's id or all")
				}
				var n int
				var queues []string // of the jobs retried, as far as known
				var err error
				if id := c.Args().First(); id != "all" {
					if j, err := i.Job(c.Context, id); err == nil {
						queues = []string{j.Queue}
					}
					n, err = i.Retry(c.Context, id)
				} else {
					n, queues, err = retryAll(c, i)
				}
				if err != nil {
					return err
				}
				switch {
				case n == 0:
					fmt.Fprintln(c.App.Writer, "There are no failed jobs to retry.")
					return nil
				case n == 1:
					fmt.Fprintln(c.App.Writer, "Put 1 failed job back on its queue: it runs when a worker takes it (start queue:work if none is running).")
				default:
					fmt.Fprintf(c.App.Writer, "Put %d failed jobs back on their queues: they run when a worker takes them (start queue:work if none is running).\n", n)
				}
				if left := q.unworked(queues); left != nil {
					fmt.Fprintln(c.App.Writer, q.leftOut(left))
				}
				return nil
			}),
		},
		{
			Name:      "queue:pause",
			Usage:     "Stop workers taking jobs of a queue, or of every queue, until queue:resume",
			ArgsUsage: "QUEUE|all",
			Description: "Dispatches are still stored and the running jobs finish; no worker of any process takes another job\n" +
				"of the queue until it is resumed. Workers on PostgreSQL hear of it at once, on SQLite by their next poll.",
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				if c.NArg() != 1 {
					return fmt.Errorf("queue:pause takes one argument, a queue name or all, such as: queue:pause mail")
				}
				name := c.Args().First()
				if err := i.Pause(c.Context, name); err != nil {
					return err
				}
				if name == AllQueues {
					fmt.Fprintln(c.App.Writer, "Paused every queue: workers take no new jobs; the running ones finish. queue:resume all resumes them.")
				} else {
					fmt.Fprintf(c.App.Writer, "Paused the queue %s: workers take no new jobs of it; the running ones finish. queue:resume %s resumes it.\n", name, name)
				}
				return nil
			}),
		},
		{
			Name:      "queue:resume",
			Usage:     "Let workers take the jobs of a paused queue, or of every queue, again",
			ArgsUsage: "QUEUE|all",
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				q := i.q
				if c.NArg() != 1 {
					return fmt.Errorf("queue:resume takes one argument, a queue name or all, such as: queue:resume mail")
				}
				name := c.Args().First()
				was, err := q.resume(c.Context, name)
				switch {
				case err != nil:
					return err
				case name == AllQueues && was:
					fmt.Fprintln(c.App.Writer, "Resumed every queue.")
				case name == AllQueues:
					fmt.Fprintln(c.App.Writer, "No queue was paused.")
				case was:
					fmt.Fprintf(c.App.Writer, "Resumed the queue %s.\n", name)
				default:
					fmt.Fprintf(c.App.Writer, "The queue %s was not paused.\n", name)
				}
				return nil
			}),
		},
		{
			Name:      "queue:cancel",
			Usage:     "Cancel a waiting, delayed or running job",
			ArgsUsage: "ID",
			Description: "A waiting or delayed job moves to the failed jobs with the error \"cancelled\" (queue:retry ID runs it after all).\n" +
				"A running job's attempt has its context cancelled within a second; if its handler then returns an error,\n" +
				"the job fails as \"cancelled\" and is not retried.",
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				q := i.q
				if c.NArg() != 1 {
					return fmt.Errorf("queue:cancel takes one argument, a job's id (queue:status counts the jobs; queue:failed lists the failed ones)")
				}
				id := c.Args().First()
				did, err := q.cancel(c.Context, id)
				if err != nil {
					return err
				}
				if did == CancelledWaiting {
					fmt.Fprintf(c.App.Writer, "Cancelled the job %s: it is a failed job now (queue:retry %[1]s runs it after all).\n", id)
				} else {
					fmt.Fprintf(c.App.Writer, "Asked the worker running the job %s to cancel it: it is not retried.\n", id)
				}
				return nil
			}),
		},
		{
			Name:      "queue:forget",
			Usage:     "Delete a failed job",
			ArgsUsage: "ID",
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				if c.NArg() != 1 {
					return fmt.Errorf("queue:forget takes one argument, a failed job's id (queue:failed lists them)")
				}
				if err := i.DeleteFailed(c.Context, c.Args().First()); err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Deleted the failed job %s.\n", c.Args().First())
				return nil
			}),
		},
		{
			Name:  "queue:prune-failed",
			Usage: "Delete the failed jobs older than --older-than",
			Description: "Deletes them 1,000 to a transaction, oldest first. To prune on a schedule, dispatch the job\n" +
				"queue.prune_failed from an entry: schedule.Cron(\"queue.prune_failed\", \"0 3 * * *\", queue.PruneFailedJob{OlderThanHours: 168}).",
			Flags: []cli.Flag{&cli.DurationFlag{Name: "older-than", Value: 7 * 24 * time.Hour, Usage: "delete those that failed more than `D` ago, such as 72h"}},
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				progress := term.NewProgress(c.App.ErrWriter, "Deleting failed jobs", 0)
				n, err := i.PruneFailed(c.Context, c.Duration("older-than"), progress.Set)
				progress.Done()
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Deleted %d failed job(s) older than %s.\n", n, c.Duration("older-than"))
				return nil
			}),
		},
		{
			Name:  "queue:flush",
			Usage: "Delete every failed job",
			Action: app.Uses(func(c *cli.Context, i *Inspector) error {
				n, err := i.FlushFailed(c.Context)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Deleted %d failed job(s).\n", n)
				return nil
			}),
		},
	}
}

// startLine is what queue:work says when it starts: the queues it works,
// its workers, its driver and, for the database driver, the database
// (its URL without the password).
func (q *Queue) startLine(o WorkOptions) string {
	o = q.workOptions(o)
	workers := "1 worker"
	if o.Workers != 1 {
		workers = strconv.Itoa(o.Workers) + " workers"
	}
	where := string(q.cfg.Driver) + " driver"
	if q.cfg.Driver == Database && q.db != nil {
		where += ", " + q.db.String()
	}
	return fmt.Sprintf("Working queues %s with %s (%s).", strings.Join(o.Queues, ", "), workers, where)
}

// printStatus writes the stats as a table, or as JSON; all says that
// every queue is paused.
func printStatus(w io.Writer, stats []Stats, all, asJSON bool) error {
	if asJSON {
		type row struct {
			Queue            string         `json:"queue"`
			Waiting          int            `json:"waiting"`
			Delayed          int            `json:"delayed"`
			Running          int            `json:"running"`
			Stale            int            `json:"stale"`
			Failed           int            `json:"failed"`
			OldestWaitingSec float64        `json:"oldest_waiting_secs"`
			Paused           bool           `json:"paused"`
			Unworked         bool           `json:"unworked"`
			Prioritized      bool           `json:"prioritized"`
			Held             int            `json:"held"`
			Throttled        []throttleRow  `json:"throttled"`
			UnknownTypes     map[string]int `json:"unknown_types"`
		}
		rows := make([]row, len(stats))
		for i, s := range stats {
			rows[i] = row{s.Queue, s.Waiting, s.Delayed, s.Running, s.Stale, s.Failed, s.OldestWaiting.Seconds(), s.Paused, s.Unworked, s.Prioritized, s.Held,
				[]throttleRow{}, map[string]int{}}
			maps.Copy(rows[i].UnknownTypes, s.Unknown)
			for _, t := range s.Throttled {
				rows[i].Throttled = append(rows[i].Throttled, throttleRow{t.Key, t.Rate.Max, t.Rate.Per.Seconds(), t.Reopens.UTC()})
			}
		}
		return json.NewEncoder(w).Encode(rows)
	}
	if all {
		fmt.Fprintln(w, "Every queue is paused: queue:resume all resumes them.")
	}
	if len(stats) == 0 {
		_, err := fmt.Fprintln(w, "No jobs: every queue is empty.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tWAITING\tDELAYED\tRUNNING\tSTALE\tFAILED\tOLDEST WAITING")
	for _, s := range stats {
		oldest := "-"
		if s.OldestWaiting > 0 {
			oldest = s.OldestWaiting.Round(time.Second).String()
		}
		var marks []string
		if s.Paused && !all {
			marks = append(marks, "paused")
		}
		if s.Unworked {
			marks = append(marks, "no worker")
		}
		if s.Prioritized {
			marks = append(marks, "by priority")
		}
		if s.Held > 0 {
			marks = append(marks, count(s.Held)+" held by limits")
		}
		if len(s.Throttled) > 0 {
			marks = append(marks, throttledMark(s.Throttled))
		}
		name := s.Queue
		if marks != nil {
			name += " (" + strings.Join(marks, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, count(s.Waiting), count(s.Delayed), count(s.Running), count(s.Stale), count(s.Failed), oldest)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range stats {
		if len(s.Unknown) == 0 {
			continue
		}
		var types []string
		n := 0
		for _, name := range slices.Sorted(maps.Keys(s.Unknown)) {
			types = append(types, fmt.Sprintf("%s (%d)", name, s.Unknown[name]))
			n += s.Unknown[name]
		}
		fmt.Fprintf(w, "%s: %d waiting job(s) of a type no handler of this build knows: %s. A worker of this build fails them (but with queue.only_known_types): register the type, or declare its old name an alias of the new (queue.WithAliases).\n",
			s.Queue, n, strings.Join(types, ", "))
	}
	return nil
}

// throttleRow is a full rate limit as queue:status --json writes it.
type throttleRow struct {
	Key       string    `json:"key"`
	Max       int       `json:"max"`
	PerSecs   float64   `json:"per_secs"`
	ReopensAt time.Time `json:"reopens_at"`
}

// throttledMark is the mark of a queue kept waiting by full rate limits,
// such as "throttled by stripe (10/1s) until 10:42:03.120 UTC".
func throttledMark(list []Throttle) string {
	keys := make([]string, len(list))
	for i, t := range list {
		keys[i] = t.Key + " (" + t.Rate.String() + ")"
	}
	return "throttled by " + strings.Join(keys, ", ") + " until " + list[0].Reopens.UTC().Format("15:04:05.000 UTC")
}

// retryAll retries every failed job, with a progress line on a terminal,
// and returns how many and the queues that had failed jobs.
func retryAll(c *cli.Context, i *Inspector) (int, []string, error) {
	total, known := 0, true // not known when a count of Stats stopped at its limit
	var queues []string
	if stats, err := i.Stats(c.Context); err == nil {
		for _, s := range stats {
			if s.Failed > 0 {
				queues = append(queues, s.Queue)
			}
			total, known = total+s.Failed, known && s.Failed <= CountLimit
		}
	}
	if !known {
		total = 0
	}
	progress := term.NewProgress(c.App.ErrWriter, "Retrying failed jobs", total)
	defer progress.Done()
	n, err := i.RetryAll(c.Context, progress.Set)
	return n, queues, err
}

// count is a count of Stats as a person reads it: past CountLimit,
// "100000+".
func count(n int) string {
	if n > CountLimit {
		return strconv.Itoa(CountLimit) + "+"
	}
	return strconv.Itoa(n)
}
