package schedule

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// Entry is a scheduled entry, as schedule:list shows it.
type Entry struct {
	Name string // stable and unique, such as "reports.nightly"
	// Spec is the cron expression ("0 3 * * *", with an optional seconds
	// field first) or, for Every, "every 15m0s".
	Spec string
	// Zone is the name of the time zone the cron expression is read in;
	// empty for the [schedule] timezone.
	Zone               string
	WithoutOverlapping bool
	CatchUp            time.Duration // how far back a missed tick is still run
	Options            queue.Options // the jobs' options
	Where              string        // where it was registered, file:line

	every time.Duration                  // Every's interval; 0 for a cron entry
	job   func(tick time.Time) queue.Job // nil skips the tick
}

// Option sets how an entry runs.
type Option func(*Entry)

// In reads the entry's cron expression in the time zone name, such as
// "America/New_York"; by default the [schedule] timezone (UTC). An unknown
// zone fails the boot naming the entry.
func In(zone string) Option { return func(e *Entry) { e.Zone = zone } }

// WithoutOverlapping skips a tick while the entry's last job is still
// pending or running (the tick is recorded as skipped).
func WithoutOverlapping() Option { return func(e *Entry) { e.WithoutOverlapping = true } }

// CatchUp sets how far back a missed tick (all schedulers down at its
// time) is still dispatched when a scheduler runs again; only the latest
// missed tick is. Default 24h; 0 dispatches no tick missed by more than a
// minute.
func CatchUp(window time.Duration) Option { return func(e *Entry) { e.CatchUp = window } }

// Options sets the options of the entry's jobs (their queue, attempts…).
func Options(o queue.Options) Option { return func(e *Entry) { e.Options = o } }

// Cron dispatches job at each tick of the cron expression spec: five
// fields (minute hour day-of-month month day-of-week), or six with
// seconds first, or a descriptor such as "@daily". With both day fields
// restricted, a day matching either runs (as cron does).
//
//	schedule.Cron("reports.nightly", "0 3 * * *", reports.Nightly{}, schedule.In("Europe/Berlin"))
func Cron(name, spec string, job queue.Job, opts ...Option) fx.Option {
	return supply(entry(name, spec, 0, always(job), app.Caller(1).String(), opts))
}

// CronFunc is [Cron] with the job built for each tick from its scheduled
// time, in the entry's zone; a nil job skips the tick.
func CronFunc(name, spec string, fn func(tick time.Time) queue.Job, opts ...Option) fx.Option {
	return supply(entry(name, spec, 0, fn, app.Caller(1).String(), opts))
}

// Every dispatches job every d, at instants that are multiples of d since
// the Unix epoch (every 15m: :00, :15, :30, :45 UTC), the same on every
// scheduler.
func Every(name string, d time.Duration, job queue.Job, opts ...Option) fx.Option {
	return supply(entry(name, every(d), d, always(job), app.Caller(1).String(), opts))
}

// EveryFunc is [Every] with the job built for each tick from its time; a
// nil job skips the tick.
func EveryFunc(name string, d time.Duration, fn func(tick time.Time) queue.Job, opts ...Option) fx.Option {
	return supply(entry(name, every(d), d, fn, app.Caller(1).String(), opts))
}

// CronEntry is [Cron] for an app built without fx: give the entry to
// [New] in Params.Entries. CronFuncEntry, EveryEntry and EveryFuncEntry
// are [CronFunc], [Every] and [EveryFunc] alike.
func CronEntry(name, spec string, job queue.Job, opts ...Option) Entry {
	return entry(name, spec, 0, always(job), app.Caller(1).String(), opts)
}

// CronFuncEntry is [CronFunc] for an app built without fx.
func CronFuncEntry(name, spec string, fn func(tick time.Time) queue.Job, opts ...Option) Entry {
	return entry(name, spec, 0, fn, app.Caller(1).String(), opts)
}

// EveryEntry is [Every] for an app built without fx.
func EveryEntry(name string, d time.Duration, job queue.Job, opts ...Option) Entry {
	return entry(name, every(d), d, always(job), app.Caller(1).String(), opts)
}

// EveryFuncEntry is [EveryFunc] for an app built without fx.
func EveryFuncEntry(name string, d time.Duration, fn func(tick time.Time) queue.Job, opts ...Option) Entry {
	return entry(name, every(d), d, fn, app.Caller(1).String(), opts)
}

// always is a job for every tick: job itself, or none for a nil job.
func always(job queue.Job) func(time.Time) queue.Job {
	if job == nil {
		return nil
	}
	return func(time.Time) queue.Job { return job }
}

// every is the spec of an Every entry, as schedule:list shows it.
func every(d time.Duration) string { return "every " + d.String() }

func supply(e Entry) fx.Option { return fx.Supply(fx.Annotated{Group: "schedule.entries", Target: e}) }

func entry(name, spec string, interval time.Duration, fn func(time.Time) queue.Job, where string, opts []Option) Entry {
	e := Entry{Name: name, Spec: spec, every: interval, job: fn, CatchUp: 24 * time.Hour, Where: where}
	for _, opt := range opts {
		opt(&e)
	}
	return e
}

// entryName is what an entry's name may hold.
var entryName = regexp.MustCompile(`^[a-z0-9][a-z0-9._:-]{0,99}$`)

// ValidEntryName reports whether name may name an entry: 1 to 100 of
// a-z, 0-9, '.', '_', ':' and '-', starting with a letter or digit. The
// dashboard checks the names it shows from a URL with it.
func ValidEntryName(name string) bool { return entryName.MatchString(name) }

// plan is an entry ready to run: its schedule in its zone.
type plan struct {
	Entry
	loc  *time.Location
	cron *cronExpr // nil for Every
}

// compile checks e and reads its expression and zone (defaultZone for
// none). Its errors name the entry and where it was registered.
func compile(e Entry, defaultZone *time.Location) (plan, error) {
	fail := func(format string, args ...any) (plan, error) {
		return plan{}, fmt.Errorf("schedule: entry %q at %s: %s", e.Name, e.Where, fmt.Sprintf(format, args...))
	}
	if !entryName.MatchString(e.Name) {
		return fail("the name must be 1 to 100 of a-z, 0-9, '.', '_', ':' and '-', starting with a letter or digit")
	}
	if e.job == nil {
		return fail("it has no job")
	}
	if e.CatchUp < 0 {
		return fail("the catch-up window is negative (%s)", e.CatchUp)
	}
	p := plan{Entry: e, loc: defaultZone}
	if e.Zone != "" {
		loc, err := time.LoadLocation(e.Zone)
		if err != nil {
			return fail("unknown time zone %q (a name of the IANA database, such as Europe/Berlin)", e.Zone)
		}
		p.loc = loc
	}
	if e.every != 0 {
		if e.every < time.Second || e.every%time.Second != 0 {
			return fail("Every needs whole seconds, 1s or more, not %s", e.every)
		}
		return p, nil
	}
	switch spec := strings.TrimSpace(e.Spec); {
	case strings.HasPrefix(spec, "@every"):
		return fail("%q counts from each scheduler's start: use schedule.Every, whose ticks are the same on every scheduler", e.Spec)
	case strings.HasPrefix(spec, "TZ=") || strings.HasPrefix(spec, "CRON_TZ="):
		return fail("%q names its zone in the expression: use the option schedule.In", e.Spec)
	}
	c, err := parseCron(e.Spec)
	switch {
	case errors.Is(err, errNeverFires):
		return fail("the cron expression %q never fires (such as the 31st of February)", e.Spec)
	case err != nil:
		return fail("the cron expression %q does not parse: %v", e.Spec, err)
	}
	p.cron = c
	return p, nil
}

// next is the entry's first tick after t: for a cron entry, by the rules
// of [cronExpr.next].
func (p plan) next(t time.Time) time.Time {
	if p.every != 0 {
		d := p.every.Milliseconds()
		return time.UnixMilli((t.UnixMilli()/d + 1) * d)
	}
	return p.cron.next(t, p.loc)
}

// latest is the entry's latest tick in (after, until], or the zero time.
// It looks back from until over spans that double, so that a dense entry
// after a long downtime walks a few of its ticks, not all of them.
func (p plan) latest(after, until time.Time) time.Time {
	if p.every != 0 {
		d := p.every.Milliseconds()
		t := time.UnixMilli(until.UnixMilli() / d * d)
		if !t.After(after) {
			return time.Time{}
		}
		return t
	}
	for span := time.Minute; ; span *= 2 {
		from := until.Add(-span)
		if !from.After(after) {
			from = after
		}
		var last time.Time
		for t := p.next(from); !t.After(until); t = p.next(t) {
			last = t
		}
		if !last.IsZero() || from.Equal(after) {
			return last
		}
	}
}
