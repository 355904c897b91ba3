package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/app"
	"github.com/navree/navree/app/term"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/urfave/cli/v2"
)

// CountLimit is where [Inspector.Stats] stops counting the jobs of a queue in
// one state: a count of more than CountLimit is given as CountLimit+1, and
// queue:status shows it as "100000+". Counting costs in proportion to the
// jobs counted, so the limit keeps Stats fast on a backlog of millions.
const CountLimit = 100_000

// Stats is what [Inspector.Stats] counts of one queue. Each count stops
// at CountLimit+1, which means more than [CountLimit].
type Stats struct {
	Queue   string
	Waiting int // due now, not taken by a worker
	Delayed int // due later: dispatched with a delay, or released for a retry
	Running int // taken by a worker; the stale ones included
	// Stale counts the running jobs whose worker is gone (no heartbeat
	// for its queue.rescue_after; for a worker not registered, a
	// reservation older than the job's timeout plus 30 seconds, a day
	// without a time limit): a worker will take them over.
	Stale  int
	Failed int // in the failed jobs
	// OldestWaiting is how long the waiting job due first has been due,
	// 0 when none waits: how far behind the workers of the queue are.
	OldestWaiting time.Duration
	// Paused says that workers take no jobs of the queue (see
	// [Inspector.Pause]): it is paused, or every queue is.
	Paused bool
	// Unworked says that jobs wait on the queue, none runs, and it is not
	// one of the worker queues (queue.queues, [Config.Queues]): a
	// queue:work without --queue leaves them alone, so they wait until a
	// worker is started with --queue NAME or the queue is added to
	// queue.queues.
	Unworked bool
	// Prioritized says that jobs with a priority (see Options.Priority)
	// are stored on the queue: workers take them by priority, highest
	// first. It stays set for up to a second after the last of them
	// finished, until a worker's prober forgets it.
	Prioritized bool
	// Held counts the jobs of the queue held by their concurrency limits
	// (see Options.ConcurrencyLimit): each goes in once a job of its key
	// ends.
	Held int
	// Throttled are the rate limits whose window is full that keep jobs
	// of the queue waiting: the queue's own (Config.RateLimits) and those
	// of keys whose jobs wait on it (Options.RateLimit), the first to
	// reopen first.
	Throttled []Throttle
	// Unknown counts, by type, the waiting and delayed jobs of the queue
	// whose type no handler of this build knows: set by
	// [Inspector.UnknownTypes], nil for none.
	Unknown map[string]int
}

// UnknownScan bounds [Inspector.UnknownTypes]: it reads the first
// UnknownScan waiting and delayed jobs of each queue.
const UnknownScan = 10_000

// UnknownTypes sets the Unknown of each of stats: it counts, by type, the
// waiting and delayed jobs of the queue whose type no handler of this
// build knows, neither a job name nor an alias (see [WithAliases]): jobs
// queued by another build, under a name since renamed or of a type since
// deleted, which a worker of this build fails ("no handler"). It reads
// the first [UnknownScan] of each queue in due order, those its workers
// take next.
func (i *Inspector) UnknownTypes(ctx context.Context, stats []Stats) error {
	var known []string
	for name := range i.q.table.Load().jobs {
		known = append(known, name)
	}
	for n := range stats {
		if stats[n].Waiting+stats[n].Delayed == 0 {
			continue
		}
		found, err := i.q.store.Unknown(ctx, stats[n].Queue, known, UnknownScan)
		if err != nil {
			return fmt.Errorf("queue: count the jobs of unknown types on %s: %w", stats[n].Queue, err)
		}
		if len(found) > 0 {
			stats[n].Unknown = found
		}
	}
	return nil
}

// Stats counts the jobs of every queue that has one, failed jobs
// included, and lists each paused queue, sorted by queue name. When a job is due is read on the
// queue's clock; whether a reservation is stale is judged as the workers
// judge it for a takeover, on the clock of reservations (see the package
// doc). The counts come from one statement, so a job moving meanwhile is
// counted once. Counting reads an index entry (on SQLite, a row) for each
// job it counts, up to CountLimit+1 per queue and state: on a million
// jobs a call takes tens of milliseconds (see docs/benchmarks.md), so poll
// it every few seconds rather than on every request.
func (i *Inspector) Stats(ctx context.Context) ([]Stats, error) {
	q := i.q
	now := q.clock.Now().UnixMilli()
	rows, err := q.store.Stats(ctx, now, q.reservedAt(), CountLimit+1)
	if err != nil {
		return nil, fmt.Errorf("queue: count the jobs of each queue: %w", err)
	}
	paused, err := q.store.Paused(ctx)
	if err != nil {
		return nil, fmt.Errorf("queue: read the paused queues: %w", err)
	}
	all := slices.Contains(paused, driver.AllQueues)
	limit := func(n int) int { return min(n, CountLimit+1) }
	inspector := i
	out := make([]Stats, len(rows))
	for i, r := range rows {
		out[i] = Stats{Queue: r.Queue, Waiting: limit(r.Waiting), Delayed: limit(r.Delayed), Running: limit(r.Running),
			Stale: limit(r.Stale), Failed: limit(r.Failed), Held: limit(r.Held), Paused: all || slices.Contains(paused, r.Queue),
			Unworked: r.Waiting > 0 && r.Running == 0 && !slices.Contains(q.cfg.Queues, r.Queue)}
		if r.Waiting > 0 {
			out[i].OldestWaiting = time.Duration(max(now-r.OldestAvailableAt, 0)) * time.Millisecond
		}
		if r.Waiting+r.Delayed > 0 { // the features recorded of its jobs
			f, err := q.store.Features(ctx, r.Queue, false)
			if err != nil {
				return nil, fmt.Errorf("queue: read the features of %s: %w", r.Queue, err)
			}
			out[i].Prioritized = f&driver.FeaturePriority != 0
		}
		if r.Waiting > 0 { // a look into the full windows of rate limits
			if out[i].Throttled, err = inspector.Throttles(ctx, r.Queue); err != nil {
				return nil, err
			}
		}
	}
	counted := len(out)
	for _, name := range paused { // a paused queue without jobs
		if name != driver.AllQueues && !slices.ContainsFunc(out[:counted], func(s Stats) bool { return s.Queue == name }) {
			out = append(out, Stats{Queue: name, Paused: true})
		}
	}
	slices.SortFunc(out, func(a, b Stats) int { return strings.Compare(a.Queue, b.Queue) })
	return out, nil
}

// unworked are those of names that queue.queues leaves out, each once.
func (q *Queue) unworked(names []string) []string {
	var out []string
	for _, name := range names {
		if !slices.Contains(q.cfg.Queues, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out
}

// leftOut says that queue:work leaves the queues names alone, and what
// to do: "exports is not in queue.queues (high, default), so queue:work
// leaves it alone: run queue:work --queue exports, or add exports to
// queue.queues."
func (q *Queue) leftOut(names []string) string {
	worked := "(" + strings.Join(q.cfg.Queues, ", ") + ")"
	if len(names) == 1 {
		return fmt.Sprintf("%s is not in queue.queues %s, so queue:work leaves it alone: run queue:work --queue %[1]s, or add %[1]s to queue.queues.", names[0], worked)
	}
	return fmt.Sprintf("%s are not in queue.queues %s, so queue:work leaves them alone: run queue:work --queue %s, or add them to queue.queues.",
		strings.Join(names[:len(names)-1], ", ")+" and "+names[len(names)-1], worked, strings.Join(names, ","))
}

// EveryQueuePaused reports whether every queue is paused
// (queue:pause all), those with no jobs yet included.
func (i *Inspector) EveryQueuePaused(ctx context.Context) (bool, error) {
	q := i.q
	paused, err := q.store.Paused(ctx)
	if err != nil {
		return false, fmt.Errorf("queue: read the paused queues: %w", err)
	}
	return slices.Contains(paused, driver.AllQueues), nil
}

// JobState is a state a job is in, as [Inspector.Jobs] lists them. Its value
// is the word an operator types (queue:status, a dashboard's URL).
type JobState string

// The states of a job.
const (
	StateWaiting   JobState = "waiting"   // due now, not taken by a worker
	StateDelayed   JobState = "delayed"   // due later
	StateRunning   JobState = "running"   // taken by a worker
	StateFailed    JobState = "failed"    // in the failed jobs
	StateSucceeded JobState = "succeeded" // kept in the history for queue.keep_succeeded
	// StateHeld is a job held by its concurrency limit (see
	// Options.ConcurrencyLimit), as [Inspector.Job] finds it; Inspector.Jobs
	// does not list them yet (Stats counts them).
	StateHeld JobState = "held"
)

// states are the states by the driver's names for them.
var states = map[JobState]driver.JobState{
	StateWaiting: driver.Waiting, StateDelayed: driver.Delayed, StateRunning: driver.Running, StateFailed: driver.Failed,
	StateSucceeded: driver.Succeeded,
}

// JobsQuery asks [Inspector.Jobs] for a page of the jobs in one state.
type JobsQuery struct {
	State JobState // required
	Queue string   // only the jobs of this queue; "" for every queue
	Name  string   // only the jobs of this type; "" for every type
	// After is the next cursor of the page before; "" asks for the first
	// page.
	After string
	// Limit is the most jobs the page holds: default 50, at most
	// [MaxJobsPage].
	Limit int
}

// MaxJobsPage bounds [JobsQuery.Limit].
const MaxJobsPage = 500

// JobInfo is what an operator is shown of a job: everything but its
// payload, of which only the size (a payload can be 1 MiB; [Inspector.Failed]
// gives a failed job's). Times are UTC; a time that is not set is zero.
type JobInfo struct {
	ID          string
	Queue       string
	Name        string // the job type
	Attempts    int    // attempts started
	MaxAttempts int
	AvailableAt time.Time // when it is or was due; zero for a failed job
	// ReservedAt is when a worker took it, zero unless it runs. With the
	// system clock it is read on the clock of reservations (PostgreSQL's
	// server clock, the host's monotonic clock on SQLite), which keeps
	// close to the wall clock but does not follow its steps.
	ReservedAt time.Time
	// Worker is the id of the registered worker that runs it, or ran a
	// succeeded job's last attempt ([Inspector.Workers]); "" for none.
	Worker     string
	CreatedAt  time.Time // when it was dispatched
	FailedAt   time.Time // zero unless it failed
	FinishedAt time.Time // zero unless it succeeded (and is kept)
	// RunTime is how long a succeeded job's last attempt ran; Wait how
	// long it had been due when that attempt started.
	RunTime      time.Duration
	Wait         time.Duration
	LastError    string // a failed job's error, or that of its last failed attempt
	PayloadBytes int
}

// ErrInvalidQuery is wrapped by the errors of [Inspector.Jobs] and
// [Inspector.Failed] for a query they refuse: an unknown state, a limit out of
// bounds, a cursor that is not one, a queue or job name no job can have. A
// dashboard answers it with 400 Bad Request.
var ErrInvalidQuery = errors.New("invalid jobs query")

// Jobs returns a page of the jobs in one state, and the cursor of the
// next page, "" after the last. Each state comes in its order: waiting
// and delayed jobs by when they are due, the order the workers take them
// in; running jobs by when they were taken; failed ones by when they
// failed; succeeded ones (kept for queue.keep_succeeded) by when they
// finished; ties by id. A page is found from the cursor in the index of
// its state, never by an offset, so a page deep in a backlog costs what
// the first costs. A filter the index does not hold (the type; the queue
// of running and failed jobs) is checked on the jobs the walk meets.
//
//	page := queue.JobsQuery{State: queue.StateWaiting, Queue: "default"}
//	for {
//		jobs, next, err := q.Jobs(ctx, page)
//		// ...
//		if next == "" {
//			break
//		}
//		page.After = next
//	}
func (i *Inspector) Jobs(ctx context.Context, query JobsQuery) (jobs []JobInfo, next string, err error) {
	q := i.q
	state, ok := states[query.State]
	if !ok {
		return nil, "", fmt.Errorf("queue: list jobs: %w: unknown state %q: want waiting, delayed, running, failed or succeeded", ErrInvalidQuery, query.State)
	}
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("queue: list %s jobs: %w: "+format, append([]any{query.State, ErrInvalidQuery}, args...)...)
	}
	limit := query.Limit
	if limit == 0 {
		limit = 50
	}
	if limit < 1 || limit > MaxJobsPage {
		return nil, "", refuse("the limit is %d; want 1 to %d (0 for the default, 50)", query.Limit, MaxJobsPage)
	}
	if query.Queue != "" && checkQueue(query.Queue) != nil {
		return nil, "", refuse("%q is not a queue name: use %s", query.Queue, queueNameRule)
	}
	if query.Name != "" {
		if err := checkText("the job name "+strconv.Quote(query.Name), query.Name, MaxJobNameLen); err != nil {
			return nil, "", refuse("%s", strings.TrimPrefix(err.Error(), "queue: "))
		}
	}
	var after driver.JobKey
	if query.After != "" {
		var ok bool
		if after, ok = parseCursor(query.State, query.After); !ok {
			return nil, "", refuse("%q is not a cursor of %s jobs: pass the next cursor of the page before, or \"\" for the first page", query.After, query.State)
		}
	}
	rows, err := q.store.Jobs(ctx, driver.JobsQuery{State: state, Queue: query.Queue, Name: query.Name,
		Now: q.clock.Now().UnixMilli(), After: after, Limit: limit + 1}) // one more says whether a page follows
	if err != nil {
		return nil, "", fmt.Errorf("queue: list %s jobs: %w", query.State, err)
	}
	if len(rows) > limit {
		rows = rows[:limit]
		last := rows[limit-1].Key(state)
		next = string(query.State) + "_" + strconv.FormatInt(last.At, 10) + "_" + last.ID
	}
	jobs = make([]JobInfo, len(rows))
	for i, r := range rows {
		jobs[i] = JobInfo{ID: r.ID, Queue: r.Queue, Name: r.Name, Attempts: r.Attempts, MaxAttempts: r.MaxAttempts,
			AvailableAt: timeOf(r.AvailableAt), ReservedAt: timeOf(r.ReservedAt), Worker: r.ReservedBy, CreatedAt: timeOf(r.CreatedAt),
			FailedAt: timeOf(r.FailedAt), FinishedAt: timeOf(r.FinishedAt), RunTime: msDuration(r.RunMs), Wait: msDuration(r.WaitMs),
			LastError: r.LastError, PayloadBytes: r.PayloadSize}
	}
	return jobs, next, nil
}

// parseCursor reads a cursor of Jobs for state: the state, the time that
// orders the last job of the page and its id.
func parseCursor(state JobState, cursor string) (driver.JobKey, bool) {
	rest, ok := strings.CutPrefix(cursor, string(state)+"_")
	at, id, cut := strings.Cut(rest, "_")
	n, err := strconv.ParseInt(at, 10, 64)
	u, uerr := uuid.FromString(id)
	if !ok || !cut || err != nil || uerr != nil || u.String() != id { // ids compare as their canonical text
		return driver.JobKey{}, false
	}
	return driver.JobKey{At: n, ID: id}, true
}

// timeOf is a stored time in Unix milliseconds, as UTC; zero for 0.
func timeOf(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// msDuration is a stored count of milliseconds.
func msDuration(ms int64) time.Duration { return time.Duration(ms) * time.Millisecond }

// JobDetail is everything stored of one job: what [JobInfo] shows, its
// state, its payload, metadata and options, and its failed and
// interrupted attempts.
type JobDetail struct {
	JobInfo
	State JobState
	// Failures are its failed attempts, oldest first, each with its
	// error: those released for a retry, and a failed job's last. An
	// attempt number missing from them and not its last ended without an
	// outcome: its worker was gone, and the job taken over.
	Failures []AttemptFailure
	// Interruptions are its attempts interrupted by their worker's stop,
	// oldest first (see [ErrInterrupted]): each went back to wait without
	// spending the attempt, so the attempt after it has the same number.
	// [JobDetail.Timeline] puts them in order with the Failures.
	Interruptions []Interruption
	// Succeeded says that the job succeeded, and is kept in the history
	// (State StateSucceeded).
	Succeeded bool
	Payload   []byte // the JSON it was dispatched with, byte for byte
	Meta      []byte // what travels beside it (trace context...), JSON; nil for none
	// Backoff is as stored: "exponential:BASE_MS:MAX_MS" or "fixed:MS".
	Backoff string
	Timeout time.Duration // 0: no time limit
	// Unique says that the job holds a unique key (see Options.UniqueFor):
	// no job of the same key is stored while it does. Failed jobs hold
	// none.
	Unique bool
	// Priority orders it among the due jobs of its queue (see
	// Options.Priority); a failed job keeps it for its retry; 0 for a
	// succeeded one.
	Priority int
	// Snoozes counts the times the job snoozed (see [Snooze]): a failed
	// or succeeded job keeps the count, a retry starts it over.
	Snoozes int
	// Debounced says that a waiting job holds its debounce key (see
	// Options.Debounce): a dispatch of the same key replaces it.
	Debounced bool
	// ConcurrencyKey and ConcurrencyLimit are a limited job's (see
	// Options.ConcurrencyLimit): at most ConcurrencyLimit jobs of the key
	// are queued at once. A failed job keeps them for its retry.
	ConcurrencyKey   string
	ConcurrencyLimit int
	// RateKey and RateLimit are a rate-limited job's (see
	// Options.RateLimit): at most RateLimit.Max jobs of the key start in
	// any window of RateLimit.Per. A failed job keeps them for its retry.
	RateKey   string
	RateLimit Rate
	// FairnessKey is the group of a job with Options.Fair; a failed job
	// keeps it for its retry.
	FairnessKey string
}

// AttemptFailure is a failed attempt of a job.
type AttemptFailure struct {
	Attempt int       // 1 for the first
	At      time.Time // when it ended
	RunTime time.Duration
	Worker  string // the registered worker that ran it, if any
	Error   string
}

// Interruption is an attempt of a job interrupted by its worker's stop
// (at queue.stop_timeout, or a second signal): the job went back to wait
// without spending the attempt, due again from At.
type Interruption struct {
	Attempt int       // its number, which the attempt after it has too
	At      time.Time // when it ended
	RunTime time.Duration
	Worker  string // the registered worker that ran it, if any
}

// failuresOf are the stored failures as AttemptFailures, and the
// interrupted attempts stored among them as Interruptions.
func failuresOf(stored []driver.Failure) ([]AttemptFailure, []Interruption) {
	out := make([]AttemptFailure, 0, len(stored))
	var interrupted []Interruption
	for _, f := range stored {
		if f.Interrupted {
			interrupted = append(interrupted, Interruption{Attempt: f.Attempt, At: timeOf(f.At), RunTime: msDuration(f.Ms), Worker: f.Worker})
			continue
		}
		out = append(out, AttemptFailure{Attempt: f.Attempt, At: timeOf(f.At), RunTime: msDuration(f.Ms), Worker: f.Worker, Error: f.Error})
	}
	return out, interrupted
}

// Job returns the job with id, in whichever state: waiting, delayed,
// running, failed, or succeeded and kept (queue.keep_succeeded). An id
// that is no job stored (it succeeded and is not kept, was deleted, or
// never was) gives a [*NoJobError].
func (i *Inspector) Job(ctx context.Context, id string) (JobDetail, error) {
	q := i.q
	u, err := uuid.FromString(id)
	if err != nil {
		return JobDetail{}, &NoJobError{ID: id, Anywhere: true}
	}
	found, err := q.store.Lookup(ctx, u.String())
	switch {
	case errors.Is(err, driver.ErrNoJob):
		return JobDetail{}, &NoJobError{ID: u.String(), Anywhere: true}
	case err != nil:
		return JobDetail{}, fmt.Errorf("queue: look up the job %s: %w", u, err)
	case found.Failed != nil:
		f := found.Failed
		failures, interruptions := failuresOf(f.Errors)
		return JobDetail{JobInfo: JobInfo{ID: f.ID, Queue: f.Queue, Name: f.Name, Attempts: f.Attempts, MaxAttempts: f.MaxAttempts,
			CreatedAt: timeOf(f.CreatedAt), FailedAt: timeOf(f.FailedAt), LastError: f.Error, PayloadBytes: len(f.Payload)},
			State: StateFailed, Payload: f.Payload, Meta: f.Meta, Backoff: f.Backoff, Timeout: time.Duration(f.TimeoutMs) * time.Millisecond,
			Failures: failures, Interruptions: interruptions, Priority: f.Priority, ConcurrencyKey: f.LimitKey, ConcurrencyLimit: f.LimitMax,
			RateKey: f.RateKey, RateLimit: rateOf(f.Rate), FairnessKey: f.FairKey, Snoozes: f.Snoozes}, nil
	case found.Succeeded != nil:
		sj := found.Succeeded
		failures, interruptions := failuresOf(sj.Errors)
		return JobDetail{JobInfo: JobInfo{ID: sj.ID, Queue: sj.Queue, Name: sj.Name, Attempts: sj.Attempts, MaxAttempts: sj.MaxAttempts,
			Worker: sj.Worker, CreatedAt: timeOf(sj.CreatedAt), FinishedAt: timeOf(sj.FinishedAt), RunTime: msDuration(sj.RunMs), Wait: msDuration(sj.WaitMs),
			PayloadBytes: len(sj.Payload)}, State: StateSucceeded, Succeeded: true, Payload: sj.Payload, Meta: sj.Meta,
			Failures: failures, Interruptions: interruptions, Snoozes: sj.Snoozes}, nil
	}
	j := found.Job
	state := StateDelayed
	switch {
	case j.Held:
		state = StateHeld
	case j.ReservedAt != 0:
		state = StateRunning
	case j.AvailableAt <= q.clock.Now().UnixMilli():
		state = StateWaiting
	}
	backoff := j.BadBackoff
	if backoff == "" {
		backoff = j.Backoff.String()
	}
	failures, interruptions := failuresOf(j.Errors)
	return JobDetail{JobInfo: JobInfo{ID: j.ID, Queue: j.Queue, Name: j.Name, Attempts: j.Attempts, MaxAttempts: j.MaxAttempts,
		AvailableAt: timeOf(j.AvailableAt), ReservedAt: timeOf(j.ReservedAt), Worker: j.ReservedBy, CreatedAt: timeOf(j.CreatedAt), LastError: j.LastError,
		PayloadBytes: len(j.Payload)}, State: state, Payload: j.Payload, Meta: j.Meta, Backoff: backoff,
		Timeout: time.Duration(j.TimeoutMs) * time.Millisecond, Unique: j.UniqueKey != "" && !strings.Contains(j.UniqueKey, debounceKeyMark), Failures: failures, Interruptions: interruptions,
		Priority: j.Priority, Snoozes: j.Snoozes, Debounced: strings.Contains(j.UniqueKey, debounceKeyMark),
		ConcurrencyKey: j.LimitKey, ConcurrencyLimit: j.LimitMax, RateKey: j.RateKey, RateLimit: rateOf(j.Rate), FairnessKey: j.FairKey}, nil
}

// Throughput is what the workers of every process finished of one queue
// in one minute.
type Throughput struct {
	Queue     string
	Minute    time.Time // its start, UTC
	Succeeded int
	Released  int // failed, and put back for a retry
	Failed    int // failed for good (cancelled ones included)
}

// MaxThroughputWindow bounds the window of [Inspector.Throughput]: the
// counts of older minutes are deleted.
const MaxThroughputWindow = 24 * time.Hour

// Throughput returns, by queue and then minute, the attempts the workers
// of every process finished in the minutes of the last window (up to
// MaxThroughputWindow), the current minute included. Each worker adds its
// counts every five seconds and when it stops, so the current minute
// lags by up to that; a worker killed loses its last five seconds'.
// Minutes in which a queue finished nothing are left out.
func (i *Inspector) Throughput(ctx context.Context, window time.Duration) ([]Throughput, error) {
	q := i.q
	if window <= 0 || window > MaxThroughputWindow {
		return nil, fmt.Errorf("queue: throughput: %w: the window is %s; want more than 0, at most %s", ErrInvalidQuery, window, MaxThroughputWindow)
	}
	now := q.clock.Now().UnixMilli()
	rows, err := q.store.Throughput(ctx, (now-window.Milliseconds())/60_000*60_000)
	if err != nil {
		return nil, fmt.Errorf("queue: throughput: %w", err)
	}
	out := make([]Throughput, len(rows))
	for i, r := range rows {
		out[i] = Throughput{Queue: r.Queue, Minute: time.UnixMilli(r.Minute).UTC(), Succeeded: int(r.Succeeded), Released: int(r.Released), Failed: int(r.Failed)}
	}
	return out, nil
}

// statusCommand is queue:status.
func statusCommand() app.Command {
	return app.Command{
		Name:  "queue:status",
		Usage: "Show each queue's waiting, delayed, running, stale and failed jobs",
		Description: "Prints a table of the jobs of each queue that has one: waiting (due now), delayed, running,\n" +
			"stale (running, their worker presumed dead), failed, and how long the oldest waiting job has waited;\n" +
			"and the paused queues. A count stops at 100000: more shows as 100000+ (100001 with --json).",
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "watch", Usage: "print it again every `D`, such as 2s, until stopped (on a terminal: redrawn in place)", DefaultText: "once"},
			&cli.BoolFlag{Name: "json", Usage: "print it as JSON"},
		},
		Action: app.Uses(func(c *cli.Context, i *Inspector) error {
			q := i.q
			every := c.Duration("watch")
			if c.IsSet("watch") && every < 100*time.Millisecond {
				return fmt.Errorf("queue:status: --watch must be 100ms or more, not %s", every)
			}
			terminal := term.IsTerminal(c.App.Writer)
			for first := true; ; first = false {
				stats, err := i.Stats(c.Context)
				if err != nil {
					return err
				}
				if err := i.UnknownTypes(c.Context, stats); err != nil {
					return err
				}
				all, err := i.EveryQueuePaused(c.Context)
				if err != nil {
					return err
				}
				if every > 0 && terminal {
					fmt.Fprint(c.App.Writer, "\033[H\033[2J") // redraw in place
				} else if every > 0 && !first {
					fmt.Fprintln(c.App.Writer)
				}
				if every > 0 && !c.Bool("json") {
					fmt.Fprintf(c.App.Writer, "%s\n", q.clock.Now().UTC().Format(time.DateTime+" UTC"))
				}
				if err := printStatus(c.App.Writer, stats, all, c.Bool("json")); err != nil {
					return err
				}
				var left []string
				for _, s := range stats {
					if s.Unworked {
						left = append(left, s.Queue)
					}
				}
				if left != nil && !c.Bool("json") {
					fmt.Fprintln(c.App.Writer, q.leftOut(left))
				}
				if every == 0 {
					return nil
				}
				select {
				case <-c.Context.Done():
					return nil
				case <-time.After(every):
				}
			}
		}),
	}
}

// printStatus writes the stats as a table, or as JSON; all says that
// every queue is paused.
func printStatus(w io.Writer, stats []Stats, all, asJSON bool) error {
	if asJSON {
		type row struct {
			Queue            string         `json:"queue"`
			Waiting          int            `json:"waiting"`
			Delayed          int            `json:"delayed"`
			Running          int            `json:"running"`
			Stale            int            `json:"stale"`
			Failed           int            `json:"failed"`
			OldestWaitingSec float64        `json:"oldest_waiting_secs"`
			Paused           bool           `json:"paused"`
			Unworked         bool           `json:"unworked"`
			Prioritized      bool           `json:"prioritized"`
			Held             int            `json:"held"`
			Throttled        []throttleRow  `json:"throttled"`
			UnknownTypes     map[string]int `json:"unknown_types"`
		}
		rows := make([]row, len(stats))
		for i, s := range stats {
			rows[i] = row{s.Queue, s.Waiting, s.Delayed, s.Running, s.Stale, s.Failed, s.OldestWaiting.Seconds(), s.Paused, s.Unworked, s.Prioritized, s.Held,
				[]throttleRow{}, map[string]int{}}
			maps.Copy(rows[i].UnknownTypes, s.Unknown)
			for _, t := range s.Throttled {
				rows[i].Throttled = append(rows[i].Throttled, throttleRow{t.Key, t.Rate.Max, t.Rate.Per.Seconds(), t.Reopens.UTC()})
			}
		}
		return json.NewEncoder(w).Encode(rows)
	}
	if all {
		fmt.Fprintln(w, "Every queue is paused: queue:resume all resumes them.")
	}
	if len(stats) == 0 {
		_, err := fmt.Fprintln(w, "No jobs: every queue is empty.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tWAITING\tDELAYED\tRUNNING\tSTALE\tFAILED\tOLDEST WAITING")
	for _, s := range stats {
		oldest := "-"
		if s.OldestWaiting > 0 {
			oldest = s.OldestWaiting.Round(time.Second).String()
		}
		var marks []string
		if s.Paused && !all {
			marks = append(marks, "paused")
		}
		if s.Unworked {
			marks = append(marks, "no worker")
		}
		if s.Prioritized {
			marks = append(marks, "by priority")
		}
		if s.Held > 0 {
			marks = append(marks, count(s.Held)+" held by limits")
		}
		if len(s.Throttled) > 0 {
			marks = append(marks, throttledMark(s.Throttled))
		}
		name := s.Queue
		if marks != nil {
			name += " (" + strings.Join(marks, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", name, count(s.Waiting), count(s.Delayed), count(s.Running), count(s.Stale), count(s.Failed), oldest)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range stats {
		if len(s.Unknown) == 0 {
			continue
		}
		var types []string
		n := 0
		for _, name := range slices.Sorted(maps.Keys(s.Unknown)) {
			types = append(types, fmt.Sprintf("%s (%d)", name, s.Unknown[name]))
			n += s.Unknown[name]
		}
		fmt.Fprintf(w, "%s: %d waiting job(s) of a type no handler of this build knows: %s. A worker of this build fails them (but with queue.only_known_types): register the type, or declare its old name an alias of the new (queue.WithAliases).\n",
			s.Queue, n, strings.Join(types, ", "))
	}
	return nil
}

// throttleRow is a full rate limit as queue:status --json writes it.
type throttleRow struct {
	Key       string    `json:"key"`
	Max       int       `json:"max"`
	PerSecs   float64   `json:"per_secs"`
	ReopensAt time.Time `json:"reopens_at"`
}

// throttledMark is the mark of a queue kept waiting by full rate limits,
// such as "throttled by stripe (10/1s) until 10:42:03.120 UTC".
func throttledMark(list []Throttle) string {
	keys := make([]string, len(list))
	for i, t := range list {
		keys[i] = t.Key + " (" + t.Rate.String() + ")"
	}
	return "throttled by " + strings.Join(keys, ", ") + " until " + list[0].Reopens.UTC().Format("15:04:05.000 UTC")
}
