package queue

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/worker"
)

// ErrRestart is the error of [Queue.Work] (and the cause of the context
// of [Registry.Register]) once a restart was requested of the worker
// ([Inspector.Restart], queue:restart): it took no more jobs, let its
// running ones end (until its stop timeout) and stopped. queue:work and
// schedule:work then exit 0, for their process manager to start the new
// build. errors.Is matches it.
var ErrRestart = worker.ErrRestart

// ErrInterrupted is the cause of the context of an attempt still running
// at its worker's stop deadline ([WorkOptions.StopTimeout],
// queue.stop_timeout, or [WorkOptions.StopNow]): a handler that returns
// (with any error) puts its job back on its queue without spending the
// attempt, and another worker runs it again from the start. Handlers that
// can be cut off safely need do nothing more than honour ctx.
var ErrInterrupted = worker.ErrInterrupted

// Restart asks every registered worker, in every process on the queue's
// store (queue:work and schedule:work), to restart, and returns those it
// asked, oldest first: each learns it at its next heartbeat (within a
// third of queue.rescue_after), takes no more jobs, lets its running ones
// end (interrupted at its stop timeout, if it has one) and exits 0. A
// worker that registers after Restart returns is not asked, so the
// workers of the new build keep running. A worker asked before and still
// stopping is not asked again. A gone worker (Worker.Gone: paused, cut
// off) is asked too: it restarts if it comes back.
func (i *Inspector) Restart(ctx context.Context) ([]Worker, error) {
	rows, err := i.q.store.Restart(ctx, i.q.clock.Now().UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("queue: request a restart of the workers: %w", err)
	}
	if len(rows) == 0 {
		return nil, nil
	}
	// Read again, for Gone on the clock their heartbeats are judged by; a
	// worker that stopped meanwhile is left out.
	all, err := i.Workers(ctx)
	return slices.DeleteFunc(all, func(w Worker) bool {
		return !slices.ContainsFunc(rows, func(r driver.Worker) bool { return r.ID == w.ID })
	}), err
}

// restartCommand is queue:restart.
func restartCommand() app.Command {
	return app.Command{
		Name:  "queue:restart",
		Usage: "Ask every queue:work and schedule:work to exit once their running jobs end, after a deploy",
		Description: "Every worker registered now, on every server, learns it at its next heartbeat (within a third of\n" +
			"queue.rescue_after, 5 s by default), takes no new job, lets its running ones end (until its\n" +
			"--stop-timeout, queue.stop_timeout) and exits 0, for its process manager to start the new build.\n" +
			"A worker started after the request keeps running. Run it after migrate, once the new build is in place.",
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			asked, err := i.Restart(c.Context)
			if err != nil {
				return err
			}
			if len(asked) == 0 {
				_, err := fmt.Fprintln(c.App.Writer, "No worker is registered that has not been asked already: nothing to restart.")
				return err
			}
			var workers, schedulers, gone int
			var hosts []string
			for _, w := range asked {
				if w.Kind == KindScheduler {
					schedulers++
				} else {
					workers++
				}
				if w.Gone {
					gone++
				}
				if !slices.Contains(hosts, w.Host) {
					hosts = append(hosts, w.Host)
				}
			}
			var what []string
			if workers > 0 {
				what = append(what, fmt.Sprintf("%d queue:work", workers))
			}
			if schedulers > 0 {
				what = append(what, fmt.Sprintf("%d schedule:work", schedulers))
			}
			also := ""
			if gone > 0 {
				also = fmt.Sprintf(" (%d of them gone, no heartbeat for its rescue time: it restarts if it comes back)", gone)
			}
			_, err = fmt.Fprintf(c.App.Writer, "Asked %s on %s to restart%s: each exits once its running jobs end; workers started from now on keep running.\n",
				strings.Join(what, " and "), strings.Join(hosts, ", "), also)
			return err
		}),
	}
}
