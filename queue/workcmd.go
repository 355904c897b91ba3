package queue

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	"github.com/navree/navree/db"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// workIn is what queue:work uses: the queue, the app's metrics endpoint
// when it has one, served on --health-addr, and, with db.Module, the
// check that the app's migrations have run, before it starts.
type workIn struct {
	fx.In
	Queue    *Queue
	Metrics  app.MetricsRoute `optional:"true"`
	Migrated db.Migrated      `optional:"true"`
}

// workCommand is queue:work: it runs the queue's workers until a signal
// stops it.
func workCommand() app.Command {
	return app.Command{
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
