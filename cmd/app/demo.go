package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/schedule"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

// The demo jobs show each thing a worker does: a success, a retry that
// succeeds, a job that keeps failing and ends in the failed jobs, and a
// slow job; and an export (export.go) that queues a mail. They retry at
// once (Fixed(0)) so the demo takes seconds.

// Welcome succeeds.
type Welcome struct {
	Name string `json:"name"`
}

func (Welcome) JobName() string { return "demo.welcome" }

// Flaky fails its first attempt, then succeeds.
type Flaky struct{}

func (Flaky) JobName() string           { return "demo.flaky" }
func (Flaky) JobOptions() queue.Options { return queue.Options{Backoff: queue.Fixed(0)} }

// Broken always fails: after 3 attempts it is a failed job.
type Broken struct{}

func (Broken) JobName() string           { return "demo.broken" }
func (Broken) JobOptions() queue.Options { return queue.Options{Backoff: queue.Fixed(0)} }

// Slow takes a second.
type Slow struct{}

func (Slow) JobName() string { return "demo.slow" }

// demoIn is what the demo command uses: the queue, and how the user runs
// the app's commands, to say how to run the jobs.
type demoIn struct {
	fx.In
	Queue *queue.Queue
	Run   app.Invocation
}

var demoModule = fx.Module("demo",
	queue.HandleFunc(func(ctx context.Context, j Welcome, jc queue.JobContext) error { return nil }),
	queue.HandleFunc(func(ctx context.Context, j Flaky, jc queue.JobContext) error {
		if jc.Attempt == 1 {
			return errors.New("the calendar API timed out (it works on the next attempt)")
		}
		return nil
	}),
	queue.HandleFunc(func(ctx context.Context, j Broken, jc queue.JobContext) error {
		return errors.New("smtp refused the message: mailbox unavailable")
	}),
	queue.HandleFunc(func(ctx context.Context, j Slow, jc queue.JobContext) error {
		select {
		case <-time.After(time.Second):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}),
	// A frequent entry: schedule:work greets every five minutes.
	schedule.Every("demo.greet", 5*time.Minute, Welcome{"the scheduler"}),
	app.Commands(app.Command{
		Name:  "demo",
		Usage: "Queue a batch of demo jobs: successes, a retry, a failure, a slow one and an export that notifies its requester",
		Action: app.Uses(func(c *cli.Context, p demoIn) error {
			q := p.Queue
			jobs := []queue.Job{Welcome{"Ada"}, Welcome{"Grace"}, Welcome{"Linus"}, Flaky{}, Broken{}, Slow{},
				ExportContacts{Company: "Acme", RequestedBy: user{ID: "ada", Email: "ada@example.com"}}}
			for _, job := range jobs {
				if _, err := q.Dispatch(c.Context, job); err != nil {
					return err
				}
			}
			fmt.Fprintf(c.App.Writer, "Queued %d demo jobs. Run them with: %s queue:work --stop-when-empty\n", len(jobs), p.Run)
			return nil
		}),
	}),
)
