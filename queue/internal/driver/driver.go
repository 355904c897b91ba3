// Package driver is the queue's storage seam: the small interface that the
// database and memory drivers implement, and the rows they store.
//
// Times are Unix milliseconds. When jobs are due, were dispatched or
// failed is the queue's to say (its app.Clock). When a job was reserved,
// and whether a reservation has gone stale, is on the clock of
// reservations: the queue's clock when it passes a time, and when it
// passes 0 (as it does with the system clock) the driver's own, one that
// every worker of its store shares and that no step or skew of a system
// clock moves:
//
//   - PostgreSQL: the server's clock;
//   - SQLite: the host's monotonic clock, counted from its boot as the
//     first worker after the boot saw it (table queue_clock); every
//     process of a SQLite file runs on one host;
//   - memory: its process's monotonic clock.
package driver

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/backoff"
)

// ErrNoFailedJob is returned by Retry for an id that is not a failed job.
var ErrNoFailedJob = errors.New("no failed job")

// StaleAfter is how long after its reservation a running job that no
// registered worker holds (its ReservedBy is "") is presumed abandoned:
// its timeout plus 30 seconds, or a day for a job without a time limit.
func StaleAfter(timeoutMs int64) int64 {
	if timeoutMs == 0 {
		return NoLimitStaleMs
	}
	return timeoutMs + GraceMs
}

// The takeover delays, in milliseconds.
const (
	GraceMs        = 30_000
	NoLimitStaleMs = 86_400_000
	// YoungMs: no reservation younger is stale, whoever holds it. It
	// lets the index over reserved rows leave out the running jobs just
	// reserved, most of them where jobs are short.
	YoungMs = 1_000
)

// IsStale is the rule of a reservation gone stale by at, on the clock of
// reservations, as TakeOver, Stale and Stats judge it (the database
// drivers in SQL, staleAt): j is reserved, at least YoungMs ago, and
//
//   - held by a registered worker (ReservedBy set) that is gone: holder,
//     its row in the registry, is nil (it stopped, or was forgotten) or
//     its last heartbeat is RescueMs old; the job's age does not count;
//   - or held by none: reserved StaleAfter of its timeout ago.
func IsStale(j *Job, holder *Worker, at int64) bool {
	switch {
	case j.ReservedAt == 0 || j.ReservedAt > at-YoungMs:
		return false
	case j.ReservedBy == "":
		return j.ReservedAt+StaleAfter(j.TimeoutMs) <= at
	}
	return holder == nil || holder.Gone(at)
}

// Worker is a registered worker: one queue.Work call (KindWorker), or
// one scheduler (KindScheduler), in a process.
type Worker struct {
	ID          string
	Kind        string
	Host        string
	PID         int
	Queues      []string // highest priority first; none for a scheduler
	Concurrency int
	Version     string
	StartedAt   int64 // on the queue's clock
	HeartbeatAt int64 // on the clock of reservations
	Running     int   // jobs running at its last heartbeat
	// RescueMs is how long after its last heartbeat the worker is gone
	// and its jobs are taken over: its own, so that workers configured
	// apart judge each other by the promise each made.
	RescueMs int64
	// RestartAt is when a restart was requested of the worker (Restart),
	// on the queue's clock of the process that requested it; 0 for none.
	RestartAt int64
}

// Names are the job types a reservation is limited to (Reservation.Only),
// made once by NewNames and kept: a driver keeps what it builds of them
// by their address.
type Names struct {
	list []string
	set  map[string]bool
	json string
}

// NewNames returns the set of the job types list.
func NewNames(list []string) *Names {
	n := &Names{list: slices.Sorted(slices.Values(list)), set: make(map[string]bool, len(list))}
	for _, name := range list {
		n.set[name] = true
	}
	text, _ := json.Marshal(n.list) // strings always marshal
	n.json = string(text)
	return n
}

// JSON returns the types of n, sorted, as a JSON array.
func (n *Names) JSON() string { return n.json }

// Has reports whether name is one of n.
func (n *Names) Has(name string) bool { return n.set[name] }

// List returns the types of n, sorted.
func (n *Names) List() []string { return n.list }

// ByStart orders workers by when they started, then by id: the order of
// Workers and Restart.
func ByStart(a, b Worker) int {
	return cmp.Or(cmp.Compare(a.StartedAt, b.StartedAt), strings.Compare(a.ID, b.ID))
}

// Beat is what a Heartbeat tells its worker.
type Beat struct {
	// Lost are the attempts running that are no longer their job's
	// current reservation.
	Lost []Attempt
	// Restart says that a restart was requested of the worker.
	Restart bool
}

// The kinds of registered workers.
const (
	KindWorker    = "worker"
	KindScheduler = "scheduler"
)

// Gone reports whether w's heartbeat stopped by at, on the clock of
// reservations: none for RescueMs.
func (w *Worker) Gone(at int64) bool { return w.HeartbeatAt+w.RescueMs <= at }

// GoneForgottenMs is how long after its last heartbeat a worker's row is
// deleted.
const GoneForgottenMs = 3_600_000

// Attempt names a reservation: a job and the attempt it reserved. A
// success kept in the history (Complete's keep) also says when it
// finished (At, the queue's clock), how long it ran (Ms) and how long it
// had been due when it started (Wait).
type Attempt struct {
	ID      string `json:"id"`
	Attempt int    `json:"attempt"`
	At      int64  `json:"at,omitempty"`
	Ms      int64  `json:"ms,omitempty"`
	Wait    int64  `json:"wait,omitempty"`
	// Flow is the flow of the job, if any, and Result what its handler
	// recorded, if anything: either sends it through Finish.
	Flow   string `json:"-"`
	Result string `json:"-"`
	// Limit is the job's LimitKey, if any: a driver whose transactions
	// lock keys takes those of a batch first, in order.
	Limit string `json:"-"`
}

// Failure is a failed attempt, or one interrupted by its worker's stop,
// kept with its job (the column errors, a JSON array of them, oldest
// first) into failed_jobs and succeeded_jobs.
type Failure struct {
	Attempt int    `json:"attempt"`
	At      int64  `json:"at"` // when it ended, on the queue's clock
	Ms      int64  `json:"ms"` // how long it ran
	Worker  string `json:"worker,omitempty"`
	Error   string `json:"error"`
	// Interrupted marks an attempt interrupted by its worker's stop
	// (Driver.Interrupt), not a failure: its Error is empty, and the
	// attempt after it has the same number.
	Interrupted bool `json:"interrupted,omitempty"`
	// Flow is the flow of the failed job, if any: Fail then resolves it.
	Flow string `json:"-"`
	// Limit is the failed job's LimitKey, if any: Fail then lets the
	// key's next held job in.
	Limit string `json:"-"`
}

// Reservation asks [Driver.Reserve] for jobs.
type Reservation struct {
	Queue string
	// Only, when set, limits the reservation to the jobs of these types:
	// those of other types are left waiting, for workers that know them.
	Only *Names
	Now  int64 // jobs due by then: available_at <= Now
	// At is the reservations' time on the clock of reservations, 0 for
	// the driver's own.
	At int64
	// By is the registered worker that reserves, kept with each job it
	// reserves; "" for none (a worker not registered).
	By string
	// From leaves out the jobs available before it (0 leaves out none):
	// a worker passes a bound a little behind the last job it reserved, so
	// that PostgreSQL's search starts past the index entries of the rows
	// it reserved and deleted, which stay until a vacuum. The memory
	// driver has no such entries and ignores From.
	From  int64
	Limit int
	// Features are the features of the jobs that may wait on Queue,
	// which its search does (a database driver's search takes nothing
	// while a feature it does not do is recorded of Queue: see Features;
	// the memory driver does them all always):
	//   - FeaturePriority: it orders by priority, then due time;
	//   - FeatureRate: it leaves out the keys whose window is full
	//     (Job.RateKey), and takes room in the windows of the jobs it
	//     reserves, giving back in its own transaction those over their
	//     limit;
	//   - FeatureFair: it takes the jobs of priority 0 in turns by group
	//     (see package fair's Order, queue/internal/control/fair).
	// Without them the search is by due time alone, the one that costs
	// least.
	Features Features
	// Marks, when not nil, are the worker's marks of Queue, which the
	// features of its search read and write (see Marks).
	Marks *Marks
}

// Features are the features of a queue's jobs that its searches must do,
// as bits. A database driver records them in the transaction that stores
// a job that has one (the table queue_features), and a search of a queue
// takes nothing while a feature it does not do is recorded (see
// Reservation.Does): what a worker believes about a queue can make its
// search slower, never wrong. The memory driver's searches do every
// feature.
type Features uint8

// The features, each stored as its number in queue_features (so a bit
// is never reused); what each does is its folder's, under
// queue/internal/control.
const (
	FeaturePriority Features = 1 << iota // a job with a priority other than 0
	FeatureRate                          // a job with a rate limit (Job.RateKey)
	FeatureFair                          // a job with a fairness key (Job.FairKey)
	featuresEnd

	// AllFeatures are the features together: the search of a queue whose
	// record could not be read does them all.
	AllFeatures = featuresEnd - 1
)

// Marks are what a worker keeps of a queue between its searches for the
// features that change them: what a reservation of the queue reads (its
// own rate limit, where its search of places starts) and what it
// reports for the next (whether it drained the jobs without a fairness
// key, when a full window reopens). The worker keeps one a queue, so
// that a search allocates none; a reservation without them reads zeros
// and reports nothing.
type Marks struct {
	// Rate, when not zero, limits the queue itself: at most as many of
	// its jobs start as the window of the key QueueKey(queue) has room
	// for, at that rate.
	Rate Rate
	// Place leaves out the jobs with a FairKey whose place is before it
	// (0 leaves out none), as Reservation.From does by due time: a
	// worker passes the highest place it reserved, so that PostgreSQL's
	// search of them starts past the index entries of those it reserved,
	// which stay until a vacuum. The memory driver ignores it.
	Place int64
	// Drained is where a reservation with FeatureFair reports whether it
	// took every job of priority 0 without a FairKey due by its Now (from
	// its From): the next search of those may start from Now. (Its search
	// of the jobs with a key starts from the first, by place: a search of
	// those without one walks past them, from From.) See the function
	// Drained of package fair.
	Drained bool
	// ReopensIn is where a reservation with FeatureRate (or a Rate) that
	// took fewer than its Limit reports how long, in milliseconds, until
	// the first full window of a key whose jobs wait on the queue next
	// has room; 0 when none is full.
	ReopensIn int64
}

// QueueRate is the rate limit of r's queue itself (its Marks' Rate),
// zero for none.
func (r *Reservation) QueueRate() Rate {
	if r.Marks == nil {
		return Rate{}
	}
	return r.Marks.Rate
}

// Place is where r's search of places starts (its Marks' Place), 0 for
// the first.
func (r *Reservation) Place() int64 {
	if r.Marks == nil {
		return 0
	}
	return r.Marks.Place
}

// Does returns the features a search of r does: its Features, and rate
// limits with a queue's own Rate in its Marks.
func (r *Reservation) Does() Features {
	if !r.QueueRate().IsZero() {
		return r.Features | FeatureRate
	}
	return r.Features
}

// QueueKey is the key of the rate limit of queue itself.
func QueueKey(queue string) string { return "queue:" + queue }

// Throttle is a rate limit whose window is full.
type Throttle struct {
	Key     string
	Rate    Rate  // the rate it was last taken at
	Reopens int64 // when its window next has room, on the clock of reservations
}

// ReserveOne reserves the next available job of queue at now, or nil,
// by the search that the features recorded of queue call for.
func ReserveOne(ctx context.Context, d Driver, queue string, now int64) (*Job, error) {
	f, err := d.Features(ctx, queue, false)
	if err != nil {
		return nil, err
	}
	jobs, err := d.Reserve(ctx, Reservation{Queue: queue, Now: now, At: now, Limit: 1, Features: f})
	if len(jobs) == 0 {
		return nil, err
	}
	return jobs[0], err
}

// CompleteOne deletes the job j that succeeded, letting its key's next
// held job in, if attempt is still its current reservation, and reports
// whether it did.
func CompleteOne(ctx context.Context, d Driver, j *Job, attempt int) (bool, error) {
	done, err := d.Complete(ctx, []Attempt{{ID: j.ID, Attempt: attempt, Limit: j.LimitKey}}, false)
	return len(done) == 1, err
}

// Job is a stored job: waiting, delayed or running.
type Job struct {
	ID          string
	Queue       string
	Name        string
	Payload     []byte
	MaxAttempts int
	Backoff     backoff.Backoff
	TimeoutMs   int64  // 0: no time limit
	UniqueKey   string // "": not unique
	UniqueUntil int64  // 0: unique while pending
	Attempts    int    // attempts started; the reservation token
	AvailableAt int64
	ReservedAt  int64  // 0 while waiting
	ReservedBy  string // the registered worker that holds the reservation; "" for none
	CreatedAt   int64
	LastError   string
	Meta        []byte // a JSON object, or nil
	Flow        string // the flow whose step it is, if any
	// Priority orders the due jobs of its queue: higher first, then by
	// available_at and id; 0 for most.
	Priority int
	// Snoozes counts the times its handler put it back to wait without
	// spending an attempt (Snooze).
	Snoozes int
	// LimitKey, when set, limits the jobs of that key (of any queue and
	// type) to LimitMax at once in jobs: waiting, delayed or running. A
	// job inserted over the limit is held (in queue_held) and moved into
	// jobs, in the transaction that deletes a job of its key, once the key
	// has room; the next by priority, then due time, then id; due no
	// earlier than the job deleted, so that the search of the worker that
	// ran that one, rewound to its due time, finds it.
	LimitKey string
	LimitMax int
	// RateKey, when set, limits how often the jobs of that key (of any
	// queue and type) start: at most Rate.Max reservations in any window
	// of Rate.PerMs (see Window). A search leaves out the jobs of a key
	// whose window is full; a reservation that would overfill it gives
	// the jobs back in its own transaction: a job over its limit waits in
	// jobs, never reserved, and spends no attempt.
	RateKey string
	Rate    Rate
	// FairKey, when set, names the job's group in its queue (a tenant, such
	// as "account:42"): the jobs of a queue's groups are taken in turns
	// (see FairSeq).
	FairKey string
	// FairSeq is the place of a job with a FairKey in its queue's rounds,
	// given as it enters jobs (0 before): its group's next, or the round
	// the queue serves (its lowest place waiting; with none waiting the
	// next after the last given: then a batch's places are those of its
	// jobs stored one by one), whichever is later. A Fair reservation
	// takes the jobs of priority 0 by it (see package fair's Order,
	// queue/internal/control/fair).
	FairSeq int64
	// Held says, read side (Lookup), that the job is held by its limit.
	Held bool
	// DebounceMaxMs, set on a job to insert, debounces it by its
	// UniqueKey: see Driver.Insert. It is not stored.
	DebounceMaxMs int64
	Errors        []Failure // its failed attempts; read by Lookup alone
	// Result is what its handler recorded for this attempt (JSON), kept
	// when it succeeds.
	Result []byte
	// Corrupt, when set, says which value of the stored row does not
	// hold what its column should (SQLite keeps any value in any column):
	// the worker fails the job at once, with this as its error.
	Corrupt string
	// BadBackoff, when set, is a stored backoff that does not parse
	// (Backoff is then zero): the job runs, and fails when it needs a
	// retry.
	BadBackoff string
}

// FailedJob is a job that used up its attempts or could not run.
type FailedJob struct {
	ID          string
	Queue       string
	Name        string
	Payload     []byte
	MaxAttempts int
	Backoff     string // as stored
	TimeoutMs   int64
	Attempts    int
	Error       string
	CreatedAt   int64
	FailedAt    int64
	Meta        []byte
	Flow        string
	Priority    int    // kept for its retry
	LimitKey    string // kept for its retry, which holds it again
	LimitMax    int
	RateKey     string // kept for its retry
	Rate        Rate
	FairKey     string    // kept for its retry
	Snoozes     int       // its snoozes (see Job.Snoozes); a retry starts them over
	Errors      []Failure // every failed attempt, the last included; read by Lookup alone
}

// SucceededJob is a job that succeeded, kept in the history
// (succeeded_jobs) for the queue's keep_succeeded.
type SucceededJob struct {
	ID          string
	Queue       string
	Name        string
	Payload     []byte
	MaxAttempts int
	Attempts    int
	CreatedAt   int64
	FinishedAt  int64  // on the queue's clock
	RunMs       int64  // how long its last attempt ran
	WaitMs      int64  // how long it had been due when that attempt started
	Worker      string // the registered worker that ran it, if any
	Snoozes     int    // its snoozes (see Job.Snoozes)
	Errors      []Failure
	Meta        []byte
}

// Found is what Lookup found of a job: one of the three set.
type Found struct {
	Job       *Job // waiting, delayed or running
	Failed    *FailedJob
	Succeeded *SucceededJob
}

// FailedKey is where a failed job stands in the order of failures: by
// when it failed, then by id.
type FailedKey struct {
	FailedAt int64
	ID       string
}

// Key returns f's FailedKey.
func (f FailedJob) Key() FailedKey { return FailedKey{FailedAt: f.FailedAt, ID: f.ID} }

// Before orders two keys.
func (k FailedKey) Before(o FailedKey) bool {
	return k.FailedAt < o.FailedAt || k.FailedAt == o.FailedAt && k.ID < o.ID
}

// Driver stores jobs, and the flows they are steps of: the engine's
// Core, the operators' Admin, Flows, and the rate limits' Rates.
type Driver interface {
	Core
	Admin
	Flows
	Rates
}

// Core is what dispatches and the worker engine run on, the hot path: a
// worker is given a Core alone (worker.Config.Store).
type Core interface {
	// Finish completes the jobs of flows' steps, as Complete does the
	// others.
	Finisher

	// Insert stores job, in uow when it is not nil (the database driver
	// writes in its transaction, the memory driver queues after its
	// commit). A job with a UniqueKey is not stored while a pending job
	// holds the same key, unless that job's UniqueUntil has passed when
	// job was created (its CreatedAt): Insert then returns the pending
	// job's id and false.
	//
	// A job with DebounceMaxMs replaces instead the job holding its key
	// that waits (not reserved): that one takes its Payload and Meta, and
	// its AvailableAt, or its own CreatedAt plus DebounceMaxMs if earlier;
	// Insert returns its id and false. A reserved job holding the key
	// gives it up, and job is stored.
	Insert(ctx context.Context, uow *db.UnitOfWork, job *Job) (id string, inserted bool, err error)

	// InsertMany stores jobs, in uow when it is not nil, all or none, and
	// returns their ids in order: those without a unique key in as few
	// statements as it can, unique ones each checked as Insert checks
	// them (the id returned is then the pending job's).
	InsertMany(ctx context.Context, uow *db.UnitOfWork, jobs []*Job, now int64) ([]string, error)

	// Reserve takes up to r.Limit available jobs of r.Queue (due by r.Now,
	// waiting), the next ones by priority (higher first; with
	// FeaturePriority), then available_at, then id, marks them reserved at
	// r.At and counts their attempt, in one statement. It leaves out the
	// jobs available before r.From, but for those with a priority. It
	// returns them in that order, none when there is none.
	Reserve(ctx context.Context, r Reservation) ([]*Job, error)

	// TakeOver takes the job of queue whose reservation went stale first
	// (IsStale), now being on the clock of reservations (0 for the
	// driver's own), by the oldest reservation. It reserves it again at
	// now for by ("" for none) as a new attempt, which fences the old one
	// out. A job with a rate limit takes room in its window in the same
	// transaction, as a reservation does (a restart is a start); when its
	// window is full it is given back to wait instead, as Unreserve gives
	// a job back (its dead attempt counted), and TakeOver goes on to the
	// next. It returns nil when there is none.
	TakeOver(ctx context.Context, queue string, now int64, by string) (*Job, error)

	// Behind reports, reading only, whether a job of queue due by now
	// (of a type of only, when set) waits that a Reserve from from and
	// placeFrom would leave out: one without a FairKey with an
	// available_at before from, or one with a FairKey with a place before
	// placeFrom (each 0: none looked for). The memory driver, whose
	// Reserve leaves out none, reports false.
	Behind(ctx context.Context, queue string, now, from, placeFrom int64, only *Names) (bool, error)

	// Features reads the features recorded of the jobs of queue (see
	// Features). With tidy it first forgets those that no job of queue has
	// any more, unless a transaction that stores such a job is under way.
	Features(ctx context.Context, queue string, tidy bool) (Features, error)

	// Stale reports, reading only, whether TakeOver would find a job of
	// queue at now (0 for the driver's own clock of reservations).
	Stale(ctx context.Context, queue string, now int64) (bool, error)

	// Unreserve gives back a job reserved by attempt that has not started
	// running, as if it had never been reserved.
	Unreserve(ctx context.Context, id string, attempt int) (bool, error)

	// Complete deletes the jobs that succeeded, each only if its attempt is
	// still its current reservation, in one statement; with keep it moves
	// them to succeeded_jobs instead, with each Attempt's At, Ms and Wait.
	// It returns the ids it deleted. Its commit need not wait for the disk (on PostgreSQL it
	// does not): a completion lost to a crash of the database only runs
	// the job again, and [Driver.Sync] makes it durable.
	Complete(ctx context.Context, done []Attempt, keep bool) ([]string, error)

	// Sync returns once every change committed before it is durable,
	// those of Complete and Reserve included. A worker syncs when it
	// stops.
	Sync(ctx context.Context) error

	// Release puts a reserved job back to wait until availableAt, if
	// attempt is still its current reservation, with f's error as its
	// last and f added to its errors.
	Release(ctx context.Context, id string, attempt int, availableAt int64, f Failure) (bool, error)

	// Snooze puts a reserved job back to wait until availableAt, if
	// attempt is still its current reservation, giving its attempt back
	// (the next reservation counts the same attempt again) and counting
	// the snooze in its Snoozes; its errors stay as they were.
	Snooze(ctx context.Context, id string, attempt int, availableAt int64) (bool, error)

	// Interrupt puts a reserved job whose attempt its worker's stop
	// interrupted back to wait, due at f.At (when the attempt ended), if
	// attempt is still its current reservation: its attempt given back
	// (the next reservation counts the same attempt again), f added to
	// its errors as Interrupted, its last error as it was.
	Interrupt(ctx context.Context, id string, attempt int, f Failure) (bool, error)

	// Fail moves a reserved job to the failed jobs with f's error, failed
	// at f.At, and f added to its errors, in one transaction, if attempt
	// is still its current reservation. The attempts it records are those
	// started, at most the job's MaxAttempts: a takeover's reservation
	// after the last attempt is not one.
	Fail(ctx context.Context, id string, attempt int, f Failure) (bool, error)

	// AddThroughput adds counts to those of their queue and minute, and
	// timings to those of their minute, queue, job type and bucket, and
	// deletes the counts and timings of minutes before keepFrom.
	AddThroughput(ctx context.Context, counts []Throughput, timings []Timing, keepFrom int64) error

	// PruneSucceeded deletes, in one transaction, up to limit of the jobs
	// kept in succeeded_jobs that finished before before, oldest first,
	// and returns how many.
	PruneSucceeded(ctx context.Context, before int64, limit int) (int, error)

	// Upkeep runs a feature's periodic upkeep u once, in transactions of
	// its own, now being on the queue's clock and at on the clock of
	// reservations (0 for the driver's own). It returns how many things
	// it mended where u counts them (see Upkeep.Mended), else 0. A
	// database driver looks first, reading only: a process that uses
	// none of a feature writes nothing for it (on SQLite a write holds
	// the file's lock, even one that deletes nothing).
	Upkeep(ctx context.Context, u Upkeep, now, at int64) (int, error)

	// Paused lists the paused queues, AllQueues among them when every
	// queue is paused.
	Paused(ctx context.Context) ([]string, error)

	// CancelRequested returns which of the running jobs ids have a
	// request to cancel them.
	CancelRequested(ctx context.Context, ids []string) ([]string, error)

	// ForgetCancel deletes the request to cancel id, once its attempt is
	// recorded.
	ForgetCancel(ctx context.Context, id string) error

	// Heartbeat records that the worker w is alive at now, on the clock
	// of reservations (0 for the driver's own), with what it runs: it
	// registers w at its first beat. It deletes the rows of workers gone
	// for GoneForgottenMs. It returns whether a restart was requested of
	// w (Restart) and, of the attempts running, those that are no longer
	// their job's current reservation: taken over (their worker was
	// presumed gone), cancelled, or deleted.
	Heartbeat(ctx context.Context, w Worker, now int64, running []Attempt) (Beat, error)

	// Deregister deletes the worker id's row: it stopped.
	Deregister(ctx context.Context, id string) error
}

// Admin is what operators and the read side use: failed jobs and their
// retries, pauses, cancels, the counts and pages of queue:status and the
// dashboard, and the registered workers.
type Admin interface {
	// Throttles returns the rate limits whose window is full at at (0 for
	// the driver's own clock of reservations), the first to reopen first:
	// of queue, its own and those of the keys whose jobs wait on it; of
	// every queue for "".
	Throttles(ctx context.Context, queue string, at int64) ([]Throttle, error)

	// Failed lists up to limit failed jobs, oldest failure first, from
	// the first after the failure after (the zero FailedKey: from the
	// first), with their payloads only when payloads is true.
	Failed(ctx context.Context, after FailedKey, limit int, payloads bool) ([]FailedJob, error)

	// Retry moves the failed job id back to its queue, available at now,
	// attempts started over, not unique; ErrNoFailedJob when id is not a
	// failed job.
	Retry(ctx context.Context, id string, now int64) error

	// RetryFailed moves, as Retry does and in one transaction, up to limit
	// failed jobs whose keys are after after and not after upTo, oldest
	// failure first; the zero after is before every failed job. It returns
	// how many it moved and the key of the last (after itself when none).
	RetryFailed(ctx context.Context, after, upTo FailedKey, limit int, now int64) (int, FailedKey, error)

	// FlushFailed deletes every failed job and returns how many there were.
	FlushFailed(ctx context.Context) (int, error)

	// DeleteFailed deletes the failed job id; ErrNoFailedJob when there is
	// none.
	DeleteFailed(ctx context.Context, id string) error

	// Timings lists the timings of the minutes from since on, of queue and
	// of the job type name where they are set, by minute.
	Timings(ctx context.Context, since int64, queue, name string) ([]Timing, error)

	// Throughput lists the counts of the minutes from since on, by queue,
	// then minute.
	Throughput(ctx context.Context, since int64) ([]Throughput, error)

	// Lookup reads the job id, with its payload and errors: from jobs,
	// failed_jobs or succeeded_jobs; ErrNoJob when in none.
	Lookup(ctx context.Context, id string) (Found, error)

	// JobIDs lists, in order, up to limit of the ids from from to to, both
	// included, of the jobs Lookup finds (in jobs, held, failed_jobs or
	// succeeded_jobs): the ids that start with a prefix, for queue:job. Each
	// table's search is a range of its primary key.
	JobIDs(ctx context.Context, from, to string, limit int) ([]string, error)

	// PruneFailed deletes, in one transaction, up to limit of the failed
	// jobs that failed before before, oldest first, and returns how many.
	PruneFailed(ctx context.Context, before int64, limit int) (int, error)

	// Pause records queue (AllQueues for every queue) as paused at now;
	// pausing a paused queue changes nothing. Workers read the paused
	// queues with Paused; a driver whose workers listen tells them at
	// once.
	Pause(ctx context.Context, queue string, now int64) error

	// Resume deletes the pause of queue (of every queue and AllQueues,
	// for AllQueues) and reports whether there was one.
	Resume(ctx context.Context, queue string) (bool, error)

	// Cancel cancels the job id: one waiting or delayed is moved to the
	// failed jobs, its error CancelledError, at now (Removed); for one
	// running, a request is kept for its worker to read with
	// CancelRequested (Signalled), and a driver whose workers listen
	// tells them at once. ErrNoJob when id is neither. It forgets the
	// requests of jobs no longer running.
	Cancel(ctx context.Context, id string, now int64) (Cancelled, error)

	// Purge deletes every job of queue, whatever its state, and returns
	// how many there were (the successes kept of it go too, uncounted);
	// a database driver then clears what the rows left behind
	// (PostgreSQL vacuums jobs), so that workers do not walk it
	// (queue:bench cleans up with it).
	Purge(ctx context.Context, queue string) (int, error)

	// PendingCount counts the jobs of queue that wait, are delayed or run.
	PendingCount(ctx context.Context, queue string) (int, error)

	// Unknown counts, reading only, by type, the waiting and delayed jobs
	// of queue whose type is none of known, among its first limit in due
	// order.
	Unknown(ctx context.Context, queue string, known []string, limit int) (map[string]int, error)

	// Stats counts, reading only, the jobs of every queue that has one in
	// jobs, held or failed_jobs, sorted by queue: waiting (due by now), delayed
	// (due after now), running (reserved), stale (running and stale at at,
	// as Stale and TakeOver judge: at is on the clock of reservations, 0
	// for the driver's own), failed and held; and when the waiting job due
	// first became due. Waiting, delayed, failed and held jobs are counted up to
	// limit for each queue: a count of limit means limit or more.
	Stats(ctx context.Context, now, at int64, limit int) ([]Stats, error)

	// Restart requests a restart of every registered worker that has not
	// been asked yet, at now (on the queue's clock), and returns the
	// workers it asked: each learns it at its next Heartbeat. A worker
	// that registers after it is not asked.
	Restart(ctx context.Context, now int64) ([]Worker, error)

	// Workers lists, reading only, the registered workers, by when they
	// started, then id, and the time at on the clock of reservations (now
	// itself, or the driver's own for 0) that their heartbeats are judged
	// by.
	Workers(ctx context.Context, now int64) ([]Worker, int64, error)

	// Jobs lists, reading only, up to q.Limit jobs in q.State, of q.Queue
	// and of type q.Name where they are set, from the first after q.After
	// in the order of that state (see JobKey), without their payloads.
	Jobs(ctx context.Context, q JobsQuery) ([]JobInfo, error)
}

// AllQueues is the pause of every queue, present and future: not a queue
// name, which cannot hold '*'.
const AllQueues = "*"

// Throughput counts the attempts finished on a queue in a minute (Unix
// milliseconds of its start).
type Throughput struct {
	Queue                       string
	Minute                      int64
	Succeeded, Released, Failed int64
}

// Timing counts the attempts of a job type on a queue, in a minute (Unix
// milliseconds of its start), whose run time, or queue wait, fell in a
// bucket (see Bucket).
type Timing struct {
	Queue  string
	Name   string
	Minute int64
	Wait   bool // the queue wait; false: the run time
	Bucket int
	Count  int64
}

// Buckets is how many buckets a timing has: bucket 0 holds the durations
// under 100 µs, bucket b the half-octave from BucketFloor(b) up to
// BucketFloor(b+1), and the last everything from its floor on (past a
// day).
const Buckets = 62

// Bucket returns the bucket of a duration of us microseconds.
func Bucket(us int64) int {
	if us < 100 {
		return 0
	}
	// b = 1 + floor(2 log2(us/100)), found by comparing with the floors.
	b := 1 + 2*(bits.Len64(uint64(us/100))-1)
	if us >= BucketFloor(b+1) {
		b++
	}
	return min(b, Buckets-1)
}

// BucketFloor is the least duration, in microseconds, of bucket b ≥ 1:
// 100 µs times √2 to the power b-1.
func BucketFloor(b int) int64 {
	if b <= 0 {
		return 0
	}
	f := int64(100) << ((b - 1) / 2)
	if (b-1)%2 == 1 {
		f = f * 92682 / 65536 // √2, to five digits: the floors of odd steps
	}
	return f
}

// Cancelled says what Cancel did.
type Cancelled int

// What Cancel did.
const (
	Removed   Cancelled = iota + 1 // the job waited: it is a failed job now
	Signalled                      // the job runs: its worker is asked to stop it
)

// CancelledError is the error a cancelled job is kept with in the failed
// jobs.
const CancelledError = "cancelled"

// CancelNote is the prefix of the notification, on the channel of
// dispatches, that asks the workers to read the cancel requests: it
// cannot begin a queue name.
const CancelNote = "!"

// ResultNote is the notification, on the channel of dispatches, that
// jobs of flows or with results finished: it wakes the callers of Await
// in processes whose workers listen. It cannot be a queue name.
const ResultNote = "="

// CheckNote is the prefix of the notification, on the channel of
// dispatches, that a listener sends itself once it listens, to find out
// whether notifications reach it. It cannot begin a queue name.
const CheckNote = "?"

// ErrNotNotified is what a listener reports when its own notification
// has not reached it within a few seconds of listening: between it and
// the server stands a pooler in transaction mode, which runs LISTEN on a
// server connection it then gives to others.
var ErrNotNotified = errors.New("no notification reached LISTEN within 5s of listening, not even the worker's own: " +
	"if database.url (or database.listen_url) is a pooler in transaction mode, set database.pooler = \"transaction\" " +
	"and database.listen_url to a URL of the server itself; meanwhile workers poll every queue.poll_interval_ms")

// ErrNoJob is returned by Cancel for an id that is no job waiting,
// delayed or running.
var ErrNoJob = errors.New("no such job")

// Stats is what [Driver.Stats] counts of one queue.
type Stats struct {
	Queue   string
	Waiting int // due by now, not reserved
	Delayed int // due after now, not reserved
	Running int // reserved, the stale ones included
	Stale   int // reserved, and stale: TakeOver would take them
	Failed  int // in failed_jobs
	Held    int // held by their concurrency limits (see Job.LimitKey)
	// OldestAvailableAt is when the waiting job due first was due, 0
	// when none waits.
	OldestAvailableAt int64
}

// JobState is a state of a job, as [Driver.Jobs] lists them.
type JobState int

// The states of a job.
const (
	Waiting   JobState = iota // not reserved, due by now
	Delayed                   // not reserved, due after now
	Running                   // reserved
	Failed                    // in failed_jobs
	Succeeded                 // in succeeded_jobs
)

// JobsQuery asks [Driver.Jobs] for a page of the jobs in one state.
type JobsQuery struct {
	State JobState
	Queue string // "": every queue
	Name  string // "": every job type
	// Now divides waiting jobs (due by it) from delayed ones (after it).
	Now int64
	// After is the key of the last job of the page before; the zero
	// JobKey starts at the first.
	After JobKey
	Limit int
}

// JobKey is where a job stands in the order of its state: by the time
// that orders it, then by id. Waiting and delayed jobs are ordered by
// when they are due (available_at), the order they will run in; running
// ones by when they were reserved; failed ones by when they failed;
// succeeded ones by when they finished.
type JobKey struct {
	At int64
	ID string
}

// Before orders two keys.
func (k JobKey) Before(o JobKey) bool {
	return k.At < o.At || k.At == o.At && k.ID < o.ID
}

// JobInfo is what an operator is shown of a job: everything but its
// payload, of which only the size.
type JobInfo struct {
	ID          string
	Queue       string
	Name        string
	Attempts    int // attempts started
	MaxAttempts int
	AvailableAt int64  // 0 for a failed job
	ReservedAt  int64  // on the clock of reservations; 0 unless running
	ReservedBy  string // the registered worker running it, if any
	CreatedAt   int64
	FailedAt    int64  // 0 unless failed
	FinishedAt  int64  // 0 unless succeeded
	RunMs       int64  // a succeeded job's last attempt's run
	WaitMs      int64  // and how long it had been due when it started
	LastError   string // a failed job's error, or the last failed attempt's
	PayloadSize int    // in bytes
}

// Key returns where j stands in the order of state.
func (j JobInfo) Key(state JobState) JobKey {
	switch state {
	case Running:
		return JobKey{At: j.ReservedAt, ID: j.ID}
	case Failed:
		return JobKey{At: j.FailedAt, ID: j.ID}
	case Succeeded:
		return JobKey{At: j.FinishedAt, ID: j.ID}
	}
	return JobKey{At: j.AvailableAt, ID: j.ID}
}

// An Upkeep is one feature's periodic upkeep, which Core.Upkeep runs: a
// worker runs each of Upkeeps once a minute per process.
type Upkeep int

// The upkeeps.
const (
	// UpkeepRates forgets the windows of rate limits that are empty at
	// the time on the clock of reservations (a key without one has room
	// for its whole rate).
	UpkeepRates Upkeep = iota + 1
	// UpkeepPlaces forgets the next places of the fairness groups that
	// are behind their queue's round (see Job.FairSeq): their next job
	// takes the round, as one of a group without a place does. The group
	// given the highest place of each queue is kept.
	UpkeepPlaces
	// UpkeepHeld lets in, as a job of their key leaving jobs does, the
	// held jobs of every concurrency key that has room, due no earlier
	// than now, and counts the keys that had room. Every move of a
	// limited job out of jobs lets its key's next held jobs in, in its
	// transaction: this is the safety net for one that did not (a build
	// from before that was so, still running through a rolling deploy).
	UpkeepHeld
	// UpkeepPlans, on PostgreSQL, analyzes jobs when the table has grown
	// far past what its statistics say, and counts the tables it
	// analyzed. The server keeps one plan of each reservation (see
	// plan.Render), made with the statistics of its time: one made while
	// jobs looked empty walks the whole table, until jobs is analyzed or
	// vacuumed again (autovacuum's next visit, a minute or more away). A
	// worker runs it with its look for stale reservations, once a second
	// per process, not with Upkeeps; one process at a time analyzes.
	UpkeepPlans
)

// Upkeeps are the upkeeps, in the order a worker runs them once a
// minute (UpkeepPlans is not among them: it runs once a second).
var Upkeeps = []Upkeep{UpkeepRates, UpkeepPlaces, UpkeepHeld}

// String says what u does, as a log line of its failure names it.
func (u Upkeep) String() string {
	switch u {
	case UpkeepRates:
		return "forget the empty windows of rate limits"
	case UpkeepPlaces:
		return "forget the places of fairness groups behind their queue's round"
	case UpkeepHeld:
		return "let in the held jobs of concurrency keys with room"
	case UpkeepPlans:
		return "analyze jobs, grown far past its statistics"
	}
	return fmt.Sprintf("Upkeep(%d)", int(u))
}

// Mended is the log line of an upkeep that mended something, and what
// its count counts; "" for an upkeep that counts nothing: a mend is the
// trace of a process that did not do its part.
func (u Upkeep) Mended() (line, counts string) {
	if u == UpkeepHeld {
		return "let in the held jobs of concurrency keys that had room: a job of theirs left without letting the next in, " +
			"as a worker of an older build does during a rolling deploy", "keys"
	}
	return "", ""
}
