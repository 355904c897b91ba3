package queue

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/urfave/cli/v2"

	"github.com/navree/navree/app"
)

// Outcome is what became of one attempt of a job, in its [JobDetail.Timeline].
type Outcome string

// The outcomes of an attempt.
const (
	OutcomeReleased  Outcome = "released"  // it failed, and the job went back for a retry
	OutcomeFailed    Outcome = "failed"    // it failed, and the job failed for good
	OutcomeSucceeded Outcome = "succeeded" // the job succeeded (and is kept)
	OutcomeRunning   Outcome = "running"   // it runs now
	// OutcomeLost: it ended without an outcome (its worker was gone, and
	// the job was taken over).
	OutcomeLost Outcome = "lost"
	// OutcomeRetried marks where an operator retried the failed job: the
	// attempts count again from 1 after it.
	OutcomeRetried Outcome = "retried"
	// OutcomeInterrupted: its worker's stop interrupted it (at
	// queue.stop_timeout, or a second signal; see [ErrInterrupted]): the
	// job went back to wait without spending the attempt, so the attempt
	// after it has the same number.
	OutcomeInterrupted Outcome = "interrupted"
)

// Step is one attempt of a job, or an operator's retry, in its timeline.
type Step struct {
	Attempt int // 0 for OutcomeRetried
	Outcome Outcome
	At      time.Time     // when it ended (when it started, for a running one); zero when not known
	RunTime time.Duration // for a released, failed, interrupted or succeeded attempt
	Worker  string        // the registered worker that ran it, when known
	Error   string        // a released or failed attempt's
}

// Timeline is the job's attempts in order, from its Failures, its
// Interruptions and its state: each failed attempt with its error, each
// interrupted by its worker's stop, each that ended without an outcome
// (its number missing), and the current one when it runs or succeeded.
func (d JobDetail) Timeline() []Step {
	var out []Step
	next := 1 // the number of the attempt after the step before
	gap := func(upTo int) {
		for n := next; n < upTo; n++ {
			out = append(out, Step{Attempt: n, Outcome: OutcomeLost})
		}
	}
	// retried marks an operator's retry of the failed job, after which the
	// attempts count again from 1; the attempt before it failed for good.
	retried := func() {
		if n := len(out); n > 0 && out[n-1].Outcome == OutcomeReleased {
			out[n-1].Outcome = OutcomeFailed
		}
		out = append(out, Step{Outcome: OutcomeRetried})
		next = 1
	}
	// step adds an ended attempt's step: after an operator's retry when
	// its number comes before the next.
	step := func(s Step) {
		if s.Attempt < next {
			retried()
		}
		gap(s.Attempt)
		out = append(out, s)
		next = s.Attempt + 1
		if s.Outcome == OutcomeInterrupted {
			next = s.Attempt // not spent: the attempt after it has its number
		}
	}
	fi, ii := 0, 0
	for fi < len(d.Failures) || ii < len(d.Interruptions) {
		if fi == len(d.Failures) || ii < len(d.Interruptions) && interruptedFirst(d.Interruptions[ii], d.Failures[fi]) {
			in := d.Interruptions[ii]
			step(Step{Attempt: in.Attempt, Outcome: OutcomeInterrupted, At: in.At, RunTime: in.RunTime, Worker: in.Worker})
			ii++
			continue
		}
		f := d.Failures[fi]
		outcome := OutcomeReleased
		if d.State == StateFailed && fi == len(d.Failures)-1 {
			outcome = OutcomeFailed
		}
		step(Step{Attempt: f.Attempt, Outcome: outcome, At: f.At, RunTime: f.RunTime, Worker: f.Worker, Error: f.Error})
		fi++
	}
	current := Step{Attempt: d.Attempts, Worker: d.Worker}
	switch d.State {
	case StateRunning:
		current.Outcome, current.At = OutcomeRunning, d.ReservedAt
	case StateSucceeded:
		current.Outcome, current.At, current.RunTime = OutcomeSucceeded, d.FinishedAt, d.RunTime
	default: // waiting or delayed: its attempts all ended; or failed: its last is its failure
		if d.Attempts+1 < next {
			retried()
		}
		gap(d.Attempts + 1)
		return out
	}
	if d.Attempts < next {
		retried()
	}
	gap(d.Attempts)
	return append(out, current)
}

// interruptedFirst says whether the interruption in came before the
// failure f: by when they ended, then by attempt (an interrupted attempt
// before the same attempt run again).
func interruptedFirst(in Interruption, f AttemptFailure) bool {
	if !in.At.Equal(f.At) {
		return in.At.Before(f.At)
	}
	return in.Attempt <= f.Attempt
}

// minIDPrefix is how many of a job id's hex digits queue:job takes at
// least, and shownMatches how many of the ids of an ambiguous prefix it
// lists.
const (
	minIDPrefix  = 8
	shownMatches = 5
)

// jobByPrefix returns the job with id, as [Inspector.Job] does, or the
// one job whose id starts with id: minIDPrefix hex digits at least, with
// a UUID's hyphens or none, in any case. A prefix that starts no job's id
// gives a [*NoJobError]; one that starts several, an error listing them.
// Each table's search is a range of its primary key.
func (i *Inspector) jobByPrefix(ctx context.Context, id string) (JobDetail, error) {
	if _, err := uuid.FromString(id); err == nil {
		return i.Job(ctx, id)
	}
	from, to, prefix, err := idRange(id)
	if err != nil {
		return JobDetail{}, err
	}
	ids, err := i.q.store.JobIDs(ctx, from, to, shownMatches+1)
	if err != nil {
		return JobDetail{}, fmt.Errorf("queue: look up the jobs whose id starts with %s: %w", prefix, err)
	}
	switch len(ids) {
	case 0:
		return JobDetail{}, &NoJobError{ID: prefix, Anywhere: true, Prefix: true}
	case 1:
		return i.Job(ctx, ids[0])
	}
	many := fmt.Sprintf("%d jobs:", len(ids))
	if len(ids) > shownMatches {
		ids, many = ids[:shownMatches], fmt.Sprintf("more than %d jobs, such as:", shownMatches)
	}
	return JobDetail{}, fmt.Errorf("the id prefix %s is ambiguous: it starts the ids of %s\n  %s\ngive more of the id", prefix, many, strings.Join(ids, "\n  "))
}

// idRange is the range of the job ids that start with s, from and to
// included, and s as ids spell it (in lower case, with a UUID's hyphens):
// an error when s is no start of a UUID, or is shorter than minIDPrefix
// hex digits.
func idRange(s string) (from, to, prefix string, err error) {
	const lowest, highest = "00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"
	lower := strings.ToLower(s)
	var b strings.Builder
	digits := 0
	for _, r := range strings.ReplaceAll(lower, "-", "") {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') || digits == 32 {
			b.Reset()
			break
		}
		if b.Len() < len(highest) && highest[b.Len()] == '-' {
			b.WriteByte('-')
		}
		b.WriteRune(r)
		digits++
	}
	prefix = b.String()
	// Hyphens where a UUID has them (one may end it), or none.
	if prefix == "" || strings.Contains(lower, "-") && !strings.HasPrefix(prefix+"-", lower) {
		return "", "", "", fmt.Errorf("%q is no job's id, nor the start of one: an id is a UUID, such as 0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", s)
	}
	if digits < minIDPrefix {
		return "", "", "", fmt.Errorf("the id prefix %s is too short: give the first %d characters of the job's id at least", prefix, minIDPrefix)
	}
	return prefix + lowest[len(prefix):], prefix + highest[len(prefix):], prefix, nil
}

// jobCommand is queue:job.
func jobCommand() app.Command {
	return app.Command{
		Name:      "queue:job",
		Usage:     "Show one job: its state, times, worker and every attempt, with their errors",
		ArgsUsage: "ID|PREFIX",
		Description: "Finds the job in any state: waiting, delayed, running, failed, or succeeded and kept\n" +
			"(queue.keep_succeeded), by its id or a start of it that no other job's id has, 8 characters at\n" +
			"least. An id starts with the time of its dispatch (its first 8 characters change every 65\n" +
			"seconds), so the ids of jobs dispatched together differ further on.\n" +
			"Prints its times, how long it waited and ran, the worker that ran it, and its attempts in\n" +
			"order, each failed one with its error. The payload only with --payload.",
		Flags: []cli.Flag{&cli.BoolFlag{Name: "payload", Usage: "print the payload too (it may hold personal data)"}},
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			if c.NArg() != 1 {
				return fmt.Errorf("queue:job takes one argument, a job's id or the start of it")
			}
			j, err := i.jobByPrefix(c.Context, c.Args().First())
			if err != nil {
				return err
			}
			return printJob(c.App.Writer, j, c.Bool("payload"))
		}),
	}
}

// printJob writes what queue:job prints of j.
func printJob(w io.Writer, j JobDetail, payload bool) error {
	stamp := func(t time.Time) string { return t.Format("2006-01-02 15:04:05.000 UTC") }
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "Job %s: %s on %s, %s\n", j.ID, j.Name, j.Queue, j.State)
	fmt.Fprintf(tw, "  Dispatched\t%s\n", stamp(j.CreatedAt))
	switch j.State {
	case StateWaiting, StateDelayed, StateHeld:
		fmt.Fprintf(tw, "  Due\t%s\n", stamp(j.AvailableAt))
	case StateRunning:
		fmt.Fprintf(tw, "  Running since\t%s\n", stamp(j.ReservedAt))
	case StateFailed:
		fmt.Fprintf(tw, "  Failed\t%s\n", stamp(j.FailedAt))
	case StateSucceeded:
		fmt.Fprintf(tw, "  Finished\t%s, after waiting %s and running %s\n", stamp(j.FinishedAt), j.Wait, j.RunTime)
	}
	fmt.Fprintf(tw, "  Attempts\t%d of %d\n", j.Attempts, j.MaxAttempts)
	if j.Priority != 0 {
		fmt.Fprintf(tw, "  Priority\t%d\n", j.Priority)
	}
	if j.Debounced {
		fmt.Fprintf(tw, "  Debounced\ta dispatch of its key replaces it while it waits\n")
	}
	if j.Snoozes > 0 {
		fmt.Fprintf(tw, "  Snoozed\t%d time(s), attempts not spent\n", j.Snoozes)
	}
	if j.ConcurrencyLimit > 0 {
		fmt.Fprintf(tw, "  Limit\t%d at once of %s\n", j.ConcurrencyLimit, j.ConcurrencyKey)
	}
	if j.State == StateHeld {
		fmt.Fprintf(tw, "  Held\tuntil a job of %s ends\n", j.ConcurrencyKey)
	}
	if !j.RateLimit.IsZero() {
		fmt.Fprintf(tw, "  Rate limit\t%d per %s of %s\n", j.RateLimit.Max, j.RateLimit.Per, j.RateKey)
	}
	if j.FairnessKey != "" {
		fmt.Fprintf(tw, "  Fairness\tin turns with the other groups, as %s\n", j.FairnessKey)
	}
	if j.Worker != "" {
		fmt.Fprintf(tw, "  Worker\t%s\n", j.Worker)
	}
	fmt.Fprintf(tw, "  Payload\t%d bytes\n", j.PayloadBytes)
	if err := tw.Flush(); err != nil {
		return err
	}
	if steps := j.Timeline(); len(steps) > 0 {
		fmt.Fprintln(w, "Attempts:")
		type row struct{ n, what, at, ran, by, err string }
		rows := make([]row, len(steps))
		var widths [4]int
		for i, s := range steps {
			r := row{n: strconv.Itoa(s.Attempt), what: string(s.Outcome), err: s.Error}
			switch s.Outcome {
			case OutcomeRetried:
				r.n, r.what = "-", "retried by an operator: the attempts count again"
			case OutcomeLost:
				r.what = "lost: its worker was gone, and the job taken over"
			case OutcomeInterrupted:
				r.what, r.ran = "interrupted: its worker stopped; the attempt not spent", "ran "+s.RunTime.String()
			case OutcomeReleased, OutcomeFailed, OutcomeSucceeded:
				r.ran = "ran " + s.RunTime.String()
			}
			if !s.At.IsZero() {
				r.at = stamp(s.At)
			}
			if s.Worker != "" {
				r.by = "worker " + s.Worker
			}
			for c, v := range []string{r.n, r.what, r.at, r.ran} {
				widths[c] = max(widths[c], len(v))
			}
			rows[i] = r
		}
		for _, r := range rows {
			line := fmt.Sprintf("  %-*s  %-*s  %-*s  %-*s  %s", widths[0], r.n, widths[1], r.what, widths[2], r.at, widths[3], r.ran, r.by)
			fmt.Fprintln(w, strings.TrimRight(line, " "))
			for l := range strings.SplitSeq(r.err, "\n") {
				if r.err != "" {
					fmt.Fprintf(w, "  %*s  %s\n", widths[0], "", l)
				}
			}
		}
	}
	if payload {
		fmt.Fprintf(w, "Payload:\n%s\n", j.Payload)
	}
	return nil
}
