package queue

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/migrations"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
)

// Driver says where jobs are stored.
type Driver string

// The drivers.
const (
	// Database stores jobs in the tables jobs and failed_jobs of the app's
	// database: they survive restarts, and every process that uses the
	// database shares them.
	Database Driver = "database"
	// Memory keeps jobs in the process's memory, for tests and
	// single-process development.
	Memory Driver = "memory"
)

// Config is the [queue] section of the configuration. The defaults
// are DefaultConfig's; in a Config written in code a zero field takes
// its default, except KeepSucceeded, whose zero keeps none.
type Config struct {
	// Driver is "database" (the default) or "memory".
	Driver Driver `koanf:"driver" validate:"oneof=database memory"`
	// DefaultQueue is where jobs with an empty queue name go; default
	// "default". Queue names have 1 to 100 ASCII letters, digits, '-',
	// '_', '.' or ':'.
	DefaultQueue string `koanf:"default_queue" validate:"required,max=100"`
	// Workers is how many jobs one queue:work process runs at once;
	// default 4, at most [MaxWorkers].
	Workers int `koanf:"workers" validate:"min=1,max=10000"`
	// PollIntervalMs is how long an idle worker waits before looking for
	// jobs again; default 1000.
	PollIntervalMs int `koanf:"poll_interval_ms" validate:"min=1,max=3600000"`
	// Queues is what queue:work processes, highest priority first; default
	// ["high", "default"], in a file as in code, where a nil Queues takes
	// it. An empty list (queues = [], APP_QUEUE__QUEUES=, or []string{}
	// in code) is the default queue alone.
	Queues []string `koanf:"queues"`
	// RescueAfter is how long after a worker's last heartbeat it counts
	// as gone (killed, paused, its host lost) and other workers take over
	// the jobs it was running, whatever their timeouts; default "15s",
	// from 3s to 1h. Each worker beats every third of it, and promises it
	// in its registration: the one it started with is the one it is
	// judged by. A shorter time rescues sooner; one too short for the
	// database's pauses makes live workers look gone.
	RescueAfter time.Duration `koanf:"rescue_after"`
	// KeepSucceeded is how long the jobs that succeed stay readable in
	// the history (queue:job ID, Inspector.Job and Jobs, the dashboard),
	// with their run and queue wait, worker and every failed attempt's
	// error, such as "24h"; default "1h", "0s" keeps none, at most 8760h
	// (a year). The workers prune what is older, once a minute per
	// process, a thousand to a transaction.
	KeepSucceeded time.Duration `koanf:"keep_succeeded"`
	// MaxSnoozes is how many times a job may snooze (queue.Snooze) before
	// asking once more fails it; default 100, from 1 to 1000000.
	MaxSnoozes int `koanf:"max_snoozes"`
	// StopTimeout is how long a stopping worker (SIGTERM, SIGINT,
	// queue:restart) lets its running jobs go on, such as "25s": then it
	// interrupts them (their context ends, its cause ErrInterrupted) and
	// puts each back on its queue without spending its attempt, for
	// another worker to run again. Set it a few seconds under your process
	// manager's stop timeout, so that a rollout's kill never cuts a job
	// off. Default "0s": no deadline, the running jobs end on their own
	// (only their Timeout cuts them off); at most 24h.
	StopTimeout time.Duration `koanf:"stop_timeout"`
	// OnlyKnownTypes makes queue:work take only the jobs of the types
	// its build has handlers for (and their aliases), leaving the others
	// waiting for a worker that knows them, rather than failing them at
	// once ("no handler"): for a fleet where workers of two builds run
	// side by side during a deploy. Default false.
	OnlyKnownTypes bool `koanf:"only_known_types"`
	// RateLimits limits how often the jobs of a queue start, across every
	// worker and server: entries of queue=max/per, such as
	// ["mail=60/1m"] (at most 60 of the queue's jobs start in any
	// minute); in the environment comma-separated,
	// APP_QUEUE__RATE_LIMITS=mail=60/1m. Its jobs over the limit wait,
	// without spending an attempt. Default none. A job type can have a
	// limit of its own (Options.RateLimit).
	RateLimits []string `koanf:"rate_limits"`
	// Monitor holds queue:monitor's thresholds ([queue.monitor]), which
	// its flags override.
	Monitor MonitorConfig `koanf:"monitor"`
}

// MonitorConfig is when queue:monitor alerts about a queue; a zero
// threshold is no limit.
type MonitorConfig struct {
	// MaxWaiting is how many jobs may wait (due now, not taken) on a
	// queue before queue:monitor alerts; default 0, no limit.
	MaxWaiting int `koanf:"max_waiting" validate:"min=0"`
	// MaxWait is how long a queue's job due first may have waited before
	// queue:monitor alerts, such as "5m"; default 0, no limit.
	MaxWait time.Duration `koanf:"max_wait" validate:"min=0"`
}

// DefaultConfig returns the defaults of the [queue] section.
func DefaultConfig() Config {
	return Config{Driver: Database, DefaultQueue: "default", Workers: 4, PollIntervalMs: 1000, Queues: []string{"high", "default"},
		RescueAfter: 15 * time.Second, MaxSnoozes: 100, KeepSucceeded: time.Hour}
}

// The bounds of Config.RescueAfter, Config.KeepSucceeded and Config.StopTimeout.
const (
	MinRescueAfter   = 3 * time.Second
	MaxRescueAfter   = time.Hour
	MaxKeepSucceeded = 365 * 24 * time.Hour
	MaxStopTimeout   = 24 * time.Hour
)

// Validate checks each queue name, and the rescue time.
func (c Config) Validate() error {
	if c.RescueAfter < MinRescueAfter || c.RescueAfter > MaxRescueAfter {
		return config.Invalid("queue.rescue_after", c.RescueAfter, `a duration from 3s to 1h, such as "15s"`)
	}
	if c.KeepSucceeded < 0 || c.KeepSucceeded > MaxKeepSucceeded {
		return config.Invalid("queue.keep_succeeded", c.KeepSucceeded, `a duration from 0s (keep none) to 8760h, such as "24h"`)
	}
	if c.StopTimeout < 0 || c.StopTimeout > MaxStopTimeout {
		return config.Invalid("queue.stop_timeout", c.StopTimeout, `a duration from 0s (no deadline) to 24h, such as "25s"`)
	}
	if c.MaxSnoozes < 1 || c.MaxSnoozes > 1_000_000 {
		return config.Invalid("queue.max_snoozes", c.MaxSnoozes, "a count from 1 to 1000000, such as 100")
	}
	if checkQueue(c.DefaultQueue) != nil {
		return config.Invalid("queue.default_queue", c.DefaultQueue, "a queue name of "+queueNameRule)
	}
	for _, name := range c.Queues {
		if checkQueue(name) != nil {
			return config.Invalid("queue.queues", name, "queue names of "+queueNameRule)
		}
	}
	_, err := queueRates(c.RateLimits)
	return err
}

// withDefaults fills the zero fields of a Config written in code and
// checks it: a nil Queues takes the default, an empty one is the default
// queue alone.
func (c Config) withDefaults() (Config, error) {
	def := DefaultConfig()
	if c.Driver == "" {
		c.Driver = def.Driver
	}
	if c.DefaultQueue == "" {
		c.DefaultQueue = def.DefaultQueue
	}
	if c.Workers == 0 {
		c.Workers = def.Workers
	}
	if c.PollIntervalMs == 0 {
		c.PollIntervalMs = def.PollIntervalMs
	}
	if c.RescueAfter == 0 {
		c.RescueAfter = def.RescueAfter
	}
	if c.MaxSnoozes == 0 {
		c.MaxSnoozes = def.MaxSnoozes
	}
	if c.Queues == nil {
		c.Queues = def.Queues
	}
	if len(c.Queues) == 0 {
		c.Queues = []string{c.DefaultQueue}
	}
	switch {
	case c.Driver != Database && c.Driver != Memory:
		return c, fmt.Errorf("queue: unknown driver %q; want %q or %q", c.Driver, Database, Memory)
	case checkQueue(c.DefaultQueue) != nil:
		return c, checkQueue(c.DefaultQueue)
	case c.Workers < 1 || c.PollIntervalMs < 1:
		return c, fmt.Errorf("queue: workers (%d) and poll_interval_ms (%d) must be 1 or more", c.Workers, c.PollIntervalMs)
	}
	return c, c.Validate()
}

// Module is the queue, configured by the [queue] section. It provides the
// app's [*Queue], which runs jobs; for code that only dispatches, its
// [Dispatcher]; for code that reads and administers it, its [*Inspector];
// and adds the migration set "queue" (tables jobs and failed_jobs).
func Module() fx.Option {
	return module(config.Section("queue", DefaultConfig()))
}

// ModuleWith is [Module] configured in code instead: zero fields of cfg
// take their defaults.
//
//	queue.ModuleWith(queue.Config{Driver: queue.Memory})
func ModuleWith(cfg Config) fx.Option {
	return module(fx.Supply(fx.Private, cfg))
}

func module(cfg fx.Option) fx.Option {
	return fx.Module("queue",
		cfg,
		// The Dispatcher is the queue without its handlers, so that a
		// handler may need what needs the Dispatcher (mail, events); the
		// *Queue, which runs jobs, has them.
		fx.Provide(fx.Private, func(p params) (dispatching, error) {
			q, err := New(Params{Config: p.Config, DB: p.DB, Clock: p.Clock, Logger: p.Logger, MeterProvider: p.MeterProvider, TracerProvider: p.TracerProvider})
			if err == nil {
				err = q.Handle(p.Handlers...)
			}
			return dispatching{q}, err
		}),
		fx.Provide(func(d dispatching) Dispatcher { return d.q }),
		fx.Provide(func(d dispatching, b builtIn) *Queue { return d.q.bind(b.Handlers) }),
		// The Inspector, like the Dispatcher, needs no handler: serve's
		// dashboard and the admin commands build none.
		fx.Provide(func(d dispatching) *Inspector { return d.q.Inspector() }),
		fx.Provide(func(d dispatching) Registry { return d.q }),
		db.Migrations("queue", migrations.Queue),
		app.Commands(commands()...),
	)
}

// params are the Params the module gathers: the job types the app's
// modules register.
type params struct {
	fx.In
	Config   Config
	DB       *db.DB `optional:"true"`
	Clock    app.Clock
	Logger   *slog.Logger
	Handlers []Registration `group:"queue.handlers"`
	// MeterProvider is the app's, when it has one (fx.Supply it, or add a
	// module that provides one).
	MeterProvider metric.MeterProvider `optional:"true"`
	// TracerProvider is the app's, when it has one.
	TracerProvider trace.TracerProvider `optional:"true"`
}

// dispatching is the app's queue before it has the handlers Register's
// constructors build.
type dispatching struct{ q *Queue }

type builtIn struct {
	fx.In
	Handlers []built `group:"queue.built"`
}
