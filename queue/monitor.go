package queue

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/navree/navree/app"
	"github.com/urfave/cli/v2"
)

// monitorCommand is queue:monitor: a check for cron, a process manager or
// an orchestrator, which exits non-zero when a queue is behind.
func monitorCommand() app.Command {
	return app.Command{
		Name:  "queue:monitor",
		Usage: "Check that no queue has too many jobs waiting or waiting too long; exit 1 if one has",
		Description: "Reads each queue's waiting jobs and how long the one due first has waited (as queue:status counts them),\n" +
			"prints a line per queue, and logs and exits 1 when one passes a threshold: --max-waiting and --max-wait,\n" +
			"or queue.monitor.max_waiting and queue.monitor.max_wait. It checks the worker queues (queue.queues)\n" +
			"and every queue with jobs, or the --queue ones. Run it from cron or a health check.",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "queue", Usage: "queues to check (comma-separated or repeated)", DefaultText: "queue.queues and every queue with jobs"},
			&cli.IntFlag{Name: "max-waiting", Usage: "alert when more than `N` jobs wait on a queue (0: no limit)", DefaultText: "queue.monitor.max_waiting"},
			&cli.DurationFlag{Name: "max-wait", Usage: "alert when a queue's oldest waiting job has waited longer than `D`, such as 5m (0: no limit)", DefaultText: "queue.monitor.max_wait"},
		},
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			if c.NArg() > 0 {
				return fmt.Errorf("queue:monitor takes no arguments, only flags (--queue, --max-waiting, --max-wait), not %q", c.Args().First())
			}
			limits := i.q.cfg.Monitor
			if c.IsSet("max-waiting") {
				limits.MaxWaiting = c.Int("max-waiting")
			}
			if c.IsSet("max-wait") {
				limits.MaxWait = c.Duration("max-wait")
			}
			switch {
			case limits.MaxWaiting < 0:
				return fmt.Errorf("queue:monitor: --max-waiting must be 0 (no limit) or more, not %d", limits.MaxWaiting)
			case limits.MaxWait < 0:
				return fmt.Errorf("queue:monitor: --max-wait must be 0 (no limit) or more, not %s", limits.MaxWait)
			case limits.MaxWaiting == 0 && limits.MaxWait == 0:
				return fmt.Errorf("queue:monitor: no threshold to check: give --max-waiting or --max-wait, or set queue.monitor.max_waiting or queue.monitor.max_wait")
			}
			names := c.StringSlice("queue")
			for _, name := range names {
				if err := checkQueue(name); err != nil {
					return err
				}
			}
			stats, err := i.Stats(c.Context)
			if err != nil {
				return err
			}
			checks := monitor(stats, names, i.q.cfg.Queues, limits)
			var behind []string
			for _, m := range checks {
				fmt.Fprintln(c.App.Writer, m.line)
				if len(m.over) > 0 {
					behind = append(behind, m.queue)
					i.q.logger.Error("queue behind its threshold", "queue", m.queue, "waiting", m.stats.Waiting,
						"oldest_wait_ms", m.stats.OldestWaiting.Milliseconds(), "over", strings.Join(m.over, ", "))
				}
			}
			if len(behind) > 0 {
				return fmt.Errorf("queue:monitor: %d queue(s) behind: %s", len(behind), strings.Join(behind, ", "))
			}
			return nil
		}),
	}
}

// check is queue:monitor's verdict on one queue.
type check struct {
	queue string
	stats Stats
	over  []string // the thresholds passed, as they print
	line  string
}

// monitor judges the queues named, or else the worker queues and every
// queue with jobs, against limits.
func monitor(stats []Stats, named, workerQueues []string, limits MonitorConfig) []check {
	byQueue := map[string]Stats{}
	for _, s := range stats {
		byQueue[s.Queue] = s
	}
	queues := slices.Clone(named)
	if len(queues) == 0 {
		queues = slices.Clone(workerQueues)
		for _, s := range stats {
			queues = append(queues, s.Queue)
		}
		slices.Sort(queues)
	}
	var checks []check
	for _, name := range slices.Compact(queues) {
		s := byQueue[name]
		s.Queue = name
		m := check{queue: name, stats: s}
		waiting := strconv.Itoa(s.Waiting)
		if s.Waiting > CountLimit {
			waiting = strconv.Itoa(CountLimit) + "+"
		}
		if limits.MaxWaiting > 0 && s.Waiting > limits.MaxWaiting {
			m.over = append(m.over, fmt.Sprintf("%s waiting, over %d", waiting, limits.MaxWaiting))
		}
		oldest := s.OldestWaiting.Round(time.Second)
		if limits.MaxWait > 0 && s.OldestWaiting > limits.MaxWait {
			m.over = append(m.over, fmt.Sprintf("the oldest has waited %s, over %s", oldest, limits.MaxWait))
		}
		var notes []string
		if s.Paused {
			notes = append(notes, "paused")
		}
		if s.Unworked {
			notes = append(notes, "no worker takes it")
		}
		note := ""
		if len(notes) > 0 {
			note = " (" + strings.Join(notes, ", ") + ")"
		}
		switch {
		case len(m.over) > 0:
			m.line = fmt.Sprintf("BEHIND  %s: %s%s", name, strings.Join(m.over, "; "), note)
		case s.Waiting == 0:
			m.line = fmt.Sprintf("OK      %s: nothing waiting%s", name, note)
		default:
			m.line = fmt.Sprintf("OK      %s: %s waiting, the oldest for %s%s", name, waiting, oldest, note)
		}
		checks = append(checks, m)
	}
	return checks
}
