package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/dbdriver"
	"github.com/navree/navree/queue/internal/driver/memdriver"
	"github.com/navree/navree/queue/internal/recording"
	"github.com/navree/navree/queue/internal/worker"
)

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
