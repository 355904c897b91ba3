package schedule

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
	"go.uber.org/fx"
)

// Config is the [schedule] section of the configuration.
type Config struct {
	// Timezone is the time zone cron expressions are read in, unless an
	// entry names its own ([In]); default "UTC".
	Timezone string `koanf:"timezone" validate:"required"`
}

// DefaultConfig returns the defaults of the [schedule] section.
func DefaultConfig() Config { return Config{Timezone: "UTC"} }

// Validate checks that the time zone exists.
func (c Config) Validate() error {
	if _, err := time.LoadLocation(c.Timezone); err != nil {
		return invalidZone(c.Timezone)
	}
	return nil
}

func invalidZone(zone string) error {
	return config.Invalid("schedule.timezone", zone, "a time zone of the IANA database, such as UTC or Europe/Berlin")
}

// Params are what [New] builds a Scheduler from.
type Params struct {
	Config     Config
	DB         *db.DB `optional:"true"` // holds the claimed ticks; required
	Dispatcher queue.Dispatcher
	// Registry, when set, lists Work's process among the workers
	// (queue:workers), as schedule:work; the module gives it the queue's.
	Registry queue.Registry `optional:"true"`
	Clock    app.Clock      `optional:"true"`
	Logger   *slog.Logger   `optional:"true"`
	Entries  []Entry
}

// New returns the scheduler of p. An entry with a bad name, expression or
// zone, or two entries of one name, are an error naming them.
func New(p Params) (*Scheduler, error) {
	if p.DB == nil {
		return nil, errors.New("schedule: the scheduler keeps its ticks in the database: add db.Module() to the app")
	}
	cfg := p.Config
	if cfg.Timezone == "" {
		cfg = DefaultConfig()
	}
	loc, err := time.LoadLocation(cfg.Timezone)
	if err != nil {
		return nil, invalidZone(cfg.Timezone)
	}
	s := &Scheduler{db: p.DB, dispatcher: p.Dispatcher, registry: p.Registry, clock: p.Clock, logger: p.Logger}
	if s.clock == nil {
		s.clock = app.SystemClock{}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.logger = s.logger.With("logger", "navree.schedule")
	seen := map[string]string{}
	for _, e := range p.Entries {
		if where, dup := seen[e.Name]; dup {
			return nil, fmt.Errorf("schedule: entry %q is registered twice: at %s and at %s", e.Name, where, e.Where)
		}
		seen[e.Name] = e.Where
		pl, err := compile(e, loc)
		if err != nil {
			return nil, err
		}
		s.plans = append(s.plans, pl)
	}
	slices.SortFunc(s.plans, func(a, b plan) int { return strings.Compare(a.Name, b.Name) })
	s.started = s.clock.Now()
	return s, nil
}

// Module is the scheduler, configured by the [schedule] section. It
// provides the app's [*Scheduler], with every entry the app's modules
// register ([Cron], [CronFunc], [Every]), adds the migration set
// "schedule" (the table schedule_ticks), the commands schedule:work,
// schedule:list, schedule:run and schedule:prune, and the schedules page
// of the queue dashboard (DashboardPage), shown where the app enables
// the dashboard. It needs db.Module and queue.Module.
func Module() fx.Option { return module(config.Section("schedule", DefaultConfig())) }

// ModuleWith is [Module] configured in code instead: a zero Config takes
// the defaults.
//
//	schedule.ModuleWith(schedule.Config{Timezone: "Europe/Berlin"})
func ModuleWith(cfg Config) fx.Option { return module(fx.Supply(fx.Private, cfg)) }

func module(cfg fx.Option) fx.Option {
	return fx.Module("schedule",
		cfg,
		fx.Provide(func(p params) (*Scheduler, error) {
			return New(Params{Config: p.Config, DB: p.DB, Dispatcher: p.Dispatcher, Registry: p.Registry, Clock: p.Clock, Logger: p.Logger, Entries: p.Entries})
		}),
		db.Migrations("schedule", migrations.Schedule),
		app.Commands(commands()...),
		dashboard.AddPage(DashboardPage),
	)
}

// params are the Params the module gathers: the entries of the app.
type params struct {
	fx.In
	Config     Config
	DB         *db.DB `optional:"true"`
	Dispatcher queue.Dispatcher
	Registry   queue.Registry `optional:"true"`
	Clock      app.Clock      `optional:"true"`
	Logger     *slog.Logger   `optional:"true"`
	Entries    []Entry        `group:"schedule.entries"`
}
