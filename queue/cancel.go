package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/app"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/worker"
	"github.com/urfave/cli/v2"
)

// ErrCancelled is the cause of a cancelled attempt's context: a handler
// that checks sees ctx.Err() == context.Canceled and
// context.Cause(ctx) == ErrCancelled. See [Inspector.Cancel].
var ErrCancelled = worker.ErrCancelled

// ErrReservationLost is the cause of an attempt's context when another
// worker took its job over while it ran: this worker's heartbeat had
// stopped for queue.rescue_after (its process paused, or cut off from the
// database), so it was presumed gone, and the job rescued. The worker
// learns it at its next heartbeat; the attempt's outcome is not kept
// whatever the handler returns (the other attempt's is), so a handler
// may stop at once.
var ErrReservationLost = worker.ErrReservationLost

// ErrNoJob is matched (errors.Is) by the error of [Inspector.Cancel] for an
// id that is no job waiting, delayed or running.
var ErrNoJob = errors.New("there is no job with that id")

// NoJobError is the error of [Inspector.Cancel] for an id that is no job
// waiting, delayed or running: it has finished, failed, or never was; and
// of [Inspector.Job] (Anywhere set) for an id that is no job stored.
type NoJobError struct {
	ID       string
	Anywhere bool // looked for in every state, the failed and kept ones too
	Prefix   bool // ID is the start of an id, which no job's has (queue:job)
}

// Error names the id, and says where it was looked for.
func (e *NoJobError) Error() string {
	if e.Prefix {
		return "there is no job whose id starts with " + e.ID + ": it succeeded and is not kept (queue.keep_succeeded), was deleted, or never was"
	}
	if e.Anywhere {
		return "there is no job with id " + e.ID + ": it succeeded and is not kept (queue.keep_succeeded), was deleted, or never was"
	}
	return "there is no waiting, delayed or running job with id " + e.ID + " (queue:failed lists the failed ones)"
}

// Is reports whether target is [ErrNoJob].
func (e *NoJobError) Is(target error) bool { return target == ErrNoJob }

// Cancellation is what [Inspector.Cancel] did.
type Cancellation int

// What Cancel did.
const (
	// CancelledWaiting: the job waited, or was delayed; it is now a failed
	// job with the error "cancelled", which queue:retry puts back.
	CancelledWaiting Cancellation = iota + 1
	// CancelledRunning: the job runs; its attempt's context is cancelled,
	// with the cause ErrCancelled, within a second (at once on
	// PostgreSQL, and in this process). If the handler then returns an
	// error, the job fails as "cancelled" and is not retried; if it
	// returns nil, the job has succeeded.
	CancelledRunning
)

// Cancel cancels the job with id: a waiting or delayed job is moved to
// the failed jobs, its error "cancelled"; a running one has its attempt's
// context cancelled by its worker, in whichever process. An id that is no
// job waiting, delayed or running gives a [*NoJobError]. A completion that
// races the cancel wins: the job has then succeeded, and Cancel reports it
// as not found.
func (i *Inspector) Cancel(ctx context.Context, id string) error {
	q := i.q
	_, err := q.cancel(ctx, id)
	return err
}

// cancel is Cancel, saying what it did.
func (q *Queue) cancel(ctx context.Context, id string) (Cancellation, error) {
	u, err := uuid.FromString(id)
	if err != nil {
		return 0, &NoJobError{ID: id}
	}
	did, err := q.store.Cancel(ctx, u.String(), q.clock.Now().UnixMilli())
	switch {
	case errors.Is(err, driver.ErrNoJob):
		return 0, &NoJobError{ID: u.String()}
	case err != nil:
		return 0, fmt.Errorf("queue: cancel %s: %w", u, err)
	case did == driver.Signalled:
		q.cancels.Add(1)
		return CancelledRunning, nil
	}
	return CancelledWaiting, nil
}

// cancelCommand is queue:cancel.
func cancelCommand() app.Command {
	return app.Command{
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
	}
}
