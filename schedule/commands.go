package schedule

import (
	"cmp"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"
	"go.uber.org/fx"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
)

// workIn is what schedule:work uses: the scheduler, and the check that
// the app's migrations have run, before it starts.
type workIn struct {
	fx.In
	Scheduler *Scheduler
	Migrated  db.Migrated `optional:"true"`
}

func commands() []app.Command {
	return []app.Command{
		{
			Name:  "schedule:work",
			Usage: "Run the scheduler until stopped: dispatch each entry's jobs at its ticks",
			Description: "Sleeps until the next tick and dispatches what is due through the queue; any number of\n" +
				"schedule:work processes may run on one database, each tick is dispatched once. Stops on SIGTERM or Ctrl-C,\n" +
				"and exits 0 at queue:restart.",
			Action: app.Uses(func(c *cli.Context, p workIn) error {
				if err := p.Migrated.Check(c.Context); err != nil {
					return err
				}
				s := p.Scheduler
				err := s.work(c.Context, func() {
					fmt.Fprintf(c.App.Writer, "Scheduling %d entr%s (Ctrl-C to stop)\n", len(s.plans), plural(len(s.plans), "y", "ies"))
				})
				switch {
				case errors.Is(err, queue.ErrRestart):
					fmt.Fprintln(c.App.Writer, "Stopped scheduling: a restart was requested (queue:restart).")
					return nil
				case err != nil:
					return err
				}
				fmt.Fprintln(c.App.Writer, "Stopped scheduling.")
				return nil
			}),
		},
		{
			Name:  "schedule:prune",
			Usage: "Delete the claims of ticks older than --older-than, keeping each entry's latest",
			Description: "schedule:work does it once an hour for those older than 7 days; this does it now,\n" +
				"1,000 to a transaction.",
			Flags: []cli.Flag{&cli.DurationFlag{Name: "older-than", Value: 7 * 24 * time.Hour, Usage: "delete the claims of ticks more than `D` ago"}},
			Action: app.Uses(func(c *cli.Context, s *Scheduler) error {
				age := c.Duration("older-than")
				if age <= 0 {
					return fmt.Errorf("schedule:prune: --older-than is %s; want more than 0, such as 168h", age)
				}
				n, err := s.Prune(c.Context, s.clock.Now().Add(-age))
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "Deleted %d claim(s) of ticks older than %s.\n", n, age)
				return nil
			}),
		},
		{
			Name:  "schedule:list",
			Usage: "List the scheduled entries: their schedule, zone, next and last run, job and queue",
			Action: app.Uses(func(c *cli.Context, s *Scheduler) error {
				if len(s.plans) == 0 {
					fmt.Fprintln(c.App.Writer, "Nothing is scheduled: register entries with schedule.Cron or schedule.Every.")
					return nil
				}
				now := s.clock.Now()
				entries, err := s.Status(c.Context)
				if err != nil {
					return err
				}
				w := tabwriter.NewWriter(c.App.Writer, 0, 0, 2, ' ', 0)
				fmt.Fprintln(w, "NAME\tSCHEDULE\tZONE\tNEXT RUN\tLAST RUN\tJOB\tQUEUE")
				for i, e := range entries {
					next := "never"
					if !e.Next.IsZero() {
						next = e.Next.In(s.plans[i].loc).Format("2006-01-02 15:04:05 MST") + " (in " + until(e.Next.Sub(now)) + ")"
					}
					last := "never"
					if e.Last != nil {
						last = e.Last.At.Format("2006-01-02 15:04:05 UTC")
						if e.Last.Skipped {
							last += " (skipped)"
						}
					}
					zone, job, q := cmp.Or(e.Zone, "-"), cmp.Or(e.Job, "-"), e.Queue
					switch {
					case e.Job == "":
						q = "-"
					case q == "":
						q = "(default)"
					}
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Name, e.Spec, zone, next, last, job, q)
				}
				return w.Flush()
			}),
		},
		{
			Name:      "schedule:run",
			Usage:     "Dispatch what is due now, once (for system cron), or one entry at once",
			ArgsUsage: "[NAME]",
			Description: "Without NAME: dispatches each entry's tick that is due and not yet dispatched, as\n" +
				"schedule:work would, and exits: run it every minute from cron instead of schedule:work.\n" +
				"With NAME: dispatches that entry's job now, whatever its schedule, to try it.",
			Action: app.Uses(func(c *cli.Context, s *Scheduler) error {
				var done []Dispatched
				var failed error
				switch c.NArg() {
				case 0:
					done, failed = s.RunDue(c.Context)
					if _, err := s.Prune(c.Context, s.clock.Now().Add(-7*24*time.Hour)); err != nil && failed == nil {
						failed = err
					}
				case 1:
					d, err := s.RunNow(c.Context, c.Args().First())
					if err != nil {
						return err
					}
					done = []Dispatched{*d}
				default:
					return errors.New("schedule:run takes at most one entry name")
				}
				if len(done) == 0 && failed == nil {
					fmt.Fprintln(c.App.Writer, "Nothing is due.")
				}
				for _, d := range done {
					tick := d.Tick.UTC().Format(time.RFC3339)
					switch {
					case d.Skipped && d.JobID != "":
						fmt.Fprintf(c.App.Writer, "Skipped %s at %s: its last job %s is still pending or running.\n", d.Entry, tick, d.JobID)
					case d.Skipped:
						fmt.Fprintf(c.App.Writer, "Skipped %s at %s: its function gave no job.\n", d.Entry, tick)
					default:
						fmt.Fprintf(c.App.Writer, "Dispatched %s at %s: job %s.\n", d.Entry, tick, d.JobID)
					}
				}
				return failed
			}),
		},
	}
}

// until is d in words: "3h", "4m", "12s".
func until(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
