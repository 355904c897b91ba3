package queue

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/dbdriver"
	"github.com/navree/navree/queue/internal/driver/memdriver"
	"github.com/navree/navree/queue/internal/recording"
	"github.com/navree/navree/queue/internal/worker"
)

// Dispatcher queues jobs. The queue module provides the app's [*Queue] as
// its Dispatcher; code that should not depend on the whole queue (mail,
// events, a library) dispatches through this interface. Inside a unit of
// work (found on ctx) every dispatch joins it.
type Dispatcher interface {
	// Dispatch queues job and returns its id.
	Dispatch(ctx context.Context, job Job) (string, error)
	// DispatchLater queues job to run once delay, rounded up to whole
	// seconds, has passed.
	DispatchLater(ctx context.Context, job Job, delay time.Duration) (string, error)
	// DispatchMany queues jobs together, all or none, and returns their
	// ids in order.
	DispatchMany(ctx context.Context, jobs ...Job) ([]string, error)
	// Push queues an envelope: a job with a queue, a delay, a unique key
	// or metadata of its own ([EnvelopeOf] makes one from a job).
	Push(ctx context.Context, e Envelope) (string, error)
	// PushMany queues envelopes together, all or none, and returns their
	// ids in order.
	PushMany(ctx context.Context, envs ...Envelope) ([]string, error)
}

// Envelope is a job as it is queued: its type, its JSON payload, its
// options, when it is due and what makes it unique.
type Envelope struct {
	Name    string          // the job type, from JobName
	Payload json.RawMessage // the job as JSON
	Options Options         // the job's JobOptions; defaults apply when it is queued
	Delay   time.Duration   // how long to wait before it is due
	// UniqueKey, when set, makes the job unique by this key rather than by
	// its payload: while a job of the same type with the same key is
	// pending (and, with Options.UniqueFor, was dispatched less than that
	// ago), pushing returns that job's id.
	UniqueKey *string
	// Meta is a JSON object stored with the job and kept through its
	// retries, for what travels beside the payload (trace context, the
	// payload's version); the handler reads it in [JobContext]. It is
	// never logged. At most [MaxMetaBytes].
	Meta json.RawMessage
}

// MaxMetaBytes bounds an envelope's Meta.
const MaxMetaBytes = 8 << 10

// EnvelopeOf encodes job into an [Envelope].
func EnvelopeOf(job Job) (Envelope, error) {
	payload, err := json.Marshal(job)
	if err != nil {
		return Envelope{}, fmt.Errorf("queue: encode the payload of %s: %w", job.JobName(), err)
	}
	e := Envelope{Name: job.JobName(), Payload: payload}
	if o, ok := job.(WithOptions); ok {
		e.Options = o.JobOptions()
	}
	return e, nil
}

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

// Queue stores jobs and runs them. Build it with [Module] (or [New]).
type Queue struct {
	cfg     Config
	store   driver.Driver
	db      *db.DB // nil for the memory driver in an app without a database
	clock   app.Clock
	logger  *slog.Logger
	jobs    map[string]Registration
	handles map[string]worker.Handle // the engine's, by job type

	recorder  Recorder                                                  // set for a recording Queue: dispatches go to it
	benchHook atomic.Pointer[func(dispatched int64, started time.Time)] // Bench's view of its jobs
	onListen  func()                                                    // tests: a worker listens for dispatches

	// system says the clock is the system clock; started is when the
	// Queue was made, for its monotonic clock (see pace).
	system  bool
	started time.Time

	lastSweep atomic.Int64  // when workers last looked for stale reservations (pace, ms)
	pauses    atomic.Int64  // bumped at each Pause and Resume, for this process's workers
	cancels   atomic.Int64  // bumped at each Cancel of a running job, for this process's workers
	waker     *worker.Waker // woken at each dispatch, to wake idle workers
}

// Params are what [New] builds a Queue from.
type Params struct {
	Config   Config
	DB       *db.DB         // needed by the database driver
	Clock    app.Clock      // the system clock when nil
	Logger   *slog.Logger   // logs each attempt; nil logs nothing
	Handlers []Registration // the job types and their handlers
}

// New returns the queue p describes. Two registrations of one job type
// are an error that names both.
func New(p Params) (*Queue, error) {
	cfg, err := p.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg, db: p.DB, clock: p.Clock, logger: p.Logger, jobs: map[string]Registration{}, handles: map[string]worker.Handle{},
		waker: worker.NewWaker()}
	if q.clock == nil {
		q.clock = app.SystemClock{}
	}
	_, q.system = q.clock.(app.SystemClock)
	q.started = time.Now()
	if q.logger == nil {
		q.logger = slog.New(slog.DiscardHandler)
	}
	for _, reg := range append(p.Handlers, registration[benchJob](HandlerFunc[benchJob](q.handleBench), "queue:bench"),
		registration[PruneFailedJob](HandlerFunc[PruneFailedJob](q.handlePrune), "the queue module")) {
		if err := checkText("the job name "+strconv.Quote(reg.name)+" of "+reg.typ.String()+" at "+reg.where, reg.name, MaxJobNameLen); err != nil {
			return nil, err
		}
		if prev, dup := q.jobs[reg.name]; dup {
			return nil, fmt.Errorf("queue: job %q is registered twice: %s at %s and %s at %s", reg.name, prev.typ, prev.where, reg.typ, reg.where)
		}
		q.jobs[reg.name] = reg
		if reg.handle != nil { // nil: declared by Register, whose handler is built with the Queue (bind)
			q.handles[reg.name] = handle(reg)
		}
	}
	switch cfg.Driver {
	case Memory:
		q.store = memdriver.New()
	case Database:
		if p.DB == nil {
			return nil, errors.New(`queue: the database driver needs db.Module() in the app (or set queue.driver = "memory")`)
		}
		q.store = dbdriver.New(p.DB)
	}
	return q, nil
}

// bind gives q the handlers that Register's constructors built.
func (q *Queue) bind(handlers []built) *Queue {
	for _, b := range handlers {
		q.handles[b.name] = handle(Registration(b))
	}
	return q
}

// reservedAt is the time reservations are stamped with and judged stale
// by. A clock of the app's own (a fixed clock in tests) decides it, as it
// decides when jobs are due. With the system clock it is 0: the driver's
// own clock of reservations, one every worker of its store shares and no
// step or skew of a system clock moves (PostgreSQL's server clock; on
// SQLite the host's monotonic clock; see driver). Otherwise a clock step
// forward (an NTP correction, a virtual machine resumed after suspend),
// or a server whose clock runs ahead, would make a worker take over jobs
// still running.
func (q *Queue) reservedAt() int64 {
	if q.system {
		return 0
	}
	return q.clock.Now().UnixMilli()
}

// pace is the time, in ms, that the workers' "once a second" is counted
// in: with the system clock its monotonic part, which no step moves; a
// clock of the app's own decides it, so that a test moves it.
func (q *Queue) pace() int64 {
	if q.system {
		return time.Since(q.started).Milliseconds()
	}
	return q.clock.Now().UnixMilli()
}

// Recorder receives what a recording Queue ([NewRecording]) is asked to
// queue. Only queuetest.Fake can be one: a Recorder embeds a mark that
// only the queue's own packages can name. Tests use the fake.
type Recorder interface {
	// Record takes an envelope and returns the job's id. uow is the unit
	// of work given to DispatchIn, nil for every other way to dispatch.
	Record(ctx context.Context, uow *db.UnitOfWork, e Envelope) string
	recording.Marked
}

// NewRecording returns a Queue that hands every dispatch to r instead of
// queueing it. It accepts any job type, registered or not, and never runs
// anything: its workers find no jobs. It is queuetest.NewFake's.
func NewRecording(r Recorder) *Queue {
	q, _ := New(Params{Config: Config{Driver: Memory}})
	q.recorder = r
	return q
}

// Dispatch queues job and returns its id, a UUID v7 string. Inside a unit
// of work (found on ctx) the job joins it: it is queued only if the unit
// commits.
func (q *Queue) Dispatch(ctx context.Context, job Job) (string, error) {
	return q.Later(ctx, job, 0)
}

// Later queues job to run once delay has passed (to the millisecond).
func (q *Queue) Later(ctx context.Context, job Job, delay time.Duration) (string, error) {
	e, err := EnvelopeOf(job)
	if err != nil {
		return "", err
	}
	e.Delay = delay
	return one(q.enqueue(ctx, db.UnitOfWorkFrom(ctx), false, e))
}

// DispatchLater queues job to run once delay, rounded up to whole
// seconds, has passed. It makes the Queue a [Dispatcher].
func (q *Queue) DispatchLater(ctx context.Context, job Job, delay time.Duration) (string, error) {
	if rem := delay % time.Second; rem != 0 && delay > 0 {
		delay += time.Second - rem
	}
	return q.Later(ctx, job, delay)
}

// Push queues an envelope, as made by [EnvelopeOf] and perhaps given a
// queue, a delay, a UniqueKey or Meta of its own.
func (q *Queue) Push(ctx context.Context, e Envelope) (string, error) {
	return one(q.PushMany(ctx, e))
}

// PushMany queues envelopes together, as DispatchMany queues jobs.
func (q *Queue) PushMany(ctx context.Context, envs ...Envelope) ([]string, error) {
	for _, e := range envs {
		if err := e.check(); err != nil {
			return nil, err
		}
	}
	return q.enqueue(ctx, db.UnitOfWorkFrom(ctx), false, envs...)
}

// check checks what a hand-made envelope may get wrong (EnvelopeOf's
// payloads are valid).
func (e Envelope) check() error {
	switch {
	case !json.Valid(e.Payload):
		return fmt.Errorf("queue: the payload of %s is not valid JSON", e.Name)
	case !utf8.Valid(e.Payload): // PostgreSQL would refuse it
		return fmt.Errorf("queue: the payload of %s is not valid UTF-8", e.Name)
	}
	return nil
}

// DispatchIn queues job in the unit of work uow: with the database
// driver its row is written in uow's transaction; with the memory driver
// it is queued when uow commits. Either way it is dropped if uow rolls
// back.
func (q *Queue) DispatchIn(ctx context.Context, uow *db.UnitOfWork, job Job) (string, error) {
	e, err := EnvelopeOf(job)
	if err != nil {
		return "", err
	}
	return one(q.enqueue(ctx, uow, true, e))
}

// DispatchMany queues jobs together and returns their ids, in order: the
// jobs without a unique key in multi-row inserts, unique ones each with
// its check. Inside a unit of work they join it; outside one they are
// stored all or none.
func (q *Queue) DispatchMany(ctx context.Context, jobs ...Job) ([]string, error) {
	envs := make([]Envelope, len(jobs))
	for i, job := range jobs {
		e, err := EnvelopeOf(job)
		if err != nil {
			return nil, err
		}
		envs[i] = e
	}
	return q.enqueue(ctx, db.UnitOfWorkFrom(ctx), false, envs...)
}

// one is the id of a dispatch of one job.
func one(ids []string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// enqueue is every dispatch's one path: envs stored in uow (given to
// DispatchIn when explicit, else found on the context) or at once, then
// this process's idle workers, and other processes' where the driver
// can, woken once they are committed.
func (q *Queue) enqueue(ctx context.Context, uow *db.UnitOfWork, explicit bool, envs ...Envelope) ([]string, error) {
	if q.recorder != nil {
		if !explicit {
			uow = nil
		}
		for _, e := range envs {
			if err := checkPayload(e); err != nil {
				return nil, err
			}
		}
		ids := make([]string, len(envs))
		for i, e := range envs {
			ids[i] = q.recorder.Record(ctx, uow, e)
		}
		return ids, nil
	}
	rows := make([]*driver.Job, len(envs))
	for i, e := range envs {
		row, err := q.row(e)
		if err != nil {
			return nil, err
		}
		rows[i] = row
	}
	var ids []string
	stored := rows // the rows stored, to announce
	if len(rows) == 1 {
		id, inserted, err := q.store.Insert(ctx, uow, rows[0])
		if err != nil {
			return nil, fmt.Errorf("queue: dispatch %s: %w", rows[0].Name, err)
		}
		if ids = []string{id}; !inserted {
			stored = nil
		}
	} else {
		var err error
		if ids, err = q.store.InsertMany(ctx, uow, rows, q.clock.Now().UnixMilli()); err != nil {
			return nil, fmt.Errorf("queue: dispatch %d jobs: %w", len(rows), err)
		}
	}
	announce := func(ctx context.Context) {
		var seen []string
		for _, row := range stored {
			if !slices.Contains(seen, row.Queue) {
				seen = append(seen, row.Queue)
				q.dispatched(ctx, row.Queue)
			}
		}
	}
	if uow != nil {
		uow.AfterCommit(announce)
	} else {
		announce(ctx)
	}
	return ids, nil
}

// The bounds of the texts a job is stored with besides its payload; with
// them every key of the unique index fits PostgreSQL's index entries.
const (
	MaxJobNameLen   = 200
	MaxUniqueKeyLen = 1000
)

// checkText checks a text the queue stores: 1 to limit bytes of UTF-8
// without control characters (PostgreSQL refuses a NUL byte and invalid
// UTF-8 in text). what names it in the error.
func checkText(what, s string, limit int) error {
	switch {
	case s == "" || len(s) > limit:
		return fmt.Errorf("queue: %s has %d bytes; want 1 to %d", what, len(s), limit)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("queue: %s is not printable UTF-8: use no control characters or invalid bytes", what)
	}
	return nil
}

// queueNameRule says what a queue name may hold, for errors.
const queueNameRule = "1 to 100 ASCII letters, digits, '-', '_', '.' or ':'"

// CheckQueueName returns an error, saying what a name may hold, unless name
// is a valid queue name: 1 to 100 ASCII letters, digits, '-', '_', '.'
// or ':'. Modules check the queue names of their configuration with it.
func CheckQueueName(name string) error { return checkQueue(name) }

// checkQueue validates a queue name: 1 to [MaxQueueNameLen] ASCII
// letters, digits, '-', '_', '.' or ':', so that every name can be given
// to queue:work --queue (which splits at commas and trims spaces) and
// printed as it is.
func checkQueue(name string) error {
	ok := name != "" && len(name) <= MaxQueueNameLen
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
	}
	if !ok {
		return fmt.Errorf("queue: invalid queue name %q: use %s", name, queueNameRule)
	}
	return nil
}

// resolve applies the defaults to o and checks it.
func (q *Queue) resolve(name string, o Options) (Options, error) {
	if o.Queue == "" {
		o.Queue = q.cfg.DefaultQueue
	}
	if err := checkQueue(o.Queue); err != nil {
		return o, err
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Backoff.IsZero() {
		o.Backoff = DefaultBackoff
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.MaxAttempts < 0:
		return o, fmt.Errorf("queue: job %s: MaxAttempts is %d; want 1 or more (0 for the default, %d)", name, o.MaxAttempts, DefaultMaxAttempts)
	case o.Timeout < 0 && o.Timeout != NoTimeout:
		return o, fmt.Errorf("queue: job %s: Timeout is %s; want a positive duration, 0 for the default or queue.NoTimeout", name, o.Timeout)
	case o.UniqueFor < 0:
		return o, fmt.Errorf("queue: job %s: UniqueFor is %s; want 0 or more", name, o.UniqueFor)
	case o.Backoff.b.Negative():
		return o, fmt.Errorf("queue: job %s: the backoff %s is negative", name, o.Backoff.b)
	}
	return o, nil
}

// ceilMs is d in whole milliseconds, rounded up.
func ceilMs(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// MaxPayloadBytes bounds a job's JSON payload. A job carries ids, not
// data: a larger payload is refused when it is dispatched.
const MaxPayloadBytes = 1 << 20

// ErrPayloadTooLarge is returned for a payload over [MaxPayloadBytes].
var ErrPayloadTooLarge = errors.New("payload too large")

// checkPayload refuses a payload over [MaxPayloadBytes]: the queue's
// check, and a recording queue's (a fake refuses what the queue would).
func checkPayload(e Envelope) error {
	if len(e.Payload) > MaxPayloadBytes {
		return fmt.Errorf("queue: the payload of %s is %d bytes, over the limit of %d: store the data elsewhere and dispatch its id: %w",
			e.Name, len(e.Payload), MaxPayloadBytes, ErrPayloadTooLarge)
	}
	return nil
}

// row is the stored form of e, with its options resolved.
func (q *Queue) row(e Envelope) (*driver.Job, error) {
	if _, ok := q.jobs[e.Name]; !ok {
		return nil, &UnknownJobError{Name: e.Name}
	}
	if err := checkPayload(e); err != nil {
		return nil, err
	}
	if len(e.Meta) > 0 {
		if len(e.Meta) > MaxMetaBytes || !json.Valid(e.Meta) || !utf8.Valid(e.Meta) || bytes.TrimSpace(e.Meta)[0] != '{' {
			return nil, fmt.Errorf("queue: the meta of %s must be a JSON object of valid UTF-8 of at most %d bytes", e.Name, MaxMetaBytes)
		}
	}
	o, err := q.resolve(e.Name, e.Options)
	if err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("queue: new job id: %w", err)
	}
	now := q.clock.Now().UnixMilli()
	job := &driver.Job{
		ID:          id.String(),
		Queue:       o.Queue,
		Name:        e.Name,
		Payload:     e.Payload,
		MaxAttempts: o.MaxAttempts,
		Backoff:     o.Backoff.b,
		AvailableAt: now + ceilMs(max(e.Delay, 0)),
		CreatedAt:   now,
		Meta:        e.Meta,
	}
	if o.Timeout > 0 {
		job.TimeoutMs = ceilMs(o.Timeout)
	}
	switch {
	case e.UniqueKey != nil:
		if err := checkText("the unique key of "+e.Name, *e.UniqueKey, MaxUniqueKeyLen); err != nil {
			return nil, err
		}
		job.UniqueKey = e.Name + "|key:" + *e.UniqueKey
	case o.UniqueFor > 0:
		sum := sha256.Sum256(e.Payload)
		job.UniqueKey = e.Name + "|payload:" + hex.EncodeToString(sum[:])
	}
	if job.UniqueKey != "" && o.UniqueFor > 0 {
		job.UniqueUntil = now + ceilMs(o.UniqueFor)
	}
	return job, nil
}

// announcer is a driver that tells other processes of new jobs.
type announcer interface{ Announce(queue string) }

// dispatched wakes this process's idle workers, and other processes'
// where the driver can, after a job was stored on queue.
func (q *Queue) dispatched(ctx context.Context, queue string) {
	q.waker.Wake()
	if a, ok := q.store.(announcer); ok {
		a.Announce(queue)
	}
}

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
