package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/urfave/cli/v2"
)

// AllQueues is the name [Inspector.Pause] and [Inspector.Resume] take for every
// queue: those with jobs now and those that get some later. A queue that
// is itself named "all" is paused with every other.
const AllQueues = "all"

// ErrEveryQueuePaused is wrapped by the error of [Inspector.Resume] for one
// queue while every queue is paused: resume them all, then pause the
// others again.
var ErrEveryQueuePaused = errors.New("every queue is paused")

// Pause stops the workers of every process taking jobs of queue
// ([AllQueues]: of every queue): dispatches are still stored, the jobs
// running finish, and no worker reserves another until [Inspector.Resume].
// The pause is kept in the database (the table queue_pauses), so it holds
// across processes, servers and restarts. Workers on PostgreSQL hear of it
// at once; on SQLite, by their next poll (queue.poll_interval_ms), and at
// most a second later while they work. Pausing a paused queue changes
// nothing.
func (i *Inspector) Pause(ctx context.Context, queue string) error {
	q := i.q
	name, err := pauseName(queue)
	if err != nil {
		return err
	}
	if err := q.store.Pause(ctx, name, q.clock.Now().UnixMilli()); err != nil {
		return fmt.Errorf("queue: pause %s: %w", queue, err)
	}
	q.changedPauses()
	return nil
}

// Resume lets workers take the jobs of queue again ([AllQueues]: of every
// queue, those paused one by one included), as soon as they hear of it
// (see [Inspector.Pause]). Resuming a queue that is not paused changes
// nothing; resuming one while every queue is paused is an error wrapping
// [ErrEveryQueuePaused].
func (i *Inspector) Resume(ctx context.Context, queue string) error {
	q := i.q
	_, err := q.resume(ctx, queue)
	return err
}

// resume is Resume, reporting whether the queue was paused.
func (q *Queue) resume(ctx context.Context, queue string) (bool, error) {
	name, err := pauseName(queue)
	if err != nil {
		return false, err
	}
	if name != driver.AllQueues {
		paused, err := q.store.Paused(ctx)
		if err != nil {
			return false, fmt.Errorf("queue: resume %s: %w", queue, err)
		}
		if slices.Contains(paused, driver.AllQueues) {
			return false, fmt.Errorf("queue: resume %s: %w (queue:pause all): resume all, then pause the others again", queue, ErrEveryQueuePaused)
		}
	}
	was, err := q.store.Resume(ctx, name)
	if err != nil {
		return false, fmt.Errorf("queue: resume %s: %w", queue, err)
	}
	q.changedPauses()
	q.waker.Wake() // this process's idle workers search at once
	return was, nil
}

// changedPauses tells this process's workers to read the pauses again.
func (q *Queue) changedPauses() { q.pauses.Add(1) }

// pauseName is the driver's name of the pause of queue.
func pauseName(queue string) (string, error) {
	if queue == AllQueues {
		return driver.AllQueues, nil
	}
	if err := checkQueue(queue); err != nil {
		return "", err
	}
	return queue, nil
}

// pauseCommand is queue:pause.
func pauseCommand() app.Command {
	return app.Command{
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
	}
}

// resumeCommand is queue:resume.
func resumeCommand() app.Command {
	return app.Command{
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
	}
}
