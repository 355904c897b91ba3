package queue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/dbdriver"
	"github.com/navree/navree/queue/internal/driver/memdriver"
	"github.com/navree/navree/queue/internal/recording"
	"github.com/navree/navree/queue/internal/worker"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Queue stores jobs and runs them. Build it with [Module] (or [New]).
type Queue struct {
	cfg    Config
	store  driver.Driver
	db     *db.DB // nil for the memory driver in an app without a database
	clock  app.Clock
	logger *slog.Logger
	table  atomic.Pointer[table] // the job types and their handlers; replaced whole by Handle
	adding sync.Mutex            // one Handle at a time

	tracing        *tracing                                            // nil: no tracer provider, no spans
	meters         *meters                                             // nil: no meter provider, no metrics
	recorder       Recorder                                            // set for a recording Queue: dispatches go to it
	benchHook      atomic.Pointer[func(j benchJob, started time.Time)] // Bench's view of its jobs
	onListen       func()                                              // tests: a worker listens for dispatches
	heartbeatEvery time.Duration                                       // how often workers beat their hearts: a third of RescueAfter, but in tests

	// system says the clock is the system clock; started is when the
	// Queue was made, for its monotonic clock (see pace).
	system  bool
	started time.Time

	lastSweep  atomic.Int64           // when workers last looked for stale reservations (pace, ms)
	lastPrune  atomic.Int64           // when workers last pruned the succeeded jobs kept (pace, ms)
	queueRates map[string]driver.Rate // Config.RateLimits, parsed
	pauses     atomic.Int64           // bumped at each Pause and Resume, for this process's workers
	cancels    atomic.Int64           // bumped at each Cancel of a running job, for this process's workers
	waker      *worker.Waker          // woken at each dispatch, to wake idle workers
}

// Params are what [New] builds a Queue from.
type Params struct {
	Config Config
	DB     *db.DB       // needed by the database driver
	Clock  app.Clock    // the system clock when nil
	Logger *slog.Logger // logs each attempt; nil logs nothing
	// MeterProvider receives the queue's OpenTelemetry metrics (see
	// docs/operations.md); nil records none, at no cost.
	MeterProvider metric.MeterProvider
	// TracerProvider receives the queue's spans: one for each dispatch,
	// one for each attempt, linked to it (see docs/operations.md); nil
	// makes none.
	TracerProvider trace.TracerProvider
}

// New returns the queue p describes, with no job types but its own: give
// it the app's and the modules' with [Queue.Handle].
func New(p Params) (*Queue, error) {
	cfg, err := p.Config.withDefaults()
	if err != nil {
		return nil, err
	}
	q := &Queue{cfg: cfg, db: p.DB, clock: p.Clock, logger: p.Logger, waker: worker.NewWaker(), heartbeatEvery: cfg.RescueAfter / 3}
	if q.queueRates, err = queueRates(cfg.RateLimits); err != nil {
		return nil, err
	}
	q.table.Store(&table{jobs: map[string]Registration{}, handles: map[string]worker.Handle{}})
	if q.clock == nil {
		q.clock = app.SystemClock{}
	}
	_, q.system = q.clock.(app.SystemClock)
	q.started = time.Now()
	if q.logger == nil {
		q.logger = slog.New(slog.DiscardHandler)
	}
	if err := q.Handle(registration[benchJob](HandlerFunc[benchJob](q.handleBench), "queue:bench"),
		registration[PruneFailedJob](HandlerFunc[PruneFailedJob](q.handlePrune), "the queue module")); err != nil {
		return nil, err
	}
	if p.TracerProvider != nil {
		q.tracing = newTracing(p.TracerProvider)
	}
	if p.MeterProvider != nil {
		if q.meters, err = newMeters(q, p.MeterProvider); err != nil {
			return nil, err
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

// table is what a Queue knows of job types: dispatch reads jobs, workers
// handles. Handle replaces it whole, so readers need no lock.
type table struct {
	jobs    map[string]Registration  // by job type, and by each alias of one
	handles map[string]worker.Handle // the engine's, by job type and alias
}

// Handle gives q job types and their handlers: the app's own
// ([HandlerOf], [NamedHandler]) and its modules' (each module's Jobs,
// such as mail.Mailer's). It is how an app built without fx ([New])
// registers jobs, after building the modules on q:
//
//	q, err := queue.New(queue.Params{Config: qcfg, DB: d})
//	mailer, err := mail.New(mail.Params{Config: mcfg, Dispatcher: q})
//	err = q.Handle(append(mailer.Jobs(), queue.HandlerOf[ExportContacts](exporter))...)
//
// A job type dispatches once q has it, and runs in the workers started
// after. A job name registered twice, here or in an earlier call, is an
// error that names both registrations, and q keeps none of regs.
func (q *Queue) Handle(regs ...Registration) error {
	q.adding.Lock()
	defer q.adding.Unlock()
	old := q.table.Load()
	t := &table{jobs: maps.Clone(old.jobs), handles: maps.Clone(old.handles)}
	for _, reg := range regs {
		if reg.name == "" && reg.typ == nil {
			return errors.New("queue: Handle was given a zero Registration: make each with queue.HandlerOf, queue.NamedHandler or a module's Jobs")
		}
		if err := checkText("the job name "+strconv.Quote(reg.name)+" of "+reg.typ.String()+" at "+reg.where, reg.name, MaxJobNameLen); err != nil {
			return err
		}
		for i, name := range append([]string{reg.name}, reg.aliases...) {
			if i > 0 {
				if err := checkText("the alias "+strconv.Quote(name)+" of job "+reg.name+" at "+reg.where, name, MaxJobNameLen); err != nil {
					return err
				}
			}
			if prev, dup := t.jobs[name]; dup {
				return fmt.Errorf("queue: job %q is registered twice: %s at %s and %s at %s", name, described(prev, name), prev.where, described(reg, name), reg.where)
			}
			t.jobs[name] = reg
		}
		if reg.handle != nil { // nil: declared by Register, whose handler is built with the Queue (bind)
			t.bind(q, reg)
		}
	}
	q.table.Store(t)
	return nil
}

// described says what reg is to name: its type, or its type's alias.
func described(reg Registration, name string) string {
	if name != reg.name {
		return fmt.Sprintf("%s (an alias of %s)", reg.typ, reg.name)
	}
	return reg.typ.String()
}

// bind makes reg's handler the engine's for its name and its aliases.
func (t *table) bind(q *Queue, reg Registration) {
	h := q.handle(reg)
	t.handles[reg.name] = h
	for _, alias := range reg.aliases {
		t.handles[alias] = h
	}
}

// bind gives q the handlers that Register's constructors built.
func (q *Queue) bind(handlers []built) *Queue {
	q.adding.Lock()
	defer q.adding.Unlock()
	old := q.table.Load()
	t := &table{jobs: old.jobs, handles: maps.Clone(old.handles)}
	for _, b := range handlers {
		t.bind(q, Registration(b))
	}
	q.table.Store(t)
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
