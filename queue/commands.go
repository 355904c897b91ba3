package queue

import (
	"fmt"
	"strings"
	"time"

	"github.com/navree/navree/app"
	"github.com/urfave/cli/v2"
)

func commands() []app.Command {
	return []app.Command{
		{
			Name:  "queue:work",
			Usage: "Run queued jobs until stopped",
			Description: "Runs queue.workers jobs at once from the worker queues (queue.queues), highest priority first.\n" +
				"SIGINT or SIGTERM stops it gracefully: it takes no new job and waits for the running ones.",
			Flags: []cli.Flag{
				&cli.StringSliceFlag{Name: "queue", Usage: "queues to work, highest priority first (comma-separated or repeated; default queue.queues)"},
				&cli.IntFlag{Name: "workers", Usage: "jobs to run at once (default queue.workers)"},
				&cli.BoolFlag{Name: "once", Usage: "run a single job, if one is available, then stop"},
				&cli.IntFlag{Name: "max-jobs", Usage: "stop after running this many job attempts (0: no limit)"},
				&cli.DurationFlag{Name: "max-time", Usage: "stop taking jobs after this long, such as 1h (0: no limit)"},
				&cli.BoolFlag{Name: "stop-when-empty", Usage: "stop when no job is available"},
			},
			Action: func(c *cli.Context, q *Queue) error {
				o := WorkOptions{
					Queues:        c.StringSlice("queue"),
					Workers:       c.Int("workers"),
					Once:          c.Bool("once"),
					MaxJobs:       c.Int("max-jobs"),
					MaxTime:       c.Duration("max-time"),
					StopWhenEmpty: c.Bool("stop-when-empty"),
				}
				if c.IsSet("workers") && o.Workers < 1 {
					return fmt.Errorf("queue:work: --workers must be 1 or more, not %d", o.Workers)
				}
				if o.MaxJobs < 0 || o.MaxTime < 0 {
					return fmt.Errorf("queue:work: --max-jobs and --max-time must not be negative")
				}
				for i, name := range o.Queues {
					o.Queues[i] = strings.TrimSpace(name)
				}
				done := make(chan struct{})
				defer close(done)
				go func() {
					select {
					case <-c.Context.Done():
						fmt.Fprintln(c.App.ErrWriter, "Stopping: taking no new jobs, waiting for the running ones to finish.")
					case <-done:
					}
				}()
				stats, err := q.Work(c.Context, o)
				fmt.Fprintln(c.App.Writer, stats)
				return err
			},
		},
		{
			Name:  "queue:failed",
			Usage: "List the failed jobs",
			Action: func(c *cli.Context, q *Queue) error {
				jobs, err := q.Failed(c.Context)
				if err != nil {
					return err
				}
				if len(jobs) == 0 {
					fmt.Fprintln(c.App.Writer, "No failed jobs.")
				}
				for _, j := range jobs {
					first, _, _ := strings.Cut(j.Error, "\n")
					fmt.Fprintf(c.App.Writer, "%s  %s  %s  attempts=%d  %s  %s\n",
						j.ID, j.Queue, j.Name, j.Attempts, j.FailedAt.UTC().Format(time.DateTime), first)
				}
				return nil
			},
		},
		{
			Name:      "queue:retry",
			Usage:     "Put a failed job, or every failed job, back on its queue",
			ArgsUsage: "ID|all",
			Action: func(c *cli.Context, q *Queue) error {
				if c.NArg() != 1 {
					return fmt.Errorf("queue:retry takes one argument, a failed job's id or all")
				}
				n, err := q.Retry(c.Context, c.Args().First())
				if err != nil {
					return err
				}
				switch {
				case n == 0:
					fmt.Fprintln(c.App.Writer, "There are no failed jobs to retry.")
				case n == 1:
					fmt.Fprintln(c.App.Writer, "Put 1 failed job back on its queue.")
				default:
					fmt.Fprintf(c.App.Writer, "Put %d failed jobs back on their queues.\n", n)
				}
				return nil
			},
		},
		{
			Name:  "queue:flush",
			Usage: "Delete every failed job",
			Action: func(c *cli.Context, q *Queue) error {
				n, err := q.FlushFailed(c.Context)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Deleted %d failed job(s).\n", n)
				return nil
			},
		},
	}
}
