package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/urfave/cli/v2"
)

// FailedJob is a job that used up its attempts or could not run.
type FailedJob struct {
	ID       string
	Queue    string
	Name     string // the job type
	Payload  json.RawMessage
	Attempts int
	Error    string // the last attempt's error
	FailedAt time.Time
	Meta     json.RawMessage // the envelope's Meta, nil if it had none
}

// ErrNoFailedJob is returned by Retry for an id that is not a failed job.
var ErrNoFailedJob = errors.New("there is no failed job with that id")

// NoFailedJobError is Retry's error for an id that is not a failed job.
type NoFailedJobError struct{ ID string }

// Error names the id.
func (e *NoFailedJobError) Error() string { return "there is no failed job with id " + e.ID }

// Is reports whether target is [ErrNoFailedJob].
func (e *NoFailedJobError) Is(target error) bool { return target == ErrNoFailedJob }

// FailedQuery asks [Inspector.Failed] for a page of the failed jobs.
type FailedQuery struct {
	// After is the next cursor of the page before; "" starts at the
	// oldest failure.
	After string
	// Limit is the most jobs the page holds: default 100, at most
	// MaxFailedPage.
	Limit int
}

// MaxFailedPage bounds [FailedQuery.Limit]: a page holds payloads of up
// to [MaxPayloadBytes] each.
const MaxFailedPage = 1000

// Failed returns a page of the failed jobs, oldest failure first, and the
// cursor of the next page, "" after the last. A query it refuses (a limit
// out of bounds, a cursor that is not one) is an [ErrInvalidQuery]. Pages are found by the
// index over when jobs failed, so each costs the same however many
// failed jobs there are.
//
//	page := queue.FailedQuery{}
//	for {
//		jobs, next, err := q.Failed(ctx, page)
//		// ...
//		if next == "" {
//			break
//		}
//		page.After = next
//	}
func (i *Inspector) Failed(ctx context.Context, page FailedQuery) (jobs []FailedJob, next string, err error) {
	q := i.q
	return q.failed(ctx, page, true)
}

// failed is Failed, with the payloads only when payloads is true.
func (q *Queue) failed(ctx context.Context, page FailedQuery, payloads bool) ([]FailedJob, string, error) {
	if page.Limit == 0 {
		page.Limit = 100
	}
	if page.Limit < 1 || page.Limit > MaxFailedPage {
		return nil, "", fmt.Errorf("queue: list failed jobs: %w: the limit is %d; want 1 to %d", ErrInvalidQuery, page.Limit, MaxFailedPage)
	}
	var after driver.FailedKey
	if page.After != "" {
		at, id, ok := strings.Cut(page.After, "_")
		n, err := strconv.ParseInt(at, 10, 64)
		if _, uerr := uuid.FromString(id); !ok || err != nil || uerr != nil {
			return nil, "", fmt.Errorf("queue: list failed jobs: %w: %q is not a cursor: pass the next cursor of the page before, or \"\" for the first page", ErrInvalidQuery, page.After)
		}
		after = driver.FailedKey{FailedAt: n, ID: id}
	}
	rows, err := q.store.Failed(ctx, after, page.Limit+1, payloads) // one more says whether a page follows
	if err != nil {
		return nil, "", fmt.Errorf("queue: list failed jobs: %w", err)
	}
	more := len(rows) > page.Limit
	if more {
		rows = rows[:page.Limit]
	}
	out := make([]FailedJob, len(rows))
	for i, r := range rows {
		out[i] = FailedJob{ID: r.ID, Queue: r.Queue, Name: r.Name, Payload: r.Payload, Attempts: r.Attempts,
			Error: r.Error, FailedAt: time.UnixMilli(r.FailedAt).UTC(), Meta: r.Meta}
	}
	if !more {
		return out, "", nil
	}
	last := rows[len(rows)-1]
	return out, strconv.FormatInt(last.FailedAt, 10) + "_" + last.ID, nil
}

// Retry puts the failed job with id idOrAll back on its queue, or every
// failed job for "all" (see [Inspector.RetryAll]), and returns how many it put
// back. A retried job keeps its id and options, starts its attempts over,
// is available at once and is no longer unique. An id that is not a
// failed job gives a [*NoFailedJobError].
func (i *Inspector) Retry(ctx context.Context, idOrAll string) (int, error) {
	q := i.q
	if idOrAll == "all" {
		return i.RetryAll(ctx, nil)
	}
	id, err := uuid.FromString(idOrAll)
	if err != nil {
		return 0, &NoFailedJobError{ID: idOrAll}
	}
	err = q.store.Retry(ctx, id.String(), q.clock.Now().UnixMilli())
	if errors.Is(err, driver.ErrNoFailedJob) {
		return 0, &NoFailedJobError{ID: id.String()}
	}
	if err != nil {
		return 0, fmt.Errorf("queue: retry %s: %w", id, err)
	}
	return 1, nil
}

// retryBatch is how many failed jobs [Inspector.RetryAll] puts back in one
// transaction.
const retryBatch = 1000

// RetryAll puts every failed job back on its queue, as [Inspector.Retry] puts
// one, oldest failure first, retryBatch jobs to a transaction, so that
// retrying a million holds no lock for long; and returns how many it put
// back. progress, when not nil, is called with that count after each
// batch. It retries the jobs that had failed when it started: one that
// fails again meanwhile waits for the next call.
//
// Stopped by ctx or an error, it returns the count so far with the error:
// the batches before it are back on their queues, the rest still failed,
// and a second call goes on where it stopped.
func (i *Inspector) RetryAll(ctx context.Context, progress func(retried int)) (int, error) {
	q := i.q
	upTo := driver.FailedKey{FailedAt: q.clock.Now().UnixMilli(), ID: "ffffffff-ffff-ffff-ffff-ffffffffffff"}
	var after driver.FailedKey
	retried := 0
	for {
		if err := ctx.Err(); err != nil {
			return retried, fmt.Errorf("queue: retry all: stopped after %d: %w", retried, err)
		}
		n, last, err := q.store.RetryFailed(ctx, after, upTo, retryBatch, q.clock.Now().UnixMilli())
		if err != nil {
			return retried, fmt.Errorf("queue: retry all: after %d: %w", retried, err)
		}
		if n == 0 {
			return retried, nil
		}
		retried, after = retried+n, last
		if progress != nil {
			progress(retried)
		}
	}
}

// DeleteFailed deletes the failed job with id, for good. An id that is
// not a failed job gives a [*NoFailedJobError].
func (i *Inspector) DeleteFailed(ctx context.Context, id string) error {
	q := i.q
	u, err := uuid.FromString(id)
	if err != nil {
		return &NoFailedJobError{ID: id}
	}
	err = q.store.DeleteFailed(ctx, u.String())
	if errors.Is(err, driver.ErrNoFailedJob) {
		return &NoFailedJobError{ID: u.String()}
	}
	if err != nil {
		return fmt.Errorf("queue: delete the failed job %s: %w", u, err)
	}
	return nil
}

// FlushFailed deletes every failed job and returns how many there were.
func (i *Inspector) FlushFailed(ctx context.Context) (int, error) {
	q := i.q
	n, err := q.store.FlushFailed(ctx)
	if err != nil {
		return 0, fmt.Errorf("queue: flush failed jobs: %w", err)
	}
	return n, nil
}

// PendingCount counts the jobs of queue that are waiting, delayed or
// running.
func (i *Inspector) PendingCount(ctx context.Context, queue string) (int, error) {
	q := i.q
	if err := checkQueue(queue); err != nil {
		return 0, err
	}
	n, err := q.store.PendingCount(ctx, queue)
	if err != nil {
		return 0, fmt.Errorf("queue: count jobs of %s: %w", queue, err)
	}
	return n, nil
}

// failedPage is how many failed jobs queue:failed reads at a time.
const failedPage = 100

// failedCommand is queue:failed.
func failedCommand() app.Command {
	return app.Command{
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
	}
}

// retryCommand is queue:retry.
func retryCommand() app.Command {
	return app.Command{
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
	}
}

// forgetCommand is queue:forget.
func forgetCommand() app.Command {
	return app.Command{
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
	}
}

// pruneFailedCommand is queue:prune-failed.
func pruneFailedCommand() app.Command {
	return app.Command{
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
	}
}

// flushCommand is queue:flush.
func flushCommand() app.Command {
	return app.Command{
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
	}
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
